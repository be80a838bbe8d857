//! The agent harness: the turn loop every front end drives.
//!
//! One user turn: userPromptSubmit, beforeAgent, then model requests (each preceded by the context
//! hook) and tool calls (each through preToolUse, native approval, execution, and the post-tool
//! hooks), until the model answers without tool calls; then stop, whatever happened.

mod access;
pub mod approval;
mod compaction;
mod escalation;
pub mod events;
mod late_tools;
pub mod mode;
pub mod permissions;
mod sandbox_prompt;
mod template;
mod tool_call;
pub mod transcript;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use elph_ai::{Provider, Request, StopReason, StreamEvent, ToolCall, Turn, Usage};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::hooks::events::before_agent::{BeforeAgent, BeforeAgentPayload};
use crate::hooks::events::context::{Context, ContextPayload};
use crate::hooks::events::notification::{NotificationKind, NotificationPayload};
use crate::hooks::events::session_end::SessionEndPayload;
use crate::hooks::events::session_start::{SessionSource, SessionStartPayload};
use crate::hooks::events::stop::{Stop, StopPayload, StopStatus};
use crate::hooks::events::user_prompt_submit::{UserPromptSubmit, UserPromptSubmitPayload};
use crate::hooks::payload::PayloadBase;
use crate::hooks::runner::{Dispatch, FailedClosed};
use crate::hooks::{HookEvent, HookPayload, HookRegistry, Listed};
use crate::messages::Message;
use crate::policy::{FilePolicy, WriteScope};
use crate::tools::{DEFAULT_READ_DEADLINE, ToolCatalog, ToolContext};
pub use approval::{ApprovalDecision, ApprovalPolicy, ApprovalRequest, Approver, Escalation, NoApprover};
pub use compaction::{CompactOutcome, CompactionSettings};
pub use events::AgentEvent;
pub use mode::{AgentMode, PLAN_MODE_PROMPT};
pub use template::TemplateCallOutput;
pub use transcript::{Entry, Transcript, TranscriptSink};

/// The default system prompt; beforeAgent hooks may append to it but never replace it.
pub(crate) const DEFAULT_SYSTEM_PROMPT: &str = "You are Elph, a coding agent working in the user's project folder. \
Use the tools to read, search and change files and to run commands. Keep answers short and concrete.";

/// How long a turn runs before its end fires a `notification`, unless the front end says otherwise.
pub const DEFAULT_NOTIFY_TURN_AFTER: Duration = Duration::from_secs(30);

/// Model requests allowed in one turn unless the front end says otherwise.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// What a session is configured with; front ends build it and may change it between turns.
#[derive(Clone, Debug)]
pub struct HarnessConfig {
    /// The id hooks and the session store know the session by.
    pub session_id: String,
    /// The directory the tools work in and the sandbox is built around.
    pub project_dir: PathBuf,
    /// The base system prompt; plan mode and beforeAgent hooks add to it per turn.
    pub system_prompt: String,
    /// Model requests allowed in one user turn.
    pub max_turns: u32,
    /// Which tool calls need the user's approval.
    pub approval: ApprovalPolicy,
    /// The permission rules, which decide before `approval` does (deny > ask > allow > policy).
    pub permissions: permissions::PermissionRules,
    /// When the context is compacted.
    pub compaction: CompactionSettings,
    /// The most context all beforeAgent hooks together may add to one turn's requests.
    pub max_added_context_bytes: usize,
    /// The confinement of `shell_exec` (in build mode; plan mode runs it `read-only`).
    pub sandbox: elph_process::sandbox::SandboxPolicy,
    /// Which of Elph's environment variables `shell_exec` passes on.
    pub shell_env: elph_process::shell_env::ShellEnvPolicy,
    /// `build` or `plan`; front ends may switch it between turns.
    pub mode: AgentMode,
    /// Where the native tools may write and which reads are free (in build mode; plan mode writes
    /// nowhere). Front ends build it from `sandbox` with [`FilePolicy::from_sandbox`].
    pub policy: Arc<FilePolicy>,
    /// The read tools' deadline.
    pub read_deadline: Duration,
    /// How many times in a row stop hooks may continue a turn (`{"continue": "…"}`) before the
    /// turn ends anyway.
    pub max_stop_continuations: u32,
    /// The editor's file system, when the front end's client offers it ([`crate::tools::EditorFiles`]).
    pub editor_files: Option<Arc<dyn crate::tools::EditorFiles>>,
    /// A turn that ran at least this long fires a `notification` (`turnDone`) when it ends.
    pub notify_turn_after: Duration,
}

