//! `postCompact`: a compaction finished. Observation only.

use serde::{Deserialize, Serialize};

use super::pre_compact::CompactTrigger;
use super::{Event, Listed, Observation, Observed, Sample, Step};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

pub struct PostCompact;

/// What a `postCompact` hook reads: how the compaction started and how much it folded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostCompactPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// Whether the compaction was automatic or asked for.
    pub trigger: CompactTrigger,
    /// How many stored entries the summary replaced.
    pub entries_compacted: u64,
}

impl Event for PostCompact {
    type Payload = PostCompactPayload;
    type Outcome = Observation;
    type Reduced = Observed;

    fn base(payload: &PostCompactPayload) -> &PayloadBase {
        &payload.base
    }

    fn start(_payload: &PostCompactPayload) -> Observed {
        Observed {}
    }

    fn apply(_step: Step<'_, Self>, _outcome: &Observation) -> ChainFlow {
        ChainFlow::Continue
    }

    fn explain(_reduced: &Observed) -> Vec<String> {
        Observed::explain(Self::EVENT)
    }

    fn sample(base: PayloadBase, _sample: &Sample<'_>) -> PostCompactPayload {
        PostCompactPayload {
            base,
            trigger: CompactTrigger::Manual,
            entries_compacted: 10,
        }
    }
}
