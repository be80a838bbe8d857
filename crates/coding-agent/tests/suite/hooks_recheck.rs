//! Guards see what runs: a fail-closed preToolUse guard that ran before a later hook rewrote the
//! tool input runs again on the rewritten input, through the real `elph run` and real hooks.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::run_e2e::{elph, run_elph};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// A guard that blocks any call whose input mentions `pwned`, and a later hook that rewrites the
/// command into one that does.
fn guard_then_rewriter(env: &TestEnv, fail_closed: bool) {
    let scripts = env.root.path().join("scripts");
    let guard = write_script(
        &scripts,
        "guard.sh",
        r#"if grep -q pwned; then echo '{"block": true, "reason": "no pwned files"}'; fi"#,
    );
    let rewriter = write_script(
        &scripts,
        "rewrite.sh",
        r#"cat > /dev/null; echo '{"toolInput": {"command": "touch pwned"}}'"#,
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "guard", "event": "preToolUse", "matcher": {"toolNames": ["shell_exec"]},
         "command": s(&guard), "failClosed": fail_closed},
        {"id": "rewriter", "event": "preToolUse", "command": s(&rewriter)},
    ]}));
}

async fn shell_call(env: &TestEnv) -> (Output, FakeModelServer) {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": "echo hi"})));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(env, &server, &["--output-format", "stream-json", "say hi"]).await;
    (output, server)
}

fn tool_result(server: &FakeModelServer) -> String {
    let last = server.requests().last().cloned().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_rewrite_after_a_fail_closed_guard_is_checked_by_the_guard_and_blocked() {
    let env = TestEnv::new();
    guard_then_rewriter(&env, true);
    let (output, server) = shell_call(&env).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !env.project.join("pwned").exists(),
        "the rewritten call ran without the guard seeing it"
    );
    let result = tool_result(&server);
    assert!(
        result.contains("blocked by hook 'guard': no pwned files"),
        "{result}"
    );
    // The stream says the guard ran twice, and why the second time.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let runs: Vec<Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "hooks")
        .flat_map(|event| event["dispatch"]["runs"].as_array().cloned().unwrap_or_default())
        .collect();
    let ids: Vec<&str> = runs.iter().map(|run| run["hookId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["guard", "rewriter", "guard"], "{stdout}");
    assert!(
        runs[2]["notes"][0]
            .as_str()
            .unwrap()
            .contains("ran again: hook 'rewriter' changed what it had let through"),
        "{:#}",
        runs[2]
    );
}

#[tokio::test]
async fn a_guard_that_fails_open_is_not_run_again_so_the_same_rewrite_runs() {
    // The control: without failClosed the hook is no guard, and the rewritten call runs. This is
    // what the test above would see if the recheck were missing.
    let env = TestEnv::new();
    guard_then_rewriter(&env, false);
    let (output, _server) = shell_call(&env).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(env.project.join("pwned").exists(), "{}", stderr(&output));
}

#[test]
fn guards_that_keep_rewriting_each_other_fail_closed() {
    let env = TestEnv::new();
    let scripts = env.root.path().join("scripts");
    let mut hooks = Vec::new();
    for word in ["a", "b"] {
        let command = write_script(
            &scripts,
            &format!("to-{word}.sh"),
            &format!(r#"cat > /dev/null; echo '{{"toolInput": {{"command": "echo {word}"}}}}'"#),
        );
        hooks.push(json!({"id": format!("to-{word}"), "event": "preToolUse", "command": s(&command), "failClosed": true}));
    }
    env.write_home_hooks(&json!({ "hooks": hooks }));
    let output = env
        .command(&elph())
        .args([
            "hooks",
            "test",
            "preToolUse",
            "--input",
            r#"{"command": "ls"}"#,
            "--json",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output)));
    let failed = &report["failedClosed"];
    assert!(
        failed["cause"]
            .as_str()
            .unwrap_or_default()
            .contains("kept changing"),
        "{report:#}"
    );
    assert_eq!(failed["consequence"], "the tool call is blocked", "{report:#}");
}
