//! `elph hooks validate [FILE...] [--json]` and `elph hooks list` through the real binary.

use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;

use super::run_e2e::elph;

fn validate(env: &TestEnv, args: &[&str]) -> Output {
    env.command(&elph())
        .args(["hooks", "validate"])
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn valid_files_exit_0_and_say_how_many_hooks() {
    let env = TestEnv::new();
    env.write_home_hooks(&json!({"hooks": [{"id": "a", "event": "stop", "command": "/bin/true"}]}));
    let output = validate(&env, &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let out = text(&output.stdout);
    assert!(out.contains("hooks.json: ok, 1 hook(s)"), "{out}");
    assert!(
        out.contains(".elph/hooks.json: not present (nothing to check)"),
        "{out}"
    );
}

#[test]
fn each_problem_is_one_line_naming_the_file_and_the_pointer() {
    let env = TestEnv::new();
    let bad = env.root.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"hooks": [{"id": "a", "event": "PreToolUse", "command": "x"}]}"#,
    )
    .unwrap();
    let broken = env.root.path().join("broken.json");
    std::fs::write(&broken, "{").unwrap();
    let missing = env.root.path().join("missing.json");
    let output = validate(
        &env,
        &[
            bad.to_str().unwrap(),
            broken.to_str().unwrap(),
            missing.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    let err = text(&output.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].starts_with(&format!(
        "{} at /hooks/0/event: unknown event \"PreToolUse\"",
        bad.display()
    )));
    assert!(lines[1].starts_with(&format!("{}: is not valid JSON", broken.display())));
    assert_eq!(lines[2], format!("{}: no such file", missing.display()));
}

#[test]
fn ids_must_be_unique_across_the_files_checked_together() {
    let env = TestEnv::new();
    let one = env.root.path().join("one.json");
    let two = env.root.path().join("two.json");
    for path in [&one, &two] {
        std::fs::write(
            path,
            json!({"hooks": [{"id": "same", "event": "stop", "command": "x"}]}).to_string(),
        )
        .unwrap();
    }
    let output = validate(&env, &[one.to_str().unwrap(), two.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("duplicate hook id 'same'"),
        "{output:?}"
    );
}

#[test]
fn json_output_is_one_document() {
    let env = TestEnv::new();
    let bad = env.root.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"hooks": [{"id": "a", "event": "stop", "command": "x", "bogus": 1}]}"#,
    )
    .unwrap();
    env.write_home_hooks(&json!({"hooks": []}));
    let home = env.config_dir.join("hooks.json");
    let output = validate(&env, &[home.to_str().unwrap(), bad.to_str().unwrap(), "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(doc["valid"], false);
    assert_eq!(doc["files"][0]["state"], "ok");
    assert_eq!(doc["files"][0]["hooks"], 0);
    assert_eq!(doc["files"][1]["state"], "invalid");
    assert_eq!(doc["problems"][0]["pointer"], "/hooks/0/bogus");
    assert_eq!(
        doc["problems"][0]["message"],
        "unknown field 'bogus'; file ignored"
    );
    assert!(output.stderr.is_empty(), "JSON mode keeps stderr for real errors");
}

#[test]
fn hooks_list_shows_hooks_in_order_and_a_closed_pipe_is_not_an_error() {
    let env = TestEnv::new();
    env.trust_project();
    env.write_home_hooks(&json!({"hooks": [
        {"id": "home-one", "event": "preToolUse", "command": "/bin/true", "matcher": {"toolNames": ["shell_exec"]}},
        {"id": "home-off", "event": "stop", "command": "/bin/true", "enabled": false}
    ]}));
    env.write_project_hooks(&json!({"hooks": [{"id": "project-one", "event": "sessionStart", "command": "hooks/x.sh", "timeoutMs": 5000}]}));
    let output = env
        .command(&elph())
        .args(["hooks", "list", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let ids: Vec<&str> = doc["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["home-one", "home-off", "project-one"]);
    assert_eq!(doc["hooks"][0]["matcher"], json!(["shell_exec"]));
    assert_eq!(doc["hooks"][1]["enabled"], false);
    assert_eq!(doc["hooks"][2]["timeoutMs"], 5000);
    assert_eq!(
        doc["hooks"][2]["command"]["path"],
        env.project.join(".elph/hooks/x.sh").display().to_string()
    );

    // `elph hooks list | head -1`: the reader closes the pipe early; elph exits quietly.
    let mut child = env
        .command(&elph())
        .args(["hooks", "list"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
}
