//! docs/editors.md's snippets for Zed and JetBrains, launched as the editor would launch them: the
//! command, args and env each snippet names (the `elph` it names is this build's), spoken to with
//! the ACP SDK's client, against a fake model server standing in for the provider. The key and the
//! model the snippet carries must be what reaches the provider.

use std::process::Stdio;

use agent_client_protocol::ByteStreams;
use agent_client_protocol::v1::schema::StopReason;
use serde_json::Value;
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::acp::{TestClient, agent_text, within};
use super::docs_examples::{code_blocks, read_doc};

/// The `agent_servers.Elph` entry of every JSON block of docs/editors.md that has one, with the
/// line before the block (which says which editor's file it is).
fn snippets() -> Vec<(String, Value)> {
    code_blocks(&read_doc("editors.md"))
        .into_iter()
        .filter(|block| block.info == "json")
        .filter_map(|block| {
            let value: Value = serde_json::from_str(&block.text)
                .unwrap_or_else(|err| panic!("editors.md: not JSON after {:?}: {err}", block.before));
            let entry = value.pointer("/agent_servers/Elph")?.clone();
            Some((block.before, entry))
        })
        .collect()
}

#[test]
fn the_page_has_a_snippet_for_zed_and_one_for_jetbrains() {
    let snippets = snippets();
    let places: Vec<&str> = snippets.iter().map(|(before, _)| before.as_str()).collect();
    assert_eq!(snippets.len(), 2, "{places:?}");
    assert!(places[0].contains("zed/settings.json"), "{places:?}");
    assert!(places[1].contains(".jetbrains/acp.json"), "{places:?}");
    // Zed wants the custom type; both name a command, `acp` first in args, and an env.
    assert_eq!(snippets[0].1["type"], "custom");
    for (_, entry) in &snippets {
        assert!(entry["command"].is_string(), "{entry}");
        assert_eq!(entry["args"][0], "acp", "{entry}");
        assert!(entry["env"]["ELPH_MODEL"].is_string(), "{entry}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_snippet_starts_elph_acp_and_its_model_and_key_reach_the_provider() {
    for (before, entry) in snippets() {
        launch(&before, &entry).await;
    }
}

async fn launch(before: &str, entry: &Value) {
    let env = TestEnv::new();
    let vars: Vec<(String, String)> = entry["env"]
        .as_object()
        .expect("env is an object")
        .iter()
        .map(|(name, value)| {
            (
                name.clone(),
                value.as_str().expect("env values are strings").to_string(),
            )
        })
        .collect();
    let var = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let model = var("ELPH_MODEL").expect("the snippet sets ELPH_MODEL");
    let (provider, model_id) = model.split_once('/').expect("ELPH_MODEL is PROVIDER/MODEL");
    let (wire, key_var, base_var) = match provider {
        "anthropic" => (Wire::Anthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        "openai" => (Wire::OpenAi, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        other => panic!("{before}: a provider this test has no fake for: {other}"),
    };
    let key = var(key_var).unwrap_or_else(|| panic!("{before}: the snippet passes {key_var}"));
    let server = FakeModelServer::start(wire).await;
    server.enqueue(FakeReply::text("Hello from the editor's agent"));

    // The command the snippet names, found where it says: on PATH for a bare name, else at its
    // path; either way it must be an `elph`, and this build's stands in for it.
    let command = entry["command"].as_str().expect("command");
    assert_eq!(
        std::path::Path::new(command)
            .file_name()
            .and_then(|name| name.to_str()),
        Some("elph"),
        "{before}: the snippet's command is not elph"
    );
    let bin_dir = env.root.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_elph"), bin_dir.join("elph")).unwrap();
    let program = if command.contains('/') {
        bin_dir.join("elph")
    } else {
        command.into()
    };
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let mut launcher = std::process::Command::new(&program);
    launcher
        .env_clear()
        .env("HOME", &env.home)
        .env("ELPH_HOME", &env.config_dir)
        .env("ELPH_DATA_DIR", &env.data_dir)
        .env("PATH", &path)
        .envs(vars.iter().map(|(name, value)| (name, value)))
        // The provider's server is the fake one; everything else is what the snippet says.
        .env(base_var, server.base_url())
        .args(
            entry["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|arg| arg.as_str().unwrap()),
        )
        .current_dir(env.root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = tokio::process::Command::from(launcher)
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|err| panic!("{before}: the snippet's command does not start: {err}"));
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();

    let mut client = TestClient::connect(ByteStreams::new(stdin.compat_write(), stdout.compat())).await;
    let session = client.new_session(&env.project).await;
    let response = client.prompt(&session, "hello").await.expect("prompt answered");
    assert_eq!(response.stop_reason, StopReason::EndTurn, "{before}");
    assert_eq!(
        agent_text(&client.drain()),
        "Hello from the editor's agent",
        "{before}"
    );

    let request = server
        .recorded()
        .into_iter()
        .next()
        .expect("the provider got a request");
    assert_eq!(request.body["model"], model_id, "{before}: the snippet's model");
    let sent_key = match wire {
        Wire::Anthropic => request.header("x-api-key").map(str::to_string),
        Wire::OpenAi => request
            .header("authorization")
            .map(|value| value.trim_start_matches("Bearer ").to_string()),
    };
    assert_eq!(
        sent_key.as_deref(),
        Some(key.as_str()),
        "{before}: the snippet's key"
    );

    client.close().await;
    let status = within("elph acp exits", child.wait()).await.expect("wait");
    assert!(status.success(), "{before}: exit {status:?}");
}
