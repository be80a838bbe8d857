//! `stop`: a turn ended (completed, failed or cancelled). Observation only.

use serde::{Deserialize, Serialize};

use super::{Event, Listed, Observation, Observed, Sample, Step};
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
}

impl Event for Stop {
    type Payload = StopPayload;
    type Outcome = Observation;
    type Reduced = Observed;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("Stop");

    fn base(payload: &StopPayload) -> &PayloadBase {
        &payload.base
    }

    fn start(_payload: &StopPayload) -> Observed {
        Observed {}
    }

    fn apply(_step: Step<'_, Self>, _outcome: &Observation) -> ChainFlow {
        ChainFlow::Continue
    }

    fn explain(_reduced: &Observed) -> Vec<String> {
        Observed::explain(Self::EVENT)
    }

    fn sample(base: PayloadBase, _sample: &Sample<'_>) -> StopPayload {
        StopPayload {
            base,
            status: StopStatus::Completed,
        }
    }
}
