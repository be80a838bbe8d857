//! One payload type per event. Every payload carries `event`, `sessionId` and `projectDir`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::HookEvent;
use crate::messages::{ContentBlock, Message};

/// The fields every payload carries besides `event`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PayloadBase {
    pub session_id: String,
    pub project_dir: PathBuf,
}

impl PayloadBase {
    pub fn new(session_id: impl Into<String>, project_dir: impl Into<PathBuf>) -> Self {
        PayloadBase {
            session_id: session_id.into(),
            project_dir: project_dir.into(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionSource {
    New,
    Resume,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStartPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub source: SessionSource,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserPromptSubmitPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub prompt: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BeforeAgentPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub prompt: String,
    pub system_prompt: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub messages: Vec<Message>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreToolUsePayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub tool_name: String,
    pub tool_call_id: String,
    pub tool_input: Value,
}

/// The payload of `postToolUse` and `postToolUseFailure`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub tool_name: String,
    pub tool_call_id: String,
    pub tool_input: Value,
    pub content: Vec<ContentBlock>,
    #[serde(default)]
    pub details: Value,
    pub is_error: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CompactTrigger {
    Auto,
    Manual,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreCompactPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub trigger: CompactTrigger,
    pub entry_count: u64,
    pub custom_instructions: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostCompactPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub trigger: CompactTrigger,
    pub entries_compacted: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopStatus {
    Completed,
    Failed,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub status: StopStatus,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEndPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub reason: String,
}

/// A payload of any event, serialized with its `event` tag: exactly what a hook reads on stdin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "camelCase")]
pub enum HookPayload {
    SessionStart(SessionStartPayload),
    UserPromptSubmit(UserPromptSubmitPayload),
    BeforeAgent(BeforeAgentPayload),
    Context(ContextPayload),
    PreToolUse(PreToolUsePayload),
    PostToolUse(ToolResultPayload),
    PostToolUseFailure(ToolResultPayload),
    PreCompact(PreCompactPayload),
    PostCompact(PostCompactPayload),
    Stop(StopPayload),
    SessionEnd(SessionEndPayload),
}

impl HookPayload {
    pub fn event(&self) -> HookEvent {
        match self {
            HookPayload::SessionStart(_) => HookEvent::SessionStart,
            HookPayload::UserPromptSubmit(_) => HookEvent::UserPromptSubmit,
            HookPayload::BeforeAgent(_) => HookEvent::BeforeAgent,
            HookPayload::Context(_) => HookEvent::Context,
            HookPayload::PreToolUse(_) => HookEvent::PreToolUse,
            HookPayload::PostToolUse(_) => HookEvent::PostToolUse,
            HookPayload::PostToolUseFailure(_) => HookEvent::PostToolUseFailure,
            HookPayload::PreCompact(_) => HookEvent::PreCompact,
            HookPayload::PostCompact(_) => HookEvent::PostCompact,
            HookPayload::Stop(_) => HookEvent::Stop,
            HookPayload::SessionEnd(_) => HookEvent::SessionEnd,
        }
    }

    pub fn base(&self) -> &PayloadBase {
        match self {
            HookPayload::SessionStart(p) => &p.base,
            HookPayload::UserPromptSubmit(p) => &p.base,
            HookPayload::BeforeAgent(p) => &p.base,
            HookPayload::Context(p) => &p.base,
            HookPayload::PreToolUse(p) => &p.base,
            HookPayload::PostToolUse(p) | HookPayload::PostToolUseFailure(p) => &p.base,
            HookPayload::PreCompact(p) => &p.base,
            HookPayload::PostCompact(p) => &p.base,
            HookPayload::Stop(p) => &p.base,
            HookPayload::SessionEnd(p) => &p.base,
        }
    }

    /// The tool a tool event is about; `None` for other events.
    pub fn tool_name(&self) -> Option<&str> {
        match self {
            HookPayload::PreToolUse(p) => Some(&p.tool_name),
            HookPayload::PostToolUse(p) | HookPayload::PostToolUseFailure(p) => Some(&p.tool_name),
            _ => None,
        }
    }

    /// The bytes a hook receives on stdin: the JSON object and a newline.
    pub fn to_stdin_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(self).expect("payloads always serialize");
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        });
        let bytes = payload.to_stdin_bytes();
        assert_eq!(bytes.last(), Some(&b'\n'));
        assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
    }
}
