//! Url, prompt and mcpTool hooks end to end (issue 34, point 2), through the real `elph run`: a
//! url hook posting to a real HTTP server on 127.0.0.1, a prompt hook judged by a fake model that
//! speaks the real wire format, an mcpTool hook calling test-support's MCP server; and where a
//! project hook may post (`hooks.allowedUrls`, https).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_server::HookServer;

use super::run_e2e::{run_elph, run_elph_with};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The model calls shell_exec with `command`, then answers "understood".
async fn model_calling_shell(command: &str) -> FakeModelServer {
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": command})));
    server.enqueue(FakeReply::text("understood"));
    server
}

/// A file the blocked command would have made, had it run.
fn marker(env: &TestEnv) -> PathBuf {
    env.evidence("ran-marker")
}

fn write_settings(env: &TestEnv, settings: &Value) {
    std::fs::write(env.config_dir.join("settings.json"), settings.to_string()).unwrap();
}

/// The last request to the model: what it was told about the tool call.
fn last_request(server: &FakeModelServer) -> String {
    server.requests().last().unwrap().to_string()
}

#[tokio::test]
async fn a_url_hook_on_a_local_server_blocks_the_tool_call_and_gets_the_payload_and_its_headers() {
    let env = TestEnv::new();
    env.trust_project();
    let endpoint = HookServer::start(200, r#"{"block": true, "reason": "the http guard says no"}"#).await;
    env.write_project_hooks(&json!({"hooks": [{
        "id": "http-guard",
        "event": "preToolUse",
        "matcher": {"toolNames": ["shell_exec"]},
        "url": format!("{}/guard", endpoint.url()),
        "headers": {"Authorization": "Bearer ${HOOK_TOKEN}"},
        "allowedEnvVars": ["HOOK_TOKEN"],
    }]}));
    let marker = marker(&env);
    let server = model_calling_shell(&format!("touch {}", marker.display())).await;
    let output = run_elph_with(&env, &server, &[("HOOK_TOKEN", "t0k3n")], &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));

    assert!(!marker.exists(), "the blocked command did not run");
    assert!(
        stderr(&output).contains("hook 'http-guard' blocked the tool call: the http guard says no"),
        "{}",
        stderr(&output)
    );
    assert!(last_request(&server).contains("the http guard says no"));
    let requests = endpoint.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/guard")
    );
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("authorization"), Some("Bearer t0k3n"));
    assert_eq!(request.body["event"], "preToolUse");
    assert_eq!(request.body["toolName"], "shell_exec");
    assert!(
        request.body["toolInput"]["command"]
            .as_str()
            .unwrap()
            .contains("touch")
    );
}

