//! The pieces of `session/update` notifications: tool calls with kind, title, status and content,
//! text as agent message chunks, notices (hook effects `[hook]`, hook problems `[hook warning]`,
//! Elph's own `[elph]`) as agent thought chunks outside the answer text, and a stored conversation
//! replayed.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, ImageContent, SessionId, SessionNotification, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use elph_agent::harness::Entry;
use elph_agent::messages::{self, Message};
use elph_agent::tools::{Overwrites, ProposedChange};
use serde_json::Value;

/// The marker of hook notices in the agent's messages.
pub(crate) const HOOK_MARK: &str = "[hook]";
/// The marker of hook problems (a hook failed open, its output was rejected).
pub(crate) const HOOK_PROBLEM_MARK: &str = "[hook warning]";
/// The marker of Elph's own notices.
pub(crate) const ELPH_MARK: &str = "[elph]";

/// The ACP kind of a tool: what the tool says it does (`Tool::kind`); `Other` for tools Elph does
/// not ship (MCP tools).
pub(crate) fn tool_kind(tool_name: &str) -> ToolKind {
    match elph_agent::tools::native::find(tool_name).map(|tool| tool.kind()) {
        Some(elph_agent::tools::ToolKind::Read) => ToolKind::Read,
        Some(elph_agent::tools::ToolKind::Edit) => ToolKind::Edit,
        Some(elph_agent::tools::ToolKind::Search) => ToolKind::Search,
        Some(elph_agent::tools::ToolKind::Execute) => ToolKind::Execute,
        Some(elph_agent::tools::ToolKind::Other) | None => ToolKind::Other,
    }
}

/// A short title for a tool call, as the tool words it (`Tool::title`); the name for other tools.
pub(crate) fn tool_title(tool_name: &str, input: &Value) -> String {
    match elph_agent::tools::native::find(tool_name) {
        Some(tool) => tool.title(input),
        None => tool_name.to_string(),
    }
}

/// The files a tool call works on, for the client to follow: the paths its tool parses out of the
/// arguments for the file policy (none for other tools, or arguments that do not parse).
pub(crate) fn tool_locations(tool_name: &str, input: &Value, project_dir: &Path) -> Vec<ToolCallLocation> {
    let Some(tool) = elph_agent::tools::native::find(tool_name) else {
        return Vec::new();
    };
    let Ok(call) = tool.parse(input.clone()) else {
        return Vec::new();
    };
    call.accesses()
        .into_iter()
        .map(|access| match access.path.as_str() {
            "." => ToolCallLocation::new(project_dir),
            path => ToolCallLocation::new(project_dir.join(path)),
        })
        .collect()
}

/// A proposed change as ACP's `diff` content, for the editor's review: `edit_file`'s old and new
/// text; `write_file`'s whole new content and, as old text, what the file held when the call was
/// reviewed (read under the file policy, from the editor's buffer when the editor reads files),
/// none for a new file. A write whose old text is not known (not reviewed yet, or not readable
/// without approval) has no diff: one without old text would say the file is new.
pub(crate) fn diff(change: &ProposedChange, project_dir: &Path) -> Option<ToolCallContent> {
    let path = project_dir.join(change.path());
    let diff = match change {
        ProposedChange::Write {
            content, overwrites, ..
        } => match overwrites {
            Overwrites::Nothing => Diff::new(path, content.clone()),
            Overwrites::Text(old_text) => Diff::new(path, content.clone()).old_text(old_text.clone()),
            Overwrites::Unknown => return None,
        },
        ProposedChange::Edit {
            old_text, new_text, ..
        } => Diff::new(path, new_text.clone()).old_text(old_text.clone()),
    };
    Some(ToolCallContent::Diff(diff))
}

/// The change a call of `tool_name` with `input` proposes, as `diff` content, as far as the
/// arguments tell it (none for tools that change no file, arguments that do not parse, and a
/// `write_file`, whose old text only its review knows).
pub(crate) fn tool_diff(tool_name: &str, input: &Value, project_dir: &Path) -> Option<ToolCallContent> {
    let tool = elph_agent::tools::native::find(tool_name)?;
    let change = tool.parse(input.clone()).ok()?.change()?;
    diff(&change, project_dir)
}

/// The start of a tool call, as the client first sees it: `pending` until it runs (hooks and
/// approval come first), then `in_progress`. A call that changes a file carries its diff.
pub(super) fn tool_call(tool_call_id: &str, tool_name: &str, input: &Value, project_dir: &Path) -> ToolCall {
    ToolCall::new(tool_call_id.to_string(), tool_title(tool_name, input))
        .kind(tool_kind(tool_name))
        .status(ToolCallStatus::Pending)
        .locations(tool_locations(tool_name, input, project_dir))
        .content(
            tool_diff(tool_name, input, project_dir)
                .into_iter()
                .collect::<Vec<_>>(),
        )
        .raw_input(input.clone())
}

