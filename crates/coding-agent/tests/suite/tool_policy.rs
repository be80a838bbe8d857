//! The native tools' file policy through the real `elph` binary, tried as an attacker would: a
//! model that answers with tool calls aimed at Elph's own configuration, at hooks, and at files
//! outside the project, by absolute paths, `..`, and symbolic links planted in the project.

use std::os::unix::fs::symlink;
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::{run_elph, run_elph_with};

const TRUST_BEFORE: &str = r#"{"directories":{}}"#;
const TRUST_ATTACK: &str = r#"{"directories":{"/":true}}"#;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The tool results the model received, in order (from the last request, which holds them all).
fn tool_results(server: &FakeModelServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().expect("the model was asked");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Serves one tool call per request, then a final answer.
fn script(server: &FakeModelServer, calls: &[(&str, Value)]) {
    for (name, input) in calls {
        server.enqueue(FakeReply::tool_call(*name, input.clone()));
    }
    server.enqueue(FakeReply::text("done"));
}

fn write(path: &str, content: &str) -> (&'static str, Value) {
    ("write_file", json!({"path": path, "content": content}))
}

#[tokio::test]
async fn write_file_cannot_rewrite_trust_json_under_auto_by_any_path() {
    let env = TestEnv::new();
    let trust = env.config_dir.join("trust.json");
    std::fs::write(&trust, TRUST_BEFORE).unwrap();
    // Links an attacker's repository could ship: to the folder, to the file, and one whose
    // target does not exist yet.
    symlink(&env.config_dir, env.project.join("cfg")).unwrap();
    symlink(&trust, env.project.join("trust-link.json")).unwrap();
    symlink(
        env.config_dir.join("new-hooks.json"),
        env.project.join("dangling.json"),
    )
    .unwrap();
    let absolute = trust.display().to_string();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let calls = [
        write(&absolute, TRUST_ATTACK),
        write("../config/trust.json", TRUST_ATTACK),
        write("cfg/trust.json", TRUST_ATTACK),
        write("cfg/sub/../trust.json", TRUST_ATTACK),
        write("trust-link.json", TRUST_ATTACK),
        write("cfg/hooks.json", r#"{"hooks":[]}"#),
        write("dangling.json", r#"{"hooks":[]}"#),
        (
            "edit_file",
            json!({"path": "cfg/trust.json", "old_text": "{}", "new_text": "{\"/\":true}"}),
        ),
    ];
    script(&server, &calls);
    let output = run_elph(&env, &server, &["--approval", "auto", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server);
    assert_eq!(results.len(), calls.len());
    for result in &results {
        assert!(result.contains("refused"), "{result}");
        assert!(
            result.contains("outside the folders this session may write"),
            "{result}"
        );
    }
    assert_eq!(std::fs::read_to_string(&trust).unwrap(), TRUST_BEFORE);
    assert!(!env.config_dir.join("hooks.json").exists());
    assert!(!env.config_dir.join("new-hooks.json").exists());
    assert!(!env.config_dir.join("sub").exists());
    // The links are still links: nothing replaced them with files either.
    assert!(
        std::fs::symlink_metadata(env.project.join("trust-link.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn config_and_data_inside_the_project_are_protected_under_auto() {
    // The home folder as the project: CONFIG_DIR and DATA_DIR lie inside the writable root.
    let env = TestEnv::new();
    let config_dir = env.project.join(".config/elph");
    let data_dir = env.project.join(".local/share/elph");
    std::fs::create_dir_all(&config_dir).unwrap();
    let trust = config_dir.join("trust.json");
    std::fs::write(&trust, TRUST_BEFORE).unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let calls = [
        write(".config/elph/trust.json", TRUST_ATTACK),
        write("./.config/x/../elph/hooks.json", r#"{"hooks":[]}"#),
        write(".local/share/elph/sessions.db", "garbage"),
        write(".elph/hooks.json", r#"{"hooks":[]}"#),
        write(".git/hooks/pre-commit", "#!/bin/sh\necho owned\n"),
        write("notes.txt", "an ordinary file"),
    ];
    script(&server, &calls);
    let vars = [
        ("ELPH_HOME", config_dir.as_os_str()),
        ("ELPH_DATA_DIR", data_dir.as_os_str()),
    ];
    let output = run_elph_with(&env, &server, &vars, &["--approval", "auto", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server);
    assert_eq!(results.len(), calls.len());
    for (result, label) in results
        .iter()
        .zip(["CONFIG_DIR", "CONFIG_DIR", "DATA_DIR", ".elph", ".git/hooks"])
    {
        assert!(
            result.contains("only when the user approves that exact call"),
            "{result}"
        );
        assert!(result.contains(label), "{result}");
    }
    assert!(results[5].starts_with("Created notes.txt"), "{}", results[5]);
    assert_eq!(std::fs::read_to_string(&trust).unwrap(), TRUST_BEFORE);
    assert!(!config_dir.join("hooks.json").exists());
    assert!(!env.project.join(".elph").exists());
    assert!(!env.project.join(".git").exists());
    let db = std::fs::read(data_dir.join("sessions.db")).unwrap();
    assert!(
        db.starts_with(b"SQLite format 3"),
        "sessions.db is still a database"
    );
}

#[tokio::test]
async fn reads_outside_the_project_are_refused_under_deny_and_without_anyone_to_ask() {
    let env = TestEnv::new();
    let secret = env.root.path().join("outside-secret.txt");
    std::fs::write(&secret, "TOP-SECRET-4471\n").unwrap();
    std::fs::write(env.project.join("inside.txt"), "inside text\n").unwrap();
    symlink(env.root.path(), env.project.join("up")).unwrap();
    let calls = [
        ("read_file", json!({"path": "inside.txt"})),
        ("read_file", json!({"path": "../outside-secret.txt"})),
        ("read_file", json!({"path": secret.display().to_string()})),
        ("read_file", json!({"path": "up/outside-secret.txt"})),
        ("list_dir", json!({"path": "/"})),
        ("grep", json!({"pattern": "TOP-SECRET", "path": ".."})),
        ("find_path", json!({"glob": "*.txt", "path": "up"})),
    ];
    for approval in ["deny", "ask"] {
        let server = FakeModelServer::start(Wire::OpenAi).await;
        script(&server, &calls);
        let output = run_elph(&env, &server, &["--approval", approval, "--no-session", "go"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
        let results = tool_results(&server);
        assert_eq!(results.len(), calls.len());
        assert_eq!(results[0], "inside text\n", "reads inside the project stay free");
        for result in &results[1..] {
            assert!(!result.contains("TOP-SECRET-4471"), "{approval}: {result}");
            let expected = if approval == "deny" {
                "would read outside the project"
            } else {
                "there is no one to approve it"
            };
            assert!(result.contains(expected), "{approval}: {result}");
        }
    }
    // auto: allowed.
    let server = FakeModelServer::start(Wire::OpenAi).await;
    script(&server, &calls[1..2]);
    let output = run_elph(&env, &server, &["--approval", "auto", "--no-session", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(tool_results(&server), ["TOP-SECRET-4471\n"]);
}

#[tokio::test]
async fn grep_on_proc_and_root_ends_by_the_configured_deadline() {
    let env = TestEnv::new();
    std::fs::write(
        env.config_dir.join("settings.json"),
        r#"{"readTools": {"deadlineSeconds": 1}}"#,
    )
    .unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let pattern = "elph-never-matches-\\d{40}";
    script(
        &server,
        &[
            ("grep", json!({"pattern": pattern, "path": "/proc"})),
            ("grep", json!({"pattern": pattern, "path": "/"})),
            ("find_path", json!({"glob": "elph-never-*", "path": "/"})),
        ],
    );
    // The run's own 60 s bound is far above the three 1 s deadlines.
    let output = run_elph(&env, &server, &["--approval", "auto", "--no-session", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let results = tool_results(&server);
    assert_eq!(results.len(), 3);
    assert!(results[0].contains("No matches found"), "{}", results[0]);
    for result in &results[1..] {
        assert!(
            result.contains("[stopped at the 1 s deadline of the read tools"),
            "{result}"
        );
    }
}

/// The tool names offered in one recorded request (OpenAI wire).
fn offered_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn plan_mode_offers_no_write_tool_and_refuses_one_called_anyway() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    script(&server, &[write("plan.txt", "should not exist")]);
    let output = run_elph(&env, &server, &["--mode", "plan", "--no-session", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let offered = offered_tools(&requests[0]);
    for read in ["read_file", "list_dir", "grep", "find_path", "shell_exec"] {
        assert!(offered.iter().any(|name| name == read), "{offered:?}");
    }
    for write in ["write_file", "edit_file"] {
        assert!(!offered.iter().any(|name| name == write), "{offered:?}");
    }
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("You are in plan mode"), "{system}");
    let results = tool_results(&server);
    assert!(
        results[0].contains("not available in plan mode"),
        "{}",
        results[0]
    );
    assert!(!env.project.join("plan.txt").exists());

    // The default is build: the write tools are offered and the prompt has no plan line.
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["--no-session", "go"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let request = &server.requests()[0];
    assert!(offered_tools(request).iter().any(|name| name == "write_file"));
    assert!(
        !request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("plan mode")
    );
}

#[tokio::test]
async fn plan_mode_runs_the_shell_read_only() {
    let env = TestEnv::new();
    std::fs::write(env.project.join("readable.txt"), "PLAN-READ-3381\n").unwrap();
    let command = "cat readable.txt; echo x > written-by-plan.txt; echo exit=$?";
    for (mode, writes) in [("plan", false), ("build", true)] {
        let server = FakeModelServer::start(Wire::OpenAi).await;
        script(&server, &[("shell_exec", json!({"command": command}))]);
        let output = run_elph(&env, &server, &["--mode", mode, "--no-session", "go"]).await;
        assert!(output.status.success(), "{}", stderr(&output));
        let result = &tool_results(&server)[0];
        assert!(
            result.contains("PLAN-READ-3381"),
            "{mode}: the shell reads: {result}"
        );
        assert_eq!(
            env.project.join("written-by-plan.txt").exists(),
            writes,
            "{mode}: {result}"
        );
        if !writes {
            assert!(!result.contains("exit=0"), "{result}");
        }
    }
}