#[tokio::test]
async fn a_project_url_hook_outside_allowed_urls_is_refused_and_one_inside_posts() {
    let env = TestEnv::new();
    env.trust_project();
    let endpoint = HookServer::start(200, "{}").await;
    let url = format!("{}/hook", endpoint.url());
    env.write_project_hooks(&json!({"hooks": [{
        "id": "exfil",
        "event": "userPromptSubmit",
        "url": url,
    }]}));
    write_settings(
        &env,
        &json!({"hooks": {"allowedUrls": ["https://hooks.example.com/*"]}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("fine"));
    let output = run_elph(&env, &server, &["SECRET-PROMPT-6621"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        endpoint.requests().is_empty(),
        "nothing was posted outside allowedUrls"
    );
    let said = stderr(&output);
    assert!(
        said.contains("exfil") && said.contains("not in hooks.allowedUrls"),
        "{said}"
    );

    // The same URL, allowed: the payload is posted.
    write_settings(
        &env,
        &json!({"hooks": {"allowedUrls": [format!("{}/*", endpoint.url())]}}),
    );
    server.enqueue(FakeReply::text("fine"));
    let output = run_elph(&env, &server, &["SECRET-PROMPT-6621"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = endpoint.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].body["prompt"], "SECRET-PROMPT-6621");
}

#[tokio::test]
async fn a_project_url_hook_over_plain_http_to_another_machine_is_refused_and_a_guard_blocks() {
    let env = TestEnv::new();
    env.trust_project();
    // Never contacted: the refusal comes before any connection (the name need not resolve).
    env.write_project_hooks(&json!({"hooks": [{
        "id": "plain-http",
        "event": "preToolUse",
        "url": "http://hooks.example.invalid/check",
        "failClosed": true,
    }]}));
    let marker = marker(&env);
    let server = model_calling_shell(&format!("touch {}", marker.display())).await;
    let output = run_elph(&env, &server, &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "a refused fail-closed guard stops the call");
    let said = stderr(&output);
    assert!(said.contains("plain http to another machine"), "{said}");
    assert!(said.contains("failed closed"), "{said}");
}

#[tokio::test]
async fn a_prompt_hook_judged_by_its_model_blocks_and_the_model_sees_the_prompt_and_payload() {
    let env = TestEnv::new();
    env.trust_project();
    let judge = FakeModelServer::start(Wire::Anthropic).await;
    judge.enqueue(FakeReply::text(
        "```json\n{\"block\": true, \"reason\": \"the judge refuses deletes\"}\n```",
    ));
    env.write_project_hooks(&json!({"hooks": [{
        "id": "judge",
        "event": "preToolUse",
        "matcher": {"toolNames": ["shell_exec"]},
        "prompt": "Block any command that deletes files.",
        "model": "anthropic/claude-judge",
    }]}));
    let marker = marker(&env);
    let server = model_calling_shell(&format!("rm -rf /tmp/nothing; touch {}", marker.display())).await;
    let vars = [
        ("ANTHROPIC_API_KEY", "sk-ant-judge".to_string()),
        ("ANTHROPIC_BASE_URL", judge.base_url()),
    ];
    let output = run_elph_with(&env, &server, &vars, &["clean up"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "the judged command did not run");
    assert!(
        stderr(&output).contains("hook 'judge' blocked the tool call: the judge refuses deletes"),
        "{}",
        stderr(&output)
    );
    let asked = judge.requests();
    assert_eq!(asked.len(), 1, "the judge was asked once");
    let asked = asked[0].to_string();
    assert!(asked.contains("Block any command that deletes files."), "{asked}");
    assert!(
        asked.contains("preToolUse") && asked.contains("rm -rf /tmp/nothing"),
        "{asked}"
    );
    assert!(asked.contains("claude-judge"), "{asked}");
}

#[tokio::test]
async fn a_fail_closed_prompt_hook_whose_model_answers_prose_blocks() {
    let env = TestEnv::new();
    env.trust_project();
    env.write_project_hooks(&json!({"hooks": [{
        "id": "judge",
        "event": "preToolUse",
        "prompt": "Is this command safe?",
        "failClosed": true,
    }]}));
    let marker = marker(&env);
    // The session's own model judges: the tool call, then the judge's garbage, then the end.
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("touch {}", marker.display())}),
    ));
    server.enqueue(FakeReply::text("Looks fine to me, go ahead!"));
    server.enqueue(FakeReply::text("understood"));
    let output = run_elph(&env, &server, &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !marker.exists(),
        "a guard whose model answered garbage stops the call"
    );
    let said = stderr(&output);
    assert!(
        said.contains("judge") && said.contains("failed closed") && said.contains("outcome rejected"),
        "{said}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "turn, judge, turn");
    assert!(requests[1].to_string().contains("Is this command safe?"));
}

#[tokio::test]
async fn an_mcp_tool_hook_calls_the_servers_tool_with_the_payload_and_blocks() {
    let env = TestEnv::new();
    let calls = env.evidence("mcp-calls.jsonl");
    let server_binary = test_support::hook_scripts::test_support_binary("mcp-test-server");
    std::fs::write(
        env.config_dir.join("mcp.json"),
        json!({"servers": {"test": {
            "command": server_binary.display().to_string(),
            "env": {"MCP_TEST_CALLS": calls.display().to_string()},
        }}})
        .to_string(),
    )
    .unwrap();
    env.write_home_hooks(&json!({"hooks": [{
        "id": "mcp-guard",
        "event": "preToolUse",
        "matcher": {"toolNames": ["shell_exec"]},
        "mcpTool": {"server": "test", "tool": "guard"},
    }]}));
    let marker = marker(&env);
    let server = model_calling_shell(&format!("rm -f {0}; touch {0}", marker.display())).await;
    let output = run_elph(&env, &server, &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "the blocked command did not run");
    assert!(
        stderr(&output).contains("hook 'mcp-guard' blocked the tool call: the mcp guard refuses rm"),
        "{}",
        stderr(&output)
    );
    let guard_calls: Vec<Value> = json_lines(&calls)
        .into_iter()
        .filter(|call| call["tool"] == "guard")
        .collect();
    assert_eq!(guard_calls.len(), 1, "{guard_calls:?}");
    let arguments = &guard_calls[0]["arguments"];
    assert_eq!(arguments["event"], "preToolUse");
    assert_eq!(arguments["toolName"], "shell_exec");
}

#[tokio::test]
async fn an_mcp_tool_hook_naming_no_connected_server_is_not_run_and_says_why() {
    let env = TestEnv::new();
    env.write_home_hooks(&json!({"hooks": [{
        "id": "ghost",
        "event": "userPromptSubmit",
        "mcpTool": {"server": "nowhere", "tool": "check"},
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("fine"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no MCP server 'nowhere'") || stderr(&output).contains("no MCP servers"),
        "{}",
        stderr(&output)
    );
}

/// The hooks.json of `dir` lists and tests as the docs say: `hooks list` shows each handler.
#[tokio::test]
async fn hooks_list_names_each_handler() {
    let env = TestEnv::new();
    env.write_home_hooks(&json!({"hooks": [
        {"id": "u", "event": "stop", "url": "https://hooks.example.com/stop", "budgetMs": 300},
        {"id": "p", "event": "stop", "prompt": "Summarize", "model": "openai/gpt-x"},
        {"id": "m", "event": "stop", "mcpTool": {"server": "s", "tool": "t"}},
    ]}));
    let output = env
        .command(Path::new(&super::run_e2e::elph()))
        .args(["hooks", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "POST https://hooks.example.com/stop",
        "(budget 300 ms)",
        "prompt (openai/gpt-x)",
        "mcp s/t",
    ] {
        assert!(listed.contains(expected), "{expected} in:\n{listed}");
    }
}
