//! `postToolUse`: after a tool call succeeded. A hook may patch the result the model sees and ask
//! to end the turn. `postToolUseFailure` shares this payload, outcome and reduction.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::words::{describe_block, shorten};
use super::{Event, Listed, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_blocks};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;
use crate::messages::ContentBlock;

/// The `postToolUse` event, where hooks may patch a successful tool result.
pub struct PostToolUse;

/// The payload of `postToolUse` and `postToolUseFailure`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// The tool that ran, as the model named it.
    pub tool_name: String,
    /// The model's id for this call, which ties the result to its request.
    pub tool_call_id: String,
    /// The arguments the tool ran with (after any `preToolUse` rewrite).
    pub tool_input: Value,
    /// The result the model will see, as earlier hooks of the chain left it.
    pub content: Vec<ContentBlock>,
    /// Tool-specific structured data for front ends (exit code, paths); the model does not see it.
    #[serde(default)]
    pub details: Value,
    /// Whether the result reports a failure to the model.
    pub is_error: bool,
}

/// The outcome of `postToolUse` and `postToolUseFailure`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PostToolUseOutcome {
    /// A replacement for the result the model sees.
    pub content: Option<Vec<ContentBlock>>,
    /// A replacement for the structured details front ends show.
    pub details: Option<Value>,
    /// Turns the result into a failure, or a failure into a success.
    pub is_error: Option<bool>,
    /// Asks to end the turn after this tool batch instead of asking the model again.
    pub terminate: Option<bool>,
}

/// The tool result after the chain of `postToolUse` or `postToolUseFailure`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename = "toolResult", rename_all = "camelCase")]
pub struct ToolResultReduced {
    /// The result the model sees.
    pub content: Vec<ContentBlock>,
    /// The structured details front ends show.
    pub details: Value,
    /// Whether the model is told the call failed.
    pub is_error: bool,
    /// Whether a hook asked to end the turn after this tool batch.
    pub terminate: bool,
    /// Whether any hook changed the result (front ends mark a patched result).
    pub changed: bool,
}

/// The rules both tool-result events share.
pub(super) trait ToolResultEvent:
    Listed + Event<Payload = ToolResultPayload, Outcome = PostToolUseOutcome, Reduced = ToolResultReduced>
{
}

impl<E> ToolResultEvent for E where
    E: Listed + Event<Payload = ToolResultPayload, Outcome = PostToolUseOutcome, Reduced = ToolResultReduced>
{
}

pub(super) fn explain_invalid(error: serde_json::Error) -> String {
    format!(
        "{error} (content must be an array of {{\"type\":\"text\",\"text\":…}} or {{\"type\":\"image\",\"data\":…,\"mime_type\":…}} blocks)"
    )
}

pub(super) fn validate(outcome: &PostToolUseOutcome) -> Result<(), OutcomeError> {
    match &outcome.content {
        Some(content) => check_blocks("content", content),
        None => Ok(()),
    }
}

pub(super) fn start(payload: &ToolResultPayload) -> ToolResultReduced {
    ToolResultReduced {
        content: payload.content.clone(),
        details: payload.details.clone(),
        is_error: payload.is_error,
        terminate: false,
        changed: false,
    }
}

pub(super) fn apply<E: ToolResultEvent>(mut step: Step<'_, E>, outcome: &PostToolUseOutcome) -> ChainFlow {
    let result = &mut *step.reduced;
    if let Some(content) = &outcome.content {
        result.content = content.clone();
        result.changed = true;
    }
    if let Some(details) = &outcome.details {
        result.details = details.clone();
        result.changed = true;
    }
    if let Some(flag) = outcome.is_error {
        result.is_error = flag;
        result.changed = true;
    }
    if let Some(flag) = outcome.terminate {
        result.terminate = flag;
    }
    step.payload.content = result.content.clone();
    step.payload.details = result.details.clone();
    step.payload.is_error = result.is_error;
    if outcome.content.is_some() {
        step.effect(format!("replaced the tool result ({})", E::EVENT));
    }
    if let Some(flag) = outcome.is_error {
        step.effect(format!("set isError to {flag}"));
    }
    if outcome.details.is_some() {
        step.effect("replaced the result details");
    }
    if outcome.terminate == Some(true) {
        step.effect("asked to end the turn");
    }
    ChainFlow::Continue
}

pub(super) fn explain(reduced: &ToolResultReduced) -> Vec<String> {
    let mut lines = vec![if reduced.changed {
        "the tool result was patched:".to_string()
    } else {
        "no change to the tool result:".to_string()
    }];
    lines.extend(
        reduced
            .content
            .iter()
            .map(|block| format!("  content: {}", describe_block(block))),
    );
    lines.push(format!("  isError: {}", reduced.is_error));
    lines.push(format!(
        "  details: {}",
        shorten(&reduced.details.to_string(), 300)
    ));
    if reduced.terminate {
        lines.push(
            "terminate: the agent loop ends after this batch of tool calls (once every result in it asks to)."
                .into(),
        );
    }
    lines
}

pub(super) fn sample(base: PayloadBase, sample: &Sample<'_>, is_error: bool) -> ToolResultPayload {
    ToolResultPayload {
        base,
        tool_name: sample.tool_name.to_string(),
        tool_call_id: "call_test".into(),
        tool_input: sample.tool_input.clone(),
        content: vec![ContentBlock::text(if is_error {
            "error: the tool failed (synthetic result from elph hooks test)"
        } else {
            "ok (synthetic result from elph hooks test)"
        })],
        details: json!({}),
        is_error,
    }
}

impl Event for PostToolUse {
    type Payload = ToolResultPayload;
    type Outcome = PostToolUseOutcome;
    type Reduced = ToolResultReduced;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("PostToolUse");
    const UNCHECKED: Option<&'static str> = Some("the tool's result reached the model without its check");
    const FAIL_CLOSED: &'static str = "the tool's result is withheld from the model";

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
        validate(outcome)
    }

    fn explain_invalid(error: serde_json::Error) -> String {
        explain_invalid(error)
    }

    fn start(payload: &ToolResultPayload) -> ToolResultReduced {
        start(payload)
    }

    fn apply(step: Step<'_, Self>, outcome: &PostToolUseOutcome) -> ChainFlow {
        apply(step, outcome)
    }

    fn explain(reduced: &ToolResultReduced) -> Vec<String> {
        explain(reduced)
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> ToolResultPayload {
        self::sample(base, sample, false)
    }
}