/// Stop hooks may continue a turn this many times in a row unless the front end says otherwise
/// (Claude Code and Copilot stop such loops at 8 too).
pub const DEFAULT_MAX_STOP_CONTINUATIONS: u32 = 8;

impl HarnessConfig {
    /// A configuration with Elph's defaults for session `session_id` working in `project_dir`: build mode, workspace sandbox.
    pub fn new(session_id: impl Into<String>, project_dir: impl Into<PathBuf>) -> Self {
        let project_dir = project_dir.into();
        let sandbox = elph_process::sandbox::SandboxPolicy::workspace(&project_dir);
        HarnessConfig {
            session_id: session_id.into(),
            policy: Arc::new(FilePolicy::from_sandbox(&project_dir, &sandbox)),
            sandbox,
            shell_env: elph_process::shell_env::ShellEnvPolicy::default(),
            project_dir,
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_string(),
            max_turns: DEFAULT_MAX_TURNS,
            approval: ApprovalPolicy::Auto,
            permissions: permissions::PermissionRules::default(),
            compaction: CompactionSettings::default(),
            max_added_context_bytes: crate::hooks::limits::DEFAULT_MAX_ADDED_CONTEXT_BYTES,
            mode: AgentMode::Build,
            read_deadline: DEFAULT_READ_DEADLINE,
            max_stop_continuations: DEFAULT_MAX_STOP_CONTINUATIONS,
            editor_files: None,
            notify_turn_after: DEFAULT_NOTIFY_TURN_AFTER,
        }
    }

    /// The file policy in force in the current mode.
    fn effective_policy(&self) -> Arc<FilePolicy> {
        match self.mode {
            AgentMode::Build => self.policy.clone(),
            AgentMode::Plan => Arc::new((*self.policy).clone().with_write_scope(WriteScope::Nowhere)),
        }
    }

    /// The shell's sandbox in the current mode.
    fn effective_sandbox(&self) -> elph_process::sandbox::SandboxPolicy {
        match self.mode {
            AgentMode::Build => self.sandbox.clone(),
            // Read-only but for the session's temp dir: tests still run while planning.
            AgentMode::Plan => self.sandbox.planning(),
        }
    }

    /// What the model is told about the shell's sandbox in the current mode.
    fn sandbox_block(&self) -> String {
        sandbox_prompt::sandbox_block(&self.effective_sandbox(), self.mode)
    }

    /// The system prompt in the current mode, with the sandbox's rules.
    fn mode_system_prompt(&self) -> String {
        let sandbox = self.sandbox_block();
        match self.mode {
            AgentMode::Build => format!("{}\n\n{sandbox}", self.system_prompt),
            AgentMode::Plan => format!("{}\n\n{PLAN_MODE_PROMPT}\n\n{sandbox}", self.system_prompt),
        }
    }
}

/// How a user turn ended.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnResult {
    /// How the turn ended (what the `stop` hooks were told).
    pub status: StopStatus,
    /// The last assistant text of the turn.
    pub text: String,
    /// Why it failed, in words for the user, when it did.
    pub error: Option<String>,
    /// Why the model's last answer stopped, when that was not a normal end (`maxTokens`,
    /// `contentFilter`, `refusal`, or the provider's own word): the answer may be cut short.
    pub stop_reason: Option<String>,
}

/// Temporary material of one user turn: never stored.
#[derive(Default)]
struct TurnScope {
    system_prompt: String,
    extra_messages: Vec<Message>,
    /// The prompt the model receives: the user's, or what userPromptSubmit hooks replaced it with.
    prompt: String,
    /// The hooks that replaced the prompt, in order (none: the model receives it as sent).
    replaced_by: Vec<String>,
}

