//! Claude Code hooks, unchanged, through the real `elph run`: five hooks written the way Claude
//! Code's documentation shows (a Bash validator that exits 2, a JSON `permissionDecision: deny`
//! guard, an `updatedInput` rewrite, a SessionStart `additionalContext` loader, a PostToolUse
//! formatter), configured once by hand with `"protocol": "claude-code"` and once by
//! `elph hooks import` from a real-shaped `.claude/settings.json`. Both runs must behave the same.

use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::{write_script, write_with_mode};

use super::run_e2e::{elph, run_elph};

const VALIDATOR: &str = r#"#!/usr/bin/env python3
# PreToolUse hook for Bash: refuses destructive commands; exit code 2 blocks the call and shows
# stderr to the model.
import json, re, sys

data = json.load(sys.stdin)
if data.get("tool_name") != "Bash":
    sys.exit(0)
command = data.get("tool_input", {}).get("command", "")
rules = [(r"\brm\s+-rf\b", "rm -rf is not allowed here; delete files one by one"),
         (r"^grep\b", "use rg instead of grep")]
problems = [message for pattern, message in rules if re.search(pattern, command)]
if problems:
    for message in problems:
        print("- " + message, file=sys.stderr)
    sys.exit(2)
"#;

const ENV_GUARD: &str = r#"#!/bin/bash
# PreToolUse hook for Write|Edit: never touch .env files.
input=$(cat)
file_path=$(echo "$input" | jq -r '.tool_input.file_path // empty')
if [[ "$file_path" == *.env ]]; then
  jq -n --arg path "$file_path" '{
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision: "deny",
      permissionDecisionReason: ("Refusing to write secrets file " + $path)
    }
  }'
fi
exit 0
"#;

const REWRITE: &str = r#"#!/usr/bin/env python3
# PreToolUse hook for Bash: deployments go to staging, never to production.
import json, sys

data = json.load(sys.stdin)
command = data["tool_input"].get("command", "")
if "production" in command:
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "rewritten to staging",
            "updatedInput": {"command": command.replace("production", "staging")},
        }
    }))
"#;

const LOADER: &str = r#"#!/bin/bash
# SessionStart hook: loads the project's conventions into the model's context.
cd "$CLAUDE_PROJECT_DIR" || exit 1
if [ -f CONVENTIONS.md ]; then
  jq -n --rawfile text CONVENTIONS.md '{
    hookSpecificOutput: {hookEventName: "SessionStart", additionalContext: $text}
  }'
fi
"#;

const FORMATTER: &str = r#"#!/bin/bash
# PostToolUse hook for Write|Edit: strips trailing whitespace from the file just written.
file_path=$(jq -r '.tool_input.file_path // empty')
if [ -n "$file_path" ] && [ -f "$file_path" ]; then
  sed -i 's/[[:space:]]*$//' "$file_path"
fi
exit 0
"#;

const CONVENTIONS: &str = "Conventions: tabs are forbidden; every commit message starts with a verb.";

/// The five scripts in `.claude/hooks/`, as a Claude Code user keeps them; the project has a
/// `build/` folder and a CONVENTIONS.md.
fn install_scripts(env: &TestEnv) {
    let dir = env.project.join(".claude").join("hooks");
    for (name, body) in [
        ("bash_validator.py", VALIDATOR),
        ("protect_env.sh", ENV_GUARD),
        ("staging_only.py", REWRITE),
        ("load_context.sh", LOADER),
        ("format.sh", FORMATTER),
    ] {
        write_with_mode(&dir.join(name), body, 0o755);
    }
    std::fs::create_dir_all(env.project.join("build")).unwrap();
    std::fs::write(env.project.join("build/keep.txt"), "keep").unwrap();
    std::fs::write(env.project.join("CONVENTIONS.md"), CONVENTIONS).unwrap();
}

/// The commands as Claude Code's settings name them.
const COMMANDS: [(&str, &str, &str); 5] = [
    (
        "PreToolUse",
        "Bash",
        "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/bash_validator.py",
    ),
    (
        "PreToolUse",
        "Write|Edit",
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/protect_env.sh",
    ),
    (
        "PreToolUse",
        "Bash",
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/staging_only.py",
    ),
    (
        "SessionStart",
        "",
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/load_context.sh",
    ),
    (
        "PostToolUse",
        "Write|Edit",
        "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/format.sh",
    ),
];

