//! The OpenAI Chat Completions adapter against a real local server.

use elph_ai::{OpenAiProvider, Provider, StopReason, StreamEvent, ToolCall, Usage};
use serde_json::json;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::{config, request_with_history, run, simple_request, streamed_text};

#[tokio::test]
async fn text_and_tool_call_stream_in_many_deltas_and_are_assembled() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(
        FakeReply::text("I will list the files in the temporary folder.")
            .and_tool_call("shell_exec", json!({"command": "ls -la /tmp", "timeout": 30}))
            .with_usage(120, 30),
    );
    let provider = OpenAiProvider::new(config("openai", server.base_url(), "sk-test")).unwrap();
    let (turn, events) = run(&provider, &request_with_history()).await;
    let turn = turn.unwrap();

    let (text, deltas) = streamed_text(&events);
    assert_eq!(text, "I will list the files in the temporary folder.");
    assert!(deltas > 5, "text arrived in {deltas} deltas");
    assert_eq!(turn.text, text);
    let call = ToolCall {
        id: "call_1".into(),
        name: "shell_exec".into(),
        input: json!({"command": "ls -la /tmp", "timeout": 30}),
    };
    assert_eq!(turn.tool_calls, vec![call.clone()]);
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    let usage = Usage {
        input_tokens: 120,
        output_tokens: 30,
    };
    assert_eq!(turn.usage, Some(usage));
    assert_eq!(
        &events[deltas..],
        &[StreamEvent::ToolCall(call), StreamEvent::Usage(usage)]
    );
}

#[tokio::test]
async fn plain_text_ends_the_turn_and_length_means_max_tokens() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("All done."));
    server.enqueue(FakeReply::text("Cut sho").with_stop_reason("length"));
    let provider = OpenAiProvider::new(config("openai", server.base_url(), "sk-test")).unwrap();

    let (turn, _) = run(&provider, &simple_request()).await;
    let turn = turn.unwrap();
    assert_eq!(
        (turn.text.as_str(), &turn.stop_reason),
        ("All done.", &StopReason::EndTurn)
    );
    assert!(turn.tool_calls.is_empty());
    assert!(turn.usage.unwrap().input_tokens > 0);

    let (turn, _) = run(&provider, &simple_request()).await;
    assert_eq!(turn.unwrap().stop_reason, StopReason::MaxTokens);
}

#[tokio::test]
async fn request_carries_system_prompt_tools_and_tool_results() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let provider = OpenAiProvider::new(config("openai", server.base_url(), "sk-test")).unwrap();
    let mut request = request_with_history();
    request.max_tokens = Some(512);
    let (turn, _) = run(&provider, &request).await;
    assert_eq!(turn.unwrap().text, "done", "an empty queue answers \"done\"");

    let recorded = server.recorded();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].method, "POST");
    assert_eq!(recorded[0].path, "/v1/chat/completions");
    assert_eq!(recorded[0].header("authorization"), Some("Bearer sk-test"));
    let body = &recorded[0].body;
    assert_eq!(body["model"], json!("test-model"));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], json!(512));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are Elph."},
            {"role": "user", "content": "list the files"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [
                {"id": "call_9", "type": "function", "function": {"name": "shell_exec", "arguments": "{\"command\":\"ls\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_9", "content": "permission denied"},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "shell_exec",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        }}])
    );
    assert_eq!(provider.provider_name(), "openai");
    assert_eq!(provider.model_id(), "test-model");
}

#[tokio::test]
async fn several_tool_calls_keep_their_order() {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(
        FakeReply::tool_call("read_file", json!({"path": "a.txt"}))
            .and_tool_call("read_file", json!({"path": "b.txt"}))
            .and_tool_call("list_dir", json!({})),
    );
    let provider = OpenAiProvider::new(config("openai", server.base_url(), "sk-test")).unwrap();
    let (turn, events) = run(&provider, &simple_request()).await;
    let turn = turn.unwrap();
    let names: Vec<(&str, &str)> = turn
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("call_1", "read_file"),
            ("call_2", "read_file"),
            ("call_3", "list_dir")
        ]
    );
    assert_eq!(turn.tool_calls[1].input, json!({"path": "b.txt"}));
    let emitted = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCall(_)))
        .count();
    assert_eq!(emitted, 3);
}
