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

/// Something the harness tells its front end while a session runs, in order, as one stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[expect(
    missing_docs,
    reason = "the variants' fields are the same few facts (the tool call's id, name, input, result) named for what they are; the variants say when they are sent"
)]
pub enum AgentEvent {
    /// The session started; its `sessionStart` hooks run next.
    SessionStarted { session_id: String },
    /// A user turn began with this prompt.
    TurnStarted { prompt: String },
    /// A request to the model is about to be sent (after the context hooks).
    ModelRequestStarted,
    /// A piece of the model's answer as it streams.
    TextDelta { text: String },
    /// The model's complete answer of one request, with the tools it called.
    AssistantMessage { text: String, tool_calls: Vec<ToolCall> },
    /// The model called a tool; its preToolUse hooks and approval come next.
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
    /// The change a call proposes to a file (`write_file`, `edit_file`), as the user reviews it:
    /// after preToolUse hooks and the file policy, before approval. A `write_file`'s carries what
    /// the file held ([`crate::tools::Overwrites`]).
    ToolChangeProposed {
        tool_call_id: String,
        tool_name: String,
        change: crate::tools::ProposedChange,
    },
    /// Approval was asked (or refused for want of someone to ask).
    ApprovalNeeded {
        tool_call_id: String,
        tool_name: String,
        reason: String,
    },
    /// The tool itself starts (its preToolUse hooks and approval let the call go on).
    ToolStarted { tool_call_id: String, tool_name: String },
    /// A tool call ended, run or not; `content` is what the model sees.
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
    Hooks { dispatch: Dispatch },
    /// Something the user should see that is not part of the conversation.
    Notice { message: String },
    /// Token counts of one model request.
    Usage { usage: Usage },
    /// A compaction replaced older entries with a summary.
    Compacted { entries_compacted: u64 },
    /// A user turn ended (after its `stop` hooks).
    TurnEnded {
        status: StopStatus,
        error: Option<String>,
    },
    /// The session ended (after its `sessionEnd` hooks).
    SessionEnded { reason: String },
}