/// The model's plan: four tool calls, one for each tool hook, then an answer.
fn enqueue_plan(server: &FakeModelServer) {
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "rm -rf build"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": ".env", "content": "SECRET=hunter2\n"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "echo deploying to production > target.txt"}),
    ));
    server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": "notes.txt", "content": "first line   \nsecond line\t\n"}),
    ));
    server.enqueue(FakeReply::text("All done."));
}

fn tool_message(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    last["content"].as_str().unwrap_or_default().to_string()
}

/// What each hook must have done, checked on the project and on what reached the model.
fn assert_claude_behaviour(env: &TestEnv, server: &FakeModelServer, output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{stderr}");

    // SessionStart additionalContext reached the first request.
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains(CONVENTIONS), "{system}");

    // The validator's exit 2 blocked rm -rf, and its stderr went to the model.
    assert!(env.project.join("build/keep.txt").exists(), "rm -rf ran");
    let blocked = tool_message(&requests[1]);
    assert!(blocked.contains("rm -rf is not allowed here"), "{blocked}");

    // The JSON deny guard kept .env from being written, with its reason.
    assert!(!env.project.join(".env").exists(), ".env was written: {stderr}");
    let denied = tool_message(&requests[2]);
    assert!(denied.contains("Refusing to write secrets file"), "{denied}");
    assert!(denied.contains(".env"), "{denied}");

    // updatedInput was mapped back to shell_exec's `command` and ran instead.
    let target = std::fs::read_to_string(env.project.join("target.txt")).unwrap();
    assert_eq!(target, "deploying to staging\n");

    // The PostToolUse formatter found the file by Claude's `file_path` and fixed it.
    let notes = std::fs::read_to_string(env.project.join("notes.txt")).unwrap();
    assert_eq!(notes, "first line\nsecond line\n");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "All done.");
}

#[tokio::test]
async fn five_claude_code_hooks_run_unchanged_with_protocol_claude_code() {
    let env = TestEnv::new();
    env.trust_project();
    install_scripts(&env);
    let hooks: Vec<Value> = COMMANDS
        .iter()
        .enumerate()
        .map(|(index, (event, matcher, command))| {
            let event = match *event {
                "PreToolUse" => "preToolUse",
                "PostToolUse" => "postToolUse",
                _ => "sessionStart",
            };
            let mut hook = json!({
                "id": format!("claude-{index}"), "event": event, "protocol": "claude-code",
                "command": "/bin/sh", "args": ["-c", command],
            });
            let names: Vec<&str> = match *matcher {
                "Bash" => vec!["shell_exec"],
                "Write|Edit" => vec!["write_file", "edit_file"],
                _ => vec![],
            };
            if !names.is_empty() {
                hook["matcher"] = json!({"toolNames": names});
            }
            hook
        })
        .collect();
    env.write_project_hooks(&json!({ "hooks": hooks }));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    enqueue_plan(&server);
    let output = run_elph(&env, &server, &["tidy up and deploy"]).await;
    assert_claude_behaviour(&env, &server, &output);
}

fn settings_json() -> Value {
    let mut events: serde_json::Map<String, Value> = serde_json::Map::new();
    for (event, matcher, command) in COMMANDS {
        let groups = events.entry(event).or_insert_with(|| json!([]));
        let mut group = json!({"hooks": [{"type": "command", "command": command, "timeout": 30}]});
        if !matcher.is_empty() {
            group["matcher"] = json!(matcher);
        }
        groups.as_array_mut().unwrap().push(group);
    }
    json!({
        "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
        "hooks": events,
    })
}

fn elph_cli(env: &TestEnv, args: &[&str]) -> Output {
    env.command(&elph()).args(args).output().unwrap()
}

