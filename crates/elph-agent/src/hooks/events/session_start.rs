//! `sessionStart`: a session was created or resumed. Observation only.

use serde::{Deserialize, Serialize};

use super::{Event, Listed, Observation, Observed, Sample, Step};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

pub struct SessionStart;

/// How a session came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionSource {
    /// A fresh session with no history.
    New,
    /// A stored session opened again, with its history.
    Resume,
}

impl SessionSource {
    /// The name in payloads and matchers.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionSource::New => "new",
            SessionSource::Resume => "resume",
        }
    }
}

/// What a `sessionStart` hook reads: which session started and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStartPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// Whether the session is new or resumed.
    pub source: SessionSource,
}

impl Event for SessionStart {
    type Payload = SessionStartPayload;
    type Outcome = Observation;
    type Reduced = Observed;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("SessionStart");

    fn base(payload: &SessionStartPayload) -> &PayloadBase {
        &payload.base
    }

    fn start(_payload: &SessionStartPayload) -> Observed {
        Observed {}
    }

    fn apply(_step: Step<'_, Self>, _outcome: &Observation) -> ChainFlow {
        ChainFlow::Continue
    }

    fn explain(_reduced: &Observed) -> Vec<String> {
        Observed::explain(Self::EVENT)
    }

    fn sample(base: PayloadBase, _sample: &Sample<'_>) -> SessionStartPayload {
        SessionStartPayload {
            base,
            source: SessionSource::New,
        }
    }
}