/// An update that only changes a tool call's status.
pub(crate) fn status_update(tool_call_id: &str, status: ToolCallStatus) -> ToolCallUpdate {
    ToolCallUpdate::new(
        tool_call_id.to_string(),
        ToolCallUpdateFields::new().status(status),
    )
}

/// A call whose arguments preToolUse hooks rewrote: the client shows the arguments that will run
/// (and the change they make), not the ones the model first sent.
pub(crate) fn rewritten_update(
    tool_call_id: &str,
    input: Value,
    diff: Option<ToolCallContent>,
) -> ToolCallUpdate {
    let mut fields = ToolCallUpdateFields::new().raw_input(input);
    if let Some(diff) = diff {
        fields = fields.content(vec![diff]);
    }
    ToolCallUpdate::new(tool_call_id.to_string(), fields)
}

fn content_block(block: &messages::ContentBlock) -> ContentBlock {
    match block {
        messages::ContentBlock::Text { text } => ContentBlock::from(text.clone()),
        messages::ContentBlock::Image { data, mime_type } => {
            ContentBlock::Image(ImageContent::new(data.clone(), mime_type.clone()))
        }
    }
}

/// The result of a tool call, as the client's tool call content.
pub(crate) fn tool_content(blocks: &[messages::ContentBlock]) -> Vec<ToolCallContent> {
    blocks
        .iter()
        .map(|block| ToolCallContent::from(content_block(block)))
        .collect()
}

/// The end of a tool call: completed, or failed (an error result, or the call never ran). The
/// result follows the call's diff, which the content of an update would otherwise replace.
pub(crate) fn finished_update(
    tool_call_id: &str,
    diff: Option<ToolCallContent>,
    content: &[messages::ContentBlock],
    details: &Value,
    is_error: bool,
    ran: bool,
) -> ToolCallUpdate {
    let status = if is_error || !ran {
        ToolCallStatus::Failed
    } else {
        ToolCallStatus::Completed
    };
    let mut all: Vec<ToolCallContent> = diff.into_iter().collect();
    all.extend(tool_content(content));
    let mut fields = ToolCallUpdateFields::new().status(status).content(all);
    if !details.is_null() {
        fields = fields.raw_output(details.clone());
    }
    ToolCallUpdate::new(tool_call_id.to_string(), fields)
}

pub(super) fn agent_text(session_id: &SessionId, text: impl Into<String>) -> SessionNotification {
    let chunk = ContentChunk::new(ContentBlock::from(text.into()));
    SessionNotification::new(session_id.clone(), SessionUpdate::AgentMessageChunk(chunk))
}

/// A notice for the user, outside the answer text: an agent thought chunk `[hook] …`,
/// `[hook warning] …` or `[elph] …`.
pub(super) fn notice(session_id: &SessionId, mark: &str, text: &str) -> SessionNotification {
    let chunk = ContentChunk::new(ContentBlock::from(format!("{mark} {text}\n")));
    SessionNotification::new(session_id.clone(), SessionUpdate::AgentThoughtChunk(chunk))
}

