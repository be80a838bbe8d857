//! `preCompact`: before a compaction summarizes older messages. A hook may cancel it or set the
//! summary's instructions.

use serde::{Deserialize, Serialize};

use super::words::quoted;
use super::{Event, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_len};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::{ChainFlow, Verdict};

pub struct PreCompact;

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

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreCompactOutcome {
    pub cancel: Option<bool>,
    pub custom_instructions: Option<String>,
}

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
