//! `sessionEnd`: the session is shutting down in order. Observation only.

use serde::{Deserialize, Serialize};

use super::{Event, Listed, Observation, Observed, Sample, Step};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

pub struct SessionEnd;

/// What a `sessionEnd` hook reads: why the session ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEndPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// Why the session ends, in a word such as `exit`.
    pub reason: String,
}

impl Event for SessionEnd {
    type Payload = SessionEndPayload;
    type Outcome = Observation;
    type Reduced = Observed;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("SessionEnd");

    fn base(payload: &SessionEndPayload) -> &PayloadBase {
        &payload.base
    }

    fn start(_payload: &SessionEndPayload) -> Observed {
        Observed {}
    }

    fn apply(_step: Step<'_, Self>, _outcome: &Observation) -> ChainFlow {
        ChainFlow::Continue
    }

    fn explain(_reduced: &Observed) -> Vec<String> {
        Observed::explain(Self::EVENT)
    }

    fn sample(base: PayloadBase, _sample: &Sample<'_>) -> SessionEndPayload {
        SessionEndPayload {
            base,
            reason: "exit".into(),
        }
    }
}
