//! Permission rules through the real binary (docs/security.md, "Permission rules"): an allow rule
//! lets `git status` run under `--approval ask` while other commands are still asked (refused
//! headless, where nobody answers); a project's settings add deny and ask rules but never an
//! allow; a Claude Code `deny` rule imported with `elph hooks import` holds, whatever the policy.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::{elph, run_elph};

/// The tool results the model received in its last request, in order.
fn tool_results(server: &FakeModelServer) -> Vec<String> {
    let requests = server.requests();
    requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn shell(command: &str) -> FakeReply {
    FakeReply::tool_call("shell_exec", json!({"command": command}))
}

fn write_settings(path: &Path, settings: &Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(settings).unwrap()).unwrap();
}

fn git_init(project: &Path) {
    let status = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(project)
        .status()
        .unwrap();
    assert!(status.success());
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn an_allow_rule_runs_git_status_under_ask_and_other_commands_are_still_refused_headless() {
    let env = TestEnv::new();
    git_init(&env.project);
    write_settings(
        &env.config_dir.join("settings.json"),
        &json!({"permissions": {"allow": ["shell_exec(git status*)"]}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue_all([
        shell("git status --short --branch"),
        shell("touch made-by-model.txt"),
        shell("git status; touch chained.txt"),
        shell("git status $(touch substituted.txt)"),
        FakeReply::text("done"),
    ]);
    let output = run_elph(&env, &server, &["--approval", "ask", "look"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server);
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(
        results[0].contains("## ") && results[0].contains("exit code 0"),
        "git status ran: {}",
        results[0]
    );
    for refused in &results[1..] {
        assert!(refused.contains("no one to approve it"), "{refused}");
    }
    for file in ["made-by-model.txt", "chained.txt", "substituted.txt"] {
        assert!(
            !env.project.join(file).exists(),
            "{file} was made without approval"
        );
    }
}

#[tokio::test]
async fn a_project_settings_file_adds_deny_and_ask_rules_but_cannot_add_an_allow() {
    let env = TestEnv::new();
    write_settings(
        &env.project.join(".elph/settings.json"),
        &json!({"permissions": {
            "allow": ["shell_exec(touch*)", "shell_exec"],
            "deny": ["shell_exec(echo denied-by-project*)"],
            "ask": ["read_file(notes.txt)"]
        }}),
    );
    std::fs::write(env.project.join("notes.txt"), "NOTES-3141\n").unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue_all([
        shell("touch allowed-by-project.txt"),
        shell("echo denied-by-project now"),
        FakeReply::tool_call("read_file", json!({"path": "notes.txt"})),
        FakeReply::text("done"),
    ]);
    // Under auto, an allow could not show; under ask, the project's allow would have run the touch.
    let output = run_elph(&env, &server, &["--approval", "ask", "go"]).await;
    let said = stderr(&output);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("permissions.allow ignored"), "{said}");
    let results = tool_results(&server);
    assert!(results[0].contains("no one to approve it"), "{}", results[0]);
    assert!(!env.project.join("allowed-by-project.txt").exists());
    assert!(
        results[1].contains("denied by the permission rule shell_exec(echo denied-by-project*)"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("asked about by the permission rule read_file(notes.txt)"),
        "{}",
        results[2]
    );
    assert!(
        !server
            .requests()
            .last()
            .unwrap()
            .to_string()
            .contains("NOTES-3141")
    );

    // The project's deny holds under auto too, and its ask still asks (refused headless).
    server.enqueue_all([
        shell("echo denied-by-project again"),
        FakeReply::tool_call("read_file", json!({"path": "notes.txt"})),
        FakeReply::text("done"),
    ]);
    let output = run_elph(&env, &server, &["--approval", "auto", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server);
    assert!(
        results[0].contains("denied by the permission rule"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("no one to approve it"), "{}", results[1]);
}

#[tokio::test]
async fn an_imported_claude_code_deny_rule_holds() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.project.join("secrets")).unwrap();
    std::fs::write(env.project.join("secrets/key.txt"), "SECRET-9931\n").unwrap();
    std::fs::write(env.project.join("readme.txt"), "README-1\n").unwrap();
    write_settings(
        &env.project.join(".claude/settings.json"),
        &json!({"permissions": {
            "allow": ["Bash(make:*)"],
            "deny": ["Read(./secrets/**)", "Bash(curl:*)", "WebFetch"]
        }}),
    );
    write_settings(
        &env.home.join(".claude/settings.json"),
        &json!({"permissions": {"allow": ["Bash(git status:*)"]}}),
    );
    let import = env
        .command(&elph())
        .args(["hooks", "import", "--write"])
        .output()
        .unwrap();
    let said = stderr(&import);
    assert!(import.status.success(), "{said}");
    let out = String::from_utf8_lossy(&import.stdout);
    assert!(out.contains("added 5 permission rule(s)"), "{out}\n{said}");
    assert!(
        said.contains("\"shell_exec(make*)\""),
        "the project's allow is reported: {said}"
    );
    assert!(said.contains("WebFetch"), "{said}");
    let project: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project.join(".elph/settings.json")).unwrap())
            .unwrap();
    assert!(project["permissions"].get("allow").is_none(), "{project}");
    assert!(
        project["permissions"]["deny"]
            .as_array()
            .unwrap()
            .contains(&json!("read_file(secrets/**)")),
        "{project}"
    );
    let user: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config_dir.join("settings.json")).unwrap())
            .unwrap();
    assert_eq!(user["permissions"]["allow"], json!(["shell_exec(git status*)"]));
    let again = env
        .command(&elph())
        .args(["hooks", "import", "--write"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("no new permission rule"));

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue_all([
        FakeReply::tool_call("read_file", json!({"path": "secrets/key.txt"})),
        FakeReply::tool_call("read_file", json!({"path": "./secrets/../secrets/key.txt"})),
        FakeReply::tool_call("grep", json!({"pattern": "SECRET", "path": "secrets"})),
        FakeReply::tool_call("read_file", json!({"path": "readme.txt"})),
        shell("curl -sS http://127.0.0.1:9/"),
        FakeReply::text("done"),
    ]);
    let output = run_elph(&env, &server, &["--approval", "auto", "read"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server);
    for denied in [0, 1, 2, 4] {
        assert!(
            results[denied].contains("denied by the permission rule"),
            "{}",
            results[denied]
        );
    }
    assert_eq!(results[3], "README-1\n");
    assert!(
        !server
            .requests()
            .last()
            .unwrap()
            .to_string()
            .contains("SECRET-9931")
    );
}
