//! How the agent's messages change the app: streamed text, tool calls, approval questions, hook
//! activity (recent runs, and a notice for each block, rewrite or failure), session switches.

use elph_agent::harness::AgentEvent;
use elph_agent::hooks::StopStatus;

use super::super::hookview::{RECENT_RUNS, RunInfo};
use super::super::items::{Item, ToolItem, ToolState};
use super::super::worker::{HistoryEntry, Level, PendingApproval, SessionView, UiMsg};
use super::{App, Modal};
use crate::notices::{self, NoticeKind};
use crate::store::SessionInfo;

impl App {
    pub(super) fn tool_mut(&mut self, id: &str) -> Option<&mut ToolItem> {
        self.items.iter_mut().rev().find_map(|item| match item {
            Item::Tool(tool) if tool.id == id => Some(tool),
            _ => None,
        })
    }

    /// The call whose hooks run now: the last one still running or waiting for approval.
    fn active_tool(&mut self) -> Option<&mut ToolItem> {
        self.items.iter_mut().rev().find_map(|item| match item {
            Item::Tool(tool) if matches!(tool.state, ToolState::Running | ToolState::Approval) => Some(tool),
            _ => None,
        })
    }

    pub(super) fn set_label(&mut self, label: impl Into<String>) {
        if let Some(busy) = &mut self.busy
            && !self.quitting
            && busy.label != "cancelling"
        {
            busy.label = label.into();
        }
    }

    fn finish_streaming(&mut self) {
        for item in &mut self.items {
            if let Item::Assistant { streaming, .. } = item {
                *streaming = false;
            }
        }
    }

    pub(super) fn worker(&mut self, msg: UiMsg) {
        match msg {
            UiMsg::Agent(event) => self.agent(event),
            UiMsg::Approval(PendingApproval {
                request,
                reply,
                preview,
            }) => {
                if let Some(tool) = self.tool_mut(&request.tool_call_id) {
                    tool.state = ToolState::Approval;
                }
                self.set_label("waiting for your approval");
                self.modal = Some(Modal::Approval {
                    request: Box::new(request),
                    preview,
                    reply: Some(reply),
                    selected: 0,
                });
                self.scroll = 0;
            }
            UiMsg::Elicitation(question) => self.ask(question),
            UiMsg::Session(view) => self.session(view),
            UiMsg::Mode(mode) => self.status.mode = mode,
            UiMsg::Model(model) => self.status.model = model,
            UiMsg::Hooks(view) => {
                self.hooks = view;
                self.palette_selected = 0;
            }
            UiMsg::Context { tokens, window } => {
                self.status.context_tokens = tokens;
                self.status.context_window = window;
            }
            UiMsg::Notice(level, text) => self.push_notice(level, text),
            UiMsg::TrustChanged { project, changes } => {
                self.modal = Some(Modal::Trust {
                    project,
                    changes,
                    selected: 0,
                });
                self.scroll = 0;
            }
            UiMsg::Sessions(sessions) => {
                let others: Vec<SessionInfo> = sessions
                    .into_iter()
                    .filter(|s| s.id != self.status.session_id)
                    .collect();
                if others.is_empty() {
                    self.push_notice(Level::Info, "no earlier sessions in this project");
                } else {
                    self.modal = Some(Modal::Sessions {
                        sessions: others,
                        selected: 0,
                    });
                }
            }
            UiMsg::Idle => {
                if !self.quitting {
                    self.busy = None;
                }
                self.close_approval();
                self.finish_streaming();
            }
            UiMsg::Exited => self.exit = true,
        }
    }

