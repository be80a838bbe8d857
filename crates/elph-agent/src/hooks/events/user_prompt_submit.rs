//! `userPromptSubmit`: the user sent a prompt. A hook may replace the text the model receives;
//! replacements chain in order, each hook seeing the prompt as the previous one left it.

use serde::{Deserialize, Serialize};

use super::words::quoted;
use super::{Event, Sample, Step};
use crate::hooks::outcome::OutcomeError;
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

/// What a `userPromptSubmit` hook may print.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserPromptSubmitOutcome {
    /// The text the model receives instead of the prompt (the transcript keeps the original).
    pub prompt: Option<String>,
}

/// The prompt the model receives, if hooks replaced it, and who did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename = "userPromptSubmit", rename_all = "camelCase")]
pub struct UserPromptSubmitReduced {
    /// The last replacement; `None`: the model receives the prompt as the user sent it.
    pub prompt: Option<String>,
    /// The hooks that replaced it, in order.
    pub replaced_by: Vec<String>,
}

impl Event for UserPromptSubmit {
    type Payload = UserPromptSubmitPayload;
    type Outcome = UserPromptSubmitOutcome;
    type Reduced = UserPromptSubmitReduced;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("UserPromptSubmit");
    const UNCHECKED: Option<&'static str> = Some("the model request was sent without its check");
    const FAIL_CLOSED: &'static str = "the model request is not sent and the turn fails";

    const TAKES_PROMPT: bool = true;

    fn base(payload: &UserPromptSubmitPayload) -> &PayloadBase {
        &payload.base
    }

    fn validate(outcome: &UserPromptSubmitOutcome) -> Result<(), OutcomeError> {
        match &outcome.prompt {
            Some(prompt) if prompt.trim().is_empty() => Err(OutcomeError::InvalidField {
                event: crate::hooks::HookEvent::UserPromptSubmit,
                reason: "prompt must not be empty: leave the field out to keep the prompt".into(),
            }),
            _ => Ok(()),
        }
    }

    fn start(_payload: &UserPromptSubmitPayload) -> UserPromptSubmitReduced {
        UserPromptSubmitReduced::default()
    }

    fn apply(mut step: Step<'_, Self>, outcome: &UserPromptSubmitOutcome) -> ChainFlow {
        if let Some(prompt) = &outcome.prompt
            && *prompt != step.payload.prompt
        {
            step.payload.prompt = prompt.clone();
            step.reduced.prompt = Some(prompt.clone());
            step.reduced.replaced_by.push(step.hook_id.to_string());
            step.effect("replaced the prompt");
        }
        ChainFlow::Continue
    }

    fn explain(reduced: &UserPromptSubmitReduced) -> Vec<String> {
        match &reduced.prompt {
            Some(prompt) => vec![format!(
                "the model receives {} instead of the prompt (replaced by {}); the transcript keeps the original.",
                quoted(prompt, 600),
                reduced
                    .replaced_by
                    .iter()
                    .map(|id| format!("'{id}'"))
                    .collect::<Vec<_>>()
                    .join(", then ")
            )],
            None => vec!["prompt unchanged: the model receives it as it was sent.".into()],
        }
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> UserPromptSubmitPayload {
        UserPromptSubmitPayload {
            base,
            prompt: sample.prompt.to_string(),
            template: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::{HookOutcome, HookPayload, Reduced, Reducer};

    #[test]
    fn replacements_chain_in_order_and_the_last_wins() {
        let payload = HookPayload::UserPromptSubmit(UserPromptSubmitPayload {
            base: PayloadBase::new("s", "/p"),
            prompt: "@fix".into(),
            template: None,
        });
        let mut chain = Reducer::new(payload);
        let replace = |text: &str| {
            HookOutcome::UserPromptSubmit(UserPromptSubmitOutcome {
                prompt: Some(text.into()),
            })
        };
        chain.apply("expand", &replace("Fix the test"));
        let HookPayload::UserPromptSubmit(seen) = chain.payload() else {
            panic!()
        };
        assert_eq!(seen.prompt, "Fix the test", "the next hook sees the replacement");
        chain.apply("same", &replace("Fix the test"));
        chain.apply("polish", &replace("Fix the test, then run it"));
        let Reduced::UserPromptSubmit(reduced) = chain.finish() else {
            panic!()
        };
        assert_eq!(reduced.prompt.as_deref(), Some("Fix the test, then run it"));
        assert_eq!(
            reduced.replaced_by,
            ["expand", "polish"],
            "giving the prompt back unchanged replaces nothing"
        );
    }

    #[test]
    fn an_empty_replacement_is_rejected() {
        let error = crate::hooks::parse_outcome(
            crate::hooks::HookEvent::UserPromptSubmit,
            &serde_json::json!({"prompt": "  "}),
        )
        .unwrap_err();
        assert!(error.to_string().contains("must not be empty"), "{error}");
    }
}
