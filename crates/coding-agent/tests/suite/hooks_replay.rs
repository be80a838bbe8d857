//! Record and replay: `elph run --record-hooks FILE` writes every hook chain with the outcomes it
//! got; `elph hooks test --replay FILE` sends them through the hooks as they are now and exits 1
//! when a decision changed. Real hook processes, the real binary.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::run_e2e::{elph, run_elph};

fn s(path: &Path) -> String {
    path.display().to_string()
}

fn guard(env: &TestEnv, body: &str) -> std::path::PathBuf {
    write_script(&env.root.path().join("scripts"), "guard.sh", body)
}

fn replay(env: &TestEnv, recording: &Path, json: bool) -> (Option<i32>, String, String) {
    let mut args = vec!["hooks", "test", "--replay"];
    let recording = s(recording);
    args.push(&recording);
    if json {
        args.push("--json");
    }
    let output = env.command(&elph()).args(&args).output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_recorded_run_replays_the_same_until_a_hook_changes_its_decision() {
    let env = TestEnv::new();
    let command = guard(&env, "cat > /dev/null");
    env.write_home_hooks(&json!({"hooks": [
        {"id": "rm-guard", "event": "preToolUse", "matcher": {"toolNames": ["shell_exec"]}, "command": s(&command)},
        {"id": "turn-log", "event": "stop", "command": s(&command)},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "rm -rf build"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let recording = env.evidence("hooks.jsonl");
    let output = run_elph(&env, &server, &["--record-hooks", &s(&recording), "clean up"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // One line per chain: the payload, each run's outcome, the decision; readable by its owner only.
    let lines = json_lines(&recording);
    let events: Vec<&str> = lines
        .iter()
        .map(|l| l["payload"]["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["preToolUse", "stop"], "{lines:#?}");
    assert_eq!(
        lines[0]["payload"]["toolInput"],
        json!({"command": "rm -rf build"})
    );
    assert_eq!(
        lines[0]["runs"],
        json!([{"hookId": "rm-guard", "status": "ok", "outcome": null}])
    );
    assert_eq!(lines[0]["decision"]["reduced"]["blocked"], Value::Null);
    let mode = std::fs::metadata(&recording).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // The hooks as they were: nothing changed, exit 0.
    let (code, stdout, stderr) = replay(&env, &recording, false);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("No decision changed."), "{stdout}");

    // The guard now blocks rm -rf: the preToolUse decision changed, exit 1.
    guard(
        &env,
        r#"if grep -q 'rm -rf'; then echo '{"block": true, "reason": "no rm -rf"}'; fi"#,
    );
    let (code, stdout, stderr) = replay(&env, &recording, false);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("≠ line 1  preToolUse (shell_exec): the decision changed"),
        "{stdout}"
    );
    assert!(stdout.contains("= line 2  stop: same decision"), "{stdout}");
    assert!(
        stdout.contains("hook 'rm-guard': was ok (no outcome); now ok"),
        "{stdout}"
    );
    assert!(stdout.contains("1 of 2 decision(s) changed."), "{stdout}");

    let (code, stdout, _) = replay(&env, &recording, true);
    assert_eq!(code, Some(1));
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["changed"], 1);
    assert_eq!(
        report["chains"][0]["now"]["reduced"]["blocked"]["hookId"],
        "rm-guard"
    );
}

#[test]
fn a_file_that_is_not_a_recording_is_refused_with_its_line() {
    let env = TestEnv::new();
    let recording = env.evidence("not-a-recording.jsonl");
    std::fs::write(&recording, "{\"event\": \"stop\"}\n").unwrap();
    let (code, stdout, stderr) = replay(&env, &recording, false);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("not-a-recording.jsonl:1: not a recorded hook chain"),
        "{stderr}"
    );
}