/// The agent loop of one session: it sends prompts to the model, runs the tools it calls, fires the hooks around both, and keeps the transcript.
pub struct AgentHarness {
    provider: Arc<dyn Provider>,
    tools: Arc<ToolCatalog>,
    hooks: HookRegistry,
    approver: Arc<dyn Approver>,
    config: HarnessConfig,
    transcript: Transcript,
    events: Option<UnboundedSender<AgentEvent>>,
    allowed_for_session: HashSet<String>,
    last_usage: Option<Usage>,
    started: bool,
    /// The first transcript entry that could not be stored, and why: the front end must not report
    /// such a turn as a success.
    storage_error: Option<String>,
    /// The folders the native file tools act beneath, opened once for the session.
    roots: Arc<crate::tools::HeldRoots>,
    /// Tools that join or change during the session (MCP servers), if the front end has any.
    late_tools: Option<late_tools::LateTools>,
}

/// Awaits `future` unless `cancel` fires first.
async fn unless_cancelled<F: std::future::Future>(
    cancel: &CancellationToken,
    future: F,
) -> Option<F::Output> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => None,
        output = future => Some(output),
    }
}

impl AgentHarness {
    /// A harness with no approver (a call that needs approval is refused), no event stream and an empty transcript.
    pub fn new(
        provider: Arc<dyn Provider>,
        tools: Arc<ToolCatalog>,
        hooks: HookRegistry,
        config: HarnessConfig,
    ) -> Self {
        AgentHarness {
            provider,
            tools,
            hooks,
            approver: Arc::new(NoApprover),
            roots: Arc::new(crate::tools::HeldRoots::holding(config.policy.roots())),
            config,
            transcript: Transcript::new(),
            events: None,
            allowed_for_session: HashSet::new(),
            last_usage: None,
            started: false,
            storage_error: None,
            late_tools: None,
        }
    }

    /// Sets who answers approval requests (a front end with a user).
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Sends [`AgentEvent`]s to `events` as the session runs.
    pub fn with_events(mut self, events: UnboundedSender<AgentEvent>) -> Self {
        self.events = Some(events);
        self
    }

    /// Starts from `transcript` (a resumed session) instead of an empty one.
    pub fn with_transcript(mut self, transcript: Transcript) -> Self {
        self.transcript = transcript;
        self
    }

    /// The configuration in effect.
    pub fn config(&self) -> &HarnessConfig {
        &self.config
    }

    /// The configuration, to change between turns (mode, approval policy).
    pub fn config_mut(&mut self) -> &mut HarnessConfig {
        &mut self.config
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.config.session_id
    }

    /// Everything stored so far.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// The hooks that run around the session's operations.
    pub fn hooks(&self) -> &HookRegistry {
        &self.hooks
    }

    /// The model provider requests go to.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// Sends the next model requests to `provider` (a front end's `/model NAME`); the transcript
    /// and everything else stay.
    pub fn set_provider(&mut self, provider: Arc<dyn Provider>) {
        self.provider = provider;
    }

    fn base(&self) -> PayloadBase {
        PayloadBase::new(self.config.session_id.clone(), self.config.project_dir.clone())
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }

    fn notice(&self, message: impl Into<String>) {
        self.emit(AgentEvent::Notice {
            message: message.into(),
        });
    }

    /// Runs one event's hooks and reports them to the front end, if any hook would run: the
    /// registry is asked once, and `payload` is built only then (for `context` it copies the whole
    /// conversation). `None`: no hook runs for this event.
    async fn fire(
        &self,
        event: HookEvent,
        tool_name: Option<&str>,
        payload: impl FnOnce() -> HookPayload,
    ) -> Option<Dispatch> {
        let interest = self.hooks.interest(event, tool_name)?;
        self.emit(AgentEvent::HooksStarted {
            event,
            tool_name: tool_name.map(str::to_string),
        });
        let dispatch = self.hooks.dispatch_to(interest, payload()).await;
        if !dispatch.runs.is_empty() || !dispatch.diagnostics.is_empty() {
            self.emit(AgentEvent::Hooks {
                dispatch: dispatch.clone(),
            });
        }
        Some(dispatch)
    }

