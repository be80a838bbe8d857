//! OpenAI-compatible Chat Completions, streamed (`POST {base}/chat/completions`, `stream: true`).
//!
//! Works with api.openai.com and with the many servers that copy its wire format. Tool calls are
//! assembled from their index-keyed deltas and emitted once the model has finished the turn.

use std::collections::BTreeMap;

use reqwest::header::AUTHORIZATION;
use serde_json::{Map, Value, json};

use crate::http::{DecodeError, HttpProviderConfig, SseDecoder, SseEndpoint, parse_tool_input};
use crate::messages::{Content, ContentBlock, Message, ToolCall};
use crate::provider::{
    Provider, ProviderError, Request, StopReason, StreamEvent, Turn, Usage, provider_schema,
};

/// A Chat Completions model.
#[derive(Debug)]
pub struct OpenAiProvider {
    config: HttpProviderConfig,
    endpoint: SseEndpoint,
}

impl OpenAiProvider {
    /// An adapter for `config`; fails only if the HTTP client cannot be set up.
    pub fn new(config: HttpProviderConfig) -> Result<Self, ProviderError> {
        let endpoint = SseEndpoint::new(
            &config,
            "/chat/completions",
            |key| (AUTHORIZATION, format!("Bearer {key}")),
            &[],
        )?;
        Ok(OpenAiProvider { config, endpoint })
    }

    /// The body sent for `request`.
    pub fn request_body(&self, request: &Request) -> Value {
        request_body(
            &self.config.model,
            request,
            uses_max_completion_tokens(&self.config.base_url),
        )
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
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
        self.endpoint.stream(&body, ChatDecoder::default, on_event).await
    }
}

/// api.openai.com wants `max_completion_tokens` (its reasoning models refuse `max_tokens`);
/// compatible servers mostly know only `max_tokens`.
fn uses_max_completion_tokens(base_url: &str) -> bool {
    base_url.contains("api.openai.com")
}

fn request_body(model: &str, request: &Request, max_completion_tokens: bool) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system_prompt.is_empty() {
        messages.push(json!({"role": "system", "content": request.system_prompt}));
    }
    messages.extend(conversation_json(&request.messages));

    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !request.tools.is_empty() {
        let tools = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": provider_schema(&tool.input_schema),
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = request.max_tokens {
        let field = if max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), json!(max));
    }
    Value::Object(body)
}

/// Maps the conversation. Chat Completions takes only text in a `tool` message, so the images of a
/// run of tool results (an MCP screenshot, say) follow it in one user message of image parts, each
/// introduced by the id of the call that returned it.
fn conversation_json(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut pending_images: Vec<Value> = Vec::new();
    for message in messages {
        if !matches!(message, Message::Tool { .. }) && !pending_images.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut pending_images)}));
        }
        out.push(message_json(message));
        if let Message::Tool {
            tool_call_id,
            content,
            ..
        } = message
        {
            let images: Vec<Value> = content
                .blocks()
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Image { .. } => Some(part_json(block)),
                    ContentBlock::Text { .. } => None,
                })
                .collect();
            if !images.is_empty() {
                pending_images.push(
                    json!({"type": "text", "text": format!("Image output of tool call {tool_call_id}:")}),
                );
                pending_images.extend(images);
            }
        }
    }
    if !pending_images.is_empty() {
        out.push(json!({"role": "user", "content": pending_images}));
    }
    out
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::User { content } => json!({"role": "user", "content": user_content(content)}),
        Message::Assistant { content, tool_calls } => {
            let text = content.text();
            let mut out = Map::new();
            out.insert("role".into(), json!("assistant"));
            let content = if text.is_empty() && !tool_calls.is_empty() {
                Value::Null
            } else {
                json!(text)
            };
            out.insert("content".into(), content);
            if !tool_calls.is_empty() {
                let calls = tool_calls.iter().map(tool_call_json).collect();
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(out)
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => {
            json!({"role": "tool", "tool_call_id": tool_call_id, "content": content.text()})
        }
    }
}

