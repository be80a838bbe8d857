//! The TUI's side of its session: the app's requests go to the session as [`Op`]s, and each
//! [`SessionEvent`] comes back as the [`UiMsg`]s the app understands — the harness's events,
//! approval questions, and each operation's outcome as notices in the TUI's words.

use elph_agent::harness::{AgentEvent, AgentMode, Entry};
use elph_agent::messages::Message;
use serde_json::Value;

use super::hookview::HooksView;
use crate::session::wording::{self, Tone};
use crate::session::{HookState, ModelOutcome, Outcome, SessionEvent, TrustOutcome};
pub use crate::session::{Op, PendingApproval};
use crate::store::SessionInfo;

/// How loud a notice is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Info,
    /// A hook changed something.
    Effect,
    /// A configuration problem or a remark about a hook run; the operation went on.
    Problem,
    /// A hook failed: a guard that failed open let the operation go on without its check.
    Warning,
    Error,
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
    /// userPromptSubmit hooks replaced the next prompt: what the user sent, and who replaced it.
    PromptReplaced {
        original: String,
        by: Vec<String>,
    },
}

/// The session the agent runs now.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionView {
    pub model: String,
    pub session_id: String,
    pub resumed: bool,
    pub context_window: u64,
    pub history: Vec<HistoryEntry>,
    pub mode: AgentMode,
}

/// What the agent tells the UI.
#[derive(Debug)]
pub enum UiMsg {
    Agent(AgentEvent),
    Approval(PendingApproval),
    /// An MCP server asks for input.
    Elicitation(crate::session::PendingElicitation),
    Session(SessionView),
    Hooks(HooksView),
    Context {
        tokens: u64,
        window: u64,
    },
    Notice(Level, String),
    /// `/reload` found that the trusted project changed since it was trusted: ask whether to trust
    /// the new content. `changes` are one line each, escaped for the terminal.
    TrustChanged {
        project: String,
        changes: Vec<String>,
    },
    Sessions(Vec<SessionInfo>),
    /// The agent mode the session switched to.
    Mode(AgentMode),
    /// The model (`provider/model`) the session switched to.
    Model(String),
    /// The command finished; the agent waits for the next one.
    Idle,
    /// The session ended after `Op::End`.
    Exited,
}

/// What the app is told about `event`, in order.
pub fn ui_messages(event: SessionEvent) -> Vec<UiMsg> {
    match event {
        SessionEvent::Opened(opened) => {
            let mut messages = vec![UiMsg::Session(SessionView {
                model: opened.model,
                session_id: opened.session_id,
                resumed: opened.resumed,
                context_window: opened.context_window,
                history: history(&opened.entries),
                mode: opened.mode,
            })];
            hooks_and_problems(&mut messages, &opened.hooks, true);
            messages
        }
        SessionEvent::Ready => vec![UiMsg::Idle],
        SessionEvent::Commands(hooks) => vec![UiMsg::Hooks(HooksView::from_state(&hooks))],
        SessionEvent::Agent(event) => vec![UiMsg::Agent(event)],
        SessionEvent::Approval(question) => vec![UiMsg::Approval(question)],
        SessionEvent::Elicitation(question) => vec![UiMsg::Elicitation(question)],
        SessionEvent::Context { tokens, window } => vec![UiMsg::Context { tokens, window }],
        SessionEvent::Finished { outcome, .. } => {
            let mut messages = outcome_messages(outcome);
            messages.push(UiMsg::Idle);
            messages
        }
        SessionEvent::Ended { .. } => vec![UiMsg::Exited],
    }
}

/// The hook set for the status line, `/hooks` and the palette, and (with `problems`) each of its
/// diagnostics as a notice.
fn hooks_and_problems(messages: &mut Vec<UiMsg>, hooks: &HookState, problems: bool) {
    messages.push(UiMsg::Hooks(HooksView::from_state(hooks)));
    if problems {
        for diagnostic in &hooks.set.diagnostics {
            // Project hooks that are off for trust (their ids and events are in the message) are
            // as loud as a guard that failed open: a guard that does not run does not guard.
            let off = !hooks.trust.trusted
                && (diagnostic.message.starts_with("project hooks skipped until")
                    || diagnostic
                        .message
                        .starts_with("project hooks and MCP servers skipped:"));
            let level = if off { Level::Warning } else { Level::Problem };
            messages.push(UiMsg::Notice(level, diagnostic.to_string()));
        }
    }
}

/// An operation's outcome as notices, in the session's words (`session::wording`, the same as
/// ACP's). A turn and a compaction have told their story through the harness's events already,
/// unless the compaction did not happen.
fn outcome_messages(outcome: Outcome) -> Vec<UiMsg> {
    let mut messages = Vec::new();
    match &outcome {
        // The switch shows as the new session itself, the list as the sessions picker.
        Outcome::Switched => return messages,
        Outcome::Sessions(Ok(sessions)) => {
            messages.push(UiMsg::Sessions(sessions.clone()));
            return messages;
        }
        Outcome::Reloaded(hooks) => hooks_and_problems(&mut messages, hooks, true),
        // After /untrust, the only news would be that the project's hooks are skipped.
        Outcome::Trust {
            outcome: TrustOutcome::Changed(hooks),
            ..
        } => hooks_and_problems(&mut messages, hooks, hooks.trust.trusted),
        Outcome::Mode(Ok(mode)) => messages.push(UiMsg::Mode(*mode)),
        Outcome::Model(ModelOutcome::Switched(model)) => messages.push(UiMsg::Model(model.clone())),
        _ => {}
    }
    if let Some(said) = wording::said(&outcome) {
        let level = match said.tone {
            Tone::Info => Level::Info,
            Tone::Effect => Level::Effect,
            Tone::Error => Level::Error,
        };
        messages.push(UiMsg::Notice(level, said.text));
    }
    // After the reload's own notice: the question whether to trust what changed.
    if let Outcome::Reloaded(hooks) = &outcome
        && let Some(changes) = hooks.trust.changes()
    {
        messages.push(UiMsg::TrustChanged {
            project: crate::terminal_text::escape_path(&hooks.project_dir),
            changes: changes
                .lines()
                .iter()
                .map(|line| crate::terminal_text::escape(line).into_owned())
                .collect(),
        });
    }
    messages
}

/// A stored transcript as the UI shows it: prompts, answers, tool calls with their results.
pub fn history(entries: &[Entry]) -> Vec<HistoryEntry> {
    let mut out: Vec<HistoryEntry> = Vec::new();
    for entry in entries {
        match entry {
            Entry::Summary {
                entries_compacted, ..
            } => out.push(HistoryEntry::Summary(*entries_compacted)),
            Entry::PromptReplaced {
                original,
                replaced_by,
            } => out.push(HistoryEntry::PromptReplaced {
                original: original.clone(),
                by: replaced_by.clone(),
            }),
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
