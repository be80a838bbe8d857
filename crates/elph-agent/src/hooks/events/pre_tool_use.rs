//! `preToolUse`: before a tool call runs (after its arguments are checked, before native
//! approval). A hook may block the call, ask the user, or rewrite its input; a block stops the
//! chain.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::words::shorten;
use super::{Event, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_len};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::{ChainFlow, Verdict};

/// The `preToolUse` event: the hook point that can stop, question or rewrite a tool call.
pub struct PreToolUse;

/// What a `preToolUse` hook reads: the call about to run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreToolUsePayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// The tool the model called.
    pub tool_name: String,
    /// The model's id for this call, which ties the result to its request.
    pub tool_call_id: String,
    /// The checked arguments, as earlier hooks of the chain left them.
    pub tool_input: Value,
}

/// A hook's say on whether a tool call runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// Changes nothing: a hook can never loosen native approval or the sandbox.
    Allow,
    /// Do not run it; the model is told why.
    Deny,
    /// Ask the user first, for this exact call.
    Ask,
}

/// What a `preToolUse` hook may print.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreToolUseOutcome {
    /// `true` blocks the call, like `decision: "deny"`, and stops the chain.
    pub block: Option<bool>,
    /// Why, in words the model and the user are shown.
    pub reason: Option<String>,
    /// `deny` blocks like `block`, `ask` adds a question for the user, `allow` changes nothing.
    pub decision: Option<Decision>,
    /// A replacement for the arguments the tool runs with.
    pub tool_input: Option<Value>,
}

impl PreToolUseOutcome {
    /// `block: true` and `decision: "deny"` both block.
    pub fn blocks(&self) -> bool {
        self.block == Some(true) || self.decision == Some(Decision::Deny)
    }
}

/// Whether the call runs, who decided, and with which arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename = "preToolUse", rename_all = "camelCase")]
pub struct PreToolUseReduced {
    /// The input the call runs with: the last rewrite, or the model's.
    pub tool_input: Value,
    /// Whether a hook rewrote the arguments (front ends show the rewrite).
    pub input_changed: bool,
    /// The hook that blocked the call; nothing after it ran or applied.
    pub blocked: Option<Verdict>,
    /// The first hook that asked for the user's approval.
    pub ask: Option<Verdict>,
}

impl Event for PreToolUse {
    type Payload = PreToolUsePayload;
    type Outcome = PreToolUseOutcome;
    type Reduced = PreToolUseReduced;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("PreToolUse");
    const UNCHECKED: Option<&'static str> = Some("the tool call went ahead without its check");
    const FAIL_CLOSED: &'static str = "the tool call is blocked";

    const TOOL_EVENT: bool = true;

    fn base(payload: &PreToolUsePayload) -> &PayloadBase {
        &payload.base
    }

    fn tool_name(payload: &PreToolUsePayload) -> Option<&str> {
        Some(&payload.tool_name)
    }

    fn tool_call_id(payload: &PreToolUsePayload) -> Option<&str> {
        Some(&payload.tool_call_id)
    }

    fn validate(outcome: &PreToolUseOutcome) -> Result<(), OutcomeError> {
        check_len("reason", outcome.reason.as_deref())
    }

    fn start(payload: &PreToolUsePayload) -> PreToolUseReduced {
        PreToolUseReduced {
            tool_input: payload.tool_input.clone(),
            input_changed: false,
            blocked: None,
            ask: None,
        }
    }

    fn apply(mut step: Step<'_, Self>, outcome: &PreToolUseOutcome) -> ChainFlow {
        let reason = outcome
            .reason
            .as_deref()
            .map(|reason| format!(": {reason}"))
            .unwrap_or_default();
        if outcome.blocks() {
            // A block wins over everything else in the same outcome: a rewritten input that comes
            // with it is never applied, so it is not reported either.
            step.reduced.blocked = Some(step.verdict(outcome.reason.clone()));
            step.effect(format!("blocked the tool call{reason}"));
            return ChainFlow::Stop;
        }
        if outcome.decision == Some(Decision::Ask) {
            if step.reduced.ask.is_none() {
                step.reduced.ask = Some(step.verdict(outcome.reason.clone()));
            }
            step.effect(format!("asked for approval{reason}"));
        }
        if let Some(input) = &outcome.tool_input {
            step.reduced.tool_input = input.clone();
            step.reduced.input_changed = true;
            step.payload.tool_input = input.clone();
            step.effect("rewrote the tool input");
        }
        ChainFlow::Continue
    }

    fn stopped_by(reduced: &PreToolUseReduced) -> Option<&Verdict> {
        reduced.blocked.as_ref()
    }

    fn explain(reduced: &PreToolUseReduced) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(verdict) = &reduced.blocked {
            lines.push(format!(
                "BLOCKED: {}. The tool does not run; the model receives that reason as an error result.",
                verdict.describe("blocked")
            ));
        } else if let Some(verdict) = &reduced.ask {
            lines.push(format!(
                "needs the user's approval: {} (with no one to ask, it is denied).",
                verdict.describe("approval asked")
            ));
        } else {
            lines.push("not blocked: the call goes on to native approval.".into());
        }
        let input = shorten(&reduced.tool_input.to_string(), 600);
        if reduced.input_changed {
            lines.push(format!("toolInput rewritten to: {input}"));
        } else {
            lines.push(format!("toolInput unchanged: {input}"));
        }
        lines
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> PreToolUsePayload {
        PreToolUsePayload {
            base,
            tool_name: sample.tool_name.to_string(),
            tool_call_id: "call_test".into(),
            tool_input: sample.tool_input.clone(),
        }
    }
}