    /// Fires sessionStart once for this session (created or resumed).
    pub async fn start_session(&mut self, source: SessionSource) {
        if self.started {
            return;
        }
        self.started = true;
        self.emit(AgentEvent::SessionStarted {
            session_id: self.config.session_id.clone(),
        });
        self.fire(HookEvent::SessionStart, None, || {
            HookPayload::SessionStart(SessionStartPayload {
                base: self.base(),
                source,
            })
        })
        .await;
    }

    /// Fires sessionEnd on orderly shutdown, then waits for the hooks still running in the
    /// background (async hooks), each within its timeout: none outlives the session.
    pub async fn end_session(&mut self, reason: &str) {
        self.fire(HookEvent::SessionEnd, None, || {
            HookPayload::SessionEnd(SessionEndPayload {
                base: self.base(),
                reason: reason.to_string(),
            })
        })
        .await;
        self.hooks.settle().await;
        self.emit(AgentEvent::SessionEnded {
            reason: reason.to_string(),
        });
    }

    /// Runs one user turn to its end. Cancelling kills running hooks and tools; stop hooks run anyway.
    pub async fn run_turn(&mut self, prompt: &str, cancel: &CancellationToken) -> TurnResult {
        self.run_turn_from_template(prompt, None, cancel).await
    }

    /// [`run_turn`](Self::run_turn) for a prompt expanded from a prompt template: its name reaches
    /// `userPromptSubmit` hooks as `template`.
    pub async fn run_turn_from_template(
        &mut self,
        prompt: &str,
        template: Option<&str>,
        cancel: &CancellationToken,
    ) -> TurnResult {
        self.emit(AgentEvent::TurnStarted {
            prompt: prompt.to_string(),
        });
        let started = std::time::Instant::now();
        let mut result = self.turn(prompt, template, cancel).await;
        let mut continuations = 0;
        loop {
            let stop = self.fire(HookEvent::Stop, None, || {
                HookPayload::Stop(StopPayload {
                    base: self.base(),
                    status: result.status,
                    continuations,
                })
            });
            let next = stop
                .await
                .as_ref()
                .and_then(|dispatch| Stop::reduced_of(&dispatch.reduced))
                .and_then(|reduced| Some((reduced.next_prompt()?, reduced.continue_with.clone())));
            let Some((next, by)) = next else {
                break;
            };
            let hooks: Vec<String> = by.iter().map(|(id, _)| format!("'{id}'")).collect();
            if cancel.is_cancelled() {
                break;
            }
            if continuations >= self.config.max_stop_continuations {
                self.notice(format!(
                    "stop hook {} asked to continue the turn again; it has gone on {continuations} times \
                     in a row, the most allowed (settings.json hooks.maxStopContinuations), so the turn ends",
                    hooks.join(", ")
                ));
                break;
            }
            continuations += 1;
            self.notice(format!(
                "stop hook {} continued the turn ({continuations} of at most {} in a row): {}",
                hooks.join(", "),
                self.config.max_stop_continuations,
                crate::hooks::events::words::quoted(&next, 200)
            ));
            result = self.turn(&next, None, cancel).await;
        }
        match (&result.status, &result.error) {
            (StopStatus::Failed, error) => {
                let error = error.as_deref().unwrap_or("the turn failed");
                self.notify(NotificationKind::Error, format!("the turn failed: {error}"))
                    .await;
            }
            (StopStatus::Completed, _) if started.elapsed() >= self.config.notify_turn_after => {
                let seconds = started.elapsed().as_secs();
                self.notify(
                    NotificationKind::TurnDone,
                    format!("the turn is done after {seconds} s"),
                )
                .await;
            }
            (StopStatus::Completed | StopStatus::Cancelled, _) => {}
        }
        self.emit(AgentEvent::TurnEnded {
            status: result.status,
            error: result.error.clone(),
        });
        result
    }

    /// Tells the `notification` hooks that Elph needs the user.
    pub(crate) async fn notify(&self, kind: NotificationKind, message: String) {
        self.fire(HookEvent::Notification, None, || {
            HookPayload::Notification(NotificationPayload {
                base: self.base(),
                kind,
                message,
            })
        })
        .await;
    }

