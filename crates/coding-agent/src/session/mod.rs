//! One agent session, driven the same way by every front end.
//!
//! A front end opens a [`Session`] for a project ([`Session::open`]: trust decision, hooks,
//! provider, tools, MCP servers and stored transcript, assembled by `runtime.rs`), starts it
//! ([`Session::spawn`]), then only submits [`Op`]s through the [`SessionHandle`] and reads the
//! [`SessionEvent`]s it gets back: what the harness does (its phase events included), approval
//! questions, and one `Finished` per operation, all in the order they happened. The slash commands
//! are one table ([`commands`]), and one function decides how every front end takes a line
//! ([`route`]); `/reload`, `/trust`, `/untrust`, `/compact`, `/new` and `/resume`
//! are carried out here and nowhere else, and reported as typed [`Outcome`]s that each front end
//! words for its medium.
//!
//! Cancelling is the front end's: each cancellable op carries a `CancellationToken`, and
//! cancelling it drops the running hook or tool future, which kills its process group.

mod approval;
pub(crate) mod commands;
mod events;
mod mcp_turn;
mod ops;
pub mod preview;
pub(crate) mod route;
mod template;
pub(crate) mod wording;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use elph_agent::harness::{AgentEvent, Approver, NoApprover};
use elph_agent::hooks::SessionSource;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use crate::mcp::elicitation::PendingElicitation;
pub use approval::{Approvals, PendingApproval};
pub use commands::FrontEnd;
pub use events::{HookState, ModelOutcome, OpId, Opened, Outcome, SessionEvent, TrustOutcome};

use crate::hooks::background::AsyncRun;
use crate::paths::Paths;
use crate::runtime::Runtime;
pub use crate::runtime::{RuntimeOptions as SessionOptions, SessionChoice};

/// What a front end asks its session to do. Operations run one at a time, in the order submitted.
#[derive(Debug)]
pub enum Op {
    /// One user turn. A prompt that is `/skill:NAME [text]` or `/TEMPLATE [args]` is expanded
    /// here, for every front end, before the model or any hook sees it.
    Prompt { text: String, cancel: CancellationToken },
    /// `/compact [instructions]`.
    Compact {
        instructions: Option<String>,
        cancel: CancellationToken,
    },
    /// `/reload`: trust and both hooks.json files again.
    Reload,
    /// `/trust`: record `true` for the project, then reload.
    Trust,
    /// `/untrust`: record an explicit `false`, stop the project's MCP servers, then reload.
    Untrust,
    /// `/new`: end this session and open a new stored one in its place.
    New,
    /// `/resume ID`: end this session and resume a stored one in its place.
    Resume(String),
    /// The project's stored sessions, for a `/resume` picker.
    ListSessions,
    /// `/mode [build|plan]`, Shift+Tab, ACP's `session/set_mode`: the agent mode for the next
    /// turns, by name; `None` switches to the next mode in the cycle. It also holds for a session
    /// opened by `New`/`Resume` in this one's place.
    SetMode(Option<String>),
    /// `/model [PROVIDER/MODEL]`: with a name, the model for the next requests of this session
    /// (and of one opened by `New`/`Resume` in its place); without, which model is in use.
    Model(Option<String>),
    /// Fire sessionEnd with `reason`, then stop (the last event is [`SessionEvent::Ended`]).
    End { reason: String },
}

/// Where a session's events go, and where its harness's events and questions come from.
struct Channels {
    /// Kept to give a session opened by `New`/`Resume` the same harness event stream.
    agent_tx: UnboundedSender<AgentEvent>,
    agent: UnboundedReceiver<AgentEvent>,
    questions: UnboundedReceiver<PendingApproval>,
    /// MCP servers' questions to the user, and where a new runtime's servers send theirs.
    elicitations: UnboundedReceiver<PendingElicitation>,
    elicitations_tx: UnboundedSender<PendingElicitation>,
    /// Whether anyone can answer them (not headless).
    answerable: bool,
    out: UnboundedSender<SessionEvent>,
    /// Spans of hook runs and tool calls, when OTLP export is on.
    telemetry: Option<std::sync::Mutex<crate::telemetry::Telemetry>>,
    /// Async hook runs that ended (or were cut off), from every runtime this session had.
    async_runs: UnboundedReceiver<AsyncRun>,
    async_runs_tx: UnboundedSender<AsyncRun>,
}

impl Channels {
    fn emit(&self, event: SessionEvent) {
        if let (Some(telemetry), SessionEvent::Agent(agent)) = (&self.telemetry, &event) {
            telemetry
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .observe(agent);
        }
        let _ = self.out.send(event);
    }

    /// Sends the spans that wait (at the end of a session), within a few seconds.
    async fn flush_telemetry(&self) {
        let Some(telemetry) = &self.telemetry else {
            return;
        };
        let flushed = telemetry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .flush_request();
        if let Some(flushed) = flushed {
            crate::telemetry::wait_flushed(flushed).await;
        }
    }

