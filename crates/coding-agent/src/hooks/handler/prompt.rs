//! A prompt hook: a model judges the payload. The hook's prompt and the payload go to its `model`
//! (or the session's), and the answer must be an outcome, as a command hook would print it.
//!
//! The model gets no tools and one request; its text is the answer. A code fence around the JSON
//! is taken off (models add one unasked); anything else that is not an outcome — prose, an empty
//! answer, a refusal — fails the run, which blocks under `failClosed`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use elph_agent::hooks::HookEvent;
use elph_ai::{Message, Provider, Request};

use super::Answer;

/// The most the model may write, in tokens: an outcome is small.
const MAX_ANSWER_TOKENS: u32 = 2048;

/// What the model is told about its job, before the hook's own prompt.
fn system_prompt(event: HookEvent, prompt: &str) -> String {
    let fields = elph_agent::hooks::honoured_fields(event);
    let fields = if fields.is_empty() {
        "none: this event only observes, so answer {}".to_string()
    } else {
        fields.join(", ")
    };
    format!(
        "You are a hook of Elph, a coding agent, run at its {event} event. The user's message is the \
         event's payload as JSON. Judge it by the instructions below, then answer with exactly one \
         JSON object and nothing else: the hook's outcome. {{}} means no change. The fields this \
         event honours: {fields}. To stop what the payload describes, where the event allows it, \
         answer {{\"block\": true, \"reason\": \"why, for the user and the model\"}}.\n\n\
         Instructions:\n{prompt}"
    )
}

/// Asks `provider` about `payload` within `timeout`.
pub(crate) async fn judge(
    provider: Arc<dyn Provider>,
    event: HookEvent,
    prompt: &str,
    payload: &[u8],
    timeout: Duration,
) -> Answer {
    let started = Instant::now();
    let model = format!("{}/{}", provider.provider_name(), provider.model_id());
    let request = Request {
        system_prompt: system_prompt(event, prompt),
        messages: vec![Message::user(String::from_utf8_lossy(payload).trim_end())],
        tools: Vec::new(),
        max_tokens: Some(MAX_ANSWER_TOKENS),
    };
    let mut ignore = |_| {};
    let turn = match tokio::time::timeout(timeout, provider.stream(&request, &mut ignore)).await {
        Err(_) => {
            return Answer::failed(
                format!(
                    "{model} did not answer within {} ms (timeoutMs)",
                    timeout.as_millis()
                ),
                started.elapsed(),
            );
        }
        Ok(Err(error)) => return Answer::failed(format!("{model} failed: {error}"), started.elapsed()),
        Ok(Ok(turn)) => turn,
    };
    if let Some(why) = turn.stop_reason.explain() {
        return Answer::failed(format!("{model}: {why}"), started.elapsed());
    }
    let text = unfenced(&turn.text);
    if text.is_empty() {
        return Answer::failed(
            format!(
                "{model} gave an empty answer; a prompt hook's answer must be an outcome (`{{}}` for no change)"
            ),
            started.elapsed(),
        );
    }
    let mut answer = Answer::body(text.as_bytes().to_vec(), started.elapsed());
    if let Some(usage) = turn.usage {
        answer.notes.push(format!(
            "judged by {model} ({} tokens in, {} out)",
            usage.input_tokens, usage.output_tokens
        ));
    }
    answer
}

/// The answer without a Markdown code fence around it.
fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(inner) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(inner) = inner.strip_suffix("```") else {
        return trimmed;
    };
    // The info string ("json") runs to the end of the fence's first line.
    match inner.split_once('\n') {
        Some((info, body)) if !info.trim().contains('{') => body.trim(),
        _ => inner.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_around_the_outcome_is_taken_off_and_nothing_else() {
        assert_eq!(unfenced("```json\n{\"block\": true}\n```"), "{\"block\": true}");
        assert_eq!(unfenced("```\n{}\n```\n"), "{}");
        assert_eq!(unfenced("  {\"a\": 1} "), "{\"a\": 1}");
        assert_eq!(unfenced("Sure! ```json\n{}\n```"), "Sure! ```json\n{}\n```");
    }

    #[test]
    fn the_model_is_told_the_event_its_fields_and_the_hooks_prompt() {
        let text = system_prompt(HookEvent::PreToolUse, "Block rm -rf.");
        assert!(text.contains("preToolUse") && text.contains("block") && text.ends_with("Block rm -rf."));
        let observing = system_prompt(HookEvent::SessionEnd, "x");
        assert!(observing.contains("only observes"), "{observing}");
    }
}