    fn cancelled(&self, text: String) -> TurnResult {
        TurnResult {
            status: StopStatus::Cancelled,
            text,
            error: Some("cancelled".into()),
            stop_reason: None,
        }
    }

    /// The turn a fail-closed prompt or context hook stopped: the provider request is not sent.
    fn failed_closed(failed: &FailedClosed, text: String) -> TurnResult {
        TurnResult {
            status: StopStatus::Failed,
            text,
            error: Some(format!("{}; the model request was not sent", failed.reason())),
            stop_reason: None,
        }
    }

    fn store(&mut self, message: Message) {
        if let Err(err) = self.transcript.push_message(message) {
            self.notice(format!("could not store the transcript entry: {err}"));
            self.storage_error.get_or_insert(err);
        }
    }

    /// Why an entry of this session could not be stored, if one could not: the session on disk is
    /// missing part of what was shown.
    pub fn storage_error(&self) -> Option<&str> {
        self.storage_error.as_deref()
    }

    async fn turn(&mut self, prompt: &str, template: Option<&str>, cancel: &CancellationToken) -> TurnResult {
        let scope = match self.open_turn(prompt, template, cancel).await {
            Ok(scope) => scope,
            Err(ended) => return *ended,
        };
        if !scope.replaced_by.is_empty() {
            // The transcript keeps what the user sent, marked, then what the model received.
            if let Err(err) = self.transcript.push(Entry::PromptReplaced {
                original: prompt.to_string(),
                replaced_by: scope.replaced_by.clone(),
            }) {
                self.notice(format!("could not store the transcript entry: {err}"));
                self.storage_error.get_or_insert(err);
            }
        }
        self.store(Message::user(scope.prompt.clone()));
        let mut last_text = String::new();
        for _ in 0..self.config.max_turns {
            if self.compact_if_needed(&scope, cancel).await == Some(CompactOutcome::Interrupted) {
                return self.cancelled(last_text);
            }
            let answer = match self.request(&scope, cancel, &last_text).await {
                Ok(answer) => answer,
                Err(ended) => return *ended,
            };
            if let Some(usage) = answer.usage {
                self.last_usage = Some(usage);
                self.emit(AgentEvent::Usage { usage });
            }
            last_text = answer.text.clone();
            self.emit(AgentEvent::AssistantMessage {
                text: answer.text.clone(),
                tool_calls: answer.tool_calls.clone(),
            });
            self.store(Message::assistant(answer.text, answer.tool_calls.clone()));
            if let Some(explanation) = answer.stop_reason.explain() {
                self.notice(format!(
                    "{explanation} (stop reason: {})",
                    answer.stop_reason.name()
                ));
            }
            if answer.tool_calls.is_empty() {
                if answer.stop_reason == StopReason::PauseTurn {
                    // The provider paused a long turn of its own: sending the conversation back
                    // (the paused answer last) lets it go on.
                    continue;
                }
                return TurnResult {
                    status: StopStatus::Completed,
                    text: last_text,
                    error: None,
                    stop_reason: (!answer.stop_reason.is_normal()).then(|| answer.stop_reason.name()),
                };
            }
            let all_terminate = match self.run_tools(&answer.tool_calls, cancel, &last_text).await {
                Ok(all_terminate) => all_terminate,
                Err(ended) => return *ended,
            };
            if all_terminate {
                self.notice("a postToolUse hook asked to end the turn (terminate)");
                return TurnResult {
                    status: StopStatus::Completed,
                    text: last_text,
                    error: None,
                    stop_reason: None,
                };
            }
        }
        TurnResult {
            status: StopStatus::Failed,
            text: last_text,
            error: Some(format!(
                "stopped after {} model requests in one turn (raise --max-turns to allow more)",
                self.config.max_turns
            )),
            stop_reason: None,
        }
    }

