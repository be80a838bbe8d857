//! What people bring from other agents, with real public files (see
//! `tests/fixtures/other_agents/SOURCES.md`): Claude Code plugin hooks with `if` conditions and
//! SessionStart matchers, a Gemini CLI BeforeTool hook, the Ralph loop's Stop hook, Claude Code
//! commands and skills in the folders those agents keep them in — each through the real `elph`
//! binary, a scripted model and real hook processes.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_with_mode;

use super::run_e2e::{elph, run_elph};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/other_agents")
}

/// Copies a folder, keeping each file's mode (hook scripts stay executable).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn elph_cli(env: &TestEnv, args: &[&str]) -> Output {
    env.command(&elph()).args(args).output().unwrap()
}

fn import(env: &TestEnv, args: &[&str]) -> String {
    let output = elph_cli(env, &[&["hooks", "import"], args, &["--write"]].concat());
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The text of the last user message of a request.
fn last_prompt(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn tool_message(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    last["content"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_claude_plugin_hook_with_if_runs_only_for_git_commit() {
    let env = TestEnv::new();
    env.trust_project();
    let plugin = env.root.path().join("plugins/security-guidance");
    copy_dir(&fixtures().join("claude-code/plugins/security-guidance"), &plugin);
    let evidence = env.evidence("sg.jsonl");
    // A recorder in place of the plugin's reviewer (which calls a model).
    write_with_mode(
        &plugin.join("hooks/sg-python.sh"),
        &format!(
            "#!/bin/sh\njq -c '{{event: .hook_event_name, command: .tool_input.command}}' >> {}\n",
            evidence.display()
        ),
        0o755,
    );
    let report = import(&env, &[plugin.join("hooks/hooks.json").to_str().unwrap()]);
    for expected in [
        "asyncRewake",
        "rewakeMessage",
        "description:",
        "timeout 180 s is over Elph's limit",
        "Claude Code's default of 600 s",
    ] {
        assert!(report.contains(expected), "{expected} in:\n{report}");
    }
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project.join(".elph/hooks.json")).unwrap())
            .unwrap();
    let commit = hooks["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["matcher"]["input"]["command"] == "git commit*")
        .unwrap_or_else(|| panic!("no hook with the commit condition: {hooks:#}"));
    assert_eq!(commit["event"], "postToolUse");
    assert_eq!(commit["matcher"]["toolNames"], json!(["shell_exec"]));
    assert_eq!(
        commit["args"][0],
        plugin
            .canonicalize()
            .unwrap()
            .join("hooks/sg-python.sh")
            .display()
            .to_string()
    );

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "git status || true"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "git commit -m wip || true"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "git push || true"}),
    ));
    server.enqueue(FakeReply::text("Done."));
    let output = run_elph(&env, &server, &["commit the work"]).await;
    assert!(output.status.success(), "{output:?}");
    let post_tool: Vec<Value> = json_lines(&evidence)
        .into_iter()
        .filter(|line| line["event"] == "PostToolUse")
        .map(|line| line["command"].clone())
        .collect();
    // Under Claude Code: the commit reviewer for the commit, the push reviewer for the push, and
    // nothing for `git status`.
    assert_eq!(
        post_tool,
        [json!("git commit -m wip || true"), json!("git push || true")]
    );
}

#[tokio::test]
async fn session_start_matchers_run_for_their_source_only() {
    let env = TestEnv::new();
    env.trust_project();
    let evidence = env.evidence("starts.txt");
    let group = |matcher: &str| {
        json!({"matcher": matcher, "hooks": [{"type": "command", "timeout": 5,
            "command": format!("echo {matcher} >> {}", evidence.display())}]})
    };
    let settings = json!({"hooks": {"SessionStart": [group("startup"), group("resume"), group("compact")]}});
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::fs::write(env.project.join(".claude/settings.json"), settings.to_string()).unwrap();
    let report = import(&env, &[]);
    assert!(report.contains("matcher 'compact'"), "{report}");

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("one"));
    server.enqueue(FakeReply::text("two"));
    let first = run_elph(&env, &server, &["hello"]).await;
    assert!(first.status.success(), "{first:?}");
    assert_eq!(std::fs::read_to_string(&evidence).unwrap(), "startup\n");
    let resumed = run_elph(&env, &server, &["-c", "again"]).await;
    assert!(resumed.status.success(), "{resumed:?}");
    assert_eq!(std::fs::read_to_string(&evidence).unwrap(), "startup\nresume\n");
}

