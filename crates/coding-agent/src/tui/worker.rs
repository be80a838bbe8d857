//! The agent side of the TUI: a task that owns the [`Runtime`], takes [`Command`]s from the UI one
//! at a time, and sends back [`UiMsg`]s — the harness's events, approval questions, and what each
//! command did — in the order they happened.
//!
//! The UI owns each turn's `CancellationToken`: Ctrl+C cancels it, the harness drops the running
//! hook or tool future, and dropping it kills the process group.

use std::future::Future;
use std::sync::Arc;

use elph_agent::harness::{AgentEvent, ApprovalDecision, ApprovalRequest, Approver, CompactOutcome, Entry};
use elph_agent::hooks::CompactTrigger;
use elph_agent::messages::Message;
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::hookview::HooksView;
use crate::runtime::{Runtime, RuntimeOptions, SessionChoice};
use crate::store::SessionInfo;

/// What the UI asks the agent to do.
#[derive(Debug)]
pub enum Command {
    Prompt {
        text: String,
        cancel: CancellationToken,
    },
    Compact {
        instructions: Option<String>,
        cancel: CancellationToken,
    },
    Reload,
    /// `/trust` (true) or `/untrust` (false).
    SetTrust(bool),
    NewSession,
    /// The project's sessions, for the `/resume` picker.
    ListSessions,
    Resume(String),
    /// Fire sessionEnd, then stop.
    Shutdown,
}

/// How loud a notice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    /// A hook changed something.
    Effect,
    /// A hook failed or a configuration problem; the operation went on.
    Problem,
    Error,
}

/// A tool call waiting for the user; answer through `reply` (dropping it denies).
#[derive(Debug)]
pub struct PendingApproval {
    pub request: ApprovalRequest,
    pub reply: oneshot::Sender<ApprovalDecision>,
}

/// One thing of a stored conversation, for showing a resumed session.
#[derive(Clone, Debug, PartialEq)]
pub enum HistoryEntry {
    User(String),
    Assistant(String),
    Tool {
        id: String,
        name: String,
        input: Value,
        result: Option<(String, bool)>,
    },
    Summary(u64),
}

/// The session the agent runs now.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionView {
    pub model: String,
    pub session_id: String,
    pub resumed: bool,
    pub context_window: u64,
    pub history: Vec<HistoryEntry>,
}

/// What the agent tells the UI.
#[derive(Debug)]
pub enum UiMsg {
    Agent(AgentEvent),
    Approval(PendingApproval),
    Session(SessionView),
    Hooks(HooksView),
    Context {
        tokens: u64,
        window: u64,
    },
    Notice(Level, String),
    Sessions(Vec<SessionInfo>),
    /// The command finished; the agent waits for the next one.
    Idle,
    /// The session ended after `Shutdown`.
    Exited,
}

/// Asks the UI and waits for its answer.
pub struct TuiApprover {
    tx: UnboundedSender<PendingApproval>,
}

impl TuiApprover {
    pub fn new(tx: UnboundedSender<PendingApproval>) -> Self {
        TuiApprover { tx }
    }
}

#[async_trait::async_trait]
impl Approver for TuiApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Option<ApprovalDecision> {
        let (reply, answer) = oneshot::channel();
        let pending = PendingApproval {
            request: request.clone(),
            reply,
        };
        if self.tx.send(pending).is_err() {
            return None;
        }
        Some(answer.await.unwrap_or(ApprovalDecision::Deny))
    }
}

/// The receiving ends the worker forwards to the UI.
pub struct Channels {
    pub events_tx: UnboundedSender<AgentEvent>,
    pub events: UnboundedReceiver<AgentEvent>,
    pub approvals: UnboundedReceiver<PendingApproval>,
    pub ui: UnboundedSender<UiMsg>,
}

impl Channels {
    fn send(&self, msg: UiMsg) {
        let _ = self.ui.send(msg);
    }

    fn notice(&self, level: Level, text: impl Into<String>) {
        self.send(UiMsg::Notice(level, text.into()));
    }

    fn drain(&mut self) {
        while let Ok(event) = self.events.try_recv() {
            let _ = self.ui.send(UiMsg::Agent(event));
        }
        while let Ok(approval) = self.approvals.try_recv() {
            let _ = self.ui.send(UiMsg::Approval(approval));
        }
    }
}

/// Awaits `work` while forwarding the harness's events and approval questions, events first (an
/// approval question always follows the events emitted before it).
async fn pump<F: Future>(channels: &mut Channels, work: F) -> F::Output {
    tokio::pin!(work);
    let output = loop {
        tokio::select! {
            biased;
            Some(event) = channels.events.recv() => channels.send(UiMsg::Agent(event)),
            Some(approval) = channels.approvals.recv() => channels.send(UiMsg::Approval(approval)),
            output = &mut work => break output,
        }
    };
    channels.drain();
    output
}

pub struct Worker {
    runtime: Runtime,
    options: RuntimeOptions,
    approver: Arc<dyn Approver>,
    channels: Channels,
}

