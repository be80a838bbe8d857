//! The JSON a `"protocol": "claude-code"` hook reads on stdin: Claude Code's payload for the
//! moment, built from Elph's.

use elph_agent::hooks::payload::{CompactTrigger, SessionSource, StopStatus};
use elph_agent::hooks::{HookEvent, HookPayload};
use elph_ai::ContentBlock;
use serde_json::{Map, Value, json};

use super::tools::{claude_input, claude_name};

/// An event both agents have: the only events a Claude Code hook can be written for (the
/// configuration refuses the others), so the answer's reader matches over these eight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClaudeEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    Stop,
    SessionEnd,
}

impl ClaudeEvent {
    /// Claude Code's counterpart of `event`, if it has one.
    pub(crate) fn of(event: HookEvent) -> Option<ClaudeEvent> {
        Some(match event {
            HookEvent::SessionStart => ClaudeEvent::SessionStart,
            HookEvent::UserPromptSubmit => ClaudeEvent::UserPromptSubmit,
            HookEvent::PreToolUse => ClaudeEvent::PreToolUse,
            HookEvent::PostToolUse => ClaudeEvent::PostToolUse,
            HookEvent::PostToolUseFailure => ClaudeEvent::PostToolUseFailure,
            HookEvent::PreCompact => ClaudeEvent::PreCompact,
            HookEvent::Stop => ClaudeEvent::Stop,
            HookEvent::SessionEnd => ClaudeEvent::SessionEnd,
            HookEvent::BeforeAgent | HookEvent::Context | HookEvent::PostCompact => return None,
        })
    }

    /// Its name in Claude Code.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClaudeEvent::SessionStart => "SessionStart",
            ClaudeEvent::UserPromptSubmit => "UserPromptSubmit",
            ClaudeEvent::PreToolUse => "PreToolUse",
            ClaudeEvent::PostToolUse => "PostToolUse",
            ClaudeEvent::PostToolUseFailure => "PostToolUseFailure",
            ClaudeEvent::PreCompact => "PreCompact",
            ClaudeEvent::Stop => "Stop",
            ClaudeEvent::SessionEnd => "SessionEnd",
        }
    }
}

/// Claude Code's name for an event, for the events it has.
pub(crate) fn claude_event(event: HookEvent) -> Option<&'static str> {
    ClaudeEvent::of(event).map(ClaudeEvent::name)
}

/// The payload as Claude Code would send it, one line of JSON with a newline.
#[expect(clippy::expect_used, reason = "a payload is plain data and always serializes")]
pub(crate) fn stdin_bytes(payload: &HookPayload) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(&payload_json(payload)).expect("a payload serializes");
    bytes.push(b'\n');
    bytes
}

fn payload_json(payload: &HookPayload) -> Value {
    let base = payload.base();
    let project_dir = &base.project_dir;
    let mut out = Map::new();
    out.insert("session_id".into(), json!(base.session_id));
    // Elph keeps its transcript in SQLite, not in a file a hook could read.
    out.insert("transcript_path".into(), json!(""));
    out.insert("cwd".into(), json!(project_dir.display().to_string()));
    out.insert(
        "hook_event_name".into(),
        json!(claude_event(payload.event()).unwrap_or(payload.event().as_str())),
    );
    match payload {
        HookPayload::SessionStart(p) => {
            let source = match p.source {
                SessionSource::New => "startup",
                SessionSource::Resume => "resume",
            };
            out.insert("source".into(), json!(source));
        }
        HookPayload::UserPromptSubmit(p) => {
            out.insert("prompt".into(), json!(p.prompt));
        }
        HookPayload::PreToolUse(p) => {
            out.insert("tool_name".into(), json!(claude_name(&p.tool_name)));
            out.insert(
                "tool_input".into(),
                claude_input(&p.tool_name, &p.tool_input, project_dir),
            );
            out.insert("tool_use_id".into(), json!(p.tool_call_id));
        }
        HookPayload::PostToolUse(p) | HookPayload::PostToolUseFailure(p) => {
            out.insert("tool_name".into(), json!(claude_name(&p.tool_name)));
            out.insert(
                "tool_input".into(),
                claude_input(&p.tool_name, &p.tool_input, project_dir),
            );
            out.insert("tool_use_id".into(), json!(p.tool_call_id));
            let text: Vec<&str> = p
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    ContentBlock::Image { .. } => None,
                })
                .collect();
            let mut response = Map::new();
            response.insert("output".into(), json!(text.join("\n")));
            response.insert("is_error".into(), json!(p.is_error));
            if let Value::Object(details) = &p.details {
                for (key, value) in details {
                    response.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
            if p.is_error {
                out.insert("error".into(), json!(text.join("\n")));
            }
            out.insert("tool_response".into(), Value::Object(response));
        }
        HookPayload::PreCompact(p) => {
            let trigger = match p.trigger {
                CompactTrigger::Auto => "auto",
                CompactTrigger::Manual => "manual",
            };
            out.insert("trigger".into(), json!(trigger));
            out.insert(
                "custom_instructions".into(),
                json!(p.custom_instructions.clone().unwrap_or_default()),
            );
        }
        HookPayload::Stop(p) => {
            out.insert("stop_hook_active".into(), json!(false));
            let status = match p.status {
                StopStatus::Completed => "completed",
                StopStatus::Failed => "failed",
                StopStatus::Cancelled => "cancelled",
            };
            out.insert("status".into(), json!(status));
        }
        HookPayload::SessionEnd(p) => {
            out.insert("reason".into(), json!(p.reason));
        }
        // Events Claude Code does not have: discovery refuses the protocol on them.
        HookPayload::BeforeAgent(_) | HookPayload::Context(_) | HookPayload::PostCompact(_) => {}
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use elph_agent::hooks::payload::{PayloadBase, PreToolUsePayload, ToolResultPayload};

    fn base() -> PayloadBase {
        PayloadBase::new("s1", "/work/shop")
    }

    #[test]
    fn pre_tool_use_speaks_claude_names() {
        let payload = HookPayload::PreToolUse(PreToolUsePayload {
            base: base(),
            tool_name: "write_file".into(),
            tool_call_id: "call_1".into(),
            tool_input: json!({"path": ".env", "content": "X=1"}),
        });
        let value: Value = serde_json::from_slice(&stdin_bytes(&payload)).unwrap();
        assert_eq!(
            value,
            json!({
                "session_id": "s1", "transcript_path": "", "cwd": "/work/shop",
                "hook_event_name": "PreToolUse", "tool_name": "Write",
                "tool_input": {"file_path": "/work/shop/.env", "content": "X=1"},
                "tool_use_id": "call_1",
            })
        );
    }

    #[test]
    fn post_tool_use_carries_a_tool_response() {
        let payload = HookPayload::PostToolUse(ToolResultPayload {
            base: base(),
            tool_name: "shell_exec".into(),
            tool_call_id: "call_2".into(),
            tool_input: json!({"command": "ls"}),
            content: vec![ContentBlock::text("a\nb")],
            details: json!({"exitCode": 0}),
            is_error: false,
        });
        let value: Value = serde_json::from_slice(&stdin_bytes(&payload)).unwrap();
        assert_eq!(value["tool_name"], "Bash");
        assert_eq!(value["tool_input"], json!({"command": "ls"}));
        assert_eq!(
            value["tool_response"],
            json!({"output": "a\nb", "is_error": false, "exitCode": 0})
        );
    }
}