    fn session(&mut self, view: SessionView) {
        let switching = !self.status.session_id.is_empty();
        self.status.model = view.model;
        self.status.mode = view.mode;
        self.status.context_window = view.context_window;
        if switching {
            self.items.clear();
        }
        self.status.session_id = view.session_id.clone();
        for entry in view.history {
            self.items.push(match entry {
                HistoryEntry::User(text) => Item::User(text),
                HistoryEntry::Assistant(text) => Item::Assistant {
                    text,
                    streaming: false,
                },
                HistoryEntry::Tool {
                    id,
                    name,
                    input,
                    result,
                } => {
                    let (state, result) = match result {
                        Some((text, false)) => (ToolState::Ok, text),
                        Some((text, true)) => (ToolState::Failed, text),
                        None => (ToolState::Cancelled, String::new()),
                    };
                    Item::Tool(ToolItem {
                        id,
                        name,
                        input,
                        state,
                        result,
                        notes: Vec::new(),
                    })
                }
                HistoryEntry::Summary(count) => Item::Notice {
                    level: Level::Info,
                    text: format!("{count} earlier message(s) were compacted into a summary"),
                },
                HistoryEntry::PromptReplaced { original, by } => Item::Notice {
                    level: Level::Info,
                    text: crate::notices::prompt_replaced(&original, &by),
                },
            });
        }
        if switching || view.resumed {
            let verb = if view.resumed { "resumed" } else { "started" };
            self.push_notice(Level::Info, format!("{verb} session {}", view.session_id));
        }
        self.scroll = 0;
    }

