//! `beforeAgent`: after the prompt is stored, before the first model request of the turn. A hook
//! may append to the system prompt and add messages to this turn only.

use serde::{Deserialize, Serialize};

use super::words::{describe_message, quoted};
use super::{Event, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_len, check_messages};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;
use crate::messages::Message;

/// How much of added context a notice quotes (bytes of its JSON string).
const ADDED_SHOWN_BYTES: usize = 160;

/// The `beforeAgent` event, where hooks shape the system prompt and this turn's messages.
pub struct BeforeAgent;

/// What a `beforeAgent` hook reads: the stored prompt and the system prompt it may add to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BeforeAgentPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// The user's prompt, as stored.
    pub prompt: String,
    /// The compiled system prompt before any hook appended to it.
    pub system_prompt: String,
}

/// What a `beforeAgent` hook may print; every field is optional, absent means no change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BeforeAgentOutcome {
    /// Text appended to the system prompt, after a blank line.
    pub system_prompt: Option<String>,
    /// Also appended to the system prompt for this turn, after `systemPrompt`'s text.
    pub additional_context: Option<String>,
    /// Messages added to this turn only (never stored).
    pub messages: Option<Vec<Message>>,
}

/// What the `beforeAgent` chain adds to the first model request of the turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename = "beforeAgent", rename_all = "camelCase")]
pub struct BeforeAgentReduced {
    /// Appended to the compiled system prompt, each after a blank line, in order.
    pub(crate) system_prompt_additions: Vec<String>,
    /// Appended to the current turn only; never stored.
    pub messages: Vec<Message>,
}

impl BeforeAgentReduced {
    /// The compiled system prompt with the additions appended.
    pub fn system_prompt(&self, base: &str) -> String {
        let mut prompt = base.to_string();
        for addition in &self.system_prompt_additions {
            if !prompt.is_empty() {
                prompt.push_str("\n\n");
            }
            prompt.push_str(addition);
        }
        prompt
    }
}

impl BeforeAgentReduced {
    /// Keeps the additions, in the order the hooks made them, while their total stays within
    /// `max_bytes`; drops the rest. Returns how many were dropped and their size in bytes.
    pub(crate) fn cap_added_context(&mut self, max_bytes: usize) -> (usize, usize) {
        let mut total = 0usize;
        let mut dropped = (0usize, 0usize);
        let mut fits = |bytes: usize| {
            if total + bytes <= max_bytes {
                total += bytes;
                true
            } else {
                dropped = (dropped.0 + 1, dropped.1 + bytes);
                false
            }
        };
        self.system_prompt_additions
            .retain(|addition| fits(addition.len()));
        self.messages
            .retain(|message| fits(serde_json::to_string(message).map_or(0, |text| text.len())));
        dropped
    }
}

impl Event for BeforeAgent {
    type Payload = BeforeAgentPayload;
    type Outcome = BeforeAgentOutcome;
    type Reduced = BeforeAgentReduced;
    const UNCHECKED: Option<&'static str> = Some("the model request was sent without its check");
    const FAIL_CLOSED: &'static str = "the model request is not sent and the turn fails";

    const TAKES_PROMPT: bool = true;

    fn base(payload: &BeforeAgentPayload) -> &PayloadBase {
        &payload.base
    }

    fn validate(outcome: &BeforeAgentOutcome) -> Result<(), OutcomeError> {
        check_len("systemPrompt", outcome.system_prompt.as_deref())?;
        check_len("additionalContext", outcome.additional_context.as_deref())?;
        if let Some(messages) = &outcome.messages {
            check_messages(messages)?;
        }
        Ok(())
    }

    fn start(_payload: &BeforeAgentPayload) -> BeforeAgentReduced {
        BeforeAgentReduced::default()
    }

    fn apply(mut step: Step<'_, Self>, outcome: &BeforeAgentOutcome) -> ChainFlow {
        let additions = &mut step.reduced.system_prompt_additions;
        additions.extend(outcome.system_prompt.iter().cloned());
        additions.extend(outcome.additional_context.iter().cloned());
        let added: Vec<&str> = outcome
            .system_prompt
            .iter()
            .chain(outcome.additional_context.iter())
            .map(String::as_str)
            .collect();
        if !added.is_empty() {
            // What was added, not only that something was: as a JSON string (control characters
            // escaped), cut to a line's worth.
            step.effect(format!(
                "added to the system prompt for this turn: {}",
                quoted(&added.join("\n"), ADDED_SHOWN_BYTES)
            ));
        }
        if let Some(messages) = &outcome.messages {
            step.reduced.messages.extend(messages.iter().cloned());
            step.effect(format!(
                "added {} temporary message(s) to this turn",
                messages.len()
            ));
        }
        ChainFlow::Continue
    }

    fn explain(reduced: &BeforeAgentReduced) -> Vec<String> {
        let mut lines = Vec::new();
        if reduced.system_prompt_additions.is_empty() && reduced.messages.is_empty() {
            lines.push("no change: the system prompt and the turn stay as they are.".into());
        }
        for addition in &reduced.system_prompt_additions {
            lines.push(format!(
                "appended to the system prompt: {}",
                quoted(addition, 300)
            ));
        }
        if !reduced.messages.is_empty() {
            lines.push(format!(
                "{} message(s) added to this turn (never stored):",
                reduced.messages.len()
            ));
            lines.extend(
                reduced
                    .messages
                    .iter()
                    .map(|message| format!("  {}", describe_message(message))),
            );
        }
        lines
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> BeforeAgentPayload {
        BeforeAgentPayload {
            base,
            prompt: sample.prompt.to_string(),
            system_prompt: "You are Elph, a coding agent.".into(),
        }
    }
}
