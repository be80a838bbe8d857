//! docs/hooks.md's examples of the url, prompt and mcpTool handlers, `budgetMs` and
//! `hooks.allowedUrls`, run for real: each hooks.json block is installed as written (only what
//! must point at this test's servers is changed: a URL, a tool name) and fired with `elph hooks
//! test`, against a real HTTP server, a fake model on its real wire format, and test-support's
//! MCP server.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use coding_agent::settings::Settings;
use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_server::HookServer;

use super::docs_examples::{code_blocks, read_doc};
use super::run_e2e::elph;

/// Every hooks.json example of hooks.md, and every settings.json example with a `hooks` block.
fn examples() -> (Vec<Value>, Vec<Value>) {
    let (mut hook_files, mut settings) = (Vec::new(), Vec::new());
    for block in code_blocks(&read_doc("hooks.md")) {
        let Some(value) = block.value else { continue };
        match value.get("hooks") {
            Some(Value::Array(_)) => hook_files.push(value),
            Some(Value::Object(_)) => settings.push(value),
            _ => {}
        }
    }
    (hook_files, settings)
}

/// The hook of the examples with `id`.
fn example_hook(id: &str) -> Value {
    examples()
        .0
        .iter()
        .flat_map(|file| file["hooks"].as_array().unwrap().clone())
        .find(|hook| hook["id"] == id)
        .unwrap_or_else(|| panic!("docs/hooks.md has an example hook '{id}'"))
}

/// `elph hooks test ARGS --json` with `vars`, off the test's runtime thread.
async fn hooks_test(env: &TestEnv, args: &[&str], vars: &[(&str, String)]) -> Value {
    let mut command = env.command(&elph());
    command.args(["hooks", "test"]).args(args).arg("--json");
    command.envs(vars.iter().map(|(name, value)| (*name, value.as_str())));
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("elph hooks test finished within 60 s")
    .unwrap()
    .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn blocked_reason(report: &Value) -> String {
    report["reduced"]["blocked"].to_string()
}

#[test]
fn every_new_field_has_an_example_and_the_settings_example_is_a_valid_settings_json() {
    let (hook_files, settings) = examples();
    let fields: BTreeSet<String> = hook_files
        .iter()
        .flat_map(|file| file["hooks"].as_array().unwrap().clone())
        .flat_map(|hook| hook.as_object().unwrap().keys().cloned().collect::<Vec<_>>())
        .collect();
    for field in [
        "url",
        "headers",
        "allowedEnvVars",
        "prompt",
        "model",
        "mcpTool",
        "budgetMs",
    ] {
        assert!(
            fields.contains(field),
            "docs/hooks.md has no hooks.json example with {field}"
        );
    }
    let allowed: Vec<Settings> = settings
        .into_iter()
        .filter(|value| value["hooks"].get("allowedUrls").is_some())
        .map(|value| serde_json::from_value(value).expect("the settings example is a valid settings.json"))
        .collect();
    assert_eq!(allowed.len(), 1, "one allowedUrls example");
    assert!(allowed[0].hooks.allowed_urls.as_ref().unwrap().len() >= 2);
}

#[tokio::test]
async fn the_url_example_posts_with_its_header_and_its_answer_blocks() {
    let env = TestEnv::new();
    let endpoint = HookServer::start(200, r#"{"block": true, "reason": "policy says no"}"#).await;
    let mut hook = example_hook("policy-server");
    hook["url"] = json!(format!("{}/elph/pre-tool-use", endpoint.url()));
    env.write_home_hooks(&json!({"hooks": [hook]}));
    let vars = [("POLICY_TOKEN", "docs-token".to_string())];
    let report = hooks_test(
        &env,
        &[
            "preToolUse",
            "--tool",
            "shell_exec",
            "--input",
            r#"{"command": "make"}"#,
        ],
        &vars,
    )
    .await;
    assert!(blocked_reason(&report).contains("policy says no"), "{report:#}");
    let requests = endpoint.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some("Bearer docs-token"));
    assert_eq!(requests[0].body["toolInput"]["command"], "make");
}

#[tokio::test]
async fn the_prompt_example_asks_its_model_and_its_answer_blocks() {
    let env = TestEnv::new();
    let judge = FakeModelServer::start(Wire::Anthropic).await;
    judge.enqueue(FakeReply::text(
        r#"{"block": true, "reason": "deletes the sources"}"#,
    ));
    env.write_home_hooks(&json!({"hooks": [example_hook("judge-deletes")]}));
    let vars = [
        ("ANTHROPIC_API_KEY", "sk-ant-docs".to_string()),
        ("ANTHROPIC_BASE_URL", judge.base_url()),
    ];
    let report = hooks_test(
        &env,
        &[
            "preToolUse",
            "--tool",
            "shell_exec",
            "--input",
            r#"{"command": "rm -rf src"}"#,
        ],
        &vars,
    )
    .await;
    assert!(
        blocked_reason(&report).contains("deletes the sources"),
        "{report:#}"
    );
    let asked = judge.requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["model"], "claude-haiku-4-5");
    assert!(asked[0].to_string().contains("rm -rf src"));
}

#[tokio::test]
async fn the_mcp_tool_example_calls_the_servers_tool_and_its_answer_blocks() {
    let env = TestEnv::new();
    let server = test_support::hook_scripts::test_support_binary("mcp-test-server");
    // The example's server name; its tool is the test server's guard.
    std::fs::write(
        env.config_dir.join("mcp.json"),
        json!({"servers": {"policy": {"command": server.display().to_string()}}}).to_string(),
    )
    .unwrap();
    let mut hook = example_hook("mcp-guard");
    assert_eq!(hook["mcpTool"]["server"], "policy");
    hook["mcpTool"]["tool"] = json!("guard");
    env.write_home_hooks(&json!({"hooks": [hook]}));
    let report = hooks_test(
        &env,
        &[
            "preToolUse",
            "--tool",
            "shell_exec",
            "--input",
            r#"{"command": "rm -rf build"}"#,
        ],
        &[],
    )
    .await;
    assert!(
        blocked_reason(&report).contains("the mcp guard refuses rm"),
        "{report:#}"
    );
}

#[test]
fn the_budget_example_lists_its_budget() {
    let env = TestEnv::new();
    let hook = example_hook("lint-guard");
    env.write_home_hooks(&json!({"hooks": [hook]}));
    let output = env
        .command(Path::new(&elph()))
        .args(["hooks", "list", "--json"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(listed["hooks"][0]["budgetMs"], 200);
}
