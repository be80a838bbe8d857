//! Custom provider files and provider stream limits through the real `elph` binary: a broken file
//! is skipped without stopping other providers (and without letting their keys into the shell),
//! `elph doctor` lists the providers and the skipped files, `headers` reach the server, and a
//! server that goes quiet ends the run with an error naming the provider and the limit while the
//! session stays resumable.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::raw_http::{RawHttpServer, Step, sse_event, sse_head};

use super::run_e2e::elph;

fn write_provider(env: &TestEnv, file: &str, text: &str) {
    let dir = env.config_dir.join("providers");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

/// Runs `elph ARGS` off the async runtime (the servers live on it), under a deadline.
async fn cli(env: &TestEnv, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = env.command(&elph());
    command.envs(vars.iter().copied()).args(args);
    tokio::task::spawn_blocking(move || {
        assert_cmd::Command::from_std(command)
            .timeout(Duration::from_secs(60))
            .output()
            .expect("elph runs")
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A good provider at `server`, one with a field this version does not know, and one that is not
/// JSON; each of the first two names a key variable.
fn three_files(env: &TestEnv, server: &FakeModelServer) {
    write_provider(
        env,
        "local.json",
        &json!({"name": "local", "api": "openai-chat", "baseUrl": server.base_url(),
                "apiKeyEnv": "LOCAL_LLM_AUTH"})
        .to_string(),
    );
    write_provider(
        env,
        "newer.json",
        &json!({"name": "newer", "api": "openai-chat", "baseUrl": "http://127.0.0.1:9/v1",
                "apiKeyEnv": "NEWER_LLM_AUTH", "reasoning": {"effort": "high"}})
        .to_string(),
    );
    write_provider(env, "broken.json", "{\"name\": \"broken\",");
}

#[tokio::test]
async fn a_broken_provider_file_stops_neither_other_providers_nor_hides_their_keys() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    three_files(&env, &server);
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": "env"})));
    server.enqueue(FakeReply::text("done"));
    let vars = [
        ("LOCAL_LLM_AUTH", "secret-local-marker"),
        ("NEWER_LLM_AUTH", "secret-newer-marker"),
    ];
    let output = cli(
        &env,
        &[
            "run",
            "--model",
            "local/m",
            "--sandbox",
            "full-access",
            "show env",
        ],
        &vars,
    )
    .await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(text(&output.stdout).trim(), "done");
    assert!(
        stderr.contains("newer.json skipped: unknown field `reasoning`"),
        "the skipped file is said: {stderr}"
    );
    assert!(stderr.contains("broken.json skipped"), "{stderr}");
    let result = server.requests()[1]["messages"].to_string();
    assert!(result.contains("HOME="), "the command ran: {result}");
    for (name, value) in vars {
        assert!(
            !result.contains(name) && !result.contains(value),
            "{name} reached the command"
        );
    }
}

#[tokio::test]
async fn asking_for_a_broken_provider_names_its_file_and_problem() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    three_files(&env, &server);
    let newer = env.config_dir.join("providers/newer.json");
    let output = cli(&env, &["run", "--model", "newer/m", "hi"], &[]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "provider file {}: unknown field `reasoning`",
            newer.display()
        )),
        "{stderr}"
    );
    let output = cli(&env, &["run", "--model", "broken/m", "hi"], &[]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("broken.json: "),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn doctor_lists_the_providers_their_files_and_the_skipped_ones() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    three_files(&env, &server);
    let output = cli(&env, &["doctor"], &[("LOCAL_LLM_AUTH", "x")]).await;
    let human = text(&output.stdout);
    assert!(human.contains("Providers: 3 (2 file(s) skipped)"), "{human}");
    assert!(
        human.contains("- openai (built in): OPENAI_API_KEY is not set"),
        "{human}"
    );
    let local = env.config_dir.join("providers/local.json");
    assert!(
        human.contains(&format!("✓ local ({}): LOCAL_LLM_AUTH is set", local.display())),
        "{human}"
    );
    assert!(
        human.contains("newer.json: skipped: unknown field `reasoning`"),
        "{human}"
    );
    assert!(human.contains("broken.json: skipped: "), "{human}");

    let output = cli(&env, &["doctor", "--json"], &[]).await;
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = report["providers"]["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["openai", "anthropic", "local"]);
    let skipped = report["providers"]["problems"].as_array().unwrap();
    assert_eq!(skipped.len(), 2);
    assert_eq!(skipped[1]["name"], "newer");
    let problems = report["problems"].to_string();
    assert!(
        problems.contains("provider file "),
        "listed as problems: {problems}"
    );
}

#[tokio::test]
async fn headers_reach_the_server_and_their_secrets_appear_nowhere() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    write_provider(
        &env,
        "router.json",
        &json!({"name": "router", "api": "openai-chat", "baseUrl": server.base_url(),
                "headers": {"X-Title": "Elph", "X-Gateway-Key": "${GATEWAY_TOKEN}"}})
        .to_string(),
    );
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": "env"})));
    server.enqueue(FakeReply::text("routed"));
    let vars = [("GATEWAY_TOKEN", "gw-secret-5521")];
    let output = cli(
        &env,
        &["run", "--model", "router/m", "--sandbox", "full-access", "go"],
        &vars,
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let request = &server.recorded()[0];
    assert_eq!(request.header("x-title"), Some("Elph"));
    assert_eq!(request.header("x-gateway-key"), Some("gw-secret-5521"));
    let result = server.requests()[1]["messages"].to_string();
    assert!(
        !result.contains("gw-secret-5521"),
        "the header's variable reached the shell"
    );
    for entry in walk(&env.data_dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        assert!(!text(&bytes).contains("gw-secret-5521"), "in {}", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn a_server_that_goes_quiet_ends_the_run_with_the_limit_named_and_the_session_resumes() {
    let env = TestEnv::new();
    let quiet = RawHttpServer::start(vec![
        sse_head(),
        sse_event(&json!({"choices": [{"index": 0, "delta": {"content": "Thinking"}}]})),
        Step::Forever {
            bytes: b"d".to_vec(),
            every: Duration::from_millis(50),
        },
    ])
    .await;
    write_provider(
        &env,
        "slow.json",
        &json!({"name": "slow", "api": "openai-chat", "baseUrl": format!("{}/v1", quiet.url()),
                "limits": {"idleTimeout": 0.5}})
        .to_string(),
    );
    let output = cli(&env, &["run", "--model", "slow/m", "first question"], &[]).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("slow: the server sent no complete line for 0.5 s"),
        "{stderr}"
    );
    assert!(stderr.contains("\"idleTimeout\""), "{stderr}");
    assert!(stderr.contains("slow.json"), "says where to change it: {stderr}");

    // The same session goes on with a server that answers.
    let good = FakeModelServer::start(Wire::OpenAi).await;
    good.enqueue(FakeReply::text("second answer"));
    write_provider(
        &env,
        "slow.json",
        &json!({"name": "slow", "api": "openai-chat", "baseUrl": good.base_url()}).to_string(),
    );
    let output = cli(
        &env,
        &["run", "--continue", "--model", "slow/m", "second question"],
        &[],
    )
    .await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "second answer");
    let sent = good.requests()[0]["messages"].to_string();
    assert!(sent.contains("first question"), "the first turn was kept: {sent}");
}

#[tokio::test]
async fn absurd_token_counts_from_the_server_do_not_crash_the_run() {
    for wire in [Wire::OpenAi, Wire::Anthropic] {
        let env = TestEnv::new();
        let server = FakeModelServer::start(wire).await;
        server.enqueue(FakeReply::text("counted").with_usage(u64::MAX, u64::MAX));
        let output = super::run_e2e::run_elph(&env, &server, &["hi"]).await;
        assert!(output.status.success(), "{wire:?}: {}", text(&output.stderr));
        assert_eq!(text(&output.stdout).trim(), "counted");
    }
}
