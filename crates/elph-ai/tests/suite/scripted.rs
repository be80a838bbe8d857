//! The offline scripted provider.

use std::path::{Path, PathBuf};
use std::time::Duration;

use elph_ai::{Provider, ProviderError, ScriptedProvider, StopReason, StreamEvent, ToolCall};
use serde_json::json;

use super::{request_with_history, run, simple_request, streamed_text};

fn write_script(dir: &Path, script: serde_json::Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, serde_json::to_string_pretty(&script).unwrap()).unwrap();
    path
}

#[tokio::test]
async fn plays_turns_in_order_with_ids_across_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        json!({"turns": [
            {"text": "Let me look around.", "toolCalls": [
                {"name": "shell_exec", "input": {"command": "ls"}},
                {"name": "list_dir"},
            ]},
            {"toolCalls": [{"name": "read_file", "input": {"path": "README.md"}}]},
            {"text": "All done."},
        ]}),
    );
    let provider = ScriptedProvider::load(&path).unwrap();
    assert_eq!(provider.provider_name(), "scripted");
    assert_eq!(provider.model_id(), path.display().to_string());
    assert_eq!(provider.context_window(), 128_000);

    let (turn, events) = run(&provider, &request_with_history()).await;
    let turn = turn.unwrap();
    let (text, deltas) = streamed_text(&events);
    assert_eq!((text.as_str(), deltas), ("Let me look around.", 4));
    assert_eq!(turn.text, "Let me look around.");
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(
        turn.tool_calls,
        vec![
            ToolCall {
                id: "call_1".into(),
                name: "shell_exec".into(),
                input: json!({"command": "ls"})
            },
            ToolCall {
                id: "call_2".into(),
                name: "list_dir".into(),
                input: json!({})
            },
        ]
    );
    let usage = turn.usage.unwrap();
    assert!(usage.input_tokens > 20 && usage.output_tokens > 3, "{usage:?}");
    assert_eq!(events.last(), Some(&StreamEvent::Usage(usage)));

    let (turn, _) = run(&provider, &simple_request()).await;
    let turn = turn.unwrap();
    assert_eq!(turn.tool_calls[0].id, "call_3");
    assert_eq!(turn.text, "");
    assert!(
        turn.usage.unwrap().input_tokens < usage.input_tokens,
        "usage follows the request size"
    );

    let (turn, _) = run(&provider, &simple_request()).await;
    let turn = turn.unwrap();
    assert_eq!(
        (turn.text.as_str(), turn.stop_reason),
        ("All done.", StopReason::EndTurn)
    );

    let (turn, _) = run(&provider, &simple_request()).await;
    let error = turn.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("script {} has 3 turns; turn 4 was requested", path.display())
    );
}

#[tokio::test]
async fn error_turns_fail_and_delays_can_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_script(
        dir.path(),
        json!({"contextWindow": 4000, "turns": [
            {"error": "simulated outage"},
            {"text": "too slow", "delayMs": 60000},
            {"text": "quick", "delayMs": 20},
        ]}),
    );
    let provider = ScriptedProvider::load(&path).unwrap();
    assert_eq!(provider.context_window(), 4000);

    let (turn, events) = run(&provider, &simple_request()).await;
    let error = turn.unwrap_err();
    assert!(
        matches!(error, ProviderError::ScriptedFailure { turn: 1, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("script {}, turn 1: simulated outage", path.display())
    );
    assert!(events.is_empty());

    let request = simple_request();
    let mut on_event = |_: StreamEvent| panic!("a cancelled turn emits nothing");
    let cancelled = tokio::time::timeout(
        Duration::from_millis(100),
        provider.stream(&request, &mut on_event),
    )
    .await;
    assert!(cancelled.is_err(), "the delay is still running");

    let (turn, _) = run(&provider, &simple_request()).await;
    assert_eq!(turn.unwrap().text, "quick");
    assert_eq!(provider.turns_played(), 3);
}

#[test]
fn bad_scripts_are_rejected_with_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (json!({"turns": [{"text": "x", "tool_calls": []}]}), "tool_calls"),
        (json!({"turns": []}), "no turns"),
        (json!({"turns": [{"toolCalls": [{"name": ""}]}]}), "empty name"),
        (json!({"steps": []}), "steps"),
    ];
    for (script, expected) in cases {
        let path = write_script(dir.path(), script);
        let error = ScriptedProvider::load(&path).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("script {}: ", path.display())),
            "{text}"
        );
        assert!(text.contains(expected), "{text}");
    }
    std::fs::write(dir.path().join("broken.json"), "{\"turns\": [").unwrap();
    let error = ScriptedProvider::load(dir.path().join("broken.json")).unwrap_err();
    assert!(error.to_string().contains("broken.json"), "{error}");
    let error = ScriptedProvider::load(dir.path().join("missing.json")).unwrap_err();
    assert!(error.to_string().contains("cannot read the script"), "{error}");
}
