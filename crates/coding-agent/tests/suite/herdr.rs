//! `docs/herdr-agent-state.sh`, the Herdr integration: installed as the docs say (in CONFIG_DIR),
//! run by a real `elph run` with a fake `herdr` that records its arguments; inert outside Herdr; and
//! its sequence fallback for a `date` without `%N`, run directly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::run_elph_with;
use test_support::hook_scripts::write_script;

/// The script as shipped.
fn script_source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/herdr-agent-state.sh")
}

/// Installs the script into CONFIG_DIR/hooks/ with the hooks.json of the docs, and a fake `herdr`
/// that appends its arguments (one call per line) to the returned file.
fn install(env: &TestEnv) -> (PathBuf, PathBuf) {
    let hooks_dir = env.config_dir.join("hooks");
    std::fs::create_dir_all(&hooks_dir).unwrap();
    std::fs::copy(script_source(), hooks_dir.join("herdr-agent-state.sh")).unwrap();
    let events = [
        "sessionStart",
        "userPromptSubmit",
        "beforeAgent",
        "preToolUse",
        "stop",
    ];
    env.write_home_hooks(&json!({
        "$schema": "https://elph.space/hooks-schema.json",
        "hooks": events.iter().map(|event| json!({
            "id": format!("herdr-{event}"), "event": event, "command": "hooks/herdr-agent-state.sh"
        })).collect::<Vec<_>>()
    }));
    fake_herdr(env)
}

fn fake_herdr(env: &TestEnv) -> (PathBuf, PathBuf) {
    let calls = env.evidence("herdr-calls.txt");
    let herdr = write_script(
        &env.root.path().join("fake-bin"),
        "herdr",
        &format!(
            "printf '%s\\n' \"$*\" >> '{}'\necho 'herdr noise on stdout'\necho 'and on stderr' >&2",
            calls.display()
        ),
    );
    (herdr, calls)
}

async fn elph_run(env: &TestEnv, server: &FakeModelServer, vars: &[(&str, &Path)]) -> Output {
    run_elph_with(env, server, vars, &["--output-format", "json", "list the files"]).await
}