#[tokio::test]
async fn hooks_imported_from_claude_settings_behave_the_same() {
    let env = TestEnv::new();
    env.trust_project();
    install_scripts(&env);
    let claude = env.project.join(".claude");
    std::fs::write(
        claude.join("settings.json"),
        serde_json::to_string_pretty(&settings_json()).unwrap(),
    )
    .unwrap();
    // A local settings file with something Elph cannot express.
    std::fs::write(
        claude.join("settings.local.json"),
        json!({"hooks": {"SubagentStop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}})
            .to_string(),
    )
    .unwrap();

    // Printing changes nothing.
    let printed = elph_cli(&env, &["hooks", "import"]);
    assert!(printed.status.success(), "{printed:?}");
    assert!(!env.project.join(".elph/hooks.json").exists());
    let document: Value = serde_json::from_slice(&printed.stdout).unwrap();
    assert_eq!(document["hooks"].as_array().unwrap().len(), 5);
    let stderr = String::from_utf8_lossy(&printed.stderr);
    assert!(
        stderr.contains("SubagentStop: Elph has no such event"),
        "{stderr}"
    );

    let written = elph_cli(&env, &["hooks", "import", "--write"]);
    assert!(written.status.success(), "{written:?}");
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project.join(".elph/hooks.json")).unwrap())
            .unwrap();
    let first = &hooks["hooks"][0];
    assert_eq!(first["protocol"], "claude-code");
    // A plain program with arguments is written in the form trust pins: the script is an argument.
    assert_eq!(first["command"], "python3");
    assert_eq!(first["args"], json!([".claude/hooks/bash_validator.py"]));
    assert_eq!(hooks["hooks"][1]["command"], "../.claude/hooks/protect_env.sh");
    assert_eq!(first["timeoutMs"], 30_000);
    assert_eq!(first["matcher"], json!({"toolNames": ["shell_exec"]}));
    let validate = elph_cli(&env, &["hooks", "validate"]);
    assert!(validate.status.success(), "{validate:?}");

    // A second import finds nothing new.
    let again = elph_cli(&env, &["hooks", "import", "--write"]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("nothing new"),
        "{again:?}"
    );

    let server = FakeModelServer::start(Wire::OpenAi).await;
    enqueue_plan(&server);
    let output = run_elph(&env, &server, &["tidy up and deploy"]).await;
    assert_claude_behaviour(&env, &server, &output);
}

#[tokio::test]
async fn answers_elph_cannot_honour_are_named_in_diagnostics() {
    let env = TestEnv::new();
    let script = |name: &str, body: &str| -> String {
        write_script(&env.config_dir.join("hooks"), name, body)
            .display()
            .to_string()
    };
    let odd = script(
        "odd.sh",
        "cat >/dev/null\necho '{\"suppressOutput\": true, \"systemMessage\": \"hi user\", \"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"interrupt\": true}, \"extra\": 1}'\n",
    );
    let prompt_block = script(
        "prompt.sh",
        "cat >/dev/null\necho 'no prompts today' >&2\nexit 2\n",
    );
    let wrong = script(
        "wrong.sh",
        "cat >/dev/null\necho '{\"hookSpecificOutput\": {\"permissionDecision\": \"maybe\"}}'\n",
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "odd", "event": "preToolUse", "protocol": "claude-code", "command": odd},
        {"id": "wrong", "event": "preToolUse", "protocol": "claude-code", "command": wrong},
        {"id": "prompt", "event": "userPromptSubmit", "protocol": "claude-code", "command": prompt_block},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["--output-format", "json", "look"]).await;
    assert!(output.status.success(), "{output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let diagnostics: Vec<String> = document["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| d["diagnostics"].as_array().unwrap().iter())
        .map(|d| d["message"].as_str().unwrap().to_string())
        .collect();
    let all = diagnostics.join("\n");
    for expected in [
        "'suppressOutput'",
        "message from the hook: hi user",
        "'hookSpecificOutput.interrupt'",
        "'extra'",
        "permissionDecision is 'maybe'",
        "exit code 2 cannot block UserPromptSubmit in Elph: the prompt went on to the model; stderr: no prompts today",
    ] {
        assert!(all.contains(expected), "{expected} in:\n{all}");
    }
    // The list_dir call still ran: allow is no change, a rejected answer fails open.
    assert_eq!(document["toolCalls"][0]["ran"], true);
}

