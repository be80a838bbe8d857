//! The JSON a `"protocol": "claude-code"` hook reads on stdin: Claude Code's payload for the
//! moment, built from Elph's.

use std::path::Path;

use elph_agent::hooks::payload::{CompactTrigger, SessionSource, StopStatus, ToolResultPayload};
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
    /// All of them.
    const ALL: [ClaudeEvent; 8] = [
        ClaudeEvent::SessionStart,
        ClaudeEvent::UserPromptSubmit,
        ClaudeEvent::PreToolUse,
        ClaudeEvent::PostToolUse,
        ClaudeEvent::PostToolUseFailure,
        ClaudeEvent::PreCompact,
        ClaudeEvent::Stop,
        ClaudeEvent::SessionEnd,
    ];

    /// Claude Code's counterpart of `event`, if it has one: the event module names it
    /// (`Event::CLAUDE_CODE_NAME`).
    pub(crate) fn of(event: HookEvent) -> Option<ClaudeEvent> {
        let name = event.claude_code_name()?;
        ClaudeEvent::ALL.into_iter().find(|claude| claude.name() == name)
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
    // Only events Claude Code has get here: discovery refuses the protocol on the others.
    let Some(event) = ClaudeEvent::of(payload.event()) else {
        return Value::Object(out);
    };
    // Each arm reads the payload of its own event (the event came from the payload).
    match event {
        ClaudeEvent::SessionStart => {
            if let HookPayload::SessionStart(p) = payload {
                let source = match p.source {
                    SessionSource::New => "startup",
                    SessionSource::Resume => "resume",
                };
                out.insert("source".into(), json!(source));
            }
        }
        ClaudeEvent::UserPromptSubmit => {
            if let HookPayload::UserPromptSubmit(p) = payload {
                out.insert("prompt".into(), json!(p.prompt));
            }
        }
        ClaudeEvent::PreToolUse => {
            if let HookPayload::PreToolUse(p) = payload {
                out.insert("tool_name".into(), json!(claude_name(&p.tool_name)));
                out.insert(
                    "tool_input".into(),
                    claude_input(&p.tool_name, &p.tool_input, project_dir),
                );
                out.insert("tool_use_id".into(), json!(p.tool_call_id));
            }
        }
        ClaudeEvent::PostToolUse | ClaudeEvent::PostToolUseFailure => {
            if let Some(p) = payload.tool_result() {
                tool_response(&mut out, p, project_dir);
            }
        }
        ClaudeEvent::PreCompact => {
            if let HookPayload::PreCompact(p) = payload {
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
        }
        ClaudeEvent::Stop => {
            if let HookPayload::Stop(p) = payload {
                out.insert("stop_hook_active".into(), json!(false));
                let status = match p.status {
                    StopStatus::Completed => "completed",
                    StopStatus::Failed => "failed",
                    StopStatus::Cancelled => "cancelled",
                };
                out.insert("status".into(), json!(status));
            }
        }
        ClaudeEvent::SessionEnd => {
            if let HookPayload::SessionEnd(p) = payload {
                out.insert("reason".into(), json!(p.reason));
            }
        }
    }
    Value::Object(out)
}

/// A tool result's fields as Claude Code's PostToolUse and PostToolUseFailure have them.
fn tool_response(out: &mut Map<String, Value>, p: &ToolResultPayload, project_dir: &Path) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use elph_agent::hooks::payload::{PayloadBase, PreToolUsePayload, ToolResultPayload};

    fn base() -> PayloadBase {
        PayloadBase::new("s1", "/work/shop")
    }

    #[test]
    fn every_claude_code_name_an_event_declares_is_one_the_adapter_speaks() {
        let named: Vec<HookEvent> = HookEvent::ALL
            .into_iter()
            .filter(|event| event.claude_code_name().is_some())
            .collect();
        assert_eq!(named.len(), ClaudeEvent::ALL.len());
        for event in named {
            let claude = ClaudeEvent::of(event).expect("a ClaudeEvent of that name");
            assert_eq!(Some(claude.name()), event.claude_code_name());
        }
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
