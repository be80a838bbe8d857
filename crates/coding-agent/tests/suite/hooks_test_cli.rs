//! `elph hooks test` through the real binary, in a hermetic world, with real hook processes.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::hook_scripts::write_script;

const ELPH: &str = env!("CARGO_BIN_EXE_elph");
const DEADLINE: Duration = Duration::from_secs(60);

/// The hermetic layout of `TestEnv` (HOME, CONFIG_DIR, DATA_DIR, a project), with the helpers these
/// tests share.
struct World(TestEnv);

impl std::ops::Deref for World {
    type Target = TestEnv;

    fn deref(&self) -> &TestEnv {
        &self.0
    }
}

impl World {
    fn new() -> Self {
        World(TestEnv::new())
    }

    /// Writes CONFIG_DIR/hooks.json, scripts under CONFIG_DIR/hooks/.
    fn home_hooks(&self, hooks: Value) {
        std::fs::write(
            self.config_dir.join("hooks.json"),
            serde_json::to_string_pretty(&json!({ "hooks": hooks })).unwrap(),
        )
        .unwrap();
    }

    fn script(&self, name: &str, body: &str) -> PathBuf {
        write_script(&self.config_dir.join("hooks"), name, body)
    }

    fn trust_project(&self) {
        std::fs::write(
            self.config_dir.join("trust.json"),
            json!({ "directories": { self.project.to_str().unwrap(): true } }).to_string(),
        )
        .unwrap();
    }

    fn elph(&self) -> assert_cmd::Command {
        let mut command = assert_cmd::Command::new(ELPH);
        command
            .env_clear()
            .env("HOME", &self.home)
            .env("ELPH_HOME", &self.config_dir)
            .env("ELPH_DATA_DIR", &self.data_dir)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .arg("--cwd")
            .arg(&self.project)
            .timeout(DEADLINE);
        command
    }

    fn hooks_test(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.elph().arg("hooks").arg("test").args(args).output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    }
}

fn chain(world: &World) {
    world.script("audit.sh", "cat > /dev/null\necho 'audited' >&2\necho '{}'");
    world.script(
        "rewrite.sh",
        r#"cat > /dev/null; echo '{"toolInput": {"command": "ls -la"}, "content": "ignored"}'"#,
    );
    world.script(
        "guard.sh",
        "if grep -q 'rm -rf' ; then echo '{\"block\": true, \"reason\": \"rm -rf is not allowed\"}'; fi",
    );
    world.script("crash.sh", "echo 'guard crashed: no jq' >&2\nexit 2");
    world.home_hooks(json!([
        {"id": "audit-tool-calls", "event": "preToolUse", "command": "hooks/audit.sh"},
        {"id": "read-only", "event": "preToolUse", "matcher": {"toolNames": ["read_*"]}, "command": "hooks/audit.sh"},
        {"id": "crashing", "event": "preToolUse", "command": "hooks/crash.sh"},
        {"id": "guard", "event": "preToolUse", "command": "hooks/guard.sh"},
        {"id": "rewrite", "event": "preToolUse", "command": "hooks/rewrite.sh"},
        {"id": "off", "event": "preToolUse", "command": "hooks/audit.sh", "enabled": false},
        {"id": "at-stop", "event": "stop", "command": "hooks/audit.sh"},
    ]));
}

