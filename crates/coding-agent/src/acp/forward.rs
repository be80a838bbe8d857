//! One session's events as the client sees them, in the order they happened: the harness's events
//! as `session/update` notifications (text as agent message chunks, tool calls with kind, status
//! and content, hook notices as paragraphs marked `[hook]`), approval questions as
//! `session/request_permission`, and each operation's outcome as the answer to its prompt (with a
//! message in Elph's words for a slash command).

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, ConfigOptionUpdate, ContentBlock, ContentChunk, CurrentModeUpdate, Notice,
    NoticeSeverity, PromptResponse, SessionId, SessionInfoUpdate, SessionNotification, SessionUpdate,
    StopReason, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use elph_agent::harness::{AgentEvent, AgentMode, CompactOutcome, TurnResult};
use elph_agent::hooks::StopStatus;

use super::approval;
use super::commands;
use super::config::ConfigState;
use super::session::{Opening, Waiting, lock};
use super::updates::{
    self, ELPH_MARK, HOOK_MARK, HOOK_PROBLEM_MARK, finished_update, rewritten_update, status_update,
    tool_call,
};
use crate::notices::{self, NoticeKind};
use crate::session::wording;
use crate::session::{HookState, ModelOutcome, Outcome, SessionEvent, SessionEvents, TrustOutcome};

/// The start of the hook-set diagnostic that an untrusted project's message replaces.
const SKIPPED_UNTRUSTED: &str = "project hooks skipped until";
/// The start of the trust decision's diagnostic for a project that changed since it was trusted.
const SKIPPED_CHANGED: &str = "project hooks and MCP servers skipped:";

/// Turns one session's events into what the client receives.
pub(crate) struct Forwarder {
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    project_dir: PathBuf,
    /// The `session/new` or `session/load` to answer once sessionStart has run.
    opening: Option<Opening>,
    waiting: Waiting,
    /// The harness's events before the client knows the session (sessionStart's hook notices).
    early: Vec<AgentEvent>,
    /// Its mode and model as config options.
    config: ConfigState,
    /// The model's context window, the `size` of each `usage_update`.
    context_window: u64,
    /// Whether the client has the session's title (a resumed session has one already).
    titled: bool,
    /// The mode the session runs in now: a plan-mode answer is sent as a plan too.
    mode: AgentMode,
    /// The diff of each file-changing call not finished yet: its last update keeps it beside the
    /// result.
    diffs: HashMap<String, ToolCallContent>,
    /// The elicitation modes the client declared: (form, url).
    elicitation: (bool, bool),
    /// The client shows `notice` updates (it declared `session.notices`): Elph's notices that
    /// come while no prompt runs are sent at once as one.
    live_notices: bool,
    /// Notices that came while no prompt ran, for a client without `notice` updates: they are
    /// said at the start of the next prompt's answer.
    held: Vec<String>,
}

impl Forwarder {
    pub(super) fn new(
        cx: ConnectionTo<Client>,
        session_id: SessionId,
        project_dir: PathBuf,
        opening: Opening,
        waiting: Waiting,
        config: ConfigState,
    ) -> Self {
        Forwarder {
            cx,
            session_id,
            project_dir,
            opening: Some(opening),
            waiting,
            early: Vec::new(),
            config,
            context_window: 0,
            titled: false,
            mode: AgentMode::default(),
            diffs: HashMap::new(),
            elicitation: (false, false),
            live_notices: false,
            held: Vec::new(),
        }
    }

    /// Whether the client shows `notice` updates, between turns.
    pub(crate) fn with_live_notices(mut self, live: bool) -> Self {
        self.live_notices = live;
        self
    }

    /// Whether a prompt of the client's is being answered.
    fn prompting(&self) -> bool {
        !lock(&self.waiting).is_empty()
    }

    /// One of Elph's notices: in a prompt's answer as a thought, between prompts as a `notice`
    /// update when the client shows them, else held for the next prompt.
    fn elph_notice(&mut self, message: String) {
        if self.prompting() {
            self.release_held();
            self.notice(ELPH_MARK, &message);
        } else if self.live_notices {
            self.notify(SessionUpdate::Notice(Notice::new(NoticeSeverity::Info, message)));
        } else {
            self.held.push(message);
        }
    }

    /// The notices held since the last prompt, now that one is answered.
    fn release_held(&mut self) {
        for message in std::mem::take(&mut self.held) {
            self.notice(ELPH_MARK, &message);
        }
    }

