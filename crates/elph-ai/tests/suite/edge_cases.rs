//! Provider edge cases against the fake servers: every stop reason that is not a normal end, the
//! OpenAI refusal, tool-result images on Chat Completions, and `$schema` kept out of tool schemas.

use elph_ai::{
    AnthropicProvider, ContentBlock, Message, OpenAiProvider, Provider, Request, StopReason, ToolCall,
    ToolSpec,
};
use serde_json::json;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::{config, run, simple_request, streamed_text};

async fn stop_reason_of(wire: Wire, reply: FakeReply) -> (String, StopReason) {
    let server = FakeModelServer::start(wire).await;
    server.enqueue(reply);
    let provider: Box<dyn Provider> = match wire {
        Wire::OpenAi => Box::new(OpenAiProvider::new(config("openai", server.base_url(), "k")).unwrap()),
        Wire::Anthropic => {
            Box::new(AnthropicProvider::new(config("anthropic", server.base_url(), "k")).unwrap())
        }
    };
    let (turn, _) = run(provider.as_ref(), &simple_request()).await;
    let turn = turn.unwrap();
    (turn.text, turn.stop_reason)
}

#[tokio::test]
async fn openai_stop_reasons_are_told_apart() {
    let cases = [
        ("length", StopReason::MaxTokens),
        ("content_filter", StopReason::ContentFilter),
        ("something_new", StopReason::Other("something_new".into())),
    ];
    for (wire_reason, expected) in cases {
        let (text, reason) = stop_reason_of(
            Wire::OpenAi,
            FakeReply::text("partial answer").with_stop_reason(wire_reason),
        )
        .await;
        assert_eq!(reason, expected, "finish_reason {wire_reason}");
        assert_eq!(text, "partial answer");
        assert!(!reason.is_normal());
        assert!(reason.explain().is_some());
    }
}

#[tokio::test]
async fn anthropic_stop_reasons_are_told_apart() {
    let cases = [
        ("max_tokens", StopReason::MaxTokens),
        ("refusal", StopReason::Refusal),
        ("pause_turn", StopReason::PauseTurn),
    ];
    for (wire_reason, expected) in cases {
        let (_, reason) = stop_reason_of(
            Wire::Anthropic,
            FakeReply::text("some text").with_stop_reason(wire_reason),
        )
        .await;
        assert_eq!(reason, expected, "stop_reason {wire_reason}");
        assert_eq!(reason.name(), expected.name());
    }
    let (_, reason) = stop_reason_of(Wire::Anthropic, FakeReply::text("fine")).await;
    assert!(reason.is_normal());
}

#[tokio::test]
async fn an_openai_refusal_is_the_answer_text_and_is_shown_as_it_streams() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::refusal("I can't help with that request."));
    let provider = OpenAiProvider::new(config("openai", server.base_url(), "k")).unwrap();
    let (turn, events) = run(&provider, &simple_request()).await;
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason, StopReason::Refusal);
    assert_eq!(turn.text, "I can't help with that request.");
    assert_eq!(streamed_text(&events).0, "I can't help with that request.");

    // Sent back in the next request as what the assistant said, never as "".
    let mut request = simple_request();
    request.messages.push(Message::assistant(turn.text, Vec::new()));
    request.messages.push(Message::user("why?"));
    run(&provider, &request).await.0.unwrap();
    let body = &server.requests()[1];
    let assistant = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["content"], json!("I can't help with that request."));
}

fn screenshot_request() -> Request {
    Request {
        system_prompt: String::new(),
        messages: vec![
            Message::user("take a screenshot"),
            Message::assistant(
                "",
                vec![
                    ToolCall {
                        id: "call_a".into(),
                        name: "mcp_browser__screenshot".into(),
                        input: json!({}),
                    },
                    ToolCall {
                        id: "call_b".into(),
                        name: "read_file".into(),
                        input: json!({"path": "a"}),
                    },
                ],
            ),
            Message::tool_result(
                "call_a",
                vec![
                    ContentBlock::text("captured"),
                    ContentBlock::Image {
                        data: "iVBORw0KGgo=".into(),
                        mime_type: "image/png".into(),
                    },
                ],
                false,
            ),
            Message::tool_result("call_b", vec![ContentBlock::text("hello")], false),
        ],
        tools: Vec::new(),
        max_tokens: None,
    }
}

#[tokio::test]
async fn tool_result_images_reach_openai_in_a_following_user_message() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let provider = OpenAiProvider::new(config("openai", server.base_url(), "k")).unwrap();
    run(&provider, &screenshot_request()).await.0.unwrap();
    let messages = server.requests()[0]["messages"].clone();
    assert_eq!(
        messages,
        json!([
            {"role": "user", "content": "take a screenshot"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "mcp_browser__screenshot", "arguments": "{}"}},
                {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "captured"},
            {"role": "tool", "tool_call_id": "call_b", "content": "hello"},
            {"role": "user", "content": [
                {"type": "text", "text": "Image output of tool call call_a:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
        ])
    );
}

#[tokio::test]
async fn dollar_schema_never_reaches_either_provider() {
    let tool = ToolSpec {
        name: "shell_exec".into(),
        description: "run".into(),
        input_schema: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"command": {"type": "string"}},
        }),
    };
    let mut request = simple_request();
    request.tools = vec![tool];

    let openai = FakeModelServer::start(Wire::OpenAi).await;
    let provider = OpenAiProvider::new(config("openai", openai.base_url(), "k")).unwrap();
    run(&provider, &request).await.0.unwrap();
    let parameters = &openai.requests()[0]["tools"][0]["function"]["parameters"];
    assert_eq!(
        parameters,
        &json!({"type": "object", "properties": {"command": {"type": "string"}}})
    );

    let anthropic = FakeModelServer::start(Wire::Anthropic).await;
    let provider = AnthropicProvider::new(config("anthropic", anthropic.base_url(), "k")).unwrap();
    run(&provider, &request).await.0.unwrap();
    let schema = &anthropic.requests()[0]["tools"][0]["input_schema"];
    assert_eq!(
        schema,
        &json!({"type": "object", "properties": {"command": {"type": "string"}}})
    );
}