impl Worker {
    pub fn new(
        runtime: Runtime,
        options: RuntimeOptions,
        approver: Arc<dyn Approver>,
        channels: Channels,
    ) -> Self {
        Worker {
            runtime,
            options,
            approver,
            channels,
        }
    }

    /// Starts the session, then runs commands until `Shutdown` or until the UI goes away.
    pub async fn run(mut self, mut commands: UnboundedReceiver<Command>) {
        self.announce();
        self.start().await;
        while let Some(command) = commands.recv().await {
            tracing::debug!(?command, "tui command");
            if matches!(command, Command::Shutdown) {
                pump(&mut self.channels, self.runtime.harness.end_session("exit")).await;
                self.channels.send(UiMsg::Exited);
                return;
            }
            self.execute(command).await;
            self.send_context();
            self.channels.send(UiMsg::Idle);
        }
        // The UI is gone without a Shutdown (it panicked or was killed): still end the session.
        pump(&mut self.channels, self.runtime.harness.end_session("exit")).await;
    }

    /// Tells the UI about the session and the hook set (with the set's diagnostics as notices).
    fn announce(&self) {
        let harness = &self.runtime.harness;
        self.channels.send(UiMsg::Session(SessionView {
            model: self.runtime.model.clone(),
            session_id: harness.session_id().to_string(),
            resumed: self.runtime.source == elph_agent::hooks::SessionSource::Resume,
            context_window: harness.provider().context_window(),
            history: history(harness.transcript().entries()),
        }));
        self.send_hooks();
        for diagnostic in &self.runtime.host.set().diagnostics {
            self.channels.notice(Level::Problem, diagnostic.to_string());
        }
    }

    async fn start(&mut self) {
        let source = self.runtime.source;
        pump(&mut self.channels, self.runtime.harness.start_session(source)).await;
        self.send_context();
        self.channels.send(UiMsg::Idle);
    }

    fn send_hooks(&self) {
        let view = HooksView::from_set(&self.runtime.trust, &self.runtime.host.set());
        self.channels.send(UiMsg::Hooks(view));
    }

    fn send_context(&self) {
        let harness = &self.runtime.harness;
        self.channels.send(UiMsg::Context {
            tokens: harness.context_tokens(),
            window: harness.provider().context_window(),
        });
    }

    async fn execute(&mut self, command: Command) {
        match command {
            Command::Prompt { text, cancel } => {
                pump(&mut self.channels, self.runtime.harness.run_turn(&text, &cancel)).await;
            }
            Command::Compact { instructions, cancel } => {
                let work = self
                    .runtime
                    .harness
                    .compact(CompactTrigger::Manual, instructions, &cancel);
                let outcome = pump(&mut self.channels, work).await;
                self.report_compaction(outcome);
            }
            Command::Reload => {
                let set = self.runtime.reload();
                self.send_hooks();
                for diagnostic in &set.diagnostics {
                    self.channels.notice(Level::Problem, diagnostic.to_string());
                }
                let active = set.active().count();
                self.channels.notice(
                    Level::Info,
                    format!(
                        "reloaded: {active} active hook(s), {} diagnostic(s); project {}",
                        set.diagnostics.len(),
                        trust_word(self.runtime.trust.trusted)
                    ),
                );
            }
            Command::SetTrust(trusted) => match self.runtime.set_trust(trusted) {
                Ok(set) => {
                    self.send_hooks();
                    // After /untrust, the only news would be that the project's hooks are skipped.
                    if self.runtime.trust.trusted {
                        for diagnostic in &set.diagnostics {
                            self.channels.notice(Level::Problem, diagnostic.to_string());
                        }
                    }
                    let text = if self.runtime.trust.trusted {
                        format!(
                            "trusted {}: its .elph/hooks.json is loaded ({} active hook(s))",
                            self.runtime.paths.project_dir.display(),
                            set.active().count()
                        )
                    } else {
                        format!(
                            "no longer trusting {}: its hooks are off ({} active hook(s) left)",
                            self.runtime.paths.project_dir.display(),
                            set.active().count()
                        )
                    };
                    self.channels.notice(Level::Info, text);
                }
                Err(error) => self.channels.notice(Level::Error, error.to_string()),
            },
            Command::NewSession => self.switch(SessionChoice::New).await,
            Command::Resume(id) => {
                if id == self.runtime.session_id() {
                    self.channels
                        .notice(Level::Info, format!("already in session {id}"));
                } else {
                    self.switch(SessionChoice::Resume(id)).await;
                }
            }
            Command::ListSessions => match &self.runtime.store {
                None => self
                    .channels
                    .notice(Level::Error, "this session is not stored; nothing to resume"),
                Some(store) => match store.list(&self.runtime.paths.project_dir) {
                    Ok(sessions) => self.channels.send(UiMsg::Sessions(sessions)),
                    Err(error) => self
                        .channels
                        .notice(Level::Error, format!("cannot list sessions: {error}")),
                },
            },
            Command::Shutdown => {}
        }
    }