    /// The turn's opening hooks, userPromptSubmit then beforeAgent, and what beforeAgent added
    /// (the system prompt and messages for this turn). `Err` is how the turn ended instead.
    async fn open_turn(
        &mut self,
        prompt: &str,
        template: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<TurnScope, Box<TurnResult>> {
        let submitted = self.fire(HookEvent::UserPromptSubmit, None, || {
            HookPayload::UserPromptSubmit(UserPromptSubmitPayload {
                base: self.base(),
                prompt: prompt.into(),
                template: template.map(str::to_string),
            })
        });
        let Some(submitted) = unless_cancelled(cancel, submitted).await else {
            return Err(Box::new(self.cancelled(String::new())));
        };
        if let Some(failed) = submitted.as_ref().and_then(Dispatch::failed_closed) {
            return Err(Box::new(Self::failed_closed(&failed, String::new())));
        }
        let (prompt, replaced_by) = match submitted
            .as_ref()
            .and_then(|submitted| UserPromptSubmit::reduced_of(&submitted.reduced))
        {
            Some(reduced) => (
                reduced.prompt.as_deref().unwrap_or(prompt).to_string(),
                reduced.replaced_by.clone(),
            ),
            None => (prompt.to_string(), Vec::new()),
        };
        let prompt = prompt.as_str();

        let mode_prompt = self.config.mode_system_prompt();
        let before = self.fire(HookEvent::BeforeAgent, None, || {
            HookPayload::BeforeAgent(BeforeAgentPayload {
                base: self.base(),
                prompt: prompt.into(),
                system_prompt: mode_prompt.clone(),
            })
        });
        let Some(before) = unless_cancelled(cancel, before).await else {
            return Err(Box::new(self.cancelled(String::new())));
        };
        if let Some(failed) = before.as_ref().and_then(Dispatch::failed_closed) {
            return Err(Box::new(Self::failed_closed(&failed, String::new())));
        }
        let mut scope = TurnScope {
            system_prompt: mode_prompt.clone(),
            prompt: prompt.to_string(),
            replaced_by,
            ..Default::default()
        };
        if let Some(before) = before
            .as_ref()
            .and_then(|before| BeforeAgent::reduced_of(&before.reduced))
        {
            let mut before = before.clone();
            let cap = self.config.max_added_context_bytes;
            let (dropped, bytes) = before.cap_added_context(cap);
            if dropped > 0 {
                self.notice(format!(
                    "beforeAgent hooks added more than {cap} bytes of context in total; {dropped} later \
                     addition(s) ({bytes} bytes) were dropped (settings.json hooks.maxAddedContextBytes)"
                ));
            }
            scope.system_prompt = before.system_prompt(&mode_prompt);
            scope.extra_messages = before.messages;
        }
        Ok(scope)
    }

    /// One model request: the context hooks, then the streamed answer (shown as it comes).
    /// `Err` is how the turn ended instead (cancelled, a fail-closed hook, the provider's error).
    async fn request(
        &mut self,
        scope: &TurnScope,
        cancel: &CancellationToken,
        last_text: &str,
    ) -> Result<Turn, Box<TurnResult>> {
        let messages = self.request_messages(scope);
        let context = self.fire(HookEvent::Context, None, || {
            HookPayload::Context(ContextPayload {
                base: self.base(),
                messages: messages.clone(),
            })
        });
        let Some(context) = unless_cancelled(cancel, context).await else {
            return Err(Box::new(self.cancelled(last_text.to_string())));
        };
        if let Some(failed) = context.as_ref().and_then(Dispatch::failed_closed) {
            return Err(Box::new(Self::failed_closed(&failed, last_text.to_string())));
        }
        let messages = context
            .as_ref()
            .and_then(|context| Context::reduced_of(&context.reduced))
            .and_then(|reduced| reduced.messages.clone())
            .unwrap_or(messages);
        self.refresh_tools();
        let request = Request {
            system_prompt: self.with_late_note(&scope.system_prompt),
            messages,
            tools: self.offered_tools(),
            max_tokens: None,
        };
        // The answer as it streams: shown to the front end, kept as a draft by the store (a
        // crash loses nothing already shown), and stored if the stream ends early.
        let streamed = Arc::new(std::sync::Mutex::new(String::new()));
        let events = self.events.clone();
        let sink = self.transcript.sink();
        let shown = streamed.clone();
        let mut on_event = move |event: StreamEvent| {
            if let StreamEvent::TextDelta(text) = event {
                let mut shown = shown.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                shown.push_str(&text);
                if let Some(sink) = &sink {
                    let _ = sink.save_draft(&shown);
                }
                if let Some(events) = &events {
                    let _ = events.send(AgentEvent::TextDelta { text });
                }
            }
        };
        let provider = self.provider.clone();
        self.emit(AgentEvent::ModelRequestStarted);
        let outcome = unless_cancelled(cancel, provider.stream(&request, &mut on_event)).await;
        drop(on_event);
        let partial = std::mem::take(&mut *streamed.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        let answer = match outcome {
            None => {
                self.store_partial(partial);
                return Err(Box::new(self.cancelled(last_text.to_string())));
            }
            Some(Err(err)) => {
                self.store_partial(partial);
                return Err(Box::new(TurnResult {
                    status: StopStatus::Failed,
                    text: last_text.to_string(),
                    error: Some(err.to_string()),
                    stop_reason: None,
                }));
            }
            Some(Ok(turn)) => turn,
        };
        Ok(answer)
    }

    /// Runs the answer's tool calls in order and stores their results; `Ok(true)` if every call's
    /// postToolUse hooks asked to end the turn. A cancel stores the calls not run as cancelled.
    async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
        last_text: &str,
    ) -> Result<bool, Box<TurnResult>> {
        let mut all_terminate = true;
        let ctx = ToolContext {
            project_dir: self.config.project_dir.clone(),
            sandbox: self.config.effective_sandbox(),
            shell_env: self.config.shell_env.clone(),
            policy: self.config.effective_policy(),
            read_deadline: self.config.read_deadline,
            exact_call_approved: false,
            roots: self.roots.clone(),
            judged: None,
            editor: self.config.editor_files.clone(),
        };
        for (index, call) in calls.iter().enumerate() {
            let Some(done) = unless_cancelled(cancel, self.tool_call(call, &ctx)).await else {
                for pending in &calls[index..] {
                    self.store(Message::tool_result(
                        pending.id.clone(),
                        vec![crate::messages::ContentBlock::text("cancelled by the user")],
                        true,
                    ));
                }
                return Err(Box::new(self.cancelled(last_text.to_string())));
            };
            all_terminate &= done.terminate;
            self.store(Message::tool_result(call.id.clone(), done.content, done.is_error));
        }
        Ok(all_terminate)
    }

    /// Keeps the part of an answer that was shown before its stream ended early (cancel, error).
    fn store_partial(&mut self, partial: String) {
        if !partial.trim().is_empty() {
            self.store(Message::assistant(partial, Vec::new()));
        }
    }

    /// The provider-bound messages of the next request: the stored context with this turn's
    /// temporary beforeAgent messages right after the turn's prompt.
    fn request_messages(&self, scope: &TurnScope) -> Vec<Message> {
        let mut messages = self.transcript.context_messages();
        if !scope.extra_messages.is_empty() {
            let at = messages
                .iter()
                .rposition(|message| matches!(message, Message::User { .. }))
                .map_or(messages.len(), |index| index + 1);
            messages.splice(at..at, scope.extra_messages.iter().cloned());
        }
        messages
    }

    /// The tools the model is offered in the current mode.
    pub fn offered_tools(&self) -> Vec<elph_ai::ToolSpec> {
        let mut specs = match self.config.mode {
            AgentMode::Build => self.tools.specs(),
            AgentMode::Plan => self.tools.specs_where(|tool| tool.offered_in_plan_mode()),
        };
        let sandboxed: Vec<String> = self
            .tools
            .names()
            .filter(|name| self.tools.get(name).is_some_and(|tool| tool.runs_sandboxed()))
            .map(str::to_string)
            .collect();
        if !sandboxed.is_empty() {
            let block = self.config.sandbox_block();
            for spec in specs.iter_mut().filter(|spec| sandboxed.contains(&spec.name)) {
                spec.description = format!("{}\n\n{block}", spec.description);
            }
        }
        specs
    }

    /// The agent mode for the next turns.
    pub fn mode(&self) -> AgentMode {
        self.config.mode
    }

    /// Switches the agent mode; it applies from the next model request on.
    pub fn set_mode(&mut self, mode: AgentMode) {
        self.config.mode = mode;
    }
}
