//! Stop reasons that are not a normal end, through the real binary: a notice on stderr, a
//! `stopReason` in the `json` and `stream-json` results, the refusal stored as the answer, and an
//! Anthropic `pause_turn` continued with a second request.

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::run_elph;

fn document(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not one JSON document ({err}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[tokio::test]
async fn each_abnormal_stop_is_a_notice_and_a_json_field() {
    let cases = [
        (Wire::OpenAi, "length", "maxTokens", "output token limit"),
        (Wire::OpenAi, "content_filter", "contentFilter", "content filter"),
        (Wire::Anthropic, "max_tokens", "maxTokens", "output token limit"),
        (Wire::Anthropic, "refusal", "refusal", "refused"),
    ];
    for (wire, wire_reason, name, words) in cases {
        let env = TestEnv::new();
        let server = FakeModelServer::start(wire).await;
        server.enqueue(FakeReply::text("Partial ans").with_stop_reason(wire_reason));
        let output = run_elph(&env, &server, &["--no-session", "--output-format", "json", "go"]).await;
        assert!(output.status.success(), "{wire:?} {wire_reason}: {output:?}");
        let doc = document(&output);
        assert_eq!(doc["stopReason"], json!(name), "{wire:?} {wire_reason}");
        assert_eq!(doc["result"], json!("Partial ans"));

        server.enqueue(FakeReply::text("Partial ans").with_stop_reason(wire_reason));
        let output = run_elph(&env, &server, &["--no-session", "go"]).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(words) && stderr.contains(&format!("stop reason: {name}")),
            "{wire:?} {wire_reason}: {stderr}"
        );
    }
}

#[tokio::test]
async fn a_normal_end_has_a_null_stop_reason_and_no_notice() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("All good."));
    let output = run_elph(
        &env,
        &server,
        &["--no-session", "--output-format", "stream-json", "go"],
    )
    .await;
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let result = lines.last().unwrap();
    assert_eq!(result["type"], json!("result"));
    assert_eq!(result["stopReason"], Value::Null);
    assert!(!lines.iter().any(|line| line["type"] == "notice"), "{lines:?}");
}

#[tokio::test]
async fn an_openai_refusal_is_shown_stored_and_sent_back() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::refusal("I can't help with that."));
    let output = run_elph(
        &env,
        &server,
        &["--output-format", "stream-json", "do the bad thing"],
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let result = lines.last().unwrap();
    assert_eq!(result["result"], json!("I can't help with that."));
    assert_eq!(result["stopReason"], json!("refusal"));
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "notice" && l["message"].as_str().unwrap().contains("refused")),
        "{lines:?}"
    );

    // The next turn of the session sends the refusal back as the assistant's words.
    let output = run_elph(&env, &server, &["-c", "why not?"]).await;
    assert!(output.status.success(), "{output:?}");
    let messages = server.requests()[1]["messages"].clone();
    let assistant: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 1, "{messages}");
    assert_eq!(assistant[0]["content"], json!("I can't help with that."));
}

#[tokio::test]
async fn pause_turn_continues_with_a_second_request() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::Anthropic).await;
    server.enqueue(FakeReply::text("Searching the web…").with_stop_reason("pause_turn"));
    server.enqueue(FakeReply::text("Found it."));
    let output = run_elph(
        &env,
        &server,
        &["--no-session", "--output-format", "json", "look it up"],
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    let doc = document(&output);
    assert_eq!(doc["result"], json!("Found it."));
    assert_eq!(doc["stopReason"], Value::Null);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The paused answer goes back as the last message, so the model carries on from it.
    let last = requests[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last,
        json!({"role": "assistant", "content": [{"type": "text", "text": "Searching the web…"}]})
    );
}