    fn agent(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::SessionStarted { session_id } => self.status.session_id = session_id,
            // The spinner follows the harness's phase events: a chain of hooks, a model request,
            // a tool's own run. What ends a phase leaves the label to the next one.
            AgentEvent::TurnStarted { .. } => {}
            AgentEvent::ModelRequestStarted => self.set_label("waiting for the model"),
            AgentEvent::TextDelta { text } => self.text_delta(text),
            AgentEvent::AssistantMessage { text, tool_calls } => {
                self.assistant_message(text, tool_calls.is_empty());
            }
            AgentEvent::ToolCallStarted {
                tool_call_id,
                tool_name,
                input,
            } => {
                self.items.push(Item::Tool(ToolItem {
                    id: tool_call_id,
                    name: tool_name,
                    input,
                    state: ToolState::Running,
                    result: String::new(),
                    notes: Vec::new(),
                }));
            }
            AgentEvent::HooksStarted { event, tool_name } => {
                self.set_label(match tool_name {
                    Some(tool) => format!("hook {event} · {tool}"),
                    None => format!("hook {event}"),
                });
            }
            AgentEvent::ToolStarted { tool_name, .. } => self.set_label(format!("running {tool_name}")),
            AgentEvent::ToolInputRewritten {
                tool_call_id, input, ..
            } => {
                // Show what runs, not what the model first asked for; a notice says a hook rewrote it.
                if let Some(tool) = self.tool_mut(&tool_call_id) {
                    tool.input = input;
                }
            }
            // The approval question carries the same change, with its diff.
            AgentEvent::ToolChangeProposed { .. } => {}
            AgentEvent::ApprovalNeeded { tool_call_id, .. } => {
                if let Some(tool) = self.tool_mut(&tool_call_id) {
                    tool.state = ToolState::Approval;
                }
            }
            AgentEvent::ToolCallFinished {
                tool_call_id,
                content,
                is_error,
                ran,
                ..
            } => self.tool_finished(&tool_call_id, &content, is_error, ran),
            AgentEvent::Hooks { dispatch } => self.hook_runs(&dispatch),
            AgentEvent::Notice { message } => self.push_notice(Level::Info, message),
            AgentEvent::Usage { usage } => {
                // Saturating: the counts are the server's word.
                self.status.context_tokens = usage.input_tokens.saturating_add(usage.output_tokens);
            }
            AgentEvent::Compacted { entries_compacted } => self.push_notice(
                Level::Info,
                format!("compacted {entries_compacted} earlier message(s) into a summary"),
            ),
            AgentEvent::TurnEnded { status, error } => self.turn_ended(status, error),
            AgentEvent::SessionEnded { .. } => {}
        }
    }

    fn text_delta(&mut self, text: String) {
        match self.items.last_mut() {
            Some(Item::Assistant {
                text: current,
                streaming: true,
            }) => current.push_str(&text),
            _ => self.items.push(Item::Assistant {
                text,
                streaming: true,
            }),
        }
        self.set_label("responding");
    }

    /// A complete answer replaces what streamed of it; `last` when it asks for no tool.
    fn assistant_message(&mut self, text: String, last: bool) {
        let streamed = matches!(self.items.last(), Some(Item::Assistant { streaming: true, .. }));
        if streamed {
            if text.trim().is_empty() {
                self.items.pop();
            } else if let Some(Item::Assistant {
                text: current,
                streaming,
            }) = self.items.last_mut()
            {
                *current = text;
                *streaming = false;
            }
        } else if !text.trim().is_empty() {
            self.items.push(Item::Assistant {
                text,
                streaming: false,
            });
        }
        self.set_label(if last { "finishing" } else { "working" });
    }

    fn tool_finished(
        &mut self,
        tool_call_id: &str,
        content: &[elph_agent::messages::ContentBlock],
        is_error: bool,
        ran: bool,
    ) {
        let text = content
            .iter()
            .map(|block| match block {
                elph_agent::messages::ContentBlock::Text { text } => text.clone(),
                elph_agent::messages::ContentBlock::Image { mime_type, .. } => {
                    format!("[image {mime_type}]")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(tool) = self.tool_mut(tool_call_id) {
            tool.result = text;
            tool.state = match (ran, is_error) {
                (false, _) => ToolState::NotRun,
                (true, true) => ToolState::Failed,
                (true, false) => ToolState::Ok,
            };
        }
        self.set_label("working");
    }

    /// One event's hook chain ran: its runs for `/hooks`, and a notice for each effect or
    /// problem, on its tool call when it is about one.
    fn hook_runs(&mut self, dispatch: &elph_agent::hooks::Dispatch) {
        for run in &dispatch.runs {
            self.recent_runs.push(RunInfo::from_run(run));
        }
        let excess = self.recent_runs.len().saturating_sub(RECENT_RUNS);
        self.recent_runs.drain(..excess);
        // A blocked call's result says it was blocked, by which hook and why: the blocking hook's
        // effect notice would report the same block a second time.
        let blocked_by = dispatch
            .reduced
            .stopped_by()
            .filter(|_| dispatch.event == elph_agent::hooks::HookEvent::PreToolUse)
            .map(|verdict| verdict.hook_id.as_str());
        for notice in notices::describe(dispatch) {
            if notice.kind == NoticeKind::Effect
                && blocked_by.is_some()
                && notice.hook_id.as_deref() == blocked_by
            {
                continue;
            }
            let level = match notice.kind {
                NoticeKind::Effect => Level::Effect,
                NoticeKind::Problem => Level::Problem,
                NoticeKind::Warning => Level::Warning,
            };
            let attach = dispatch.event.is_tool_event();
            match self.active_tool().filter(|_| attach) {
                Some(tool) => tool.notes.push((level, notice.text)),
                None => self.push_notice(level, notice.text),
            }
        }
    }

    /// Nothing streams or runs any longer; a cancelled or failed turn says so.
    fn turn_ended(&mut self, status: StopStatus, error: Option<String>) {
        self.finish_streaming();
        for item in &mut self.items {
            if let Item::Tool(tool) = item
                && matches!(tool.state, ToolState::Running | ToolState::Approval)
            {
                tool.state = ToolState::Cancelled;
            }
        }
        match status {
            StopStatus::Completed => {}
            StopStatus::Cancelled => self.push_notice(Level::Info, "turn cancelled"),
            StopStatus::Failed => {
                self.push_notice(Level::Error, error.unwrap_or_else(|| "the turn failed".into()))
            }
        }
    }
}
