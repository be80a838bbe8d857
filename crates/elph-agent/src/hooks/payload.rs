//! What every payload carries. Each event's own payload type is in its module under `events/`;
//! `HookPayload` (generated there) is any of them, tagged with `event`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use super::events::HookPayload;
// Each event's payload, where callers found them before the events had modules of their own.
pub use super::events::before_agent::BeforeAgentPayload;
pub use super::events::context::ContextPayload;
pub use super::events::notification::{NotificationKind, NotificationPayload};
pub use super::events::permission_request::PermissionRequestPayload;
pub use super::events::post_compact::PostCompactPayload;
pub use super::events::post_tool_use::ToolResultPayload;
pub use super::events::pre_compact::{CompactTrigger, PreCompactPayload};
pub use super::events::pre_tool_use::PreToolUsePayload;
pub use super::events::session_end::SessionEndPayload;
pub use super::events::session_start::{SessionSource, SessionStartPayload};
pub use super::events::stop::{StopPayload, StopStatus};
pub use super::events::user_prompt_submit::UserPromptSubmitPayload;

/// The fields every payload carries besides `event`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PayloadBase {
    /// The session the event belongs to, so a hook can keep state per session.
    pub session_id: String,
    /// The project directory the session works in.
    pub project_dir: PathBuf,
}

impl PayloadBase {
    /// The common fields for a payload of session `session_id` in `project_dir`.
    pub fn new(session_id: impl Into<String>, project_dir: impl Into<PathBuf>) -> Self {
        PayloadBase {
            session_id: session_id.into(),
            project_dir: project_dir.into(),
        }
    }
}

impl HookPayload {
    /// The bytes a hook receives on stdin: the JSON object and a newline.
    #[expect(clippy::expect_used, reason = "a payload is plain data and always serializes")]
    pub fn to_stdin_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).expect("payloads always serialize");
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::events::post_tool_use::ToolResultPayload;
    use crate::hooks::events::pre_compact::{CompactTrigger, PreCompactPayload};
    use crate::hooks::events::pre_tool_use::PreToolUsePayload;
    use crate::hooks::events::session_start::{SessionSource, SessionStartPayload};
    use crate::hooks::events::stop::{StopPayload, StopStatus};
    use crate::messages::ContentBlock;
    use serde_json::{Value, json};

    fn base() -> PayloadBase {
        PayloadBase::new("s-1", "/work/project")
    }

    #[test]
    fn every_payload_carries_event_session_and_project() {
        let payload = HookPayload::PreToolUse(PreToolUsePayload {
            base: base(),
            tool_name: "shell_exec".into(),
            tool_call_id: "call_1".into(),
            tool_input: json!({"command": "ls"}),
        });
        assert_eq!(
            serde_json::to_value(&payload).unwrap(),
            json!({
                "event": "preToolUse",
                "sessionId": "s-1",
                "projectDir": "/work/project",
                "toolName": "shell_exec",
                "toolCallId": "call_1",
                "toolInput": {"command": "ls"}
            })
        );
    }

    #[test]
    fn payloads_round_trip() {
        let payloads = vec![
            HookPayload::SessionStart(SessionStartPayload {
                base: base(),
                source: SessionSource::Resume,
            }),
            HookPayload::Stop(StopPayload {
                base: base(),
                status: StopStatus::Cancelled,
                continuations: 0,
            }),
            HookPayload::PreCompact(PreCompactPayload {
                base: base(),
                trigger: CompactTrigger::Manual,
                entry_count: 12,
                custom_instructions: Some("keep it".into()),
            }),
            HookPayload::PostToolUseFailure(ToolResultPayload {
                base: base(),
                tool_name: "read_file".into(),
                tool_call_id: "c".into(),
                tool_input: json!({"path": "x"}),
                content: vec![ContentBlock::text("no such file")],
                details: Value::Null,
                is_error: true,
            }),
        ];
        for payload in payloads {
            let json = serde_json::to_string(&payload).unwrap();
            let back: HookPayload = serde_json::from_str(&json).unwrap();
            assert_eq!(back, payload);
            assert!(json.contains(&format!("\"event\":\"{}\"", payload.event())));
        }
    }

    #[test]
    fn stdin_bytes_end_with_one_newline() {
        let payload = HookPayload::Stop(StopPayload {
            base: base(),
            status: StopStatus::Completed,
            continuations: 0,
        });
        let bytes = payload.to_stdin_bytes();
        assert_eq!(bytes.last(), Some(&b'\n'));
        assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
    }
}
