//! Anthropic Messages, streamed (`POST {base}/v1/messages`, `stream: true`).
//!
//! Tool results travel as `tool_result` blocks inside user messages; consecutive user-side messages
//! are merged, because the API wants all results of one assistant turn in the next user message.

use std::collections::BTreeMap;

use reqwest::header::HeaderName;
use serde_json::{Map, Value, json};

use crate::http::{DecodeError, HttpProviderConfig, SseDecoder, SseEndpoint, parse_tool_input};
use crate::messages::{ContentBlock, Message, ToolCall};
use crate::provider::{
    Provider, ProviderError, Request, StopReason, StreamEvent, Turn, Usage, provider_schema,
};

pub(crate) const API_VERSION: &str = "2023-06-01";
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A Messages API model.
#[derive(Debug)]
pub struct AnthropicProvider {
    config: HttpProviderConfig,
    endpoint: SseEndpoint,
}

impl AnthropicProvider {
    /// An adapter for `config`; fails only if the HTTP client cannot be set up.
    pub fn new(config: HttpProviderConfig) -> Result<Self, ProviderError> {
        let endpoint = SseEndpoint::new(
            &config,
            "/v1/messages",
            |key| (HeaderName::from_static("x-api-key"), key.to_string()),
            &[(HeaderName::from_static("anthropic-version"), API_VERSION)],
        )?;
        Ok(AnthropicProvider { config, endpoint })
    }

    /// The body sent for `request`.
    pub fn request_body(&self, request: &Request) -> Value {
        request_body(&self.config.model, request)
    }
}

#[async_trait::async_trait]
impl Provider for AnthropicProvider {
    fn provider_name(&self) -> &str {
        &self.config.provider_name
    }

    fn model_id(&self) -> &str {
        &self.config.model
    }

    fn context_window(&self) -> u64 {
        self.config.context_window
    }

    async fn stream(
        &self,
        request: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, ProviderError> {
        let body = self.request_body(request);
        self.endpoint
            .stream(&body, MessagesDecoder::default, on_event)
            .await
    }
}

fn request_body(model: &str, request: &Request) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert(
        "max_tokens".into(),
        json!(request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    body.insert("stream".into(), json!(true));
    if !request.system_prompt.is_empty() {
        body.insert("system".into(), json!(request.system_prompt));
    }
    body.insert("messages".into(), Value::Array(messages_json(&request.messages)));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": provider_schema(&tool.input_schema)}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(body)
}

/// Maps the conversation, merging runs of user-side messages (user text and tool results).
fn messages_json(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::User { content } => ("user", content.blocks().iter().filter_map(block_json).collect()),
            Message::Assistant { content, tool_calls } => {
                let mut blocks: Vec<Value> = content.blocks().iter().filter_map(block_json).collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    let input = if call.input.is_object() {
                        call.input.clone()
                    } else {
                        json!({})
                    };
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
                }));
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
            } => {
                let mut result = Map::new();
                result.insert("type".into(), json!("tool_result"));
                result.insert("tool_use_id".into(), json!(tool_call_id));
                result.insert(
                    "content".into(),
                    Value::Array(content.blocks().iter().filter_map(block_json).collect()),
                );
                if *is_error {
                    result.insert("is_error".into(), json!(true));
                }
                ("user", vec![Value::Object(result)])
            }
        };
        if blocks.is_empty() {
            // The API refuses empty content; an empty message carries nothing anyway.
            continue;
        }
        match out.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// A content block, or `None` for empty text (which the API refuses).
fn block_json(block: &ContentBlock) -> Option<Value> {
    match block {
        ContentBlock::Text { text } if text.is_empty() => None,
        ContentBlock::Text { text } => Some(json!({"type": "text", "text": text})),
        ContentBlock::Image { data, mime_type } => Some(
            json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}}),
        ),
    }
}

/// A content block still arriving.
#[derive(Debug)]
enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
        initial: Value,
    },
    /// Thinking and server-side blocks: not part of the turn.
    Other,
}

/// Assembles a Messages stream.
#[derive(Debug, Default)]
pub(crate) struct MessagesDecoder {
    text: String,
    blocks: BTreeMap<u64, Block>,
    tool_calls: Vec<ToolCall>,
    usage: Option<Usage>,
    stop_reason: Option<String>,
    stopped: bool,
}

