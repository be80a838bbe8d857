//! Loud failures: a guard that fails open (a `preToolUse` hook that failed while the tool then ran)
//! is a warning in every output of `elph run`, with up to 1 KiB of the hook's stderr (escaped for a
//! terminal, exact in JSON), and `elph doctor` counts such runs from the run log. Real `elph run`,
//! real hook processes, a fake provider.

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::run_e2e::{elph, run_elph};

/// A `preToolUse` guard on `write_file` that writes an error (with a terminal escape sequence) to
/// stderr and exits 1.
fn crashing_guard(env: &TestEnv, fail_closed: bool) -> PathBuf {
    let crash = write_script(
        &env.root.path().join("scripts"),
        "crash.sh",
        r"cat >/dev/null; printf 'jq: command not found\n\033]0;pwned\007\n' >&2; exit 1",
    );
    env.write_home_hooks(&json!({"hooks": [{
        "id": "no-writes",
        "event": "preToolUse",
        "matcher": {"toolNames": ["write_file"]},
        "command": crash.display().to_string(),
        "failClosed": fail_closed,
    }]}));
    crash
}

async fn write_once(env: &TestEnv, file: &str, extra: &[&str]) -> Output {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": file, "content": "written"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let mut args = extra.to_vec();
    args.push("write the file");
    let output = run_elph(env, &server, &args).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(env.project.join(file)).unwrap(),
        "written",
        "a guard that fails open lets the call through"
    );
    output
}

#[tokio::test]
async fn a_guard_that_fails_open_is_a_warning_with_its_stderr_in_every_output_format() {
    let env = TestEnv::new();
    crashing_guard(&env, false);

    // plain: a warning line on stderr, naming what went on unchecked, with the stderr escaped.
    let output = write_once(&env, "plain.txt", &[]).await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains(
            "! warning: hook 'no-writes' (preToolUse) failed open, so the tool call went ahead \
             without its check: exited with code 1"
        ),
        "{err}"
    );
    assert!(err.contains("stderr: jq: command not found"), "{err}");
    assert!(err.contains("\\e]0;pwned\\a"), "{err}");
    assert!(
        !err.contains('\x1b'),
        "a raw escape reached the terminal: {err:?}"
    );

    // stream-json: a diagnostic line of its own, severity warning, the stderr exact.
    let output = write_once(&env, "stream.txt", &["--output-format", "stream-json"]).await;
    let lines: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let diagnostic = lines
        .iter()
        .find(|line| line["type"] == "diagnostic" && line["hookId"] == "no-writes")
        .unwrap_or_else(|| panic!("no diagnostic line: {lines:#?}"));
    assert_eq!(diagnostic["severity"], "warning");
    assert_eq!(diagnostic["event"], "preToolUse");
    let message = diagnostic["message"].as_str().unwrap();
    assert!(
        message.starts_with("failed open, so the tool call went ahead"),
        "{message}"
    );
    assert!(
        message.contains("jq: command not found\n\x1b]0;pwned\x07"),
        "{message:?}"
    );
    let hooks_event = lines
        .iter()
        .find(|line| line["type"] == "hooks" && line["dispatch"]["event"] == "preToolUse")
        .unwrap();
    assert_eq!(hooks_event["dispatch"]["diagnostics"][0]["severity"], "warning");

    // json: the hooks' diagnostics carry the severity and the stderr.
    let output = write_once(&env, "json.txt", &["--output-format", "json"]).await;
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let pre_tool = document["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|dispatch| dispatch["event"] == "preToolUse")
        .unwrap();
    assert_eq!(pre_tool["diagnostics"][0]["severity"], "warning");
    assert!(
        pre_tool["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("stderr: jq: command not found"),
        "{pre_tool}"
    );

    // doctor counts the three runs that failed open, and marks the hook as a problem with the cause.
    let output = env.command(&elph()).args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let hook = &report["hooks"][0];
    assert_eq!(hook["recentRuns"]["failedOpen"], 3, "{hook:#}");
    assert_eq!(report["summary"]["failedOpenRuns"], 3, "{:#}", report["summary"]);
    assert_eq!(hook["status"], "error", "{hook:#}");
    let messages: Vec<&str> = hook["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.contains(&"failed on every one of its last 3 run(s); last: exited with code 1"),
        "{messages:?}"
    );
    assert!(
        messages.contains(
            &"failed open 3 time(s) in its last 3 runs: each time, the tool call went ahead without its check"
        ),
        "{messages:?}"
    );
    let output = env.command(&elph()).args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("✗ no-writes  preToolUse"), "{text}");
    assert!(
        text.contains("fails    open (the default): if it fails, what it guards goes on without it"),
        "{text}"
    );
    assert!(text.contains("set \"failClosed\": true in"), "{text}");
    assert!(
        text.contains("! 3 recent run(s) of hooks that guard something failed open"),
        "{text}"
    );
}

#[tokio::test]
async fn a_fail_closed_guard_that_fails_is_reported_as_stopping_the_call_not_failing_open() {
    let env = TestEnv::new();
    crashing_guard(&env, true);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": "blocked.txt", "content": "x"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["--output-format", "stream-json", "write"]).await;
    assert!(!env.project.join("blocked.txt").exists());
    let diagnostic: Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["type"] == "diagnostic" && line["hookId"] == "no-writes")
        .unwrap();
    assert_eq!(diagnostic["severity"], "error");
    assert!(
        diagnostic["message"]
            .as_str()
            .unwrap()
            .starts_with("failed closed, so the tool call is blocked: exited with code 1"),
        "{diagnostic}"
    );

    // doctor: no failed-open count for a fail-closed hook, and it says how the hook fails.
    let output = env.command(&elph()).args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["hooks"][0]["failClosed"], true);
    assert_eq!(report["hooks"][0]["recentRuns"]["failedOpen"], 0);
    let output = env.command(&elph()).args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("fails    closed (failClosed): if it fails, the tool call is blocked"),
        "{text}"
    );
}