    /// MCP servers' questions go to the client in the modes it declared (form, url).
    pub(crate) fn with_elicitation(mut self, modes: (bool, bool)) -> Self {
        self.elicitation = modes;
        self
    }

    /// Notices to give the client first, once it knows the session (about the editor's own MCP
    /// servers, for example).
    pub(crate) fn with_notices(mut self, notices: impl Iterator<Item = String>) -> Self {
        self.early
            .extend(notices.map(|message| AgentEvent::Notice { message }));
        self
    }

    /// Forwards until the session has ended.
    pub(super) async fn run(mut self, mut events: SessionEvents) {
        let mut hooks = None;
        let mut mode = elph_agent::harness::AgentMode::default();
        while let Some(event) = events.recv().await {
            if !self.held.is_empty() && self.prompting() {
                self.release_held();
            }
            match event {
                SessionEvent::Opened(opened) => {
                    // `session/load` replays the conversation before it answers.
                    let replays = self.opening.as_ref().is_some_and(Opening::replays);
                    if opened.resumed && replays {
                        let entries = &opened.entries;
                        for update in updates::history(&self.session_id, entries, &self.project_dir) {
                            let _ = self.cx.send_notification(update);
                        }
                    }
                    hooks = Some(opened.hooks);
                    mode = opened.mode;
                    self.mode = opened.mode;
                    self.config.set_mode(opened.mode);
                    self.config.set_model(&opened.model);
                    self.context_window = opened.context_window;
                    self.titled = opened.resumed && !opened.entries.is_empty();
                }
                SessionEvent::Ready => {
                    if let Some(opening) = self.opening.take() {
                        opening.succeed(&self.session_id, mode, self.config.options());
                    }
                    // Now that the client knows the session: its commands and what it should know
                    // about the project's hooks; then the hook notices of sessionStart.
                    if let Some(hooks) = &hooks {
                        self.advertise_commands(hooks);
                        for (mark, line) in hook_set_notices(hooks) {
                            let _ = self
                                .cx
                                .send_notification(updates::notice(&self.session_id, mark, &line));
                        }
                    }
                    // With the session's opening, as it always was: its notices as thoughts.
                    for event in std::mem::take(&mut self.early) {
                        match event {
                            AgentEvent::Notice { message } => self.notice(ELPH_MARK, &message),
                            event => self.forward(event),
                        }
                    }
                }
                SessionEvent::Agent(event) if self.opening.is_some() => self.early.push(event),
                SessionEvent::Agent(event) => self.forward(event),
                SessionEvent::Approval(question) => {
                    // Asked in a task of its own: a cancel must still reach the prompt's answer.
                    tokio::spawn(approval::ask(
                        self.cx.clone(),
                        self.session_id.clone(),
                        question,
                        self.project_dir.clone(),
                    ));
                }
                SessionEvent::Elicitation(question) => {
                    // In a task of its own, as an approval: the turn goes on meanwhile.
                    tokio::spawn(super::elicitation::ask(
                        self.cx.clone(),
                        self.session_id.clone(),
                        question,
                        self.elicitation,
                    ));
                }
                SessionEvent::Context { .. } => {}
                // The commands are advertised once the client knows the session (at `Ready`).
                SessionEvent::Commands(state) => {
                    if self.opening.is_none() {
                        self.advertise_commands(&state);
                    }
                    hooks = Some(state);
                }
                SessionEvent::Finished { op, outcome } if self.config.was_quiet(op) => {
                    self.config_changed(&outcome);
                }
                SessionEvent::Finished { op, outcome } => {
                    let answer = self.answer(outcome);
                    if let Some(responder) = lock(&self.waiting).remove(&op) {
                        let _ = responder.respond_with_result(answer);
                    }
                }
                SessionEvent::Ended { .. } => break,
            }
        }
    }

