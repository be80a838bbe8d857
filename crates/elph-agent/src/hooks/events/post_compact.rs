//! `postCompact`: a compaction finished. Observation only.

use serde::{Deserialize, Serialize};

use super::pre_compact::CompactTrigger;
use super::{Event, Listed, Observation, Observed, Sample, Step};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

pub struct PostCompact;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostCompactPayload {
    #[serde(flatten)]
    pub base: PayloadBase,
    pub trigger: CompactTrigger,
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
