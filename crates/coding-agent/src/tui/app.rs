//! The TUI's state and how it changes: `App::update(msg)` for every key, paste, tick and message
//! from the agent. Nothing here draws or touches the terminal, so it is tested as plain data; what
//! the agent must do goes to an outbox (`take_commands`).

use std::cell::Cell;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use elph_agent::harness::{AgentMode, ApprovalDecision, ApprovalRequest};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

mod agent;
mod questions;

use super::commands::{self, PaletteEntry, SlashCommand, help_panel};
use super::composer::Composer;
use super::hookview::{self, HooksView, RunInfo};
pub use super::items::{Item, Panel, PanelLine, Tone, ToolItem, ToolState};
use super::worker::{Level, Op, UiMsg};
use crate::session::route::{Route, route};
use crate::store::SessionInfo;

/// What the spinner says while the session carries out `op`.
fn busy_label(op: &Op) -> &'static str {
    match op {
        Op::Prompt { .. } => "working",
        Op::Compact { .. } => "compacting",
        Op::Reload => "reloading hooks",
        Op::Trust => "trusting the project",
        Op::Untrust => "untrusting the project",
        Op::New => "starting a new session",
        Op::Resume(_) => "resuming",
        Op::ListSessions => "listing sessions",
        Op::SetMode(_) => "switching mode",
        Op::Model(_) => "switching model",
        Op::End { .. } => "ending the session",
    }
}

/// Two Ctrl+C within this time exit.
pub(crate) const DOUBLE_PRESS: Duration = Duration::from_millis(1000);
/// How long a hint stays in the footer.
const HINT_TIME: Duration = Duration::from_secs(3);

#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "moved once, from the channel into `update`"
)]
pub enum Msg {
    Key(KeyEvent),
    Paste(String),
    Tick(Instant),
    Worker(UiMsg),
}

#[derive(Debug)]
pub enum Modal {
    Approval {
        /// Boxed: the question's arguments, title and proposed change make it the largest modal.
        request: Box<ApprovalRequest>,
        /// The diff of a write or an edit.
        preview: Option<crate::session::preview::ChangePreview>,
        reply: Option<oneshot::Sender<ApprovalDecision>>,
        selected: usize,
    },
    Sessions {
        sessions: Vec<SessionInfo>,
        selected: usize,
    },
    /// An MCP server's question.
    Elicitation(Box<super::elicitation::ElicitationForm>),
    /// After `/reload`: the trusted project changed since it was trusted; trust the new content?
    Trust {
        project: String,
        changes: Vec<String>,
        selected: usize,
    },
}

pub(crate) const TRUST_CHOICES: [&str; 2] = [
    "Yes, trust the new content",
    "No, keep its hooks and MCP servers off",
];

/// The answers offered to `request`, in order: once; for the session and, for one plain command,
/// always (which saves an allow rule) where the question is the approval policy's; no. A
/// protected write, a hook's `ask`, an ask rule and a re-run the sandbox refused are approved one
/// call at a time.
pub(crate) fn approval_choices(request: &ApprovalRequest) -> Vec<(String, ApprovalDecision)> {
    let mut choices = vec![(
        match request.escalation {
            Some(escalation) => format!("Yes, run it again {}", escalation.describe()),
            None => "Yes, once".to_string(),
        },
        ApprovalDecision::AllowOnce,
    )];
    if request.offers_session {
        choices.push(("Yes, for this session".into(), ApprovalDecision::AllowForSession));
    }
    if let Some(rule) = &request.suggested_rule {
        choices.push((
            format!("Yes, always allow {rule} (saved in settings.json)"),
            ApprovalDecision::AllowAlways,
        ));
    }
    choices.push(("No, deny".into(), ApprovalDecision::Deny));
    choices
}

/// The agent is working on a command.
#[derive(Debug)]
pub struct Busy {
    pub label: String,
    pub since: Instant,
    /// The running turn's (or compaction's) token, for Ctrl+C.
    pub cancel: Option<CancellationToken>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    pub project_dir: String,
    pub model: String,
    pub session_id: String,
    pub context_tokens: u64,
    pub context_window: u64,
    pub mode: AgentMode,
}

#[derive(Debug)]
pub struct App {
    pub items: Vec<Item>,
    pub composer: Composer,
    pub(crate) palette_selected: usize,
    pub(crate) palette_dismissed: bool,
    pub modal: Option<Modal>,
    pub status: Status,
    pub hooks: HooksView,
    pub recent_runs: Vec<RunInfo>,
    pub busy: Option<Busy>,
    pub now: Instant,
    pub(crate) expand_tools: bool,
    /// Rows scrolled up from the bottom of the transcript (0: follow the end).
    pub(crate) scroll: usize,
    /// The largest useful `scroll` and the transcript's height, as last drawn.
    pub(crate) scroll_max: Cell<usize>,
    pub page: Cell<usize>,
    pub hint: Option<(String, Instant)>,
    pub quitting: bool,
    pub exit: bool,
    last_ctrl_c: Option<Instant>,
    outbox: Vec<Op>,
    /// MCP servers' questions that came while another modal was open, shown after it.
    questions: std::collections::VecDeque<crate::session::PendingElicitation>,
}