impl MessagesDecoder {
    fn close_block(&mut self, index: u64, emit: &mut dyn FnMut(StreamEvent)) {
        if let Some(Block::Tool {
            id,
            name,
            json,
            initial,
        }) = self.blocks.remove(&index)
        {
            let input = if json.trim().is_empty() && initial.is_object() {
                initial
            } else {
                parse_tool_input(&json)
            };
            let call = ToolCall { id, name, input };
            emit(StreamEvent::ToolCall(call.clone()));
            self.tool_calls.push(call);
        }
    }

    fn usage_mut(&mut self) -> &mut Usage {
        self.usage.get_or_insert_with(Usage::default)
    }
}

fn count(value: &Value, field: &str) -> Option<u64> {
    value.get(field).and_then(Value::as_u64)
}

impl SseDecoder for MessagesDecoder {
    fn on_event(
        &mut self,
        _event: &str,
        data: &str,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, DecodeError> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let event: Value = serde_json::from_str(data).map_err(|e| {
            DecodeError::BadData(format!(
                "an event is not JSON ({e}): {}",
                crate::http::truncate(data)
            ))
        })?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "message_start" => {
                if let Some(usage) = event.pointer("/message/usage") {
                    // Cached prompt tokens count toward the context like any other input.
                    let input = [
                        "input_tokens",
                        "cache_creation_input_tokens",
                        "cache_read_input_tokens",
                    ]
                    .iter()
                    .filter_map(|field| count(usage, field))
                    // Saturating: counts are the server's word, and u64::MAX twice overflowed.
                    .fold(0u64, u64::saturating_add);
                    let output = count(usage, "output_tokens").unwrap_or(0);
                    *self.usage_mut() = Usage {
                        input_tokens: input,
                        output_tokens: output,
                    };
                }
            }
            "content_block_start" => {
                let block = event.get("content_block").cloned().unwrap_or(Value::Null);
                let block = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(text) = block
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            self.text.push_str(text);
                            emit(StreamEvent::TextDelta(text.to_string()));
                        }
                        Block::Text
                    }
                    Some("tool_use") => Block::Tool {
                        id: block
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        name: block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        json: String::new(),
                        initial: block.get("input").cloned().unwrap_or(Value::Null),
                    },
                    _ => Block::Other,
                };
                self.blocks.insert(index, block);
            }
            "content_block_delta" => {
                let delta = event.get("delta").cloned().unwrap_or(Value::Null);
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.blocks.get_mut(&index),
                ) {
                    (Some("text_delta"), _) => {
                        if let Some(text) = delta
                            .get("text")
                            .and_then(Value::as_str)
                            .filter(|t| !t.is_empty())
                        {
                            self.text.push_str(text);
                            emit(StreamEvent::TextDelta(text.to_string()));
                        }
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(delta.get("partial_json").and_then(Value::as_str).unwrap_or(""));
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(DecodeError::BadData(format!(
                            "input_json_delta for block {index}, which is not a tool_use block"
                        )));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => self.close_block(index, emit),
            "message_delta" => {
                if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = event.get("usage") {
                    // Output tokens here are the running total, not an increment.
                    let output = count(usage, "output_tokens");
                    let input = count(usage, "input_tokens");
                    let current = self.usage_mut();
                    if let Some(output) = output {
                        current.output_tokens = output;
                    }
                    if let Some(input) = input.filter(|i| *i > current.input_tokens) {
                        current.input_tokens = input;
                    }
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => {
                let kind = event
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error")
                    .to_string();
                let message = event
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map_or_else(|| event.to_string(), String::from);
                return Err(DecodeError::Remote { kind, message });
            }
            _ => {} // ping, and event types added after this was written
        }
        Ok(false)
    }

    fn finish(mut self, emit: &mut dyn FnMut(StreamEvent)) -> Result<Turn, DecodeError> {
        if !self.stopped && self.stop_reason.is_none() {
            return Err(DecodeError::Truncated);
        }
        let open: Vec<u64> = self.blocks.keys().copied().collect();
        for index in open {
            self.close_block(index, emit);
        }
        if let Some(usage) = self.usage {
            emit(StreamEvent::Usage(usage));
        }
        let stop_reason = match self.stop_reason.as_deref() {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some("refusal") => StopReason::Refusal,
            Some("pause_turn") => StopReason::PauseTurn,
            Some(other) => StopReason::Other(other.to_string()),
            None if !self.tool_calls.is_empty() => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        Ok(Turn {
            text: self.text,
            tool_calls: self.tool_calls,
            usage: self.usage,
            stop_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolSpec;

    fn feed(events: &[Value]) -> (Result<Turn, DecodeError>, Vec<StreamEvent>) {
        let mut out = Vec::new();
        let mut decoder = MessagesDecoder::default();
        let mut emit = |e| out.push(e);
        for event in events {
            let name = event["type"].as_str().unwrap().to_string();
            if decoder.on_event(&name, &event.to_string(), &mut emit).unwrap() {
                break;
            }
        }
        let turn = decoder.finish(&mut emit);
        (turn, out)
    }

    #[test]
    fn text_and_tool_use_deltas_are_assembled() {
        let call = ToolCall {
            id: "toolu_1".into(),
            name: "shell_exec".into(),
            input: json!({"command": "ls -la"}),
        };
        let (turn, events) = feed(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 30, "cache_read_input_tokens": 5, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Listing"}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " files."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell_exec", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": "}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"ls -la\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 22}}),
            json!({"type": "message_stop"}),
        ]);
        let turn = turn.unwrap();
        let usage = Usage {
            input_tokens: 35,
            output_tokens: 22,
        };
        assert_eq!(
            turn,
            Turn {
                text: "Listing files.".into(),
                tool_calls: vec![call.clone()],
                usage: Some(usage),
                stop_reason: StopReason::ToolUse
            }
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Listing".into()),
                StreamEvent::TextDelta(" files.".into()),
                StreamEvent::ToolCall(call),
                StreamEvent::Usage(usage),
            ]
        );
    }

    #[test]
    fn tool_use_without_deltas_has_empty_input_and_bad_json_stays_a_string() {
        let (turn, _) = feed(&[
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "a", "name": "list_dir", "input": {}}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "b", "name": "x", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{broken"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
            json!({"type": "message_stop"}),
        ]);
        let calls = turn.unwrap().tool_calls;
        assert_eq!(calls[0].input, json!({}));
        assert_eq!(calls[1].input, json!("{broken"));
    }

    #[test]
    fn absurd_token_counts_saturate() {
        let mut decoder = MessagesDecoder::default();
        let start = json!({"type": "message_start", "message": {"usage": {
            "input_tokens": u64::MAX, "cache_read_input_tokens": u64::MAX}}});
        decoder
            .on_event("message_start", &start.to_string(), &mut |_| {})
            .unwrap();
        assert_eq!(decoder.usage.unwrap().input_tokens, u64::MAX);
    }

    #[test]
    fn errors_and_truncation() {
        let mut decoder = MessagesDecoder::default();
        let error = decoder.on_event(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            &mut |_| {},
        );
        assert_eq!(
            error,
            Err(DecodeError::Remote {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            })
        );
        let (turn, _) = feed(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "hal"}}),
        ]);
        assert_eq!(turn, Err(DecodeError::Truncated));
    }

    #[test]
    fn request_maps_system_tools_and_tool_results() {
        let call = ToolCall {
            id: "toolu_1".into(),
            name: "shell_exec".into(),
            input: json!({"command": "ls"}),
        };
        let request = Request {
            system_prompt: "be brief".into(),
            messages: vec![
                Message::user("hi"),
                Message::assistant("Looking.", vec![call]),
                Message::tool_result("toolu_1", vec![ContentBlock::text("denied")], true),
                Message::user("go on"),
            ],
            tools: vec![ToolSpec {
                name: "shell_exec".into(),
                description: "run".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: None,
        };
        let body = request_body("claude-x", &request);
        assert_eq!(body["system"], json!("be brief"));
        assert_eq!(body["max_tokens"], json!(8192));
        assert_eq!(
            body["tools"],
            json!([{"name": "shell_exec", "description": "run", "input_schema": {"type": "object"}}])
        );
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "shell_exec", "input": {"command": "ls"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "denied"}], "is_error": true},
                    {"type": "text", "text": "go on"}]},
            ])
        );
    }
}
