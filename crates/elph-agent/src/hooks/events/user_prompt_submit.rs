//! `userPromptSubmit`: the user sent a prompt. Observation only.

use serde::{Deserialize, Serialize};

use super::{Event, Listed, Observation, Observed, Sample, Step};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

pub struct UserPromptSubmit;

/// What a `userPromptSubmit` hook reads: the prompt the user sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserPromptSubmitPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// The prompt, after any template expansion.
    pub prompt: String,
    /// The prompt template the prompt was expanded from (`/review args` → `review`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

impl Event for UserPromptSubmit {
    type Payload = UserPromptSubmitPayload;
    type Outcome = Observation;
    type Reduced = Observed;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("UserPromptSubmit");
    const UNCHECKED: Option<&'static str> = Some("the model request was sent without its check");
    const FAIL_CLOSED: &'static str = "the model request is not sent and the turn fails";

    const TAKES_PROMPT: bool = true;

    fn base(payload: &UserPromptSubmitPayload) -> &PayloadBase {
        &payload.base
    }

    fn start(_payload: &UserPromptSubmitPayload) -> Observed {
        Observed {}
    }

    fn apply(_step: Step<'_, Self>, _outcome: &Observation) -> ChainFlow {
        ChainFlow::Continue
    }

    fn explain(_reduced: &Observed) -> Vec<String> {
        Observed::explain(Self::EVENT)
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> UserPromptSubmitPayload {
        UserPromptSubmitPayload {
            base,
            prompt: sample.prompt.to_string(),
            template: None,
        }
    }
}
