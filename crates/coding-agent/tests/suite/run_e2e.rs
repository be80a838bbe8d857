//! `elph run` end to end: the real binary, real hook processes, and a local server that speaks the
//! OpenAI (or Anthropic) wire format and records what reached the model.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

pub fn elph() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_elph"))
}

/// Runs `elph run` against `server` with `args` after the model, under a deadline.
pub async fn run_elph(env: &TestEnv, server: &FakeModelServer, args: &[&str]) -> Output {
    run_elph_with::<&str>(env, server, &[], args).await
}

/// `run_elph` with extra environment variables for the elph process.
pub async fn run_elph_with<V: AsRef<std::ffi::OsStr>>(
    env: &TestEnv,
    server: &FakeModelServer,
    vars: &[(&str, V)],
    args: &[&str],
) -> Output {
    let mut command = env.command(&elph());
    command.envs(vars.iter().map(|(name, value)| (*name, value.as_ref())));
    match server.wire() {
        Wire::OpenAi => {
            command
                .env("OPENAI_API_KEY", "sk-test-secret-key")
                .env("OPENAI_BASE_URL", server.base_url());
            command.args(["run", "--model", "openai/gpt-test"]);
        }
        Wire::Anthropic => {
            command
                .env("ANTHROPIC_API_KEY", "sk-ant-test-secret")
                .env("ANTHROPIC_BASE_URL", server.base_url());
            command.args(["run", "--model", "anthropic/claude-test"]);
        }
    }
    command.args(args);
    tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("elph run finished within 60 s")
    .unwrap()
    .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A hook script that appends `EVENT` (and the payload) to `log`, then prints `outcome`.
fn recording_hook(env: &TestEnv, name: &str, log: &Path, outcome: &str) -> String {
    let body = format!(
        "payload=$(cat)\nprintf '%s\\n' \"$payload\" >> '{}'\nprintf '%s' '{}'\n",
        log.display(),
        outcome.replace('\'', "'\\''")
    );
    env.project_script(name, &body);
    format!("hooks/{name}")
}

fn hook(id: &str, event: &str, command: &str) -> Value {
    json!({"id": id, "event": event, "command": command})
}

fn tool_hook(id: &str, event: &str, tools: &[&str], command: &str) -> Value {
    json!({"id": id, "event": event, "command": command, "matcher": {"toolNames": tools}})
}

/// All text of a request (system prompt and messages) as one string, for searching.
fn request_text(request: &Value) -> String {
    request.to_string()
}

fn events_of(log: &Path) -> Vec<String> {
    json_lines(log)
        .iter()
        .map(|payload| payload["event"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[tokio::test]
async fn session_start_once_with_session_id_env_and_event_order() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("events.jsonl");
    let ids = env.evidence("session-ids.txt");
    let body = format!(
        "payload=$(cat)\nprintf '%s\\n' \"$payload\" >> '{}'\nprintf '%s\\n' \"$ELPH_SESSION_ID\" >> '{}'\n",
        log.display(),
        ids.display()
    );
    env.project_script("record.sh", &body);
    let events = [
        "sessionStart",
        "userPromptSubmit",
        "beforeAgent",
        "context",
        "stop",
        "sessionEnd",
    ];
    env.write_project_hooks(&json!({
        "hooks": events.iter().map(|e| hook(&format!("rec-{e}"), e, "hooks/record.sh")).collect::<Vec<_>>()
    }));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({"path": "."})));
    server.enqueue(FakeReply::text("all done"));
    let output = run_elph(&env, &server, &["hello there"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "all done");

    let seen = events_of(&log);
    assert_eq!(
        seen,
        [
            "sessionStart",
            "userPromptSubmit",
            "beforeAgent",
            "context",
            "context",
            "stop",
            "sessionEnd"
        ],
        "each event at its point, context before each of the two requests"
    );
    let payloads = json_lines(&log);
    let session_id = payloads[0]["sessionId"].as_str().unwrap().to_string();
    assert!(!session_id.is_empty());
    assert_eq!(payloads[0]["source"], "new");
    assert_eq!(payloads[0]["projectDir"], env.project.display().to_string());
    let env_ids: Vec<String> = std::fs::read_to_string(&ids)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(
        env_ids.iter().all(|id| *id == session_id),
        "ELPH_SESSION_ID equals the payload's sessionId"
    );
    assert_eq!(payloads.last().unwrap()["reason"], "exit");
    assert_eq!(payloads[payloads.len() - 2]["status"], "completed");
}

#[tokio::test]
async fn before_agent_context_reaches_every_request_and_is_never_stored() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("before.jsonl");
    let command = recording_hook(
        &env,
        "before.sh",
        &log,
        r#"{"additionalContext": "CTX-MARK-7731", "messages": [{"role": "user", "content": "TEMP-MARK-4410"}]}"#,
    );
    env.write_project_hooks(&json!({"hooks": [hook("before", "beforeAgent", &command)]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    server.enqueue(FakeReply::text("first answer"));
    let output = run_elph(&env, &server, &["first prompt"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let text = request_text(request);
        assert!(
            text.contains("CTX-MARK-7731"),
            "system prompt addition in every request: {text}"
        );
        assert!(
            text.contains("TEMP-MARK-4410"),
            "temporary message in every request: {text}"
        );
    }
    assert_eq!(requests[0]["messages"][0]["role"], "system");
    assert!(
        requests[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .ends_with("\n\nCTX-MARK-7731")
    );

    // The next turn (a new run continuing the session) starts from the stored transcript only.
    std::fs::write(env.project.join(".elph/hooks.json"), r#"{"hooks": []}"#).unwrap();
    server.enqueue(FakeReply::text("second answer"));
    let output = run_elph(&env, &server, &["-c", "second prompt"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let third = request_text(&server.requests()[2]);
    assert!(
        third.contains("first prompt") && third.contains("first answer"),
        "{third}"
    );
    assert!(
        !third.contains("TEMP-MARK-4410") && !third.contains("CTX-MARK-7731"),
        "{third}"
    );

    // Nothing temporary in the database file.
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(&env.data_dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            bytes.extend(std::fs::read(&path).unwrap());
        }
    }
    let haystack = String::from_utf8_lossy(&bytes);
    assert!(haystack.contains("first prompt"), "the transcript is stored");
    assert!(!haystack.contains("TEMP-MARK-4410") && !haystack.contains("CTX-MARK-7731"));
}

#[tokio::test]
async fn context_replacement_changes_only_that_request() {
    let env = TestEnv::new();
    env.trust_project();
    let counter = env.evidence("context-count");
    let body = format!(
        "cat > /dev/null\nif [ ! -e '{0}' ]; then touch '{0}'; printf '%s' '{{\"messages\": [{{\"role\": \"user\", \"content\": \"Redacted context\"}}]}}'; fi\n",
        counter.display()
    );
    env.project_script("context.sh", &body);
    env.write_project_hooks(&json!({"hooks": [hook("redact", "context", "hooks/context.sh")]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["SECRET-PROMPT-TEXT"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let first = request_text(&requests[0]);
    assert!(
        first.contains("Redacted context") && !first.contains("SECRET-PROMPT-TEXT"),
        "{first}"
    );
    let second = request_text(&requests[1]);
    assert!(
        second.contains("SECRET-PROMPT-TEXT") && !second.contains("Redacted context"),
        "{second}"
    );
}

#[tokio::test]
async fn pre_tool_use_block_stops_the_tool_and_tells_the_model() {
    let env = TestEnv::new();
    env.trust_project();
    let post_log = env.evidence("post.jsonl");
    let block = recording_hook(
        &env,
        "block.sh",
        &env.evidence("pre.jsonl"),
        r#"{"block": true, "reason": "no shell today"}"#,
    );
    let post = recording_hook(&env, "post.sh", &post_log, "");
    env.write_project_hooks(&json!({"hooks": [
        tool_hook("guard", "preToolUse", &["shell_exec"], &block),
        hook("post-any", "postToolUse", &post),
        hook("post-fail", "postToolUseFailure", &post),
    ]}));
    let marker = env.evidence("ran-marker");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("touch {}", marker.display())}),
    ));
    server.enqueue(FakeReply::text("understood"));
    let output = run_elph(&env, &server, &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "the blocked tool did not run");
    assert!(!post_log.exists(), "no post-tool hook runs for a blocked call");
    let second = request_text(&server.requests()[1]);
    assert!(
        second.contains("guard") && second.contains("no shell today"),
        "{second}"
    );
    assert!(
        stderr(&output).contains("hook 'guard' blocked the tool call: no shell today"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_deny_that_also_rewrites_the_input_is_reported_as_a_block_only() {
    let env = TestEnv::new();
    env.trust_project();
    let rewritten = env.evidence("rewritten-marker");
    let outcome = json!({
        "decision": "deny",
        "reason": "not today",
        "toolInput": {"command": format!("touch {}", rewritten.display())}
    })
    .to_string();
    let deny = recording_hook(&env, "deny.sh", &env.evidence("pre.jsonl"), &outcome);
    env.write_project_hooks(&json!({"hooks": [tool_hook("guard", "preToolUse", &["shell_exec"], &deny)]}));
    let original = env.evidence("original-marker");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("touch {}", original.display())}),
    ));
    server.enqueue(FakeReply::text("understood"));
    let output = run_elph(&env, &server, &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!original.exists() && !rewritten.exists(), "nothing ran");
    let stderr = stderr(&output);
    assert!(
        stderr.contains("hook 'guard' blocked the tool call: not today"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("rewrote the tool input"),
        "the rewrite never applied, so it is not reported:\n{stderr}"
    );
}

#[tokio::test]
async fn pre_tool_use_rewrite_runs_the_new_input() {
    let env = TestEnv::new();
    env.trust_project();
    // Inside the project: the default sandbox (workspace-write) lets a command write only there.
    let marker = env.project.join("rewritten-marker");
    let outcome = json!({"toolInput": {"command": format!("touch {}", marker.display())}}).to_string();
    let rewrite = recording_hook(&env, "rewrite.sh", &env.evidence("pre.jsonl"), &outcome);
    env.write_project_hooks(&json!({"hooks": [tool_hook("rewrite", "preToolUse", &["shell_*"], &rewrite)]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "echo original"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["--output-format", "stream-json", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(marker.exists(), "the tool ran with the rewritten input");
    assert!(
        !request_text(&server.requests()[1]).contains("original\\n"),
        "the original command did not run"
    );
    let rewritten: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "toolInputRewritten")
        .collect();
    assert_eq!(rewritten.len(), 1, "front ends are told what input runs");
    assert_eq!(
        rewritten[0]["input"]["command"],
        format!("touch {}", marker.display())
    );
}

#[tokio::test]
async fn a_rewrite_that_breaks_the_schema_fails_the_call() {
    let env = TestEnv::new();
    env.trust_project();
    let rewrite = recording_hook(
        &env,
        "bad.sh",
        &env.evidence("pre.jsonl"),
        r#"{"toolInput": {"cmd": 42}}"#,
    );
    env.write_project_hooks(
        &json!({"hooks": [tool_hook("breaker", "preToolUse", &["shell_exec"], &rewrite)]}),
    );
    let marker = env.evidence("should-not-exist");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("touch {}", marker.display())}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "the tool did not run");
    let second = request_text(&server.requests()[1]);
    assert!(
        second.contains("rewrote the arguments") && second.contains("invalid"),
        "{second}"
    );
}

#[tokio::test]
async fn decision_ask_is_denied_headless_with_the_reason() {
    let env = TestEnv::new();
    env.trust_project();
    let asker = recording_hook(
        &env,
        "ask.sh",
        &env.evidence("pre.jsonl"),
        r#"{"decision": "ask", "reason": "writes need a human"}"#,
    );
    env.write_project_hooks(&json!({"hooks": [tool_hook("asker", "preToolUse", &["write_file"], &asker)]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": "x.txt", "content": "hi"}),
    ));
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["--approval", "auto", "write"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !env.project.join("x.txt").exists(),
        "denied: the file was not written"
    );
    let second = request_text(&server.requests()[1]);
    assert!(
        second.contains("no one to approve") && second.contains("writes need a human"),
        "{second}"
    );
}

#[tokio::test]
async fn post_tool_use_replaces_content_is_error_and_details() {
    let env = TestEnv::new();
    env.trust_project();
    std::fs::write(env.project.join("notes.txt"), "ORIGINAL-CONTENT").unwrap();
    let patch = r#"{"content": [{"type": "text", "text": "SANITIZED-RESULT"}], "isError": true, "details": {"source": "policy-filter"}}"#;
    let post = recording_hook(&env, "post.sh", &env.evidence("post.jsonl"), patch);
    env.write_project_hooks(&json!({"hooks": [tool_hook("sanitize", "postToolUse", &["read_file"], &post)]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("read_file", json!({"path": "notes.txt"})));
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["--output-format", "stream-json", "read"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let second = request_text(&server.requests()[1]);
    assert!(
        second.contains("SANITIZED-RESULT") && !second.contains("ORIGINAL-CONTENT"),
        "{second}"
    );
    let finished: Vec<Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|event| event["type"] == "toolCallFinished")
        .collect();
    assert_eq!(finished[0]["isError"], true);
    assert_eq!(finished[0]["details"], json!({"source": "policy-filter"}));
    let payload = &json_lines(&env.evidence("post.jsonl"))[0];
    assert_eq!(payload["toolName"], "read_file");
    assert!(
        payload["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ORIGINAL-CONTENT")
    );
}

#[tokio::test]
async fn invalid_post_tool_content_is_rejected_with_a_diagnostic() {
    let env = TestEnv::new();
    env.trust_project();
    std::fs::write(env.project.join("notes.txt"), "ORIGINAL-CONTENT").unwrap();
    let post = recording_hook(
        &env,
        "post.sh",
        &env.evidence("post.jsonl"),
        r#"{"content": "just a string"}"#,
    );
    env.write_project_hooks(
        &json!({"hooks": [tool_hook("bad-patch", "postToolUse", &["read_file"], &post)]}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("read_file", json!({"path": "notes.txt"})));
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["read"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        request_text(&server.requests()[1]).contains("ORIGINAL-CONTENT"),
        "the result stays as it was"
    );
    let err = stderr(&output);
    assert!(
        err.contains("bad-patch") && err.contains("content must be an array"),
        "{err}"
    );
}

#[tokio::test]
async fn terminate_ends_the_loop_after_the_batch() {
    let env = TestEnv::new();
    env.trust_project();
    let post = recording_hook(
        &env,
        "post.sh",
        &env.evidence("post.jsonl"),
        r#"{"terminate": true}"#,
    );
    env.write_project_hooks(&json!({"hooks": [hook("stopper", "postToolUse", &post)]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server
        .enqueue(FakeReply::tool_call("list_dir", json!({})).and_tool_call("list_dir", json!({"path": "."})));
    server.enqueue(FakeReply::text("never requested"));
    let output = run_elph(&env, &server, &["look"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        server.requests().len(),
        1,
        "no request after a batch whose every result asked to terminate"
    );
    assert_eq!(json_lines(&env.evidence("post.jsonl")).len(), 2);
}

#[tokio::test]
async fn post_tool_use_failure_fires_on_a_failing_tool() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("failure.jsonl");
    let failure = recording_hook(&env, "fail.sh", &log, "");
    let success_log = env.evidence("success.jsonl");
    let success = recording_hook(&env, "ok.sh", &success_log, "");
    env.write_project_hooks(&json!({"hooks": [
        hook("on-failure", "postToolUseFailure", &failure),
        hook("on-success", "postToolUse", &success),
    ]}));
    let server = FakeModelServer::start(Wire::Anthropic).await;
    server.enqueue(FakeReply::tool_call(
        "read_file",
        json!({"path": "does-not-exist.txt"}),
    ));
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["read"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let payloads = json_lines(&log);
    assert_eq!(payloads.len(), 1);
    assert_eq!(payloads[0]["event"], "postToolUseFailure");
    assert_eq!(payloads[0]["isError"], true);
    assert!(!success_log.exists());
}

#[tokio::test]
async fn stop_after_success_and_after_a_provider_error() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("stop.jsonl");
    let stop = recording_hook(&env, "stop.sh", &log, "");
    env.write_project_hooks(
        &json!({"hooks": [hook("stop", "stop", &stop), hook("end", "sessionEnd", &stop)]}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("fine"));
    let output = run_elph(&env, &server, &["one"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    server.enqueue(FakeReply::error(400, "model not found"));
    let output = run_elph(&env, &server, &["two"]).await;
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("model not found"), "{err}");
    assert!(
        !err.contains("sk-test-secret-key"),
        "the key never appears: {err}"
    );
    let statuses: Vec<Value> = json_lines(&log).iter().map(|p| p["status"].clone()).collect();
    assert_eq!(
        statuses,
        [json!("completed"), Value::Null, json!("failed"), Value::Null]
    );
}

#[tokio::test]
async fn ctrl_c_cancels_kills_the_tool_runs_stop_and_exits_130() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("stop.jsonl");
    let stop = recording_hook(&env, "stop.sh", &log, "");
    env.write_project_hooks(
        &json!({"hooks": [hook("stop", "stop", &stop), hook("end", "sessionEnd", &stop)]}),
    );
    // Inside the project: the default sandbox (workspace-write) lets a command write only there.
    let pid_file = env.project.join("tool.pid");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!(
            "echo \"{}\" > {}; sleep 1000",
            test_support::hook_scripts::SELF_PID,
            pid_file.display()
        )}),
    ));
    let mut command = env.command(&elph());
    command
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["run", "--model", "openai/gpt-test", "sleep please"]);
    let mut child = tokio::process::Command::from(command).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() || std::fs::read_to_string(&pid_file).unwrap().trim().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the tool started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let tool_pid = test_support::hook_scripts::host_pid(&std::fs::read_to_string(&pid_file).unwrap())
        .expect("the tool runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id().unwrap() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    // SIGKILL is delivered asynchronously and the killed shell is reaped by whoever inherits it
    // once elph has exited: under load it may still be dying, or a zombie (dead, not yet reaped).
    let left = test_support::hook_scripts::still_alive(&[tool_pid], Duration::from_secs(10));
    assert!(left.is_empty(), "the running tool was killed");
    let payloads = json_lines(&log);
    assert_eq!(payloads[0]["status"], "cancelled");
    assert_eq!(payloads[1]["event"], "sessionEnd");
}

#[tokio::test]
async fn untrusted_project_hooks_do_not_run_and_nothing_is_written_inside() {
    let env = TestEnv::new();
    let canary = env.evidence("canary");
    let body = format!("cat > /dev/null\ntouch '{}'\n", canary.display());
    env.project_script("canary.sh", &body);
    env.write_project_hooks(&json!({"hooks": [hook("canary", "sessionStart", "hooks/canary.sh")]}));
    let before: Vec<_> = walk(&env.project);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hi"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!canary.exists(), "the untrusted project's hook never ran");
    assert!(
        stderr(&output).contains("WARNING: 1 project hook(s) are OFF in this run: it is not trusted."),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        walk(&env.project),
        before,
        "nothing was created inside the project"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_second_ctrl_c_does_not_wait_for_a_slow_stop_hook() {
    let env = TestEnv::new();
    env.trust_project();
    let started = env.evidence("stop-started");
    env.project_script(
        "slow-stop.sh",
        &format!("cat > /dev/null\ntouch '{}'\nsleep 120\n", started.display()),
    );
    env.write_project_hooks(&json!({"hooks": [{"id": "slow-stop", "event": "stop", "command": "hooks/slow-stop.sh", "timeoutMs": 60000}]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("never finishes").hang());
    let mut command = env.command(&elph());
    command
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["run", "--model", "openai/gpt-test", "wait"]);
    let mut child = tokio::process::Command::from(command).spawn().unwrap();
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while server.requests().is_empty() {
        assert!(std::time::Instant::now() < deadline, "the request arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the stop hook started after the first Ctrl+C"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Waiting for the hook would take its whole 60 s timeout (it sleeps far longer): exiting
    // within 30 s shows the second Ctrl+C did not wait. The margin is for a loaded machine.
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("exited within 30 s of the second Ctrl+C, without waiting for the 60 s stop hook")
        .unwrap();
    assert_eq!(status.code(), Some(130));
}