impl App {
    pub fn new(now: Instant) -> Self {
        App {
            items: Vec::new(),
            composer: Composer::new(),
            palette_selected: 0,
            palette_dismissed: false,
            modal: None,
            status: Status::default(),
            hooks: HooksView::default(),
            recent_runs: Vec::new(),
            busy: Some(Busy {
                label: "starting the session".into(),
                since: now,
                cancel: None,
            }),
            now,
            expand_tools: false,
            scroll: 0,
            scroll_max: Cell::new(0),
            page: Cell::new(10),
            hint: None,
            quitting: false,
            exit: false,
            last_ctrl_c: None,
            outbox: Vec::new(),
            questions: std::collections::VecDeque::new(),
        }
    }

    /// What the agent should do next, in order.
    pub fn take_commands(&mut self) -> Vec<Op> {
        std::mem::take(&mut self.outbox)
    }

    /// The palette's entries, when it is open.
    pub fn palette(&self) -> Option<Vec<PaletteEntry>> {
        if self.palette_dismissed || self.modal.is_some() {
            return None;
        }
        commands::palette_matches(self.composer.text(), self.hooks.offered, &self.hooks.workflows)
    }

    pub fn hint(&self) -> Option<&str> {
        self.hint
            .as_ref()
            .filter(|(_, at)| self.now.saturating_duration_since(*at) < HINT_TIME)
            .map(|(text, _)| text.as_str())
    }

    pub fn update(&mut self, msg: Msg) {
        match msg {
            Msg::Key(key) => {
                if key.kind != KeyEventKind::Release {
                    self.key(key);
                }
            }
            Msg::Paste(text) => {
                if let Some(Modal::Elicitation(form)) = &mut self.modal {
                    form.paste(&text);
                } else if self.modal.is_none() {
                    self.composer.insert_str(&text);
                    self.input_changed();
                }
            }
            Msg::Tick(now) => {
                self.now = now;
                self.drop_withdrawn_question();
            }
            Msg::Worker(msg) => self.worker(msg),
        }
    }

    /// Applies what the session said, in order.
    pub(crate) fn update_all(&mut self, messages: Vec<UiMsg>) {
        for message in messages {
            self.update(Msg::Worker(message));
        }
    }

    fn set_hint(&mut self, text: impl Into<String>) {
        self.hint = Some((text.into(), self.now));
    }

    fn push_notice(&mut self, level: Level, text: impl Into<String>) {
        self.items.push(Item::Notice {
            level,
            text: text.into(),
        });
    }

    fn start(&mut self, label: &str, command: Op, cancel: Option<CancellationToken>) {
        self.outbox.push(command);
        self.busy = Some(Busy {
            label: label.into(),
            since: self.now,
            cancel,
        });
        self.scroll = 0;
    }

    /// Shift+Tab: the next agent mode, carried out by the session as `/mode` is.
    fn cycle_mode(&mut self) {
        if self.busy.is_some() {
            self.set_hint("Shift+Tab switches the mode once the agent is idle · Ctrl+C cancels the turn");
            return;
        }
        self.start("switching mode", Op::SetMode(None), None);
    }