/// The stored conversation as the updates that show it again (`session/load`).
pub(super) fn history(
    session_id: &SessionId,
    entries: &[Entry],
    project_dir: &Path,
) -> Vec<SessionNotification> {
    let mut updates = Vec::new();
    let mut diffs = std::collections::HashMap::new();
    let update = |update: SessionUpdate| SessionNotification::new(session_id.clone(), update);
    for entry in entries {
        match entry {
            Entry::Message { message } => match message {
                Message::User { content } => {
                    let chunk = ContentChunk::new(ContentBlock::from(content.text()));
                    updates.push(update(SessionUpdate::UserMessageChunk(chunk)));
                }
                Message::Assistant { content, tool_calls } => {
                    let text = content.text();
                    if !text.is_empty() {
                        let chunk = ContentChunk::new(ContentBlock::from(text));
                        updates.push(update(SessionUpdate::AgentMessageChunk(chunk)));
                    }
                    for call in tool_calls {
                        if let Some(diff) = tool_diff(&call.name, &call.input, project_dir) {
                            diffs.insert(call.id.clone(), diff);
                        }
                        let start = tool_call(&call.id, &call.name, &call.input, project_dir);
                        updates.push(update(SessionUpdate::ToolCall(start)));
                    }
                }
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                } => {
                    let blocks = match content {
                        messages::Content::Text(text) => vec![messages::ContentBlock::text(text.clone())],
                        messages::Content::Blocks(blocks) => blocks.clone(),
                    };
                    let diff = diffs.remove(tool_call_id);
                    let done = finished_update(tool_call_id, diff, &blocks, &Value::Null, *is_error, true);
                    updates.push(update(SessionUpdate::ToolCallUpdate(done)));
                }
            },
            Entry::PromptReplaced {
                original,
                replaced_by,
            } => {
                let text = crate::notices::prompt_replaced(original, replaced_by);
                updates.push(notice(session_id, ELPH_MARK, &text));
            }
            Entry::Summary {
                entries_compacted, ..
            } => {
                let text = format!("{entries_compacted} earlier message(s) were compacted into a summary");
                updates.push(notice(session_id, ELPH_MARK, &text));
            }
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_follow_the_tool() {
        assert_eq!(tool_kind("read_file"), ToolKind::Read);
        assert_eq!(tool_kind("write_file"), ToolKind::Edit);
        assert_eq!(tool_kind("edit_file"), ToolKind::Edit);
        for name in ["grep", "find_path", "list_dir"] {
            assert_eq!(tool_kind(name), ToolKind::Search);
        }
        assert_eq!(tool_kind("shell_exec"), ToolKind::Execute);
        assert_eq!(tool_kind("mcp_git__status"), ToolKind::Other);
    }

    #[test]
    fn titles_name_the_target() {
        assert_eq!(
            tool_title("read_file", &json!({"path": "src/a.rs"})),
            "Read src/a.rs"
        );
        assert_eq!(
            tool_title("shell_exec", &json!({"command": "ls -la"})),
            "Run `ls -la`"
        );
        assert_eq!(tool_title("shell_exec", &json!({"command": "a\nb"})), "Run `a…`");
        assert_eq!(tool_title("list_dir", &json!({})), "List .");
        assert_eq!(tool_title("mcp_x__y", &json!({})), "mcp_x__y");
    }

    #[test]
    fn notices_are_thoughts_not_answer_text() {
        let sent = notice(&SessionId::new("s"), HOOK_MARK, "x");
        let SessionUpdate::AgentThoughtChunk(chunk) = sent.update else {
            panic!("a thought chunk: {sent:?}");
        };
        assert_eq!(chunk.content, ContentBlock::from("[hook] x\n"));
    }

    #[test]
    fn failed_or_skipped_calls_are_failed() {
        let text = [messages::ContentBlock::text("nope")];
        let done = finished_update("c1", None, &text, &Value::Null, false, false);
        assert_eq!(done.fields.status, Some(ToolCallStatus::Failed));
        let done = finished_update("c1", None, &text, &json!({"exitCode": 0}), false, true);
        assert_eq!(done.fields.status, Some(ToolCallStatus::Completed));
        assert_eq!(done.fields.raw_output, Some(json!({"exitCode": 0})));
    }

    #[test]
    fn changes_to_files_carry_their_diff() {
        let project = Path::new("/p");
        let call = tool_call(
            "c1",
            "edit_file",
            &json!({"path": "a.rs", "old_text": "x", "new_text": "y"}),
            project,
        );
        let expected = Diff::new("/p/a.rs", "y").old_text("x".to_string());
        assert_eq!(call.content, vec![ToolCallContent::Diff(expected)]);
        // A write's old text is known only once the harness has reviewed it.
        let call = tool_call(
            "c2",
            "write_file",
            &json!({"path": "/q/b.txt", "content": "new"}),
            project,
        );
        assert!(call.content.is_empty());
        let write = |overwrites| ProposedChange::Write {
            path: "/q/b.txt".into(),
            content: "new".into(),
            overwrites,
        };
        assert_eq!(
            diff(&write(Overwrites::Nothing), project),
            Some(ToolCallContent::Diff(Diff::new("/q/b.txt", "new")))
        );
        assert_eq!(
            diff(&write(Overwrites::Text("old".into())), project),
            Some(ToolCallContent::Diff(
                Diff::new("/q/b.txt", "new").old_text("old".to_string())
            ))
        );
        assert_eq!(diff(&write(Overwrites::Unknown), project), None);
        let call = tool_call("c3", "read_file", &json!({"path": "a.rs"}), project);
        assert!(call.content.is_empty());
        let done = finished_update(
            "c1",
            tool_diff(
                "edit_file",
                &json!({"path": "b", "old_text": "o", "new_text": "n"}),
                project,
            ),
            &[messages::ContentBlock::text("Created b")],
            &Value::Null,
            false,
            true,
        );
        let content = done.fields.content.unwrap();
        assert!(
            matches!(content[0], ToolCallContent::Diff(_)) && content.len() == 2,
            "{content:?}"
        );
    }

    #[test]
    fn a_rewrite_updates_the_raw_input() {
        let update = rewritten_update("c1", json!({"path": "docs/notes.txt"}), None);
        assert_eq!(update.fields.raw_input, Some(json!({"path": "docs/notes.txt"})));
        assert_eq!(update.fields.status, None);
    }
}