fn calls(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Splits `pane report-agent p1 ... --seq N` into the call without the seq, and the seq.
fn without_seq(call: &str) -> (String, Option<u128>) {
    match call.split_once(" --seq ") {
        Some((head, seq)) => (
            head.to_string(),
            Some(seq.trim().parse().expect("--seq is a number")),
        ),
        None => (call.to_string(), None),
    }
}

fn assert_strictly_increasing(seqs: &[u128]) {
    assert!(
        seqs.windows(2).all(|pair| pair[0] < pair[1]),
        "--seq is not strictly increasing: {seqs:?}"
    );
}

#[tokio::test]
async fn reports_each_lifecycle_state_to_herdr_in_order() {
    let env = TestEnv::new();
    let (herdr, calls_file) = install(&env);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({"path": "."})));
    server.enqueue(FakeReply::text("two files"));
    let output = elph_run(
        &env,
        &server,
        &[
            ("HERDR_ENV", Path::new("1")),
            ("HERDR_PANE_ID", Path::new("p1")),
            ("HERDR_BIN_PATH", herdr.as_path()),
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["result"], "two files");
    let session = result["sessionId"].as_str().unwrap().to_string();

    let source = format!("--source elph-hooks-{session} --agent elph");
    let (heads, seqs): (Vec<String>, Vec<Option<u128>>) =
        calls(&calls_file).iter().map(|c| without_seq(c)).unzip();
    assert_eq!(
        heads,
        [
            format!("pane report-agent-session p1 {source} --agent-session-id {session}"),
            format!("pane report-agent p1 {source} --state idle"),
            format!("pane report-agent p1 {source} --state working"),
            format!("pane report-agent p1 {source} --state working"),
            format!("pane report-agent p1 {source} --state working"),
            format!("pane report-agent p1 {source} --state idle"),
        ],
        "sessionStart (session, idle), userPromptSubmit, beforeAgent, preToolUse, stop"
    );
    assert_eq!(seqs[0], None, "the session report carries no --seq");
    let seqs: Vec<u128> = seqs[1..]
        .iter()
        .map(|seq| seq.expect("every state report has --seq"))
        .collect();
    assert_strictly_increasing(&seqs);

    // Every hook succeeded and printed nothing, though herdr did.
    let runs: Vec<&Value> = result["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["runs"].as_array().unwrap())
        .collect();
    assert_eq!(runs.len(), 5, "{runs:#?}");
    for run in runs {
        assert_eq!(run["status"], "ok", "{run}");
        assert_eq!(
            (&run["stdoutBytes"], &run["stderrBytes"]),
            (&json!(0), &json!(0)),
            "{run}"
        );
    }
}

#[tokio::test]
async fn does_nothing_outside_a_herdr_pane() {
    let env = TestEnv::new();
    let (herdr, calls_file) = install(&env);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    // Without HERDR_ENV; then with HERDR_ENV=1 but no pane; then HERDR_ENV=0.
    let cases: [&[(&str, &Path)]; 3] = [
        &[
            ("HERDR_PANE_ID", Path::new("p1")),
            ("HERDR_BIN_PATH", herdr.as_path()),
        ],
        &[("HERDR_ENV", Path::new("1")), ("HERDR_BIN_PATH", herdr.as_path())],
        &[
            ("HERDR_ENV", Path::new("0")),
            ("HERDR_PANE_ID", Path::new("p1")),
            ("HERDR_BIN_PATH", herdr.as_path()),
        ],
    ];
    for vars in cases {
        server.enqueue(FakeReply::tool_call("list_dir", json!({})));
        server.enqueue(FakeReply::text("done"));
        let output = elph_run(&env, &server, vars).await;
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let result: Value = serde_json::from_slice(&output.stdout).unwrap();
        let runs: Vec<&Value> = result["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|d| d["runs"].as_array().unwrap())
            .collect();
        assert_eq!(runs.len(), 5, "the hooks ran");
        assert!(runs.iter().all(|run| run["status"] == "ok"));
        assert!(
            !calls_file.exists(),
            "herdr was called with {vars:?}: {:?}",
            calls(&calls_file)
        );
    }
}

/// A BusyBox-like `date` that does not know `%N` (prints it literally) and is stuck in one second.
fn date_without_nanoseconds(dir: &Path) {
    write_script(
        dir,
        "date",
        "case \"$1\" in\n  +%s%N) echo '1700000000%N' ;;\n  *) echo 1700000000 ;;\nesac",
    );
}

/// A payload as Elph writes it: `event`, `sessionId` and `projectDir` first, then `rest`.
fn payload(event: &str, session: &str, project: &Path, rest: &str) -> String {
    format!(
        r#"{{"event":"{event}","sessionId":"{session}","projectDir":{}{rest}}}"#,
        json!(project)
    )
}

/// Runs the script directly, as the host would, with `payload` on stdin.
fn run_script(
    env: &TestEnv,
    path_var: &str,
    herdr: &Path,
    payload: &str,
    session_env: Option<&str>,
) -> Output {
    let mut command = Command::new(script_source());
    command
        .env_clear()
        .env("PATH", path_var)
        .env("TMPDIR", env.root.path())
        .env("HERDR_ENV", "1")
        .env("HERDR_PANE_ID", "p1")
        .env("HERDR_BIN_PATH", herdr)
        .current_dir(&env.project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(session) = session_env {
        command.env("ELPH_SESSION_ID", session);
    }
    let mut child = command.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let line = format!("{payload}\n");
        stdin.write_all(line.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

#[test]
fn the_sequence_still_increases_within_one_second_without_percent_n() {
    let env = TestEnv::new();
    let (herdr, calls_file) = fake_herdr(&env);
    let bin = env.root.path().join("busybox-bin");
    date_without_nanoseconds(&bin);
    let path_var = format!("{}:/usr/bin:/bin", bin.display());
    let events = [
        "sessionStart",
        "userPromptSubmit",
        "beforeAgent",
        "preToolUse",
        "stop",
        "userPromptSubmit",
    ];
    for event in events {
        // The session id comes from the payload here (no ELPH_SESSION_ID), and the prompt holds a
        // decoy `"event"` that must not be taken for the real one.
        let input = payload(
            event,
            "sess-A",
            &env.project,
            r#","prompt":"{\"event\":\"stop\",\"sessionId\":\"decoy\"}""#,
        );
        let output = run_script(&env, &path_var, &herdr, &input, None);
        assert_eq!(output.status.code(), Some(0));
        assert!(output.stdout.is_empty() && output.stderr.is_empty(), "{output:?}");
    }
    let all = calls(&calls_file);
    assert_eq!(
        all[0],
        "pane report-agent-session p1 --source elph-hooks-sess-A --agent elph --agent-session-id sess-A"
    );
    let reports: Vec<(String, Option<u128>)> = all[1..].iter().map(|c| without_seq(c)).collect();
    let states: Vec<&str> = reports
        .iter()
        .map(|(head, _)| head.rsplit(' ').next().unwrap())
        .collect();
    assert_eq!(
        states,
        ["idle", "working", "working", "working", "idle", "working"]
    );
    assert!(
        reports
            .iter()
            .all(|(head, _)| head.starts_with("pane report-agent p1 --source elph-hooks-sess-A "))
    );
    let seqs: Vec<u128> = reports.iter().map(|(_, seq)| seq.unwrap()).collect();
    // Seconds x 10^9, then one more each time within the same second.
    let base = 1_700_000_000u128 * 1_000_000_000;
    assert_eq!(seqs, (0..6).map(|n| base + n).collect::<Vec<_>>());

    // Another session has a source of its own, so it starts a fresh sequence space.
    std::fs::remove_file(&calls_file).unwrap();
    let input = payload("userPromptSubmit", "ignored", &env.project, r#","prompt":"hi""#);
    run_script(&env, &path_var, &herdr, &input, Some("sess-B"));
    assert_eq!(
        calls(&calls_file),
        [format!(
            "pane report-agent p1 --source elph-hooks-sess-B --agent elph --state working --seq {base}"
        )],
        "ELPH_SESSION_ID wins over the payload"
    );
}

#[test]
fn with_gnu_date_the_sequence_is_nanoseconds_and_a_missing_herdr_is_harmless() {
    let env = TestEnv::new();
    let (herdr, calls_file) = fake_herdr(&env);
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    for event in ["userPromptSubmit", "stop"] {
        let input = payload(event, "s", &env.project, "");
        run_script(&env, "/usr/bin:/bin", &herdr, &input, Some("s"));
    }
    let seqs: Vec<u128> = calls(&calls_file)
        .iter()
        .map(|c| without_seq(c).1.unwrap())
        .collect();
    assert_eq!(seqs.len(), 2);
    assert_strictly_increasing(&seqs);
    assert!(
        seqs[0] >= before,
        "nanoseconds since the epoch: {seqs:?} vs {before}"
    );

    // No herdr at all: still exit 0 and silent.
    let input = payload("stop", "s", &env.project, r#","status":"completed""#);
    let output = run_script(
        &env,
        "/usr/bin:/bin",
        Path::new("/nonexistent/herdr"),
        &input,
        Some("s"),
    );
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty() && output.stderr.is_empty(), "{output:?}");
}

#[test]
fn a_waiting_approval_reports_blocked_and_the_answered_call_reports_working_again() {
    let env = TestEnv::new();
    let (herdr, calls_file) = fake_herdr(&env);
    let asks = payload(
        "permissionRequest",
        "s",
        &env.project,
        r#","toolName":"shell_exec","toolCallId":"c1","toolInput":{"command":"ls"},"reason":"asks""#,
    );
    let notified = payload(
        "notification",
        "s",
        &env.project,
        r#","kind":"approvalNeeded","message":"shell_exec waits for your approval""#,
    );
    let done = payload(
        "notification",
        "s",
        &env.project,
        r#","kind":"turnDone","message":"the turn is done after 40 s""#,
    );
    let ran = payload(
        "postToolUse",
        "s",
        &env.project,
        r#","toolName":"shell_exec","toolCallId":"c1","toolInput":{},"content":[],"details":{},"isError":false"#,
    );
    for input in [&asks, &notified, &done, &ran] {
        let output = run_script(&env, "/usr/bin:/bin", &herdr, input, Some("s"));
        assert_eq!(output.status.code(), Some(0));
    }
    let states: Vec<String> = calls(&calls_file)
        .iter()
        .map(|call| without_seq(call).0)
        .collect();
    let report =
        |state: &str| format!("pane report-agent p1 --source elph-hooks-s --agent elph --state {state}");
    assert_eq!(
        states,
        [report("blocked"), report("blocked"), report("working")],
        "a turnDone notification reports nothing"
    );
}
