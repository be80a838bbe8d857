//! `postToolUseFailure`: after a tool call failed. The same payload, outcome and reduction as
//! `postToolUse` (see there); only the moment differs.

use super::post_tool_use::{self as result, PostToolUseOutcome, ToolResultPayload, ToolResultReduced};
use super::{Event, Sample, Step};
use crate::hooks::outcome::OutcomeError;
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

pub struct PostToolUseFailure;

impl Event for PostToolUseFailure {
    type Payload = ToolResultPayload;
    type Outcome = PostToolUseOutcome;
    type Reduced = ToolResultReduced;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("PostToolUseFailure");
    const UNCHECKED: Option<&'static str> = result::PostToolUse::UNCHECKED;
    const FAIL_CLOSED: &'static str = result::PostToolUse::FAIL_CLOSED;

    const TOOL_EVENT: bool = true;

    fn base(payload: &ToolResultPayload) -> &PayloadBase {
        &payload.base
    }

    fn tool_name(payload: &ToolResultPayload) -> Option<&str> {
        Some(&payload.tool_name)
    }

    fn tool_call_id(payload: &ToolResultPayload) -> Option<&str> {
        Some(&payload.tool_call_id)
    }

    fn tool_result(payload: &ToolResultPayload) -> Option<&ToolResultPayload> {
        Some(payload)
    }

    fn validate(outcome: &PostToolUseOutcome) -> Result<(), OutcomeError> {
        result::validate(outcome)
    }

    fn explain_invalid(error: serde_json::Error) -> String {
        result::explain_invalid(error)
    }

    fn start(payload: &ToolResultPayload) -> ToolResultReduced {
        result::start(payload)
    }

    fn apply(step: Step<'_, Self>, outcome: &PostToolUseOutcome) -> ChainFlow {
        result::apply(step, outcome)
    }

    fn explain(reduced: &ToolResultReduced) -> Vec<String> {
        result::explain(reduced)
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> ToolResultPayload {
        result::sample(base, sample, true)
    }
}
