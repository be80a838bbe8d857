//! `preCompact`: before a compaction summarizes older messages. A hook may cancel it or set the
//! summary's instructions.

use serde::{Deserialize, Serialize};

use super::words::quoted;
use super::{Event, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_len};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::{ChainFlow, Verdict};

/// The `preCompact` event, where hooks may cancel a compaction or steer its summary.
pub struct PreCompact;

/// What started a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CompactTrigger {
    /// The context window was nearly full.
    Auto,
    /// The user asked (`/compact`).
    Manual,
}

/// What a `preCompact` hook reads: what is about to be summarized and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PreCompactPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// Whether the compaction is automatic or asked for.
    pub trigger: CompactTrigger,
    /// How many messages the compaction would summarize (the older part of the transcript).
    pub entry_count: u64,
    /// The instructions for the summary, as the user or earlier hooks left them.
    pub custom_instructions: Option<String>,
}

/// What a `preCompact` hook may print.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreCompactOutcome {
    /// `true` cancels the compaction; a later hook cannot undo it.
    pub cancel: Option<bool>,
    /// Replaces the instructions the summary is written with.
    pub custom_instructions: Option<String>,
}

/// Whether the compaction goes on, and with which instructions.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename = "preCompact", rename_all = "camelCase")]
pub struct PreCompactReduced {
    /// The first hook that cancelled; a cancel is not undone by a later hook.
    pub cancelled: Option<Verdict>,
    /// The last instructions set, or the user's.
    pub custom_instructions: Option<String>,
}

impl Event for PreCompact {
    type Payload = PreCompactPayload;
    type Outcome = PreCompactOutcome;
    type Reduced = PreCompactReduced;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("PreCompact");
    const UNCHECKED: Option<&'static str> = Some("compaction went ahead without its check");
    const FAIL_CLOSED: &'static str = "compaction is cancelled";

    fn base(payload: &PreCompactPayload) -> &PayloadBase {
        &payload.base
    }

    fn validate(outcome: &PreCompactOutcome) -> Result<(), OutcomeError> {
        check_len("customInstructions", outcome.custom_instructions.as_deref())
    }

    fn start(payload: &PreCompactPayload) -> PreCompactReduced {
        PreCompactReduced {
            cancelled: None,
            custom_instructions: payload.custom_instructions.clone(),
        }
    }

    fn apply(mut step: Step<'_, Self>, outcome: &PreCompactOutcome) -> ChainFlow {
        if outcome.cancel == Some(true) {
            if step.reduced.cancelled.is_none() {
                step.reduced.cancelled = Some(step.verdict(None));
            }
            step.effect("cancelled compaction");
        }
        if let Some(instructions) = &outcome.custom_instructions {
            step.reduced.custom_instructions = Some(instructions.clone());
            step.payload.custom_instructions = Some(instructions.clone());
            step.effect("set the compaction instructions");
        }
        ChainFlow::Continue
    }

    fn explain(reduced: &PreCompactReduced) -> Vec<String> {
        vec![
            match &reduced.cancelled {
                Some(verdict) => format!("{}.", verdict.describe("compaction cancelled")),
                None => "the compaction goes ahead.".into(),
            },
            match &reduced.custom_instructions {
                Some(text) => format!("custom instructions: {}", quoted(text, 300)),
                None => "no custom instructions.".into(),
            },
        ]
    }

    fn sample(base: PayloadBase, _sample: &Sample<'_>) -> PreCompactPayload {
        PreCompactPayload {
            base,
            trigger: CompactTrigger::Manual,
            entry_count: 10,
            custom_instructions: None,
        }
    }
}