    fn notify(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session_id.clone(), update);
        if let Err(err) = self.cx.send_notification(notification) {
            tracing::debug!("session/update not sent: {err}");
        }
    }

    /// A message from Elph to the user, as part of the agent's message.
    fn say(&self, text: impl Into<String>) {
        let _ = self
            .cx
            .send_notification(updates::agent_text(&self.session_id, text));
    }

    fn text(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        self.notify(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(text),
        )));
    }

    /// A notice outside the answer text.
    fn notice(&mut self, mark: &str, text: &str) {
        let notification = updates::notice(&self.session_id, mark, text);
        if let Err(err) = self.cx.send_notification(notification) {
            tracing::debug!("session/update not sent: {err}");
        }
    }

    /// A `set_config_option` has been carried out: the mode is told as `set_mode` tells it; a model
    /// switch that failed is said as a notice, with the options as they really are.
    fn config_changed(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Mode(Ok(mode)) => {
                self.mode = *mode;
                self.config.set_mode(*mode);
                self.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    mode.as_str(),
                )));
            }
            Outcome::Model(ModelOutcome::Failed { error, current }) => {
                self.config.set_model(current);
                self.notice(ELPH_MARK, &format!("the model stays {current}: {error}"));
                self.send_config();
            }
            Outcome::Model(ModelOutcome::Switched(model)) if *model != self.config.model() => {
                self.config.set_model(model);
                self.send_config();
            }
            _ => {}
        }
    }

    fn send_config(&self) {
        self.notify(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
            self.config.options(),
        )));
    }

    /// The commands offered to editors, with exactly one of `/trust` and `/untrust`.
    fn advertise_commands(&self, hooks: &HookState) {
        let available = commands::available(&hooks.trust, &hooks.workflows);
        self.notify(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(available),
        ));
    }

    fn forward(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::TextDelta { text } => self.text(text),
            AgentEvent::ToolCallStarted {
                tool_call_id,
                tool_name,
                input,
            } => {
                let call = tool_call(&tool_call_id, &tool_name, &input, &self.project_dir);
                if let Some(diff) = call.content.first() {
                    self.diffs.insert(tool_call_id, diff.clone());
                }
                self.notify(SessionUpdate::ToolCall(call));
            }
            AgentEvent::ToolInputRewritten {
                tool_call_id,
                tool_name,
                input,
            } => {
                let diff = updates::tool_diff(&tool_name, &input, &self.project_dir);
                match &diff {
                    Some(diff) => self.diffs.insert(tool_call_id.clone(), diff.clone()),
                    None => self.diffs.remove(&tool_call_id),
                };
                let update = rewritten_update(&tool_call_id, input, diff);
                self.notify(SessionUpdate::ToolCallUpdate(update));
            }
            // The reviewed change: a write's diff now has its old text (or says the file is new).
            AgentEvent::ToolChangeProposed {
                tool_call_id, change, ..
            } => {
                let Some(diff) = updates::diff(&change, &self.project_dir) else {
                    return;
                };
                if self.diffs.get(&tool_call_id) != Some(&diff) {
                    self.diffs.insert(tool_call_id.clone(), diff.clone());
                    let update =
                        ToolCallUpdate::new(tool_call_id, ToolCallUpdateFields::new().content(vec![diff]));
                    self.notify(SessionUpdate::ToolCallUpdate(update));
                }
            }
            AgentEvent::ToolStarted { tool_call_id, .. } => {
                let update = status_update(&tool_call_id, ToolCallStatus::InProgress);
                self.notify(SessionUpdate::ToolCallUpdate(update));
            }
            AgentEvent::ApprovalNeeded { tool_call_id, .. } => {
                let update = status_update(&tool_call_id, ToolCallStatus::Pending);
                self.notify(SessionUpdate::ToolCallUpdate(update));
            }
            AgentEvent::ToolCallFinished {
                tool_call_id,
                content,
                details,
                is_error,
                ran,
                ..
            } => {
                let diff = self.diffs.remove(&tool_call_id);
                let update = finished_update(&tool_call_id, diff, &content, &details, is_error, ran);
                self.notify(SessionUpdate::ToolCallUpdate(update));
            }
            AgentEvent::Hooks { dispatch } => {
                for notice in notices::describe(&dispatch) {
                    let mark = match notice.kind {
                        NoticeKind::Effect => HOOK_MARK,
                        NoticeKind::Problem | NoticeKind::Warning => HOOK_PROBLEM_MARK,
                    };
                    self.notice(mark, &notice.text);
                }
            }
            AgentEvent::Notice { message } => self.elph_notice(message),
            AgentEvent::Compacted { entries_compacted } => {
                let text = format!("compacted {entries_compacted} earlier message(s) into a summary");
                self.notice(ELPH_MARK, &text);
            }
            // The first prompt names the session, as `elph sessions` shows it.
            AgentEvent::TurnStarted { prompt } if !self.titled => {
                self.titled = true;
                let title = crate::store::one_line(&prompt, crate::store::TITLE_CHARS);
                if !title.is_empty() {
                    self.notify(SessionUpdate::SessionInfoUpdate(
                        SessionInfoUpdate::new().title(title),
                    ));
                }
            }
            // After each model request: the context it filled, of the model's window.
            AgentEvent::Usage { usage } => {
                let used = usage.input_tokens + usage.output_tokens;
                self.notify(SessionUpdate::UsageUpdate(UsageUpdate::new(
                    used,
                    self.context_window,
                )));
            }
            // Plan mode's final answer is the plan.
            AgentEvent::AssistantMessage { text, tool_calls }
                if self.mode == AgentMode::Plan && tool_calls.is_empty() =>
            {
                if let Some(plan) = super::plan::from_answer(&text) {
                    self.notify(SessionUpdate::Plan(plan));
                }
            }
            AgentEvent::SessionStarted { .. }
            | AgentEvent::TurnStarted { .. }
            | AgentEvent::HooksStarted { .. }
            | AgentEvent::ModelRequestStarted
            | AgentEvent::AssistantMessage { .. }
            | AgentEvent::TurnEnded { .. }
            | AgentEvent::SessionEnded { .. } => {}
        }
    }

    /// The answer to the prompt whose operation ended with `outcome`; a slash command's result is
    /// said as a message first (the model is not involved).
    fn answer(&mut self, outcome: Outcome) -> Result<PromptResponse, Error> {
        // What the session's words leave to ACP: a turn's and a cancelled compaction's stop
        // reasons, the commands a changed hook set offers, the mode the client is in now.
        match &outcome {
            Outcome::Turn(_) => {}
            Outcome::Compaction(CompactOutcome::Interrupted) => {
                return Ok(PromptResponse::new(StopReason::Cancelled));
            }
            Outcome::Reloaded(hooks)
            | Outcome::Trust {
                outcome: TrustOutcome::Changed(hooks),
                ..
            } => self.advertise_commands(hooks),
            Outcome::Model(ModelOutcome::Switched(model)) if *model != self.config.model() => {
                self.config.set_model(model);
                self.send_config();
            }
            // From `session/set_mode`, answered already: the client hears the mode it is in now.
            Outcome::Mode(Ok(mode)) => {
                self.mode = *mode;
                self.config.set_mode(*mode);
                self.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    mode.as_str(),
                )));
                self.send_config();
                return Ok(end_turn());
            }
            _ => {}
        }
        let Some(said) = wording::said(&outcome) else {
            return match outcome {
                Outcome::Turn(result) => self.turn_answer(result),
                _ => Ok(end_turn()),
            };
        };
        let mut lines = vec![said.text];
        // A reload or a trust that turned the project's hooks on lists the set's notices.
        if let Outcome::Reloaded(hooks)
        | Outcome::Trust {
            trust: true,
            outcome: TrustOutcome::Changed(hooks),
        } = &outcome
        {
            lines.extend(marked(hook_set_notices(hooks)));
        }
        self.say(lines.join("\n\n"));
        Ok(end_turn())
    }

    fn turn_answer(&self, result: TurnResult) -> Result<PromptResponse, Error> {
        match result.status {
            StopStatus::Completed => Ok(end_turn()),
            StopStatus::Cancelled => Ok(PromptResponse::new(StopReason::Cancelled)),
            StopStatus::Failed => {
                tracing::warn!(session = %self.session_id.0, error = ?result.error, "the turn failed");
                Err(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    result.error.unwrap_or_else(|| "the turn failed".into()),
                ))
            }
        }
    }
}