/// Plain text stays a string (every compatible server takes that); with images, content parts.
fn user_content(content: &Content) -> Value {
    let blocks = content.blocks();
    if !blocks.iter().any(|b| matches!(b, ContentBlock::Image { .. })) {
        return json!(content.text());
    }
    Value::Array(blocks.iter().map(part_json).collect())
}

fn part_json(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Image { data, mime_type } => {
            json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}})
        }
    }
}

fn tool_call_json(call: &ToolCall) -> Value {
    // Arguments the model sent unparsable were kept as a JSON string: send them back as they came.
    let arguments = match &call.input {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}})
}

/// A tool call still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a Chat Completions stream.
#[derive(Debug, Default)]
pub(crate) struct ChatDecoder {
    text: String,
    /// The model's refusal (`delta.refusal`), which arrives instead of content.
    refusal: String,
    calls: BTreeMap<u64, PartialCall>,
    last_index: Option<u64>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl ChatDecoder {
    fn tool_call_delta(&mut self, delta: &Value) {
        let id = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        // Some compatible servers leave out `index`: a new id starts a new call, else it continues.
        let index = match delta.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => match (id, self.last_index) {
                (Some(id), Some(last)) if self.calls.get(&last).is_some_and(|c| c.id == id) => last,
                (None, Some(last)) => last,
                _ => self.calls.keys().next_back().map_or(0, |k| k + 1),
            },
        };
        self.last_index = Some(index);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = id {
            call.id = id.to_string();
        }
        if let Some(function) = delta.get("function") {
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(arguments) = function.get("arguments").and_then(Value::as_str) {
                call.arguments.push_str(arguments);
            }
        }
    }
}

