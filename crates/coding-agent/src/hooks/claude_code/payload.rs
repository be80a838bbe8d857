//! The JSON a `"protocol": "claude-code"` hook reads on stdin: Claude Code's payload for the
//! moment, built from Elph's.

use std::path::Path;

use elph_agent::hooks::payload::{
    CompactTrigger, NotificationKind, SessionSource, StopStatus, ToolResultPayload,
};
use elph_agent::hooks::{HookEvent, HookPayload};
use elph_ai::ContentBlock;
use serde_json::{Map, Value, json};

use super::tools::{Dialect, input_in, name_in};

/// An event both agents have: the only events a Claude Code hook can be written for (the
/// configuration refuses the others), so the answer's reader matches over these ten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClaudeEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PermissionRequest,
    PreCompact,
    Stop,
    Notification,
    SessionEnd,
}

impl ClaudeEvent {
    /// All of them.
    const ALL: [ClaudeEvent; 10] = [
        ClaudeEvent::SessionStart,
        ClaudeEvent::UserPromptSubmit,
        ClaudeEvent::PreToolUse,
        ClaudeEvent::PostToolUse,
        ClaudeEvent::PostToolUseFailure,
        ClaudeEvent::PermissionRequest,
        ClaudeEvent::PreCompact,
        ClaudeEvent::Stop,
        ClaudeEvent::Notification,
        ClaudeEvent::SessionEnd,
    ];

    /// Claude Code's counterpart of `event`, if it has one: the event module names it
    /// (`Event::CLAUDE_CODE_NAME`).
    pub(crate) fn of(event: HookEvent) -> Option<ClaudeEvent> {
        let name = event.claude_code_name()?;
        ClaudeEvent::ALL.into_iter().find(|claude| claude.name() == name)
    }

    /// Its name in Gemini CLI (which has all eight, under other names; a failed tool call is an
    /// AfterTool there too).
    pub(crate) fn gemini_name(self) -> &'static str {
        match self {
            ClaudeEvent::SessionStart => "SessionStart",
            ClaudeEvent::UserPromptSubmit => "BeforeAgent",
            ClaudeEvent::PreToolUse => "BeforeTool",
            ClaudeEvent::PostToolUse | ClaudeEvent::PostToolUseFailure => "AfterTool",
            ClaudeEvent::PreCompact => "PreCompress",
            ClaudeEvent::Stop => "AfterAgent",
            ClaudeEvent::SessionEnd => "SessionEnd",
            // Gemini CLI's Notification is also what it fires when a tool waits for permission.
            ClaudeEvent::PermissionRequest | ClaudeEvent::Notification => "Notification",
        }
    }

    /// Its name in the dialect.
    pub(crate) fn name_in(self, dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Claude => self.name(),
            Dialect::Gemini => self.gemini_name(),
        }
    }

    /// Its name in Claude Code.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClaudeEvent::SessionStart => "SessionStart",
            ClaudeEvent::UserPromptSubmit => "UserPromptSubmit",
            ClaudeEvent::PreToolUse => "PreToolUse",
            ClaudeEvent::PostToolUse => "PostToolUse",
            ClaudeEvent::PostToolUseFailure => "PostToolUseFailure",
            ClaudeEvent::PermissionRequest => "PermissionRequest",
            ClaudeEvent::Notification => "Notification",
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

/// The payload as Claude Code would send it, one line of JSON with a newline. `transcript` is the
/// session's transcript in Claude Code's JSONL form, when there is one (see [`super::transcript`]).
#[expect(clippy::expect_used, reason = "a payload is plain data and always serializes")]
pub(crate) fn stdin_bytes(payload: &HookPayload, transcript: Option<&Path>, dialect: Dialect) -> Vec<u8> {
    let mut bytes =
        serde_json::to_vec(&payload_json(payload, transcript, dialect)).expect("a payload serializes");
    bytes.push(b'\n');
    bytes
}