#[test]
fn claude_code_protocol_on_an_event_claude_code_lacks_is_refused_with_the_place() {
    let env = TestEnv::new();
    let file = env.root.path().join("hooks.json");
    std::fs::write(
        &file,
        json!({"hooks": [{"id": "ctx", "event": "context", "protocol": "claude-code", "command": "/bin/true"}]})
            .to_string(),
    )
    .unwrap();
    let output = elph_cli(&env, &["hooks", "validate", file.to_str().unwrap()]);
    assert!(!output.status.success());
    let text = String::from_utf8_lossy(&output.stdout).to_string() + &String::from_utf8_lossy(&output.stderr);
    assert!(
        text.contains("/hooks/0/protocol") && text.contains("only for events Claude Code has"),
        "{text}"
    );
}

#[test]
fn import_refuses_bad_input_clearly_and_loses_nothing() {
    let env = TestEnv::new();
    env.trust_project();
    // Nothing to import.
    let none = elph_cli(&env, &["hooks", "import"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no Claude Code or Gemini CLI settings found"));

    // A settings file that is not JSON, next to a hooks.json that must stay as it is.
    let existing = json!({"hooks": [{"id": "mine", "event": "stop", "command": "/bin/true"}]});
    env.write_project_hooks(&existing);
    let before = std::fs::read(env.project.join(".elph/hooks.json")).unwrap();
    let claude = env.project.join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), "{\"hooks\": {").unwrap();
    let broken = elph_cli(&env, &["hooks", "import", "--write"]);
    assert_eq!(broken.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&broken.stderr).contains("is not valid JSON"),
        "{broken:?}"
    );
    assert_eq!(
        std::fs::read(env.project.join(".elph/hooks.json")).unwrap(),
        before
    );

    // A settings file whose hooks have the wrong shape.
    std::fs::write(
        claude.join("settings.json"),
        json!({"hooks": {"PreToolUse": {}}}).to_string(),
    )
    .unwrap();
    let shape = elph_cli(&env, &["hooks", "import", "--write"]);
    assert_eq!(shape.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&shape.stderr).contains("hooks.PreToolUse is not an array"),
        "{shape:?}"
    );
    assert_eq!(
        std::fs::read(env.project.join(".elph/hooks.json")).unwrap(),
        before
    );

    // A broken hooks.json is not overwritten.
    std::fs::write(claude.join("settings.json"), settings_json().to_string()).unwrap();
    std::fs::write(env.project.join(".elph/hooks.json"), "{broken").unwrap();
    let target = elph_cli(&env, &["hooks", "import", "--write"]);
    assert_eq!(target.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&target.stderr).contains("fix it first"),
        "{target:?}"
    );
    assert_eq!(
        std::fs::read_to_string(env.project.join(".elph/hooks.json")).unwrap(),
        "{broken"
    );

    // A good import keeps the hook that was there.
    std::fs::write(env.project.join(".elph/hooks.json"), &before).unwrap();
    let good = elph_cli(&env, &["hooks", "import", "--write"]);
    assert!(good.status.success(), "{good:?}");
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project.join(".elph/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(hooks["hooks"][0]["id"], "mine");
    assert_eq!(hooks["hooks"].as_array().unwrap().len(), 6);
    let list = elph_cli(&env, &["hooks", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("(protocol: claude-code)"));
}

/// A SessionStart hook in the style of Claude Code's load-context example: `set -u`, exports to
/// `$CLAUDE_ENV_FILE`, and plain stdout as context. It runs; the exports are named in a diagnostic.
#[tokio::test]
async fn a_session_start_hook_that_writes_claude_env_file_runs_and_is_told_it_is_ignored() {
    let env = TestEnv::new();
    let script = env.config_dir.join("hooks").join("load_context.sh");
    write_with_mode(
        &script,
        "#!/bin/bash\nset -euo pipefail\ncd \"$CLAUDE_PROJECT_DIR\"\necho \"export PROJECT_TYPE=rust\" >> \"$CLAUDE_ENV_FILE\"\necho 'This is a Rust project.'\n",
        0o755,
    );
    env.write_home_hooks(&json!({"hooks": [{
        "id": "load-context", "event": "sessionStart", "protocol": "claude-code",
        "command": script.display().to_string()
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["hi"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let system = server.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("This is a Rust project."), "{system}");
    assert!(
        stderr.contains("it wrote PROJECT_TYPE to CLAUDE_ENV_FILE"),
        "{stderr}"
    );
}