    /// Ends the current session and starts (or resumes) another in its place.
    async fn switch(&mut self, choice: SessionChoice) {
        let mut options = self.options.clone();
        options.session = choice;
        let built = Runtime::build(
            self.runtime.paths.clone(),
            &options,
            self.approver.clone(),
            self.channels.events_tx.clone(),
        );
        let runtime = match built {
            Ok(runtime) => runtime,
            Err(error) => {
                self.channels.notice(Level::Error, format!("{error:#}"));
                return;
            }
        };
        let reason = if options.session == SessionChoice::New {
            "new_session"
        } else {
            "resume"
        };
        pump(&mut self.channels, self.runtime.harness.end_session(reason)).await;
        self.runtime = runtime;
        self.announce();
        let source = self.runtime.source;
        pump(&mut self.channels, self.runtime.harness.start_session(source)).await;
    }

    fn report_compaction(&self, outcome: CompactOutcome) {
        let (level, text) = match outcome {
            // The harness's Compacted event already says so.
            CompactOutcome::Compacted { .. } => return,
            CompactOutcome::CancelledByHook { hook_id } => (
                Level::Effect,
                format!("hook '{hook_id}' cancelled the compaction"),
            ),
            CompactOutcome::Interrupted => (Level::Info, "compaction cancelled".to_string()),
            CompactOutcome::NothingToCompact => (Level::Info, "nothing to compact yet".to_string()),
            CompactOutcome::Failed(error) => (Level::Error, format!("compaction failed: {error}")),
        };
        self.channels.notice(level, text);
    }
}

pub fn trust_word(trusted: bool) -> &'static str {
    if trusted { "trusted" } else { "not trusted" }
}

/// A stored transcript as the UI shows it: prompts, answers, tool calls with their results.
pub fn history(entries: &[Entry]) -> Vec<HistoryEntry> {
    let mut out: Vec<HistoryEntry> = Vec::new();
    for entry in entries {
        match entry {
            Entry::Summary {
                entries_compacted, ..
            } => out.push(HistoryEntry::Summary(*entries_compacted)),
            Entry::Message { message } => match message {
                Message::User { .. } => out.push(HistoryEntry::User(message.content().text())),
                Message::Assistant { tool_calls, .. } => {
                    let text = message.content().text();
                    if !text.trim().is_empty() {
                        out.push(HistoryEntry::Assistant(text));
                    }
                    for call in tool_calls {
                        out.push(HistoryEntry::Tool {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            input: call.input.clone(),
                            result: None,
                        });
                    }
                }
                Message::Tool {
                    tool_call_id,
                    is_error,
                    ..
                } => {
                    let text = message.content().text();
                    let call = out.iter_mut().rev().find_map(|entry| match entry {
                        HistoryEntry::Tool { id, result, .. } if id == tool_call_id => Some(result),
                        _ => None,
                    });
                    if let Some(result) = call {
                        *result = Some((text, *is_error));
                    }
                }
            },
        }
    }
    out
}

/// The worker, the sending and receiving ends of its commands, and the receiving end of its messages.
pub type Built = (
    Worker,
    UnboundedSender<Command>,
    UnboundedReceiver<Command>,
    UnboundedReceiver<UiMsg>,
);

/// Sets up the channels and the approver and builds the runtime (errors here come before the
/// terminal changes).
pub fn build(paths: crate::paths::Paths, options: RuntimeOptions) -> anyhow::Result<Built> {
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (approvals_tx, approvals) = tokio::sync::mpsc::unbounded_channel();
    let (ui, ui_rx) = tokio::sync::mpsc::unbounded_channel();
    let (commands_tx, commands_rx) = tokio::sync::mpsc::unbounded_channel();
    let approver: Arc<dyn Approver> = Arc::new(TuiApprover::new(approvals_tx));
    let runtime = Runtime::build(paths, &options, approver.clone(), events_tx.clone())?;
    let channels = Channels {
        events_tx,
        events,
        approvals,
        ui,
    };
    Ok((
        Worker::new(runtime, options, approver, channels),
        commands_tx,
        commands_rx,
        ui_rx,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use elph_agent::messages::{ContentBlock, ToolCall};
    use serde_json::json;

    #[test]
    fn history_pairs_tool_results_with_their_calls() {
        let entries = vec![
            Entry::Message {
                message: Message::user("list"),
            },
            Entry::Message {
                message: Message::assistant(
                    "Looking.",
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "list_dir".into(),
                        input: json!({"path": "."}),
                    }],
                ),
            },
            Entry::Message {
                message: Message::tool_result("c1", vec![ContentBlock::text("a.txt")], false),
            },
            Entry::Message {
                message: Message::assistant("One file.", vec![]),
            },
        ];
        assert_eq!(
            history(&entries),
            vec![
                HistoryEntry::User("list".into()),
                HistoryEntry::Assistant("Looking.".into()),
                HistoryEntry::Tool {
                    id: "c1".into(),
                    name: "list_dir".into(),
                    input: json!({"path": "."}),
                    result: Some(("a.txt".into(), false)),
                },
                HistoryEntry::Assistant("One file.".into()),
            ]
        );
    }
}
