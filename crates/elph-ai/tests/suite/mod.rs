//! Shared helpers for the integration tests.

mod anthropic;
mod edge_cases;
mod errors;
mod openai;
mod retry;
mod scripted;
mod select;
mod stream_limits;
mod tls;

use std::time::Duration;

use elph_ai::{
    ContentBlock, HttpProviderConfig, Message, Provider, ProviderError, Request, RetryPolicy, StreamEvent,
    ToolCall, ToolSpec, Turn,
};
use serde_json::json;

/// Deadline for every await in these tests.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Retries with a short backoff so tests stay fast.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy::with_base_delay(Duration::from_millis(5))
}

pub fn config(provider: &str, base_url: String, key: &str) -> HttpProviderConfig {
    HttpProviderConfig::new(provider, "test-model", base_url)
        .with_api_key(key)
        .with_api_key_env(format!("{}_API_KEY", provider.to_uppercase()))
        .with_retry(fast_retry())
}

/// Streams one turn under the deadline, collecting the events.
pub async fn run(
    provider: &dyn Provider,
    request: &Request,
) -> (Result<Turn, ProviderError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let mut on_event = |event: StreamEvent| events.push(event);
    let result = tokio::time::timeout(DEADLINE, provider.stream(request, &mut on_event))
        .await
        .expect("the model call finished in time");
    (result, events)
}

/// The text of all `TextDelta` events, and how many there were.
pub fn streamed_text(events: &[StreamEvent]) -> (String, usize) {
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (deltas.concat(), deltas.len())
}

pub fn shell_tool() -> ToolSpec {
    ToolSpec {
        name: "shell_exec".into(),
        description: "Run a shell command".into(),
        input_schema: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    }
}

/// A conversation that went through one tool call and its (failed) result.
pub fn request_with_history() -> Request {
    Request {
        system_prompt: "You are Elph.".into(),
        messages: vec![
            Message::user("list the files"),
            Message::assistant(
                "Looking.",
                vec![ToolCall {
                    id: "call_9".into(),
                    name: "shell_exec".into(),
                    input: json!({"command": "ls"}),
                }],
            ),
            Message::tool_result("call_9", vec![ContentBlock::text("permission denied")], true),
        ],
        tools: vec![shell_tool()],
        max_tokens: None,
    }
}

pub fn simple_request() -> Request {
    Request {
        system_prompt: "sys".into(),
        messages: vec![Message::user("hi")],
        tools: vec![],
        max_tokens: None,
    }
}