fn end_turn() -> PromptResponse {
    PromptResponse::new(StopReason::EndTurn)
}

/// Notices as lines of a message.
fn marked(notices: Vec<(&'static str, String)>) -> impl Iterator<Item = String> {
    notices.into_iter().map(|(mark, line)| format!("{mark} {line}"))
}

/// What the user should know about the hook set, one notice each with its mark: that an untrusted
/// project's hooks are off and how to trust it, and every other diagnostic.
fn hook_set_notices(hooks: &HookState) -> Vec<(&'static str, String)> {
    let trusted = hooks.trust.trusted;
    let changes = hooks.trust.changes().map(|changes| changes.summary());
    let mut lines = Vec::new();
    if !trusted {
        let message = match &changes {
            Some(changes) => commands::changed_message(&hooks.project_dir, changes),
            None => commands::untrusted_message(&hooks.project_dir),
        };
        lines.push((ELPH_MARK, message));
    }
    for diagnostic in &hooks.set.diagnostics {
        if !trusted && diagnostic.message.starts_with(SKIPPED_UNTRUSTED) {
            continue;
        }
        // The message above says it (the decision's own diagnostic, from the trust store).
        if changes.is_some() && diagnostic.message.starts_with(SKIPPED_CHANGED) {
            continue;
        }
        lines.push((HOOK_PROBLEM_MARK, diagnostic.to_string()));
    }
    lines
}