    fn key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c')) {
            self.ctrl_c();
            return;
        }
        if self.modal.is_some() {
            self.modal_key(key);
            return;
        }
        match key.code {
            KeyCode::Char('o') if ctrl => {
                self.expand_tools = !self.expand_tools;
                return;
            }
            KeyCode::PageUp => {
                self.scroll = (self.scroll + self.page.get().max(1)).min(self.scroll_max.get());
                return;
            }
            KeyCode::PageDown => {
                self.scroll = self.scroll.saturating_sub(self.page.get().max(1));
                return;
            }
            KeyCode::End if ctrl => {
                self.scroll = 0;
                return;
            }
            KeyCode::BackTab => {
                self.cycle_mode();
                return;
            }
            _ => {}
        }
        let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
        if let Some(matches) = self.palette() {
            let count = matches.len();
            match key.code {
                KeyCode::Up if count > 0 => {
                    self.palette_selected = (self.palette_selected + count - 1) % count;
                    return;
                }
                KeyCode::Down if count > 0 => {
                    self.palette_selected = (self.palette_selected + 1) % count;
                    return;
                }
                KeyCode::Tab if count > 0 => {
                    let command = &matches[self.palette_selected.min(count - 1)];
                    self.composer.set_text(&format!("/{} ", command.name()));
                    self.input_changed();
                    return;
                }
                KeyCode::Esc => {
                    self.palette_dismissed = true;
                    return;
                }
                KeyCode::Enter if key.modifiers.is_empty() => {
                    let exact = matches!(
                        route(self.composer.text(), &self.hooks.known()),
                        Route::Builtin(..) | Route::Workflow
                    );
                    if !exact && count > 0 {
                        let command = &matches[self.palette_selected.min(count - 1)];
                        self.composer.set_text(&format!("/{}", command.name()));
                    }
                    self.submit();
                    return;
                }
                _ => {}
            }
        }
        if key.code == KeyCode::Enter && key.modifiers.is_empty() {
            self.submit();
            return;
        }
        if key.code == KeyCode::Esc && plain {
            // Nothing open to close: Esc stops the running turn, as the first Ctrl+C does.
            self.cancel_running();
            return;
        }
        if self.composer.handle_key(key) == super::composer::Edit::Changed {
            self.input_changed();
        }
    }

    fn input_changed(&mut self) {
        self.palette_selected = 0;
        if !self.composer.text().starts_with('/') {
            self.palette_dismissed = false;
        }
    }

    fn ctrl_c(&mut self) {
        let now = self.now;
        let double = self
            .last_ctrl_c
            .is_some_and(|at| now.saturating_duration_since(at) < DOUBLE_PRESS);
        self.last_ctrl_c = Some(now);
        if self.quitting {
            // Not waiting for sessionEnd hooks any longer.
            self.exit = true;
            return;
        }
        if self.cancel_running() {
            self.set_hint("cancelling the turn · Ctrl+C again to exit");
            return;
        }
        if double {
            self.quit();
            return;
        }
        if let Some(Modal::Sessions { .. }) = self.modal {
            self.modal = None;
        }
        self.composer.clear();
        self.set_hint("press Ctrl+C again to exit");
    }

    /// Cancels the running turn or compaction (its hooks and tools are killed; the turn ends
    /// cancelled); whether one was running.
    fn cancel_running(&mut self) -> bool {
        let running = self
            .busy
            .as_ref()
            .and_then(|busy| busy.cancel.as_ref())
            .filter(|cancel| !cancel.is_cancelled())
            .cloned();
        let Some(cancel) = running else {
            return false;
        };
        cancel.cancel();
        if let Some(busy) = &mut self.busy {
            busy.label = "cancelling".into();
        }
        self.close_approval();
        true
    }

    /// `/quit`, or Ctrl+C twice: cancel what runs, fire sessionEnd (reason `exit`), then exit.
    pub fn quit(&mut self) {
        self.end_session("exit");
    }

    /// Told to stop by a signal (SIGTERM, SIGHUP, …): [`quit`](Self::quit), with sessionEnd's
    /// reason `interrupted`, as `elph run` and `elph acp` record it.
    pub fn interrupted(&mut self) {
        self.end_session("interrupted");
    }

    fn end_session(&mut self, reason: &str) {
        if self.quitting {
            self.exit = true;
            return;
        }
        self.quitting = true;
        if let Some(cancel) = self.busy.as_ref().and_then(|busy| busy.cancel.as_ref()) {
            cancel.cancel();
        }
        self.close_approval();
        let end = Op::End {
            reason: reason.into(),
        };
        self.start(busy_label(&end), end, None);
        self.set_hint("Ctrl+C to exit now");
    }

    fn close_approval(&mut self) {
        if let Some(Modal::Approval { .. } | Modal::Elicitation(_)) = self.modal {
            self.modal = None; // dropping the reply denies (a question: cancels)
        }
        self.questions.clear();
    }

    fn submit(&mut self) {
        let text = self.composer.text().to_string();
        if text.trim().is_empty() {
            return;
        }
        // Routed as the session will route it, so a line it would refuse is refused here and
        // stays in the input box to be corrected.
        match route(&text, &self.hooks.known()) {
            Route::Builtin(command, args) => {
                if command.needs_session() && self.busy.is_some() {
                    self.set_hint(format!(
                        "/{} waits until the agent is idle · Ctrl+C cancels the turn",
                        command.name()
                    ));
                    return;
                }
                self.composer.submit();
                self.palette_dismissed = false;
                self.items.push(Item::Command(text.trim().to_string()));
                self.run_command(command, args);
            }
            // Until the session has said which commands it has, nothing is known to be unknown.
            Route::Refused(_) if self.status.session_id.is_empty() => {
                self.set_hint("the session is starting · wait a moment");
            }
            Route::Refused(message) => {
                self.push_notice(Level::Error, message);
                self.palette_dismissed = true;
                self.scroll = 0;
            }
            // Text and the session's commands (templates, skills, MCP prompts) are prompts: the
            // session carries them out (an escaped `//` line loses its first `/` there).
            Route::Text(_) | Route::Workflow => {
                if self.busy.is_some() {
                    self.set_hint("the agent is working · wait, or Ctrl+C to cancel");
                    return;
                }
                self.composer.submit();
                self.items.push(Item::User(text.clone()));
                let cancel = CancellationToken::new();
                let command = Op::Prompt {
                    text,
                    cancel: cancel.clone(),
                };
                self.start("working", command, Some(cancel));
            }
        }
    }

    fn run_command(&mut self, command: SlashCommand, args: Option<String>) {
        match command {
            SlashCommand::Help => self
                .items
                .push(Item::Panel(help_panel(self.hooks.offered, &self.hooks.workflows))),
            SlashCommand::Hooks => {
                let panel = hookview::panel(&self.hooks, &self.recent_runs);
                self.items.push(Item::Panel(panel));
            }
            SlashCommand::Quit => self.quit(),
            SlashCommand::Trust
            | SlashCommand::Untrust
            | SlashCommand::Reload
            | SlashCommand::Compact
            | SlashCommand::New
            | SlashCommand::Resume
            | SlashCommand::Mode
            | SlashCommand::Model => {
                let cancel = CancellationToken::new();
                if let Some(op) = command.op(args, cancel.clone()) {
                    // Only a compaction runs long enough to be worth cancelling.
                    let cancel = matches!(op, Op::Compact { .. }).then_some(cancel);
                    self.start(busy_label(&op), op, cancel);
                }
            }
        }
        self.scroll = 0;
    }

    fn modal_key(&mut self, key: KeyEvent) {
        if let Some(Modal::Elicitation(_)) = self.modal {
            return self.question_key(key);
        }
        let Some(modal) = &mut self.modal else { return };
        let (count, selected) = match modal {
            Modal::Approval {
                request, selected, ..
            } => (approval_choices(request).len(), selected),
            Modal::Sessions { sessions, selected } => (sessions.len(), selected),
            Modal::Trust { selected, .. } => (TRUST_CHOICES.len(), selected),
            Modal::Elicitation(_) => return,
        };
        let mut choose = None;
        match key.code {
            KeyCode::Up | KeyCode::BackTab | KeyCode::Char('k') => {
                *selected = (*selected + count - 1) % count.max(1)
            }
            KeyCode::Down | KeyCode::Tab | KeyCode::Char('j') => *selected = (*selected + 1) % count.max(1),
            KeyCode::Enter => choose = Some(*selected),
            KeyCode::Esc => choose = Some(usize::MAX),
            KeyCode::Char(c @ '1'..='9') => {
                let index = c as usize - '1' as usize;
                if index < count {
                    choose = Some(index);
                }
            }
            KeyCode::Char('y') if matches!(modal, Modal::Approval { .. }) => choose = Some(0),
            KeyCode::Char('a') if matches!(modal, Modal::Approval { request, .. } if request.offers_session) => {
                choose = Some(1)
            }
            KeyCode::Char('A') if matches!(modal, Modal::Approval { request, .. } if request.suggested_rule.is_some()) => {
                choose = Some(count - 2)
            }
            KeyCode::Char('n') if matches!(modal, Modal::Approval { .. }) => choose = Some(count - 1),
            KeyCode::Char('y') if matches!(modal, Modal::Trust { .. }) => choose = Some(0),
            KeyCode::Char('n') if matches!(modal, Modal::Trust { .. }) => choose = Some(1),
            _ => {}
        }
        let Some(choice) = choose else { return };
        match self.modal.take() {
            Some(Modal::Approval { request, reply, .. }) => {
                let decision = approval_choices(&request)
                    .get(choice)
                    .map_or(ApprovalDecision::Deny, |(_, d)| *d);
                if let Some(reply) = reply {
                    let _ = reply.send(decision);
                }
                if let Some(tool) = self.tool_mut(&request.tool_call_id) {
                    tool.state = ToolState::Running;
                }
                if let Some(busy) = &mut self.busy {
                    busy.label = match decision {
                        ApprovalDecision::Deny => "working".into(),
                        _ => format!("running {}", request.tool_name),
                    };
                }
            }
            Some(Modal::Sessions { sessions, .. }) => {
                if let Some(session) = sessions.get(choice) {
                    self.start("resuming", Op::Resume(session.id.clone()), None);
                }
            }
            // Yes re-pins and reloads (as /trust does); anything else records nothing.
            Some(Modal::Trust { project, .. }) => {
                if choice == 0 {
                    self.start(busy_label(&Op::Trust), Op::Trust, None);
                } else {
                    self.push_notice(
                        Level::Info,
                        format!("kept {project}'s hooks and MCP servers off; /trust trusts the new content"),
                    );
                }
            }
            Some(modal @ Modal::Elicitation(_)) => self.modal = Some(modal),
            None => {}
        }
        self.next_question();
    }
}