    /// An async hook run ended: its span, and for one cut off at the end of the session, a notice
    /// (its record is in the run log either way).
    fn async_run(&self, ended: AsyncRun) {
        if let Some(telemetry) = &self.telemetry {
            telemetry
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .observe_async(&ended);
        }
        if ended.cut_off {
            let why = ended.run.cause.as_deref().unwrap_or("cut off");
            let message = format!(
                "async hook '{}' ({}): {why}",
                ended.run.hook_id,
                ended.origin.event.as_str()
            );
            self.emit(SessionEvent::Agent(AgentEvent::Notice { message }));
        }
    }

    /// Awaits `work` while forwarding the harness's events and approval questions, events first
    /// (a question always follows the events emitted before it). Async hook runs that ended come
    /// before both: each was told before the events that follow its end (`sessionEnd` waits for
    /// them), so its span is made while the session's is still open.
    async fn pump<F: Future>(&mut self, work: F) -> F::Output {
        tokio::pin!(work);
        let output = loop {
            tokio::select! {
                biased;
                Some(ended) = self.async_runs.recv() => self.async_run(ended),
                Some(event) = self.agent.recv() => self.emit(SessionEvent::Agent(event)),
                Some(question) = self.questions.recv() => self.emit(SessionEvent::Approval(question)),
                Some(question) = self.elicitations.recv() => self.elicitation(question),
                output = &mut work => break output,
            }
        };
        while let Ok(ended) = self.async_runs.try_recv() {
            self.async_run(ended);
        }
        while let Ok(event) = self.agent.try_recv() {
            self.emit(SessionEvent::Agent(event));
        }
        while let Ok(question) = self.questions.try_recv() {
            self.emit(SessionEvent::Approval(question));
        }
        output
    }

    /// Shows an MCP server's question, or, when nobody can answer (headless), declines it and
    /// says so.
    fn elicitation(&self, question: PendingElicitation) {
        if self.answerable {
            return self.emit(SessionEvent::Elicitation(question));
        }
        let message = format!(
            "MCP server '{}' asks: {} (declined: headless runs cannot answer)",
            question.request.server, question.request.message
        );
        question.answer(crate::mcp::elicitation::ElicitationAnswer::Decline);
        self.emit(SessionEvent::Agent(AgentEvent::Notice { message }));
    }

    /// Sends the MCP servers' questions of `runtime` to this session.
    fn attach(&self, runtime: &Runtime) {
        runtime.mcp().elicitations().attach(self.elicitations_tx.clone());
        runtime.hook_host().report_async_runs(self.async_runs_tx.clone());
    }
}

/// An opened session, not yet started.
pub struct Session {
    runtime: Runtime,
    options: SessionOptions,
    approver: Arc<dyn Approver>,
    channels: Channels,
}

/// The stream of a session's events.
pub type SessionEvents = UnboundedReceiver<SessionEvent>;

impl Session {
    /// Assembles the session for the project in `paths` (blocking: it reads files, opens the
    /// store and starts MCP servers). Errors here (no model set, an unreadable store, an unknown
    /// session id) come before anything has run.
    pub fn open(
        paths: Paths,
        options: SessionOptions,
        approvals: Approvals,
    ) -> anyhow::Result<(Session, SessionEvents)> {
        let (agent_tx, agent) = mpsc::unbounded_channel();
        let (questions_tx, questions) = mpsc::unbounded_channel();
        let (out, events) = mpsc::unbounded_channel();
        let approver: Arc<dyn Approver> = match approvals {
            Approvals::Asked => Arc::new(approval::QueueApprover {
                questions: questions_tx,
                project_dir: paths.project_dir.clone(),
                config_dir: paths.config_dir.clone(),
                notices: agent_tx.clone(),
            }),
            Approvals::Nobody => Arc::new(NoApprover),
        };
        let runtime = Runtime::build(paths, &options, approver.clone(), agent_tx.clone())?;
        let (elicitations_tx, elicitations) = mpsc::unbounded_channel();
        let (async_runs_tx, async_runs) = mpsc::unbounded_channel();
        let channels = Channels {
            async_runs,
            async_runs_tx,
            agent_tx,
            agent,
            questions,
            elicitations,
            elicitations_tx,
            answerable: approvals == Approvals::Asked,
            out,
            telemetry: None,
        };
        channels.attach(&runtime);
        let session = Session {
            runtime,
            options,
            approver,
            channels,
        };
        Ok((session, events))
    }

    pub fn session_id(&self) -> &str {
        self.runtime.session_id()
    }

    pub fn project_dir(&self) -> &Path {
        &self.runtime.paths().project_dir
    }

    pub fn trusted(&self) -> bool {
        self.runtime.trust().trusted
    }

