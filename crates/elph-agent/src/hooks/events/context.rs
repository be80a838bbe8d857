//! `context`: before each model request. A hook may replace the provider-bound message list for
//! that one request.

use serde::{Deserialize, Serialize};

use super::words::describe_message;
use super::{Event, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_message_shapes};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;
use crate::messages::Message;

/// The `context` event, where hooks may replace the messages of one model request.
pub struct Context;

/// What a `context` hook reads: the messages about to be sent to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// The provider-bound message list, as earlier hooks of the chain left it.
    pub messages: Vec<Message>,
}

/// What a `context` hook may print.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextOutcome {
    /// A replacement for the whole message list of this one request; absent keeps it.
    pub messages: Option<Vec<Message>>,
}

/// What the `context` chain sends instead of the stored messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename = "context", rename_all = "camelCase")]
pub struct ContextReduced {
    /// The replacement provider-bound list for this one request, if any hook replaced it.
    pub messages: Option<Vec<Message>>,
}

impl Event for Context {
    type Payload = ContextPayload;
    type Outcome = ContextOutcome;
    type Reduced = ContextReduced;
    const UNCHECKED: Option<&'static str> = Some("the model request was sent without its check");
    const FAIL_CLOSED: &'static str = "the model request is not sent and the turn fails";

    const TAKES_PROMPT: bool = true;

    fn base(payload: &ContextPayload) -> &PayloadBase {
        &payload.base
    }

    fn validate(outcome: &ContextOutcome) -> Result<(), OutcomeError> {
        match &outcome.messages {
            Some(messages) if messages.is_empty() => Err(OutcomeError::InvalidMessages(
                "an empty list would send the model nothing; print nothing (or {}) to keep the messages"
                    .into(),
            )),
            // A replacement may be as large as the hook's output limit: a redaction hook returns
            // the whole conversation.
            Some(messages) => check_message_shapes(messages),
            None => Ok(()),
        }
    }

    fn start(_payload: &ContextPayload) -> ContextReduced {
        ContextReduced::default()
    }

    fn apply(mut step: Step<'_, Self>, outcome: &ContextOutcome) -> ChainFlow {
        if let Some(replacement) = &outcome.messages {
            step.reduced.messages = Some(replacement.clone());
            step.payload.messages = replacement.clone();
            step.effect(format!(
                "replaced the request context ({} message(s))",
                replacement.len()
            ));
        }
        ChainFlow::Continue
    }

    fn explain(reduced: &ContextReduced) -> Vec<String> {
        match &reduced.messages {
            None => vec!["no change: the provider receives the messages as assembled.".into()],
            Some(messages) => {
                let mut lines = vec![format!(
                    "the provider-bound messages are replaced for this request by {} message(s):",
                    messages.len()
                )];
                lines.extend(
                    messages
                        .iter()
                        .map(|message| format!("  {}", describe_message(message))),
                );
                lines
            }
        }
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> ContextPayload {
        ContextPayload {
            base,
            messages: vec![Message::user(sample.prompt)],
        }
    }
}