#[tokio::test]
async fn a_gemini_before_tool_hook_blocks_a_shell_command() {
    let env = TestEnv::new();
    env.trust_project();
    copy_dir(
        &fixtures().join("gemini-cli/.gemini"),
        &env.project.join(".gemini"),
    );
    let report = import(&env, &[]);
    assert!(!report.contains("left out"), "{report}");
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project.join(".elph/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(hooks["hooks"][0]["protocol"], "gemini-cli");
    assert_eq!(hooks["hooks"][0]["event"], "preToolUse");
    assert_eq!(hooks["hooks"][0]["timeoutMs"], 5000);

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "git push --force origin main > pushed.txt"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "echo fine > allowed.txt"}),
    ));
    server.enqueue(FakeReply::text("Done."));
    let output = run_elph(&env, &server, &["push it"]).await;
    assert!(output.status.success(), "{output:?}");
    let requests = server.requests();
    let blocked = tool_message(&requests[1]);
    assert!(blocked.contains("force pushes are not allowed"), "{blocked}");
    assert!(!env.project.join("pushed.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.project.join("allowed.txt")).unwrap(),
        "fine\n"
    );
}

/// The Ralph loop's state file, as its setup script writes it.
fn ralph_state(env: &TestEnv, max_iterations: u32, promise: &str) {
    let state = format!(
        "---\nactive: true\niteration: 1\nmax_iterations: {max_iterations}\ncompletion_promise: {promise}\n\
         started_at: \"2026-01-01T00:00:00Z\"\n---\n\nMake the tests pass.\n"
    );
    std::fs::create_dir_all(env.project.join(".claude")).unwrap();
    std::fs::write(env.project.join(".claude/ralph-loop.local.md"), state).unwrap();
}

fn install_ralph(env: &TestEnv) {
    let plugin = env.root.path().join("plugins/ralph-wiggum");
    copy_dir(&fixtures().join("claude-code/plugins/ralph-wiggum"), &plugin);
    import(env, &[plugin.join("hooks/hooks.json").to_str().unwrap()]);
}

#[tokio::test]
async fn the_ralph_stop_hook_continues_the_turn_until_its_promise() {
    let env = TestEnv::new();
    env.trust_project();
    install_ralph(&env);
    ralph_state(&env, 0, "\"DONE\"");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("Still failing."));
    server.enqueue(FakeReply::text("Fixed one more."));
    server.enqueue(FakeReply::text("All green. <promise>DONE</promise>"));
    server.enqueue(FakeReply::text("never asked for"));
    let output = run_elph(&env, &server, &["start the loop"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let requests = server.requests();
    // The hook read the last answer from transcript_path each time, and stopped at the promise.
    assert_eq!(requests.len(), 3, "{stderr}");
    assert_eq!(last_prompt(&requests[1]), "Make the tests pass.");
    assert_eq!(last_prompt(&requests[2]), "Make the tests pass.");
    assert!(stderr.contains("continued the turn (1 of at most 8"), "{stderr}");
    assert!(!env.project.join(".claude/ralph-loop.local.md").exists());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "All green. <promise>DONE</promise>"
    );
}

