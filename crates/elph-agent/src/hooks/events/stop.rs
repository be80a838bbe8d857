//! `stop`: a turn ended (completed, failed or cancelled). A hook may hand the model one more
//! instruction (`continue`), which starts another round of the turn with that text; the harness
//! caps how many times in a row.

use serde::{Deserialize, Serialize};

use super::words::quoted;
use super::{Event, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_len};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

/// The `stop` event, told when a turn ends however it ends.
pub struct Stop;

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopStatus {
    /// The model finished its answer.
    Completed,
    /// An error ended the turn (provider, hook guard, limit).
    Failed,
    /// The user cancelled the turn.
    Cancelled,
}

/// What a `stop` hook reads: how the turn ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StopPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// How the turn ended.
    pub status: StopStatus,
    /// How many times in a row stop hooks have already continued this turn (0: the model stopped
    /// on its own). A hook that continues should stop doing so at some point; the harness stops
    /// it at its cap in any case.
    #[serde(default)]
    pub continuations: u32,
}

/// What a `stop` hook may print.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopOutcome {
    /// An instruction for the model: the turn goes on with it as the next user message. Only
    /// after a completed turn (not a failed or cancelled one).
    #[serde(rename = "continue")]
    pub continue_with: Option<String>,
}

/// The instructions the stop hooks gave, in hook order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename = "stop", rename_all = "camelCase")]
pub struct StopReduced {
    /// (hook id, instruction) for each hook that asked to continue.
    pub continue_with: Vec<(String, String)>,
}

impl StopReduced {
    /// The text the next round starts with: every instruction, in hook order.
    pub fn next_prompt(&self) -> Option<String> {
        (!self.continue_with.is_empty()).then(|| {
            self.continue_with
                .iter()
                .map(|(_, text)| text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
    }
}

impl Event for Stop {
    type Payload = StopPayload;
    type Outcome = StopOutcome;
    type Reduced = StopReduced;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("Stop");

    fn base(payload: &StopPayload) -> &PayloadBase {
        &payload.base
    }

    fn validate(outcome: &StopOutcome) -> Result<(), OutcomeError> {
        check_len("continue", outcome.continue_with.as_deref())
    }

    fn start(_payload: &StopPayload) -> StopReduced {
        StopReduced::default()
    }

    fn apply(mut step: Step<'_, Self>, outcome: &StopOutcome) -> ChainFlow {
        let Some(text) = outcome.continue_with.as_deref().map(str::trim) else {
            return ChainFlow::Continue;
        };
        if text.is_empty() {
            return ChainFlow::Continue;
        }
        if step.payload.status != StopStatus::Completed {
            step.effect("asked to continue, but the turn did not complete; nothing was continued");
            return ChainFlow::Continue;
        }
        step.reduced
            .continue_with
            .push((step.hook_id.to_string(), text.to_string()));
        step.effect(format!("continued the turn: {}", quoted(text, 120)));
        ChainFlow::Continue
    }

    fn explain(reduced: &StopReduced) -> Vec<String> {
        match reduced.next_prompt() {
            Some(text) => vec![format!("the turn goes on with: {}", quoted(&text, 300))],
            None => vec!["the turn ends.".into()],
        }
    }

    fn sample(base: PayloadBase, _sample: &Sample<'_>) -> StopPayload {
        StopPayload {
            base,
            status: StopStatus::Completed,
            continuations: 0,
        }
    }
}
