//! Prompt replacement: a userPromptSubmit hook's `prompt` is what reaches the model (through the
//! real `elph run` and a fake provider that records requests), replacements chain in order, and
//! the stored transcript keeps what the user sent, marked.

use std::path::Path;

use coding_agent::store::SessionStore;
use elph_agent::harness::Entry;
use elph_agent::messages::Message;
use serde_json::json;
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_with_mode;

use super::run_e2e::run_elph;

fn s(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test]
async fn a_replaced_prompt_reaches_the_provider_and_the_transcript_keeps_the_original() {
    let env = TestEnv::new();
    let scripts = env.root.path().join("scripts");
    // The first hook expands a macro; the second sees its result and redacts a token in it.
    let expand = scripts.join("expand.py");
    write_with_mode(
        &expand,
        "#!/usr/bin/env python3\nimport json, sys\np = json.load(sys.stdin)['prompt']\n\
         print(json.dumps({'prompt': p.replace('@fix', 'Fix the failing test, then run the suite.')}))\n",
        0o755,
    );
    let redact = scripts.join("redact.py");
    write_with_mode(
        &redact,
        "#!/usr/bin/env python3\nimport json, sys\np = json.load(sys.stdin)['prompt']\n\
         print(json.dumps({'prompt': p.replace('sk-secret-123', '[redacted]')}))\n",
        0o755,
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "expand", "event": "userPromptSubmit", "command": s(&expand)},
        {"id": "redact", "event": "userPromptSubmit", "command": s(&redact)},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("on it"));
    let sent = "@fix with key sk-secret-123";
    let output = run_elph(&env, &server, &[sent]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let received = "Fix the failing test, then run the suite. with key [redacted]";
    let request = server.requests().first().cloned().unwrap();
    let users: Vec<&serde_json::Value> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 1, "{request:#}");
    assert_eq!(users[0]["content"], received, "{request:#}");
    assert!(
        !request.to_string().contains("sk-secret-123"),
        "the original reached the model"
    );

    let store = SessionStore::open(&env.data_dir).unwrap();
    let session = store.last_session(&env.project).unwrap().unwrap();
    let entries = store.load_entries(&session.id).unwrap();
    assert_eq!(
        entries[..2],
        [
            Entry::PromptReplaced {
                original: sent.to_string(),
                replaced_by: vec!["expand".into(), "redact".into()],
            },
            Entry::Message {
                message: Message::user(received)
            },
        ]
    );
}
