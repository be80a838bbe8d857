//! What the harness tells its front end while it works.
//!
//! Besides what happened (text, answers, tool results, hook runs), the harness says which phase of
//! the turn starts, so that a front end shows what it waits for without guessing: `hooksStarted`
//! and `hooks` open and close an event's hook chain, `modelRequestStarted` a request to the model,
//! `toolStarted` and `toolCallFinished` a tool's own run (after its preToolUse hooks and approval).

use serde::Serialize;
use serde_json::Value;

use crate::hooks::HookEvent;
use crate::hooks::StopStatus;
use crate::hooks::runner::Dispatch;
use crate::messages::{ContentBlock, ToolCall};
use elph_ai::Usage;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum AgentEvent {
    SessionStarted {
        session_id: String,
    },
    TurnStarted {
        prompt: String,
    },
    /// A request to the model is about to be sent (after the context hooks).
    ModelRequestStarted,
    TextDelta {
        text: String,
    },
    AssistantMessage {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    ToolCallStarted {
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    /// preToolUse hooks rewrote the arguments, and the new ones passed the tool's schema: the call
    /// goes on with `input`.
    ToolInputRewritten {
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    /// Approval was asked (or refused for want of someone to ask).
    ApprovalNeeded {
        tool_call_id: String,
        tool_name: String,
        reason: String,
    },
    /// The tool itself starts (its preToolUse hooks and approval let the call go on).
    ToolStarted {
        tool_call_id: String,
        tool_name: String,
    },
    ToolCallFinished {
        tool_call_id: String,
        tool_name: String,
        content: Vec<ContentBlock>,
        details: Value,
        is_error: bool,
        /// Whether the tool ran at all (false: blocked, denied, or invalid arguments).
        ran: bool,
    },
    /// An event's hook chain is about to run (sent only when at least one hook will).
    HooksStarted {
        event: HookEvent,
        tool_name: Option<String>,
    },
    /// One event's hook chain ran (at least one hook): the end of the chain that `HooksStarted`
    /// began.
    Hooks {
        dispatch: Dispatch,
    },
    /// Something the user should see that is not part of the conversation.
    Notice {
        message: String,
    },
    Usage {
        usage: Usage,
    },
    Compacted {
        entries_compacted: u64,
    },
    TurnEnded {
        status: StopStatus,
        error: Option<String>,
    },
    SessionEnded {
        reason: String,
    },
}