fn payload_json(payload: &HookPayload, transcript: Option<&Path>, dialect: Dialect) -> Value {
    let base = payload.base();
    let project_dir = &base.project_dir;
    let mut out = Map::new();
    out.insert("session_id".into(), json!(base.session_id));
    out.insert(
        "transcript_path".into(),
        json!(
            transcript
                .map(|path| path.display().to_string())
                .unwrap_or_default()
        ),
    );
    out.insert("cwd".into(), json!(project_dir.display().to_string()));
    // Only events Claude Code has get here: discovery refuses the protocol on the others.
    let Some(event) = ClaudeEvent::of(payload.event()) else {
        out.insert("hook_event_name".into(), json!(payload.event().as_str()));
        return Value::Object(out);
    };
    out.insert("hook_event_name".into(), json!(event.name_in(dialect)));
    if dialect == Dialect::Gemini {
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        out.insert("timestamp".into(), json!(now));
    }
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
                out.insert("tool_name".into(), json!(name_in(dialect, &p.tool_name)));
                out.insert(
                    "tool_input".into(),
                    input_in(dialect, &p.tool_name, &p.tool_input, project_dir),
                );
                out.insert("tool_use_id".into(), json!(p.tool_call_id));
            }
        }
        ClaudeEvent::PostToolUse | ClaudeEvent::PostToolUseFailure => {
            if let Some(p) = payload.tool_result() {
                tool_response(&mut out, p, project_dir, dialect);
            }
        }
        ClaudeEvent::PermissionRequest => {
            if let HookPayload::PermissionRequest(p) = payload {
                out.insert("tool_name".into(), json!(name_in(dialect, &p.tool_name)));
                out.insert(
                    "tool_input".into(),
                    input_in(dialect, &p.tool_name, &p.tool_input, project_dir),
                );
                out.insert("tool_use_id".into(), json!(p.tool_call_id));
                // Claude Code offers rule suggestions here; Elph has none to offer.
                out.insert("permission_suggestions".into(), json!([]));
            }
        }
        ClaudeEvent::Notification => {
            if let HookPayload::Notification(p) = payload {
                out.insert("message".into(), json!(p.message));
                let kind = match p.kind {
                    NotificationKind::ApprovalNeeded => "permission_prompt",
                    NotificationKind::TurnDone => "idle_prompt",
                    NotificationKind::Error => "error",
                };
                out.insert("notification_type".into(), json!(kind));
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
                // True once a stop hook has continued the turn: Claude Code's loop guard.
                out.insert("stop_hook_active".into(), json!(p.continuations > 0));
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
fn tool_response(out: &mut Map<String, Value>, p: &ToolResultPayload, project_dir: &Path, dialect: Dialect) {
    out.insert("tool_name".into(), json!(name_in(dialect, &p.tool_name)));
    out.insert(
        "tool_input".into(),
        input_in(dialect, &p.tool_name, &p.tool_input, project_dir),
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
    if dialect == Dialect::Gemini {
        let text = text.join("\n");
        out.insert(
            "tool_response".into(),
            json!({"llmContent": text, "returnDisplay": text, "error": p.is_error.then_some(&text)}),
        );
        return;
    }
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
        let value: Value = serde_json::from_slice(&stdin_bytes(&payload, None, Dialect::Claude)).unwrap();
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
    fn gemini_hooks_read_gemini_names() {
        let payload = HookPayload::PreToolUse(PreToolUsePayload {
            base: base(),
            tool_name: "shell_exec".into(),
            tool_call_id: "call_1".into(),
            tool_input: json!({"command": "rm -rf /"}),
        });
        let value: Value = serde_json::from_slice(&stdin_bytes(&payload, None, Dialect::Gemini)).unwrap();
        assert_eq!(value["hook_event_name"], "BeforeTool");
        assert_eq!(value["tool_name"], "run_shell_command");
        assert_eq!(value["tool_input"], json!({"command": "rm -rf /"}));
        assert!(value["timestamp"].as_str().unwrap().starts_with("20"));
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
        let value: Value = serde_json::from_slice(&stdin_bytes(&payload, None, Dialect::Claude)).unwrap();
        assert_eq!(value["tool_name"], "Bash");
        assert_eq!(value["tool_input"], json!({"command": "ls"}));
        assert_eq!(
            value["tool_response"],
            json!({"output": "a\nb", "is_error": false, "exitCode": 0})
        );
    }
}