#[tokio::test]
async fn a_stop_hook_that_never_stops_is_capped() {
    let env = TestEnv::new();
    env.trust_project();
    install_ralph(&env);
    // No limit and no promise: the loop never ends by itself.
    ralph_state(&env, 0, "null");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    for n in 0..12 {
        server.enqueue(FakeReply::text(format!("answer {n}")));
    }
    let output = run_elph(&env, &server, &["start the loop"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(server.requests().len(), 9, "{stderr}");
    assert!(stderr.contains("continued the turn (8 of at most 8"), "{stderr}");
    assert!(
        stderr.contains("gone on 8 times in a row, the most allowed"),
        "{stderr}"
    );
}

#[tokio::test]
async fn claude_code_commands_reach_the_model_expanded() {
    let env = TestEnv::new();
    env.trust_project();
    let commands = env.project.join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    for name in ["review-pr.md", "review-file.md"] {
        std::fs::copy(fixtures().join("commands").join(name), commands.join(name)).unwrap();
    }
    std::fs::copy(
        fixtures().join("claude-code/plugins/commit-commands/commands/commit.md"),
        commands.join("commit.md"),
    )
    .unwrap();
    std::fs::create_dir_all(env.project.join("src")).unwrap();
    std::fs::write(env.project.join("src/users.ts"), "export const users = [];\n").unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q", "-b", "trunk"])
        .current_dir(&env.project)
        .status()
        .unwrap();
    assert!(git.success());

    let listing = elph_cli(&env, &["prompts", "list", "--json"]);
    let listing: Value = serde_json::from_slice(&listing.stdout).unwrap();
    let hint = listing["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "review-pr")
        .map(|p| p["argumentHint"].clone());
    assert_eq!(
        hint,
        Some(json!("[pr-number] [priority] [assignee]")),
        "{listing:#}"
    );

    let server = FakeModelServer::start(Wire::OpenAi).await;
    for _ in 0..3 {
        server.enqueue(FakeReply::text("ok"));
    }
    let pr = run_elph(&env, &server, &["/review-pr 123 high alice"]).await;
    assert!(pr.status.success(), "{pr:?}");
    let file = run_elph(&env, &server, &["/review-file src/users.ts"]).await;
    assert!(file.status.success(), "{file:?}");
    let commit = run_elph(&env, &server, &["/commit"]).await;
    assert!(commit.status.success(), "{commit:?}");
    let requests = server.requests();
    assert_eq!(
        last_prompt(&requests[0]),
        "Review pull request #123 with priority level high.\nAfter review, assign to alice for follow-up."
    );
    let review = last_prompt(&requests[1]);
    assert!(
        review.starts_with("Review src/users.ts for:\n- Code quality"),
        "{review}"
    );
    assert!(review.contains("<file path=\"src/users.ts\">"), "{review}");
    assert!(review.contains("export const users = [];"), "{review}");
    let commit_prompt = last_prompt(&requests[2]);
    assert!(!commit_prompt.contains("!`"), "{commit_prompt}");
    assert!(commit_prompt.contains("Current branch: trunk"), "{commit_prompt}");
    assert!(commit_prompt.contains("On branch trunk"), "{commit_prompt}");
    let stderr = String::from_utf8_lossy(&commit.stderr);
    assert!(stderr.contains("allowed-tools (Bash(git add:*)"), "{stderr}");
}

#[tokio::test]
async fn template_commands_do_not_run_when_turned_off() {
    let env = TestEnv::new();
    env.trust_project();
    let commands = env.project.join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("stamp.md"),
        "Stamp: !`touch ran.txt && echo stamped`\n",
    )
    .unwrap();
    std::fs::write(
        env.config_dir.join("settings.json"),
        json!({"disableTemplateShell": true}).to_string(),
    )
    .unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["/stamp"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!env.project.join("ran.txt").exists());
    assert_eq!(
        last_prompt(&server.requests()[0]),
        "Stamp: !`touch ran.txt && echo stamped`"
    );
    assert!(stderr.contains("disableTemplateShell"), "{stderr}");
}

#[tokio::test]
async fn skills_where_claude_code_and_others_keep_them_are_offered() {
    let env = TestEnv::new();
    env.trust_project();
    let plugins = fixtures().join("claude-code/plugins");
    copy_dir(
        &plugins.join("plugin-dev/skills/agent-development"),
        &env.project.join(".claude/skills/agent-development"),
    );
    copy_dir(
        &plugins.join("hookify/skills/writing-rules"),
        &env.project.join(".agents/skills/writing-rules"),
    );
    copy_dir(
        &fixtures().join("skills/skills/brand-guidelines"),
        &env.home.join(".claude/skills/brand-guidelines"),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{output:?}");
    let system = server.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    for name in ["agent-development", "writing-rules", "brand-guidelines"] {
        assert!(
            system.contains(&format!("<name>{name}</name>")),
            "{name} in:\n{system}"
        );
    }
    assert!(
        system.contains(".claude/skills/agent-development/SKILL.md"),
        "{system}"
    );
}
