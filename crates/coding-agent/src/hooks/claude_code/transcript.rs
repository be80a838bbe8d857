//! The session's transcript as Claude Code writes it — one JSON object per line, `type` `user`,
//! `assistant` or `summary`, the message under `message` with Claude Code's content blocks and
//! tool names — for the `transcript_path` of a Claude Code hook. Hooks such as the Ralph loop read
//! the last assistant message from it. The file is written again from the session store right
//! before each such hook runs, so it holds everything stored up to that moment.

use std::io::Write;
use std::path::{Path, PathBuf};

use elph_agent::harness::Entry;
use elph_ai::{Content, ContentBlock, Message};
use serde_json::{Value, json};

use super::tools::claude_name;
use crate::store::{DB_FILE, SessionStore};

/// The folder of DATA_DIR the transcripts go to.
const FOLDER: &str = "transcripts";

/// Writes `DATA_DIR/transcripts/SESSION.jsonl` and returns its path; `None` when the session is
/// not in the store (as for `elph hooks test`) or the file cannot be written.
pub(crate) fn write(data_dir: &Path, session_id: &str, project_dir: &Path) -> Option<PathBuf> {
    // Never creates a store: a session that has none has no transcript.
    if !data_dir.join(DB_FILE).is_file() || session_id.contains(['/', '\0']) {
        return None;
    }
    let entries = SessionStore::open(data_dir).ok()?.load_entries(session_id).ok()?;
    let folder = data_dir.join(FOLDER);
    std::fs::create_dir_all(&folder).ok()?;
    let mut file = tempfile::NamedTempFile::new_in(&folder).ok()?;
    for entry in &entries {
        for line in lines(entry, session_id, project_dir) {
            serde_json::to_writer(&mut file, &line).ok()?;
            file.write_all(b"\n").ok()?;
        }
    }
    let path = folder.join(format!("{session_id}.jsonl"));
    file.persist(&path).ok()?;
    Some(path)
}

/// The Claude Code lines of one entry.
fn lines(entry: &Entry, session_id: &str, project_dir: &Path) -> Vec<Value> {
    let line = |kind: &str, role: &str, content: Value| {
        json!({
            "type": kind,
            "sessionId": session_id,
            "cwd": project_dir.display().to_string(),
            "message": {"role": role, "content": content},
        })
    };
    match entry {
        Entry::Summary { summary, .. } => vec![json!({"type": "summary", "summary": summary})],
        // The message after it holds what the model received; Claude Code has no such line.
        Entry::PromptReplaced { .. } => Vec::new(),
        Entry::Message { message } => match message {
            Message::User { content } => vec![line("user", "user", blocks(content))],
            Message::Assistant { content, tool_calls } => {
                let Value::Array(mut out) = blocks(content) else {
                    return Vec::new();
                };
                for call in tool_calls {
                    out.push(json!({
                        "type": "tool_use",
                        "id": call.id,
                        "name": claude_name(&call.name),
                        "input": call.input,
                    }));
                }
                vec![line("assistant", "assistant", Value::Array(out))]
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
            } => vec![line(
                "user",
                "user",
                json!([{
                    "type": "tool_result",
                    "tool_use_id": tool_call_id,
                    "content": content.text(),
                    "is_error": is_error,
                }]),
            )],
        },
    }
}

/// Content as Claude Code's list of blocks.
fn blocks(content: &Content) -> Value {
    let blocks: Vec<Value> = match content {
        Content::Text(text) if text.is_empty() => Vec::new(),
        Content::Text(text) => vec![json!({"type": "text", "text": text})],
        Content::Blocks(blocks) => blocks
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text } => json!({"type": "text", "text": text}),
                ContentBlock::Image { data, mime_type } => json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": mime_type, "data": data},
                }),
            })
            .collect(),
    };
    Value::Array(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use elph_ai::ToolCall;

    #[test]
    fn entries_become_claude_code_lines() {
        let assistant = Entry::Message {
            message: Message::assistant(
                "done <promise>OK</promise>",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "shell_exec".into(),
                    input: json!({"command": "ls"}),
                }],
            ),
        };
        let [line] = lines(&assistant, "s", Path::new("/p")).try_into().unwrap();
        let text = serde_json::to_string(&line).unwrap();
        // What the Ralph loop greps for.
        assert!(text.contains("\"role\":\"assistant\""), "{text}");
        assert_eq!(
            line["message"]["content"][0]["text"],
            "done <promise>OK</promise>"
        );
        assert_eq!(line["message"]["content"][1]["name"], "Bash");
        let user = Entry::Message {
            message: Message::user("hi"),
        };
        assert_eq!(lines(&user, "s", Path::new("/p"))[0]["type"], "user");
    }
}