#[test]
fn shows_each_hook_and_the_reduced_outcome() {
    let world = World::new();
    chain(&world);
    let (code, out, err) = world.hooks_test(&[
        "preToolUse",
        "--tool",
        "shell_exec",
        "--input",
        r#"{"command": "rm -rf /"}"#,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    for expected in [
        "preToolUse for tool shell_exec",
        "✓ audit-tool-calls",
        "outcome: {}",
        "  | audited",
        "- read-only",
        "not matched (toolNames: read_*)",
        "✗ crashing",
        "exit 2",
        "No exit code blocks in Elph",
        "guard crashed: no jq",
        "✓ guard",
        "· rewrite",
        "not run: the chain stopped at 'guard'",
        "- off",
        "disabled",
        "BLOCKED: blocked by hook 'guard': rm -rf is not allowed",
        r#"toolInput unchanged: {"command":"rm -rf /"}"#,
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    assert!(
        !out.contains("at-stop"),
        "hooks of other events are not listed:\n{out}"
    );
    // Tests are synthetic: the run log is not written.
    assert!(!world.data_dir.join("logs").exists());
}

#[test]
fn shows_a_rewrite_and_ignored_fields() {
    let world = World::new();
    chain(&world);
    let (code, out, err) = world.hooks_test(&["preToolUse", "--input", r#"{"command": "ls"}"#]);
    assert_eq!(code, 0, "{out}\n{err}");
    for expected in [
        "✓ rewrite",
        "note: field 'content' is not honoured by preToolUse",
        "not blocked: the call goes on to native approval",
        r#"toolInput rewritten to: {"command":"ls -la"}"#,
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
}

#[test]
fn a_rewrite_that_breaks_the_tool_schema_is_flagged() {
    let world = World::new();
    world.script(
        "breaker.sh",
        "cat > /dev/null\nprintf '%s' '{\"toolInput\": {\"cmd\": 1}}'",
    );
    world.home_hooks(json!([
        {"id": "breaker", "event": "preToolUse", "command": "hooks/breaker.sh"}
    ]));
    let (code, out, err) = world.hooks_test(&["preToolUse", "--input", r#"{"command": "ls"}"#]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("the rewritten input fails the tool's schema"),
        "{out}"
    );
    let (_, out, _) = world.hooks_test(&["preToolUse", "--input", r#"{"command": "ls"}"#, "--json"]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert!(
        doc["rewrittenInputError"]
            .as_str()
            .unwrap()
            .contains("invalid arguments for shell_exec")
    );
}

#[test]
fn json_output_is_one_document() {
    let world = World::new();
    chain(&world);
    let (code, out, err) =
        world.hooks_test(&["preToolUse", "--input", r#"{"command": "rm -rf /"}"#, "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    let ids: Vec<&str> = runs.iter().map(|run| run["hookId"].as_str().unwrap()).collect();
    assert_eq!(ids, ["audit-tool-calls", "crashing", "guard"]);
    assert_eq!(runs[1]["status"], "failed");
    assert_eq!(runs[1]["exitCode"], 2);
    assert_eq!(doc["reduced"]["kind"], "preToolUse");
    assert_eq!(doc["reduced"]["blocked"]["hookId"], "guard");
    assert_eq!(doc["reduced"]["blocked"]["reason"], "rm -rf is not allowed");
    assert_eq!(doc["stoppedBy"], "guard");
    assert_eq!(doc["payload"]["toolName"], "shell_exec");
    assert_eq!(doc["payload"]["sessionId"], "test-session");
    let diagnostics = doc["diagnostics"].as_array().unwrap();
    assert!(diagnostics.iter().any(|d| d["hookId"] == "crashing"));
    let hooks = doc["hooks"].as_array().unwrap();
    let read_only = hooks.iter().find(|h| h["id"] == "read-only").unwrap();
    assert_eq!(read_only["matched"], false);
}

#[test]
fn a_payload_file_or_stdin_is_checked_against_the_event() {
    let world = World::new();
    let seen = world.config_dir.join("seen.json");
    world.script("observe.sh", &format!("cat > '{}'", seen.display()));
    world.home_hooks(json!([
        {"id": "observe", "event": "postToolUseFailure", "command": "hooks/observe.sh"},
    ]));
    let payload = json!({
        "toolName": "read_file",
        "toolCallId": "c9",
        "toolInput": {"path": "x"},
        "content": [{"type": "text", "text": "no such file"}],
        "details": {},
        "isError": true
    });
    let file = world.config_dir.join("payload.json");
    std::fs::write(&file, payload.to_string()).unwrap();
    let (code, out, err) = world.hooks_test(&["postToolUseFailure", "--payload", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    let seen_payload: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(seen_payload["event"], "postToolUseFailure");
    assert_eq!(seen_payload["toolCallId"], "c9");
    assert_eq!(seen_payload["sessionId"], "test-session");
    assert_eq!(seen_payload["projectDir"], world.project.to_str().unwrap());

    // From stdin.
    std::fs::remove_file(&seen).unwrap();
    world
        .elph()
        .args(["hooks", "test", "postToolUseFailure", "--payload", "-"])
        .write_stdin(payload.to_string())
        .assert()
        .success();
    assert!(seen.exists());

    // The wrong shape, or another event: a clear error, exit 1, no hook runs.
    std::fs::remove_file(&seen).unwrap();
    std::fs::write(&file, json!({"toolName": "x"}).to_string()).unwrap();
    let (code, _, err) = world.hooks_test(&["postToolUseFailure", "--payload", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        err.contains("does not fit postToolUseFailure") && err.contains("toolCallId"),
        "{err}"
    );
    std::fs::write(&file, json!({"event": "stop", "status": "completed"}).to_string()).unwrap();
    let (code, _, err) = world.hooks_test(&["postToolUseFailure", "--payload", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("is for event \"stop\""), "{err}");
    assert!(!seen.exists());
}

#[test]
fn usage_errors_exit_1_with_a_helpful_message() {
    let world = World::new();
    chain(&world);
    let cases: [(&[&str], &str); 5] = [
        (&["PreToolUse"], "did you mean 'preToolUse'"),
        (&["onSave"], "unknown event 'onSave'"),
        (
            &["stop", "--tool", "shell_exec"],
            "--tool and --input apply to tool events",
        ),
        (
            &["preToolUse", "--input", "{not json"],
            "--input is not valid JSON",
        ),
        (&["preToolUse", "--input", "[1]"], "--input must be a JSON object"),
    ];
    for (args, expected) in cases {
        let (code, _, err) = world.hooks_test(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn a_malformed_hook_file_is_a_configuration_error() {
    let world = World::new();
    std::fs::write(
        world.config_dir.join("hooks.json"),
        r#"{"hooks": [{"id": "x", "event": "preToolUse"}]}"#,
    )
    .unwrap();
    let (code, out, err) = world.hooks_test(&["preToolUse"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("configuration:") && out.contains("hooks.json"),
        "{out}"
    );
    assert!(err.contains("malformed"), "{err}");
}

#[test]
fn no_hook_for_the_event_is_not_an_error() {
    let world = World::new();
    let (code, out, _) = world.hooks_test(&["sessionEnd"]);
    assert_eq!(code, 0);
    assert!(out.contains("No hook is configured for sessionEnd"), "{out}");
}

#[test]
fn project_hooks_run_only_in_a_trusted_project() {
    let world = World::new();
    let marker = world.project.join("ran");
    write_script(
        &world.project.join(".elph").join("hooks"),
        "p.sh",
        &format!("touch '{}'", marker.display()),
    );
    std::fs::write(
        world.project.join(".elph").join("hooks.json"),
        json!({"hooks": [{"id": "project-hook", "event": "stop", "command": "hooks/p.sh"}]}).to_string(),
    )
    .unwrap();
    let (code, out, _) = world.hooks_test(&["stop"]);
    assert_eq!(code, 0);
    assert!(out.contains("project hooks skipped until"), "{out}");
    assert!(!marker.exists());

    world.trust_project();
    let (code, out, _) = world.hooks_test(&["stop"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("✓ project-hook"), "{out}");
    assert!(marker.exists());
}

#[test]
fn credentials_in_the_agents_environment_never_reach_a_hook() {
    let world = World::new();
    let env_file = world.config_dir.join("env.txt");
    world.script("env.sh", "env > \"$1\"");
    world.home_hooks(json!([
        {"id": "env-dump", "event": "sessionStart", "command": "hooks/env.sh", "args": [env_file]},
    ]));
    world
        .elph()
        .env("OPENAI_API_KEY", "sk-openai-secret")
        .env("ANTHROPIC_API_KEY", "sk-ant-secret")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
        .env("GITHUB_TOKEN", "ghp_secret")
        .env("MY_SECRET", "hunter2")
        .env("LANG", "C.UTF-8")
        .env("HERDR_SOCKET_PATH", "/tmp/herdr.sock")
        .args(["hooks", "test", "sessionStart"])
        .assert()
        .success();
    let dumped = std::fs::read_to_string(&env_file).unwrap();
    for secret in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "MY_SECRET",
    ] {
        assert!(!dumped.contains(secret), "{secret} leaked:\n{dumped}");
    }
    let project = world.project.to_str().unwrap();
    for expected in [
        "ELPH_HOOK_ID=env-dump".to_string(),
        "ELPH_SESSION_ID=test-session".to_string(),
        format!("ELPH_PROJECT_DIR={project}"),
        format!("HOME={}", world.home.display()),
        "LANG=C.UTF-8".to_string(),
        "HERDR_SOCKET_PATH=/tmp/herdr.sock".to_string(),
    ] {
        assert!(
            dumped.lines().any(|line| line == expected),
            "missing {expected} in:\n{dumped}"
        );
    }
    // ELPH_HOME and ELPH_DATA_DIR are the agent's, not the hook's.
    assert!(
        !dumped.contains("ELPH_HOME=") && !dumped.contains("ELPH_DATA_DIR="),
        "{dumped}"
    );
}

#[test]
fn other_events_report_their_reduced_outcome_in_words() {
    let world = World::new();
    world.script("context.sh", r#"echo '{"additionalContext": "Branch: main"}'"#);
    world.script("compact.sh", r#"echo '{"cancel": true}'"#);
    world.script(
        "post.sh",
        r#"echo '{"content": [{"type": "text", "text": "[redacted]"}], "terminate": true}'"#,
    );
    world.script("observe.sh", r#"echo '{"block": true}'"#);
    world.home_hooks(json!([
        {"id": "ctx", "event": "beforeAgent", "command": "hooks/context.sh"},
        {"id": "no-compact", "event": "preCompact", "command": "hooks/compact.sh"},
        {"id": "redact", "event": "postToolUse", "command": "hooks/post.sh"},
        {"id": "watch", "event": "stop", "command": "hooks/observe.sh"},
    ]));
    let cases: [(&str, &[&str]); 4] = [
        (
            "beforeAgent",
            &[r#"appended to the system prompt: "Branch: main""#],
        ),
        ("preCompact", &["compaction cancelled by hook 'no-compact'"]),
        (
            "postToolUse",
            &[
                "the tool result was patched",
                r#"content: "[redacted]""#,
                "terminate:",
            ],
        ),
        (
            "stop",
            &[
                "the turn ends.",
                "note: field 'block' is not honoured by stop and was ignored (it honours: continue)",
            ],
        ),
    ];
    for (event, expected) in cases {
        let (code, out, err) = world.hooks_test(&[event]);
        assert_eq!(code, 0, "{event}: {err}");
        for text in expected {
            assert!(out.contains(text), "{event}: missing {text:?} in:\n{out}");
        }
    }
}

#[test]
fn a_fail_closed_guard_that_cannot_start_gets_one_verdict_in_text_and_json() {
    let world = World::new();
    // The interpreter does not exist: the guard cannot start.
    world.script("guard.sh", "#!/nonexistent/interpreter\necho '{}'");
    let guard = world.config_dir.join("hooks/guard.sh");
    std::fs::write(&guard, "#!/nonexistent/interpreter\necho '{}'\n").unwrap();
    world.script("allow.sh", "cat > /dev/null; echo '{}'");
    world.home_hooks(json!([
        {"id": "allow", "event": "preToolUse", "command": "hooks/allow.sh"},
        {"id": "no-writes", "event": "preToolUse", "command": "hooks/guard.sh", "failClosed": true},
    ]));
    let args = [
        "preToolUse",
        "--tool",
        "write_file",
        "--input",
        r#"{"path":"a","content":"b"}"#,
    ];
    let (code, out, err) = world.hooks_test(&args);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("did not start"), "{out}");
    assert!(out.contains("failed closed: "), "{out}");
    assert!(out.contains("Result (2 hook(s) ran, 1 failed closed):"), "{out}");
    assert!(out.contains("in a session, the tool call is blocked"), "{out}");
    // Nothing that contradicts it.
    for wrong in ["failed open", "not blocked", "goes on to native approval"] {
        assert!(!out.contains(wrong), "{wrong:?} in:\n{out}");
    }

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let (code, out, err) = world.hooks_test(&json_args);
    assert_eq!(code, 0, "{out}\n{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["reduced"], Value::Null, "{doc}");
    assert_eq!(doc["stoppedBy"], "no-writes");
    assert_eq!(doc["failedClosed"]["hookId"], "no-writes");
    let verdict = doc["verdict"].as_array().unwrap();
    assert_eq!(verdict.len(), 1, "{doc}");
    assert!(
        verdict[0]
            .as_str()
            .unwrap()
            .contains("in a session, the tool call is blocked"),
        "{doc}"
    );
}

#[test]
fn a_claude_code_hook_that_exits_2_shows_exit_2() {
    let world = World::new();
    world.script(
        "cc.sh",
        "cat > /dev/null\necho 'rm -rf is not allowed here' >&2\nexit 2",
    );
    world.home_hooks(json!([
        {"id": "cc-guard", "event": "preToolUse", "command": "hooks/cc.sh", "protocol": "claude-code"},
    ]));
    let (code, out, err) = world.hooks_test(&["preToolUse", "--input", r#"{"command": "rm -rf /"}"#]);
    assert_eq!(code, 0, "{out}\n{err}");
    let line = out.lines().find(|line| line.contains("cc-guard")).unwrap();
    assert!(line.starts_with("✓ cc-guard  exit 2 "), "{out}");
    assert!(out.contains("BLOCKED"), "{out}");
    assert!(!out.contains("exit 0"), "{out}");
}

/// `elph hooks test … --payload SOURCE` with stdin from `stdin`, under the deadline.
fn payload_from(world: &World, source: &str, stdin: std::process::Stdio) -> (i32, String) {
    let mut command = std::process::Command::new(ELPH);
    command
        .env_clear()
        .env("HOME", &world.home)
        .env("ELPH_HOME", &world.config_dir)
        .env("ELPH_DATA_DIR", &world.data_dir)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(["--cwd", world.project.to_str().unwrap()])
        .args(["hooks", "test", "preToolUse", "--payload", source])
        .stdin(stdin)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("elph hooks test --payload {source} did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_payload_is_read_with_the_bounds_of_a_config_file() {
    let world = World::new();
    world.script("allow.sh", "cat > /dev/null; echo '{}'");
    world.home_hooks(json!([{"id": "allow", "event": "preToolUse", "command": "hooks/allow.sh"}]));
    let null = std::process::Stdio::null;

    let (code, err) = payload_from(&world, "/dev/zero", null());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("/dev/zero is a character device, not a regular file"),
        "{err}"
    );

    let fifo = world.root.path().join("payload.fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let (code, err) = payload_from(&world, fifo.to_str().unwrap(), null());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("is a FIFO (named pipe), not a regular file"),
        "{err}"
    );

    let big = world.root.path().join("big.json");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(elph_config::MAX_CONFIG_BYTES + 1).unwrap();
    let (code, err) = payload_from(&world, big.to_str().unwrap(), null());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is larger than 4194304 bytes"), "{err}");

    let (code, err) = payload_from(&world, "/nonexistent/payload.json", null());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/nonexistent/payload.json does not exist"), "{err}");

    // Stdin: at most as much as a file.
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let (code, err) = payload_from(&world, "-", zero.into());
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("the payload on stdin is larger than 4194304 bytes"),
        "{err}"
    );
}

/// "No change" is worded as it happened: a one-shot hook that printed nothing, and a persistent
/// hook that answered a line holding only its request id (its stdout was not empty).
#[test]
fn a_run_that_changed_nothing_says_how_it_said_so() {
    let world = World::new();
    let silent = world.script("silent.sh", "cat > /dev/null");
    let answers = world.script(
        "answers.sh",
        r#"while IFS= read -r line; do
  id=${line#'{"requestId":'}; printf '{"requestId":%s}\n' "${id%%,*}"
done"#,
    );
    world.home_hooks(json!([
        {"id": "silent", "event": "stop", "command": silent},
        {"id": "answers", "event": "stop", "command": answers, "persistent": true},
    ]));
    let (code, out, err) = world.hooks_test(&["stop"]);
    assert_eq!(code, 0, "{out}{err}");
    let section = |id: &str| {
        let start = out
            .find(&format!("✓ {id} "))
            .unwrap_or_else(|| panic!("{id} ran: {out}"));
        out[start..].lines().nth(1).unwrap_or_default().to_string()
    };
    assert_eq!(
        section("silent"),
        "    outcome: none (empty stdout: no change)",
        "{out}"
    );
    assert_eq!(
        section("answers"),
        "    outcome: none (its answer held only its requestId: no change)",
        "{out}"
    );
}