    /// The project's trust decision as the session was opened.
    pub fn trust(&self) -> &crate::trust::TrustDecision {
        self.runtime.trust()
    }

    /// `provider/model`.
    pub fn model(&self) -> &str {
        self.runtime.model()
    }

    /// A prompt with a `/skill:NAME` or `/TEMPLATE` command carried out, an escaped `//` line
    /// without its first `/`, other prompts unchanged. An unknown command or skill is an error in
    /// words for the user (see [`route`]).
    pub(crate) fn expand_prompt(&self, prompt: &str) -> Result<crate::workflows::ExpandedPrompt, String> {
        self.runtime.expand_prompt(prompt)
    }

    /// Starts the session in a task of its own: it announces itself ([`SessionEvent::Opened`]),
    /// runs sessionStart ([`SessionEvent::Ready`]), then the submitted operations until `End` or
    /// until every handle is dropped (then sessionEnd runs with reason `exit`).
    pub fn spawn(self) -> (SessionHandle, JoinHandle<()>) {
        let (ops_tx, ops) = mpsc::unbounded_channel();
        let handle = SessionHandle {
            ops: ops_tx,
            next: Arc::new(AtomicU64::new(1)),
        };
        (handle, tokio::spawn(self.run(ops)))
    }

    async fn run(mut self, mut ops: UnboundedReceiver<(OpId, Op)>) {
        // Here, inside the runtime the exporting task runs on.
        self.channels.telemetry = crate::telemetry::Telemetry::from_env().map(std::sync::Mutex::new);
        self.announce();
        let source = self.runtime.source();
        self.channels
            .pump(self.runtime.harness_mut().start_session(source))
            .await;
        self.send_context();
        self.channels.emit(SessionEvent::Ready);
        // MCP servers come up in the background: their prompts become commands whenever they do.
        let mut prompts = self.runtime.mcp().prompts_changed();
        loop {
            let (id, op) = tokio::select! {
                biased;
                Ok(()) = prompts.changed() => {
                    self.channels.emit(SessionEvent::Commands(self.hook_state()));
                    continue;
                }
                // Between operations too, what happens is told when it happens: an MCP server that
                // answered, failed or changed its tools, and a server's question to the user.
                Some(event) = self.channels.agent.recv() => {
                    self.channels.emit(SessionEvent::Agent(event));
                    continue;
                }
                Some(question) = self.channels.elicitations.recv() => {
                    self.channels.elicitation(question);
                    continue;
                }
                next = ops.recv() => match next {
                    Some(next) => next,
                    None => break,
                },
            };
            tracing::debug!(?op, "session op");
            let switches = matches!(op, Op::New | Op::Resume(_));
            let Some(outcome) = self.execute(op).await else {
                return;
            };
            if switches {
                // Another session's servers now, announced with its `Opened`.
                prompts = self.runtime.mcp().prompts_changed();
            }
            self.send_context();
            self.channels.emit(SessionEvent::Finished { op: id, outcome });
        }
        // Every handle is gone without an `End` (the front end stopped): still end the session.
        self.end("exit").await;
    }

    fn hook_state(&self) -> HookState {
        HookState {
            project_dir: self.runtime.paths().project_dir.clone(),
            trust: self.runtime.trust().clone(),
            set: self.runtime.hook_set(),
            workflows: self.runtime.workflow_commands(),
            mcp_servers: self.runtime.mcp_server_names(),
        }
    }

    /// Tells the front end which session runs now, what it holds, and its hooks.
    fn announce(&self) {
        let harness = self.runtime.harness();
        let opened = Opened {
            session_id: harness.session_id().to_string(),
            model: self.runtime.model().to_string(),
            resumed: self.runtime.source() == SessionSource::Resume,
            context_window: harness.provider().context_window(),
            entries: harness.transcript().entries().to_vec(),
            hooks: self.hook_state(),
            mode: harness.mode(),
        };
        self.channels.emit(SessionEvent::Opened(Box::new(opened)));
    }

    fn send_context(&self) {
        let harness = self.runtime.harness();
        self.channels.emit(SessionEvent::Context {
            tokens: harness.context_tokens(),
            window: harness.provider().context_window(),
        });
    }
}

/// Submits operations to a running session. Clones reach the same session; when the last one is
/// dropped the session ends (sessionEnd with reason `exit`).
#[derive(Clone, Debug)]
pub struct SessionHandle {
    ops: UnboundedSender<(OpId, Op)>,
    next: Arc<AtomicU64>,
}

impl SessionHandle {
    /// Queues `op` after those submitted before it. Its `Finished` event carries the returned id.
    /// An op submitted after the session has ended is dropped (no event follows).
    pub fn submit(&self, op: Op) -> OpId {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let _ = self.ops.send((id, op));
        id
    }
}
