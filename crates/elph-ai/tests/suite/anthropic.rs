//! The Anthropic Messages adapter against a real local server.

use elph_ai::{AnthropicProvider, StopReason, StreamEvent, ToolCall, Usage};
use serde_json::json;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::{config, request_with_history, run, simple_request, streamed_text};

#[tokio::test]
async fn text_and_tool_use_stream_in_many_deltas_and_are_assembled() {
    let server = FakeModelServer::start(Wire::Anthropic).await;
    server.enqueue(
        FakeReply::text("Let me check the repository layout first.")
            .and_tool_call("list_dir", json!({"path": "crates", "depth": 2}))
            .with_usage(300, 42),
    );
    let provider = AnthropicProvider::new(config("anthropic", server.base_url(), "sk-ant-test")).unwrap();
    let (turn, events) = run(&provider, &request_with_history()).await;
    let turn = turn.unwrap();

    let (text, deltas) = streamed_text(&events);
    assert_eq!(text, "Let me check the repository layout first.");
    assert!(deltas > 4, "text arrived in {deltas} deltas");
    let call = ToolCall {
        id: "toolu_1".into(),
        name: "list_dir".into(),
        input: json!({"path": "crates", "depth": 2}),
    };
    let usage = Usage {
        input_tokens: 300,
        output_tokens: 42,
    };
    assert_eq!(turn.text, text);
    assert_eq!(turn.tool_calls, vec![call.clone()]);
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(turn.usage, Some(usage));
    assert_eq!(
        &events[deltas..],
        &[StreamEvent::ToolCall(call), StreamEvent::Usage(usage)]
    );
}

#[tokio::test]
async fn plain_text_ends_the_turn_and_max_tokens_is_reported() {
    let server = FakeModelServer::start(Wire::Anthropic).await;
    server.enqueue(FakeReply::text("Finished."));
    server.enqueue(FakeReply::text("Trunc").with_stop_reason("max_tokens"));
    let provider = AnthropicProvider::new(config("anthropic", server.base_url(), "sk-ant-test")).unwrap();
    let (turn, _) = run(&provider, &simple_request()).await;
    let turn = turn.unwrap();
    assert_eq!(
        (turn.text.as_str(), turn.stop_reason),
        ("Finished.", StopReason::EndTurn)
    );
    let (turn, _) = run(&provider, &simple_request()).await;
    assert_eq!(turn.unwrap().stop_reason, StopReason::MaxTokens);
}

#[tokio::test]
async fn request_carries_headers_system_prompt_tools_and_tool_results() {
    let server = FakeModelServer::start(Wire::Anthropic).await;
    let provider = AnthropicProvider::new(config("anthropic", server.base_url(), "sk-ant-test")).unwrap();
    let (turn, _) = run(&provider, &request_with_history()).await;
    assert_eq!(turn.unwrap().text, "done");

    let recorded = server.recorded();
    assert_eq!(recorded[0].path, "/v1/messages");
    assert_eq!(recorded[0].header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(recorded[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(recorded[0].header("authorization"), None);
    let body = &recorded[0].body;
    assert_eq!(body["model"], json!("test-model"));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["max_tokens"], json!(8192));
    assert_eq!(body["system"], json!("You are Elph."));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "list the files"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "call_9", "name": "shell_exec", "input": {"command": "ls"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_9",
                 "content": [{"type": "text", "text": "permission denied"}], "is_error": true},
            ]},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{
            "name": "shell_exec",
            "description": "Run a shell command",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        }])
    );
}
