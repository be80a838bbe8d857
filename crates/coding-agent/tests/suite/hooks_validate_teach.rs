//! Diagnostics that teach (issue 21): `elph hooks validate` reports every problem of a file with its
//! pointer, suggests the name that was meant, recognises a Claude Code-shaped file, and warns about
//! matchers that name no tool; an ignored outcome field says where it works. Real binary throughout.

use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::run_e2e::{elph, run_elph};

fn validate(env: &TestEnv, args: &[&str]) -> Output {
    env.command(&elph())
        .args(["hooks", "validate"])
        .args(args)
        .output()
        .unwrap()
}

fn write(env: &TestEnv, name: &str, value: &Value) -> String {
    let path = env.root.path().join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn every_problem_of_a_file_is_reported_with_its_pointer_and_the_name_that_was_meant() {
    let env = TestEnv::new();
    let file = write(
        &env,
        "many.json",
        &json!({"hooks": [
            {"id": "a", "event": "PreToolUse", "command": "x"},
            {"id": "b", "event": "stop", "command": "x", "timeout": 5000},
            {"id": "c", "event": "stop", "command": "", "failclosed": true},
            {"id": "d", "event": "stop", "command": "x", "timeoutMs": 90000}
        ]}),
    );
    let output = validate(&env, &[&file]);
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = err.lines().collect();
    let expected = [
        (
            "/hooks/0/event",
            "unknown event \"PreToolUse\"; did you mean 'preToolUse'?",
        ),
        (
            "/hooks/1/timeout",
            "unknown field 'timeout'; did you mean 'timeoutMs'?",
        ),
        ("/hooks/2/command", "command must not be empty"),
        (
            "/hooks/2/failclosed",
            "unknown field 'failclosed'; did you mean 'failClosed'?",
        ),
        (
            "/hooks/3/timeoutMs",
            "timeoutMs is 90000; it must be between 1 and 60000",
        ),
    ];
    for (pointer, message) in expected {
        let prefix = format!("{file} at {pointer}: {message}");
        assert!(
            lines.iter().any(|line| line.starts_with(&prefix)),
            "missing {prefix:?} in:\n{err}"
        );
    }
    assert_eq!(lines.len(), expected.len(), "{err}");

    let output = validate(&env, &[&file, "--json"]);
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let pointers: Vec<&str> = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pointer"].as_str().unwrap())
        .collect();
    assert_eq!(pointers.len(), 5, "{doc:#}");
    for (pointer, _) in expected {
        assert!(pointers.contains(&pointer), "{pointers:?}");
    }
}

#[test]
fn a_claude_code_shaped_file_points_to_hooks_import_and_the_docs() {
    let env = TestEnv::new();
    let file = write(
        &env,
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x.sh"}]}]}}),
    );
    let output = validate(&env, &[&file]);
    assert_eq!(output.status.code(), Some(1));
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(err.lines().count(), 1, "one problem, not a cascade: {err}");
    assert!(
        err.contains(
            "at /hooks: this looks like Claude Code's hooks settings (\"hooks\": {\"PreToolUse\": [...]})"
        ),
        "{err}"
    );
    assert!(err.contains("`elph hooks import FILE`"), "{err}");
    assert!(err.contains("docs/claude-code.md"), "{err}");
    assert!(!err.contains("is not of type"), "{err}");

    // The command it names exists and takes such a file.
    let help = env
        .command(&elph())
        .args(["hooks", "import", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("[FILE]"));
    assert!(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/claude-code.md")
            .exists()
    );
}

#[test]
fn a_matcher_naming_a_tool_elph_does_not_have_is_a_warning_that_keeps_the_file_valid() {
    let env = TestEnv::new();
    let file = write(
        &env,
        "matchers.json",
        &json!({"hooks": [{
            "id": "guard",
            "event": "preToolUse",
            "command": "/bin/true",
            "matcher": {"toolNames": ["shell_exec", "Bash", "mcp_github__create_issue", "mcp__github__list", "read_fil"]}
        }]}),
    );
    let output = validate(&env, &[&file]);
    assert_eq!(output.status.code(), Some(0), "warnings do not fail validation");
    let err = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with(&format!(
            "warning: {file} at /hooks/0/matcher/toolNames/1: matcher pattern 'Bash' matches no tool \
             Elph has, so this hook never runs ('Bash' is Claude Code's name; Elph's is 'shell_exec')"
        )),
        "{err}"
    );
    assert!(
        lines[0].contains("read_file"),
        "the native names are listed: {err}"
    );
    assert!(
        lines[1].contains("/hooks/0/matcher/toolNames/4: matcher pattern 'read_fil'")
            && lines[1].contains("did you mean 'read_file'?"),
        "{err}"
    );

    let output = validate(&env, &[&file, "--json"]);
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["valid"], true);
    assert_eq!(doc["warnings"].as_array().unwrap().len(), 2, "{doc:#}");
    assert_eq!(doc["warnings"][0]["pointer"], "/hooks/0/matcher/toolNames/1");
}

#[tokio::test]
async fn an_ignored_field_says_which_event_honours_it() {
    let env = TestEnv::new();
    let hook = write_script(
        &env.root.path().join("scripts"),
        "context.sh",
        r#"cat >/dev/null; echo '{"additionalContext": "the project uses tabs"}'"#,
    );
    env.write_home_hooks(&json!({"hooks": [{
        "id": "claude-habit", "event": "sessionStart", "command": hook.display().to_string()
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hi"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains(
            "hook 'claude-habit' (sessionStart): field 'additionalContext' is ignored: sessionStart is \
             observation-only; it works on beforeAgent"
        ),
        "{err}"
    );
}
