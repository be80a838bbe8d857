//! Sessions that last, and compaction with its hooks, through the real `elph run`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Gate, Wire};

use super::run_e2e::{elph, run_elph};

fn sessions_json(env: &TestEnv) -> Vec<Value> {
    let output = env
        .command(&elph())
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&output.stdout).unwrap()
}

#[tokio::test]
async fn resume_after_restart_sees_the_earlier_turns() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ANSWER-ONE"));
    let output = run_elph(&env, &server, &["PROMPT-ONE"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sessions = sessions_json(&env);
    assert_eq!(sessions.len(), 1);
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    assert_eq!(sessions[0]["title"], "PROMPT-ONE");

    server.enqueue(FakeReply::text("ANSWER-TWO"));
    let output = run_elph(&env, &server, &["-c", "PROMPT-TWO"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let second = server.requests()[1].to_string();
    assert!(second.contains("PROMPT-ONE") && second.contains("ANSWER-ONE") && second.contains("PROMPT-TWO"));

    server.enqueue(FakeReply::text("ANSWER-THREE"));
    let output = run_elph(&env, &server, &["--session", &id, "PROMPT-THREE"]).await;
    assert!(output.status.success());
    let third = server.requests()[2].to_string();
    assert!(third.contains("ANSWER-TWO") && third.contains("PROMPT-THREE"));

    // --no-session stores nothing and sees nothing earlier.
    server.enqueue(FakeReply::text("EPHEMERAL"));
    let output = run_elph(&env, &server, &["--no-session", "PROMPT-FOUR"]).await;
    assert!(output.status.success());
    assert!(!server.requests()[3].to_string().contains("PROMPT-ONE"));
    assert_eq!(sessions_json(&env).len(), 1);
    assert_eq!(sessions_json(&env)[0]["entryCount"], 6);

    let output = run_elph(&env, &server, &["--session", "no-such-id", "x"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no session 'no-such-id'"));
}

/// Reads `elph run --output-format stream-json` output until the text shown so far (its
/// `textDelta` events) holds `text`, and returns that text. Under a deadline.
async fn wait_until_shown(
    stdout: &mut tokio::io::BufReader<tokio::process::ChildStdout>,
    text: &str,
) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut shown = String::new();
    let reading = async {
        let mut line = String::new();
        while !shown.contains(text) {
            line.clear();
            let read = stdout.read_line(&mut line).await.unwrap();
            assert!(read > 0, "elph ended before showing {text:?}; shown: {shown:?}");
            if let Ok(event) = serde_json::from_str::<Value>(&line)
                && event["type"] == "textDelta"
            {
                shown.push_str(event["text"].as_str().unwrap_or_default());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), reading)
        .await
        .unwrap_or_else(|_| panic!("{text:?} was not shown within 30 s"));
    shown
}

#[tokio::test]
async fn kill_9_during_a_streaming_answer_loses_nothing_already_shown() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("EARLIER-ANSWER"));
    assert!(
        run_elph(&env, &server, &["EARLIER-PROMPT"])
            .await
            .status
            .success()
    );

    let gate = Gate::new();
    server.enqueue(FakeReply::text("PARTIAL streaming answer that never ends").hold(&gate));
    let mut child = spawn_streaming_run(&env, &server, &["-c", "INTERRUPTED-PROMPT"]);
    // Killed once the whole answer has been shown (the draft is stored before a delta is shown).
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    wait_until_shown(&mut stdout, "PARTIAL streaming answer that never ends").await;
    child.start_kill().unwrap();
    tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    gate.open();

    server.enqueue(FakeReply::text("AFTER"));
    let output = run_elph(&env, &server, &["-c", "NEXT-PROMPT"]).await;
    assert!(
        output.status.success(),
        "the file opens without repair: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let request = server.requests()[2].to_string();
    // Everything shown before the kill is there, the half-streamed answer included.
    for kept in [
        "EARLIER-PROMPT",
        "EARLIER-ANSWER",
        "INTERRUPTED-PROMPT",
        "PARTIAL streaming answer that never ends",
        "NEXT-PROMPT",
    ] {
        assert!(request.contains(kept), "{kept} survived: {request}");
    }
}

#[tokio::test]
async fn two_runs_at_once_on_one_project_both_store_their_sessions() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let gate = Gate::new();
    server.enqueue(FakeReply::text("first").hold(&gate));
    server.enqueue(FakeReply::text("second").hold(&gate));
    let (a, b) = {
        let runs = async {
            // Both answers are held until both requests arrived, so the runs overlap. A run that
            // failed before its request must not hold the other forever: after 30 s the gate opens
            // anyway and the assertions below say which run failed and why.
            let opener = async {
                let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
                while server.requests().len() < 2 && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                gate.open();
            };
            let (a, b, ()) = tokio::join!(
                run_elph(&env, &server, &["RUN-A"]),
                run_elph(&env, &server, &["RUN-B"]),
                opener
            );
            (a, b)
        };
        tokio::time::timeout(Duration::from_secs(60), runs).await.unwrap()
    };
    for (run, output) in [("RUN-A", &a), ("RUN-B", &b)] {
        assert!(
            output.status.success(),
            "{run} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let sessions = sessions_json(&env);
    assert_eq!(sessions.len(), 2);
    let mut titles: Vec<&str> = sessions.iter().map(|s| s["title"].as_str().unwrap()).collect();
    titles.sort();
    assert_eq!(titles, ["RUN-A", "RUN-B"]);
    assert!(sessions.iter().all(|s| s["entryCount"] == 2));
}

/// Starts `elph run` on `server` with `args` after the model, its events on a piped stdout
/// (`--output-format stream-json`), for a test to act once something has been shown.
fn spawn_streaming_run(env: &TestEnv, server: &FakeModelServer, args: &[&str]) -> tokio::process::Child {
    let mut command = env.command(&elph());
    command
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.base_url())
        .args([
            "run",
            "--model",
            "openai/gpt-test",
            "--output-format",
            "stream-json",
        ])
        .args(args)
        .stdout(std::process::Stdio::piped());
    tokio::process::Command::from(command).spawn().unwrap()
}

/// A layout whose model has a 2,000-token window, so compaction triggers after a long first turn.
fn small_window(env: &TestEnv, server: &FakeModelServer) {
    let providers = env.config_dir.join("providers");
    std::fs::create_dir_all(&providers).unwrap();
    std::fs::write(
        providers.join("local.json"),
        json!({"name": "local", "api": "openai-chat", "baseUrl": server.base_url(), "models": [{"id": "small", "contextWindow": 2000}]})
            .to_string(),
    )
    .unwrap();
}

async fn run_local(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let mut command = env.command(&elph());
    command.args(["run", "--model", "local/small"]).args(args);
    tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .unwrap()
    .unwrap()
    .unwrap()
}

fn compaction_hooks(env: &TestEnv, pre_outcome: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    env.trust_project();
    let pre_log = env.evidence("pre.jsonl");
    let post_log = env.evidence("post.jsonl");
    env.project_script(
        "pre.sh",
        &format!("cat >> '{}'\nprintf '%s' '{pre_outcome}'\n", pre_log.display()),
    );
    env.project_script("post.sh", &format!("cat >> '{}'\n", post_log.display()));
    env.write_project_hooks(&json!({"hooks": [
        {"id": "pre", "event": "preCompact", "command": "hooks/pre.sh"},
        {"id": "post", "event": "postCompact", "command": "hooks/post.sh"},
    ]}));
    (pre_log, post_log)
}

fn long_prompt() -> String {
    format!("OLD-TURN-MARKER {}", "lorem ipsum dolor sit amet ".repeat(320))
}

#[tokio::test]
async fn automatic_compaction_at_the_threshold_and_its_hooks() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    small_window(&env, &server);
    let (pre_log, post_log) = compaction_hooks(&env, r#"{"customInstructions": "KEEP-THE-CHECKLIST"}"#);
    server.enqueue(FakeReply::text("first answer"));
    assert!(run_local(&env, &[&long_prompt()]).await.status.success());
    server.enqueue(FakeReply::text("SUMMARY-OF-EARLIER-WORK"));
    server.enqueue(FakeReply::text("second answer"));
    let output = run_local(&env, &["-c", "NEW-PROMPT"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "first turn, the summary, the second turn");
    let summary_request = requests[1].to_string();
    assert!(
        summary_request.contains("OLD-TURN-MARKER"),
        "the old turns are summarized"
    );
    assert!(
        summary_request.contains("KEEP-THE-CHECKLIST"),
        "preCompact customInstructions reach the summarizing request"
    );
    let after = requests[2].to_string();
    assert!(after.contains("SUMMARY-OF-EARLIER-WORK") && after.contains("NEW-PROMPT"));
    assert!(
        !after.contains("OLD-TURN-MARKER"),
        "the request after compaction carries the summary, not the old turns"
    );

    let pre = &json_lines(&pre_log)[0];
    assert_eq!(
        (pre["trigger"].as_str(), pre["entryCount"].as_u64()),
        (Some("auto"), Some(2))
    );
    let post = &json_lines(&post_log)[0];
    assert_eq!(post["event"], "postCompact");
    assert_eq!(
        (post["trigger"].as_str(), post["entriesCompacted"].as_u64()),
        (Some("auto"), Some(2))
    );
    assert!(!post["sessionId"].as_str().unwrap().is_empty());

    // The stored transcript keeps the full history: the next session request is built from the summary,
    // but the database still has the old turn.
    let db = std::fs::read(env.data_dir.join("sessions.db")).unwrap();
    let wal = std::fs::read(env.data_dir.join("sessions.db-wal")).unwrap_or_default();
    let all = String::from_utf8_lossy(&[db, wal].concat()).into_owned();
    assert!(all.contains("OLD-TURN-MARKER") && all.contains("SUMMARY-OF-EARLIER-WORK"));
}

#[tokio::test]
async fn pre_compact_cancel_makes_no_summary_request() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    small_window(&env, &server);
    let (pre_log, post_log) = compaction_hooks(&env, r#"{"cancel": true}"#);
    server.enqueue(FakeReply::text("first answer"));
    assert!(run_local(&env, &[&long_prompt()]).await.status.success());
    server.enqueue(FakeReply::text("second answer"));
    let output = run_local(&env, &["-c", "NEW-PROMPT"]).await;
    assert!(output.status.success());
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "no summarizing request");
    assert!(
        requests[1].to_string().contains("OLD-TURN-MARKER"),
        "the turn goes on uncompacted"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("compaction cancelled by hook 'pre'"), "{stderr}");
    assert_eq!(json_lines(&pre_log).len(), 1);
    assert!(
        !Path::new(&post_log).exists(),
        "no postCompact without a compaction"
    );
}

#[tokio::test]
async fn an_answer_cut_short_by_ctrl_c_is_kept_as_far_as_it_was_shown() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let gate = Gate::new();
    server.enqueue(FakeReply::text("HALF-SHOWN answer").hold(&gate));
    let mut child = spawn_streaming_run(&env, &server, &["FIRST"]);
    // Ctrl+C once the answer so far has been shown: what was shown is what must be kept.
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let shown = wait_until_shown(&mut stdout, "HALF-SHOWN answer").await;
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), async {
        let mut rest = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stdout, &mut rest)
            .await
            .unwrap();
        child.wait().await.unwrap()
    })
    .await
    .expect("elph exited within 30 s of Ctrl+C");
    assert_eq!(status.code(), Some(130));
    assert!(shown.contains("HALF-SHOWN"), "the text was shown");
    gate.open();

    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["-c", "SECOND"]).await;
    assert!(output.status.success());
    let request = server.requests()[1].to_string();
    assert!(
        request.contains("HALF-SHOWN answer") && request.contains("SECOND"),
        "{request}"
    );
}