impl SseDecoder for ChatDecoder {
    fn on_event(
        &mut self,
        _event: &str,
        data: &str,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, DecodeError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            DecodeError::BadData(format!(
                "a chunk is not JSON ({e}): {}",
                crate::http::truncate(data)
            ))
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), String::from);
            let kind = error
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("error")
                .to_string();
            return Err(DecodeError::Remote { kind, message });
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let count = |field: &str| usage.get(field).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: count("prompt_tokens"),
                output_tokens: count("completion_tokens"),
            });
        }
        let choices = chunk
            .get("choices")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for choice in choices
            .iter()
            .filter(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        {
            if let Some(delta) = choice.get("delta") {
                if let Some(text) = delta
                    .get("content")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.text.push_str(text);
                    emit(StreamEvent::TextDelta(text.to_string()));
                }
                if let Some(refusal) = delta
                    .get("refusal")
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    // Shown like answer text, so the user sees why there is no answer.
                    self.refusal.push_str(refusal);
                    emit(StreamEvent::TextDelta(refusal.to_string()));
                }
                for call in delta
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    self.tool_call_delta(call);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
            }
        }
        Ok(false)
    }

    fn finish(self, emit: &mut dyn FnMut(StreamEvent)) -> Result<Turn, DecodeError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(DecodeError::Truncated);
        }
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|(index, call)| ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id
                },
                name: call.name,
                input: parse_tool_input(&call.arguments),
            })
            .collect();
        for call in &tool_calls {
            emit(StreamEvent::ToolCall(call.clone()));
        }
        if let Some(usage) = self.usage {
            emit(StreamEvent::Usage(usage));
        }
        let stop_reason = match self.finish_reason.as_deref() {
            _ if !self.refusal.is_empty() => StopReason::Refusal,
            Some("stop") => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFilter,
            Some(other) => StopReason::Other(other.to_string()),
            None if !tool_calls.is_empty() => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        // A refusal is the answer: stored and sent back as the assistant's text, never as "".
        let mut text = self.text;
        if !self.refusal.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&self.refusal);
        }
        Ok(Turn {
            text,
            tool_calls,
            usage: self.usage,
            stop_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolSpec;

    fn feed(chunks: &[Value]) -> (Result<Turn, DecodeError>, Vec<StreamEvent>) {
        let mut events = Vec::new();
        let mut decoder = ChatDecoder::default();
        let mut emit = |e| events.push(e);
        for chunk in chunks {
            decoder
                .on_event("message", &chunk.to_string(), &mut emit)
                .unwrap();
        }
        decoder.on_event("message", "[DONE]", &mut emit).unwrap();
        let turn = decoder.finish(&mut emit);
        (turn, events)
    }

    #[test]
    fn text_and_tool_call_deltas_are_assembled() {
        let (turn, events) = feed(&[
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "Let me "}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "look."}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "call_a", "type": "function", "function": {"name": "shell_exec", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"comm"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "and\": \"ls\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 1, "id": "call_b", "function": {"name": "read_file", "arguments": "{\"path\""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": ":\"a\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}),
        ]);
        let turn = turn.unwrap();
        assert_eq!(turn.text, "Let me look.");
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
        assert_eq!(
            turn.usage,
            Some(Usage {
                input_tokens: 12,
                output_tokens: 7
            })
        );
        let first = ToolCall {
            id: "call_a".into(),
            name: "shell_exec".into(),
            input: json!({"command": "ls"}),
        };
        let second = ToolCall {
            id: "call_b".into(),
            name: "read_file".into(),
            input: json!({"path": "a"}),
        };
        assert_eq!(turn.tool_calls, vec![first.clone(), second.clone()]);
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Let me ".into()),
                StreamEvent::TextDelta("look.".into()),
                StreamEvent::ToolCall(first),
                StreamEvent::ToolCall(second),
                StreamEvent::Usage(Usage {
                    input_tokens: 12,
                    output_tokens: 7
                }),
            ]
        );
    }

    #[test]
    fn unparsable_arguments_become_a_string() {
        let (turn, _) = feed(&[json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "c", "function": {"name": "x", "arguments": "{not json"}}]}, "finish_reason": "tool_calls"}]})]);
        assert_eq!(turn.unwrap().tool_calls[0].input, json!("{not json"));
    }

    #[test]
    fn calls_without_index_are_told_apart_by_id() {
        let (turn, _) = feed(&[
            json!({"choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "one", "arguments": "{}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"id": "b", "function": {"name": "two", "arguments": "{\"x\""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": ":1}"}}]}}]}),
        ]);
        let calls = turn.unwrap().tool_calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].input, json!({"x": 1}));
    }

    #[test]
    fn a_stream_without_end_is_truncated() {
        let mut decoder = ChatDecoder::default();
        let mut emit = |_| {};
        decoder
            .on_event(
                "",
                &json!({"choices": [{"delta": {"content": "hi"}}]}).to_string(),
                &mut emit,
            )
            .unwrap();
        assert_eq!(decoder.finish(&mut emit), Err(DecodeError::Truncated));
    }

    #[test]
    fn lengths_and_errors() {
        let (turn, _) = feed(&[json!({"choices": [{"delta": {"content": "a"}, "finish_reason": "length"}]})]);
        assert_eq!(turn.unwrap().stop_reason, StopReason::MaxTokens);
        let mut decoder = ChatDecoder::default();
        let error = decoder.on_event(
            "",
            r#"{"error":{"message":"boom","type":"server_error"}}"#,
            &mut |_| {},
        );
        assert_eq!(
            error,
            Err(DecodeError::Remote {
                kind: "server_error".into(),
                message: "boom".into()
            })
        );
        assert!(matches!(
            decoder.on_event("", "{oops", &mut |_| {}),
            Err(DecodeError::BadData(_))
        ));
    }

    #[test]
    fn request_maps_system_tools_and_tool_results() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "shell_exec".into(),
            input: json!({"command": "ls"}),
        };
        let request = Request {
            system_prompt: "be brief".into(),
            messages: vec![
                Message::user("hi"),
                Message::assistant("", vec![call]),
                Message::tool_result("call_1", vec![ContentBlock::text("a.txt")], false),
            ],
            tools: vec![ToolSpec {
                name: "shell_exec".into(),
                description: "run".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: Some(100),
        };
        let body = request_body("gpt-x", &request, false);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "shell_exec", "arguments": "{\"command\":\"ls\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
            ])
        );
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type": "object"})
        );
        assert_eq!(body["max_tokens"], json!(100));
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            request_body("gpt-x", &request, true)["max_completion_tokens"],
            json!(100)
        );
    }
}
