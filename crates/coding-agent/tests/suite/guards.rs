//! Guards that hold: `failClosed` hooks and per-hook limits, through the real `elph run` with real
//! hook processes and a fake provider that records what reached the model.

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::run_e2e::{elph, run_elph};

fn script(env: &TestEnv, name: &str, body: &str) -> PathBuf {
    write_script(&env.root.path().join("scripts"), name, body)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The tool results the model got back, in order.
fn tool_results(server: &FakeModelServer) -> Vec<String> {
    server
        .requests()
        .last()
        .map(|request| {
            request["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn guard(id: &str, command: &std::path::Path, fail_closed: bool) -> Value {
    json!({
        "id": id,
        "event": "preToolUse",
        "matcher": {"toolNames": ["write_file"]},
        "command": command.display().to_string(),
        "failClosed": fail_closed,
    })
}

async fn write_attempt(env: &TestEnv, hooks: Value, content: &str) -> (Output, FakeModelServer) {
    env.write_home_hooks(&hooks);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": ".env", "content": content}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(env, &server, &["write the env file"]).await;
    (output, server)
}

#[tokio::test]
async fn a_write_too_big_for_the_guard_is_blocked_only_when_the_guard_fails_closed() {
    let big = "S".repeat(140 * 1024);
    let env = TestEnv::new();
    let block = script(
        &env,
        "block.sh",
        r#"cat >/dev/null; echo '{"block": true, "reason": "no writes"}'"#,
    );

    let (output, server) =
        write_attempt(&env, json!({"hooks": [guard("no-writes", &block, true)]}), &big).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !env.project.join(".env").exists(),
        "the fail-closed guard let the write through"
    );
    let results = tool_results(&server);
    assert!(
        results[0].contains("fail-closed hook 'no-writes' could not decide"),
        "{results:?}"
    );
    assert!(results[0].contains("input limit"), "{results:?}");
    assert!(
        stderr(&output).contains("hook 'no-writes' (preToolUse) failed closed, so the tool call is blocked"),
        "{}",
        stderr(&output)
    );

    // The same guard failing open: the write happens, and the skip is reported.
    let (output, _server) =
        write_attempt(&env, json!({"hooks": [guard("no-writes", &block, false)]}), &big).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(env.project.join(".env")).unwrap().len(),
        big.len()
    );
    assert!(
        stderr(&output).contains(
            "! warning: hook 'no-writes' (preToolUse) failed open, so the tool call went ahead without \
             its check: not run: its payload is"
        ),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("over its 131072-byte input limit"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_guard_with_a_larger_input_limit_sees_the_big_write_and_blocks_it() {
    let env = TestEnv::new();
    let block = script(
        &env,
        "block.sh",
        r#"cat >/dev/null; echo '{"block": true, "reason": "no writes"}'"#,
    );
    let mut hook = guard("no-writes", &block, true);
    hook["maxInputBytes"] = json!(1024 * 1024);
    let (output, server) = write_attempt(&env, json!({"hooks": [hook]}), &"S".repeat(140 * 1024)).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!env.project.join(".env").exists());
    let results = tool_results(&server);
    assert!(results[0].contains("no writes"), "{results:?}");
    assert!(!results[0].contains("could not decide"), "{results:?}");
}

#[tokio::test]
async fn every_malformed_block_still_blocks_under_fail_closed() {
    let long_reason = format!(r#"{{"block": true, "reason": "{}"}}"#, "r".repeat(32 * 1024 + 1));
    let forms = [
        r#"{"block": true, "reason": 123}"#.to_string(),
        r#"{"block": "yes"}"#.to_string(),
        r#"{"decision": "DENY"}"#.to_string(),
        long_reason,
    ];
    for (index, form) in forms.iter().enumerate() {
        let env = TestEnv::new();
        std::fs::write(env.root.path().join("outcome.json"), form).unwrap();
        let block = script(
            &env,
            "typo.sh",
            &format!(
                "cat >/dev/null; cat '{}'",
                env.root.path().join("outcome.json").display()
            ),
        );
        let (output, server) = write_attempt(
            &env,
            json!({"hooks": [guard("typo-guard", &block, true)]}),
            "SECRET=1",
        )
        .await;
        assert!(output.status.success(), "form {index}: {}", stderr(&output));
        assert!(
            !env.project.join(".env").exists(),
            "form {index} ({}) let the write through",
            &form[..form.len().min(60)]
        );
        let results = tool_results(&server);
        assert!(
            results[0].contains("fail-closed hook 'typo-guard'"),
            "form {index}: {results:?}"
        );
    }
}

#[tokio::test]
async fn a_fail_closed_before_agent_hook_that_times_out_stops_the_request() {
    let env = TestEnv::new();
    let slow = script(&env, "slow.sh", "cat >/dev/null; sleep 5");
    env.write_home_hooks(&json!({"hooks": [{
        "id": "policy-context",
        "event": "beforeAgent",
        "command": slow.display().to_string(),
        "timeoutMs": 300,
        "failClosed": true,
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("should never be asked"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(server.requests().is_empty(), "the request was sent");
    let err = stderr(&output);
    assert!(
        err.contains("fail-closed hook 'policy-context' could not decide"),
        "{err}"
    );
    assert!(err.contains("timed out after 300 ms"), "{err}");
}

#[tokio::test]
async fn a_fail_closed_post_tool_hook_that_crashes_withholds_the_result() {
    let env = TestEnv::new();
    std::fs::write(env.project.join("secret.txt"), "hunter2").unwrap();
    let crash = script(&env, "crash.sh", "cat >/dev/null; echo boom >&2; exit 3");
    env.write_home_hooks(&json!({"hooks": [{
        "id": "redact-results",
        "event": "postToolUse",
        "command": crash.display().to_string(),
        "failClosed": true,
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("read_file", json!({"path": "secret.txt"})));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["read it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server);
    assert!(
        !results[0].contains("hunter2"),
        "the unchecked result reached the model: {results:?}"
    );
    assert!(results[0].contains("result is withheld"), "{results:?}");
}

#[test]
fn fail_closed_on_an_observation_event_is_refused_with_the_reason() {
    let env = TestEnv::new();
    env.write_home_hooks(&json!({"hooks": [{
        "id": "audit", "event": "sessionStart", "command": "/bin/true", "failClosed": true
    }]}));
    let output = env.command(&elph()).args(["hooks", "validate"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.contains("/hooks/0/failClosed"), "{out}");
    assert!(
        out.contains("failClosed is only for events whose hooks guard something"),
        "{out}"
    );
    assert!(out.contains("observation-only"), "{out}");
}

#[test]
fn byte_limits_are_checked_with_their_own_pointer() {
    let env = TestEnv::new();
    env.write_home_hooks(&json!({"hooks": [{
        "id": "g", "event": "preToolUse", "command": "/bin/true", "maxOutputBytes": 17 * 1024 * 1024
    }]}));
    let output = env.command(&elph()).args(["hooks", "validate"]).output().unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.contains("/hooks/0/maxOutputBytes"), "{out}");
    assert!(out.contains("must be between 1024 and 16777216 bytes"), "{out}");
}

#[test]
fn hooks_test_and_hooks_list_show_a_fail_closed_guard_and_what_its_failure_does() {
    let env = TestEnv::new();
    let crash = script(&env, "crash.sh", "cat >/dev/null; exit 7");
    env.write_home_hooks(&json!({"hooks": [guard("no-writes", &crash, true)]}));
    let output = env
        .command(&elph())
        .args([
            "hooks",
            "test",
            "preToolUse",
            "--tool",
            "write_file",
            "--input",
            r#"{"path":"a","content":"b"}"#,
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains("fail-closed hook 'no-writes' could not decide (exited with code 7"),
        "{out}"
    );
    assert!(out.contains("in a session, the tool call is blocked"), "{out}");
    let output = env
        .command(&elph())
        .args([
            "hooks",
            "test",
            "preToolUse",
            "--tool",
            "write_file",
            "--input",
            r#"{"path":"a","content":"b"}"#,
            "--json",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["failedClosed"]["hookId"], "no-writes");
    assert_eq!(report["failedClosed"]["consequence"], "the tool call is blocked");
    assert_eq!(report["hooks"][0]["failClosed"], true);

    let list = env.command(&elph()).args(["hooks", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("(fail-closed)"));
    let list = env
        .command(&elph())
        .args(["hooks", "list", "--json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(list["hooks"][0]["failClosed"], true, "{list}");
}

#[tokio::test]
async fn the_redaction_recipe_keeps_a_secret_out_of_every_request_of_a_300_kib_conversation() {
    let env = TestEnv::new();
    let redact = script(&env, "redact.py", "");
    // A Python script rather than sh: the hook rewrites the whole message list.
    std::fs::write(
        &redact,
        "#!/usr/bin/env python3\nimport json, sys\npayload = json.load(sys.stdin)\n\
         text = json.dumps({\"messages\": payload[\"messages\"]})\n\
         print(text.replace(\"hunter2\", \"[redacted]\"))\n",
    )
    .unwrap();
    env.write_home_hooks(&json!({"hooks": [{
        "id": "redact-secrets",
        "event": "context",
        "command": redact.display().to_string(),
        "failClosed": true,
        // What is asserted is the redaction, not its speed: a loaded CI machine gets the most.
        "timeoutMs": 60000,
        "maxInputBytes": 4 * 1024 * 1024,
        "maxOutputBytes": 4 * 1024 * 1024,
    }]}));
    let line = "DB_PASSWORD=hunter2 and some padding to make the conversation long enough\n";
    let prompt = line.repeat(310 * 1024 / line.len());
    std::fs::write(env.project.join("notes.txt"), line.repeat(200)).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("read_file", json!({"path": "notes.txt"})));
    server.enqueue(FakeReply::tool_call("read_file", json!({"path": "notes.txt"})));
    server.enqueue(FakeReply::text("done"));
    // Past the kernel's limit for one argument: the prompt goes on stdin.
    let mut command = env.command(&elph());
    command
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["run", "--model", "openai/gpt-test"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(300),
        tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            let mut child = command.spawn().unwrap();
            child.stdin.take().unwrap().write_all(prompt.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        }),
    )
    .await
    .expect("elph run finished within 300 s")
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for (index, request) in requests.iter().enumerate() {
        let body = request.to_string();
        assert!(
            body.len() > 300 * 1024,
            "request {index} is only {} bytes",
            body.len()
        );
        assert!(!body.contains("hunter2"), "request {index} carried the secret");
        assert!(body.contains("[redacted]"), "request {index}");
    }
}

#[tokio::test]
async fn a_context_hook_returning_no_messages_is_rejected_and_under_fail_closed_stops_the_request() {
    let env = TestEnv::new();
    let empty = script(&env, "empty.sh", r#"cat >/dev/null; echo '{"messages": []}'"#);
    env.write_home_hooks(&json!({"hooks": [{
        "id": "empty-context", "event": "context", "command": empty.display().to_string(), "failClosed": true
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("never"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(server.requests().is_empty());
    assert!(
        stderr(&output).contains("an empty list would send the model nothing"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_hundred_hooks_adding_32_kib_each_stay_under_the_total_cap() {
    let env = TestEnv::new();
    let chunk = "c".repeat(32 * 1024 - 16);
    std::fs::write(
        env.root.path().join("chunk.json"),
        json!({"additionalContext": chunk}).to_string(),
    )
    .unwrap();
    let add = script(
        &env,
        "add.sh",
        &format!(
            "cat >/dev/null; cat '{}'",
            env.root.path().join("chunk.json").display()
        ),
    );
    let hooks: Vec<Value> = (0..100)
        .map(|i| json!({"id": format!("add-{i}"), "event": "beforeAgent", "command": add.display().to_string()}))
        .collect();
    env.write_home_hooks(&json!({ "hooks": hooks }));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let request = server.requests()[0].to_string();
    let added = request.matches(&chunk).count();
    assert_eq!(added, 4, "128 KiB holds four 32 KiB additions");
    assert!(
        stderr(&output).contains(
            "beforeAgent hooks added more than 131072 bytes of context in total; 96 later addition(s)"
        ),
        "{}",
        stderr(&output)
    );

    // The cap is a setting.
    std::fs::write(
        env.config_dir.join("settings.json"),
        json!({"hooks": {"maxAddedContextBytes": 64 * 1024}}).to_string(),
    )
    .unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(server.requests()[0].to_string().matches(&chunk).count(), 2);
}

#[tokio::test]
async fn a_post_tool_image_block_with_bad_data_or_type_is_rejected_and_under_fail_closed_withholds_the_result()
 {
    let cases = [
        ("iVBORw0KGgo=", "image/png", true),
        ("not base64!", "image/png", false),
        ("iVBORw0KGgo=", "image/svg+xml", false),
    ];
    for (data, mime, valid) in cases {
        for fail_closed in [false, true] {
            let env = TestEnv::new();
            std::fs::write(env.project.join("notes.txt"), "original-result-text").unwrap();
            let outcome = json!({"content": [{"type": "image", "data": data, "mime_type": mime}]});
            std::fs::write(env.root.path().join("outcome.json"), outcome.to_string()).unwrap();
            let hook = script(
                &env,
                "image.sh",
                &format!(
                    "cat >/dev/null; cat '{}'",
                    env.root.path().join("outcome.json").display()
                ),
            );
            env.write_home_hooks(&json!({"hooks": [{
                "id": "screenshot",
                "event": "postToolUse",
                "matcher": {"toolNames": ["read_file"]},
                "command": hook.display().to_string(),
                "failClosed": fail_closed,
            }]}));
            let server = FakeModelServer::start(Wire::OpenAi).await;
            server.enqueue(FakeReply::tool_call("read_file", json!({"path": "notes.txt"})));
            server.enqueue(FakeReply::text("done"));
            let output = run_elph(&env, &server, &["read it"]).await;
            assert!(output.status.success(), "{}", stderr(&output));
            let last_request = server.requests().last().unwrap().to_string();
            let results = tool_results(&server);
            let case = format!("{data} {mime} failClosed={fail_closed}");
            if valid {
                assert!(last_request.contains(data), "{case}: {last_request}");
                assert!(
                    !results[0].contains("original-result-text"),
                    "{case}: {results:?}"
                );
                continue;
            }
            let err = stderr(&output);
            assert!(
                err.contains("content[0] is not a valid image block"),
                "{case}: {err}"
            );
            assert!(
                !last_request.contains(data),
                "{case}: the bad image reached the model"
            );
            if fail_closed {
                assert!(results[0].contains("result is withheld"), "{case}: {results:?}");
                assert!(
                    !results[0].contains("original-result-text"),
                    "{case}: {results:?}"
                );
            } else {
                assert!(err.contains("! warning: hook 'screenshot'"), "{case}: {err}");
                assert!(results[0].contains("original-result-text"), "{case}: {results:?}");
            }
        }
    }
}

#[tokio::test]
async fn the_block_command_recipe_is_a_guard_a_broken_script_blocks_instead_of_letting_commands_run() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::new();
    super::docs_examples::install(&env, "block-command");
    let script = env.config_dir.join("hooks/block-command.sh");
    // Working: `rm -rf` is blocked with the recipe's reason, the folder stays.
    std::fs::create_dir_all(env.project.join("build")).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "rm -rf build"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["clean"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(env.project.join("build").exists());
    assert!(tool_results(&server)[0].contains("commands containing 'rm -rf' are not allowed"));

    // Broken (not executable): even a harmless command is blocked, and everyone is told why.
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "touch ran.txt"}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["touch"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!env.project.join("ran.txt").exists(), "the command ran unchecked");
    let results = tool_results(&server);
    assert!(
        results[0].contains("fail-closed hook 'block-command' could not decide"),
        "{results:?}"
    );
    assert!(
        stderr(&output)
            .contains("hook 'block-command' (preToolUse) failed closed, so the tool call is blocked"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn the_published_schema_and_the_hooks_guide_show_the_guard_fields() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("schemas/hooks-schema.json")).unwrap())
            .unwrap();
    let hook = &schema["$defs"]["HookConfig"]["properties"];
    assert_eq!(hook["failClosed"]["type"], "boolean", "{hook:#}");
    for limit in ["maxInputBytes", "maxOutputBytes"] {
        assert_eq!(hook[limit]["maximum"], 16 * 1024 * 1024, "{limit}");
        assert_eq!(hook[limit]["minimum"], 1024, "{limit}");
    }
    let guide = std::fs::read_to_string(root.join("docs/hooks.md")).unwrap();
    for field in [
        "`failClosed`",
        "`maxInputBytes`",
        "`maxOutputBytes`",
        "## Fail-closed guards",
    ] {
        assert!(guide.contains(field), "docs/hooks.md lacks {field}");
    }
}
