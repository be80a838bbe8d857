//! MCP servers start in the background (docs/mcp.md, "Life of a server"): a server that never
//! answers does not hold the first model request up, the model is told which servers are still
//! starting, and a slow server's tools join when it answers, within its `startupTimeoutMs`.

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::mcp::{
    Evidence, assert_group_gone, mcp_test_server, stderr, tool_names, wait_for_servers, write_home_mcp,
};
use super::run_e2e::run_elph;

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The text of every tool result of `request`, the wait's included.
fn all_tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_server_that_never_answers_does_not_hold_up_the_first_model_request() {
    let env = TestEnv::new();
    let pid_file = env.evidence("hung.pid");
    // Starts, and never says a word: the kind of server that used to add its whole startup limit
    // to every run. Its limit here is 10 minutes, far beyond the test's own deadline, so the run
    // finishing at all shows the request did not wait for it.
    let hung = test_support::hook_scripts::write_script(
        &env.root.path().join("servers"),
        "hung.sh",
        &format!("echo $$ > '{}'\nexec sleep 600", pid_file.display()),
    );
    write_home_mcp(
        &env,
        &json!({"mcpServers": {"hung": {"command": hung.display().to_string(), "startupTimeoutMs": 600000}}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("answered without it"));

    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "answered without it"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    // The request went out while the server was still starting, and the model was told so.
    let system = system_prompt(&requests[0]);
    assert!(
        system.contains("- 'hung' is still starting; its tools (mcp_hung__*) join when it answers"),
        "{system}"
    );
    assert!(
        tool_names(&requests[0])
            .iter()
            .any(|name| name == "wait_for_mcp_servers"),
        "{:?}",
        tool_names(&requests[0])
    );
    assert!(
        !stderr(&output).contains("did not answer"),
        "the run did not wait for its limit: {}",
        stderr(&output)
    );
    // And the session's end stopped it.
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the server started")
        .trim()
        .parse()
        .unwrap();
    let live = test_support::hook_scripts::live_group_members(pid, std::time::Duration::from_secs(10));
    assert!(live.is_empty(), "the hung server outlived the run: {live:?}");
}

#[tokio::test]
async fn a_server_that_takes_12_s_to_start_works_with_its_startup_timeout_ms() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    // A real slow start (like `npx -y` on an empty cache): 12 s, then the real server.
    let slow = test_support::hook_scripts::write_script(
        &env.root.path().join("servers"),
        "slow.sh",
        &format!("sleep 12\nexec '{}'", mcp_test_server().display()),
    );
    let mut config = evidence.server(json!({
        "command": slow.display().to_string(),
        "startupTimeoutMs": 60000,
    }));
    // The same 12 s start under a 2 s limit: given up, and the model is told why.
    config["servers"]["impatient"] = json!({"command": slow.display().to_string(), "startupTimeoutMs": 2000});
    write_home_mcp(&env, &config);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "late but here"}),
    ));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["use the slow server"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    let first = system_prompt(&requests[0]);
    assert!(first.contains("'test' is still starting"), "{first}");
    assert!(
        !tool_names(&requests[0])
            .iter()
            .any(|name| name.starts_with("mcp_test__")),
        "not there before it answered"
    );
    let waited = &all_tool_results(&requests[1])[0];
    assert!(
        waited.contains(
            "MCP server 'test' is ready; its tools from your next step on: mcp_test__crash, mcp_test__echo, mcp_test__sleep"
        ),
        "{waited}"
    );
    assert!(
        waited.contains("MCP server 'impatient' is not available: did not answer within 2 s of starting"),
        "{waited}"
    );
    assert!(
        tool_names(&requests[1])
            .iter()
            .any(|name| name == "mcp_test__echo"),
        "joined once it answered: {:?}",
        tool_names(&requests[1])
    );
    let second = system_prompt(&requests[1]);
    assert!(!second.contains("'test' is still starting"), "{second}");
    assert!(
        second.contains("- 'impatient' is not available in this session: did not answer within 2 s"),
        "{second}"
    );
    assert_eq!(all_tool_results(&requests[2])[1], "late but here");
    let stderr = stderr(&output);
    assert!(stderr.contains("MCP server 'test' is ready: 3 tools"), "{stderr}");
    assert!(
        stderr.contains("MCP server 'impatient' did not answer within 2 s of starting; skipped"),
        "{stderr}"
    );
    assert_group_gone(&evidence);
}
