//! What a server tells or asks the client beyond calls (docs/mcp.md, "When a server's tools
//! change" and "Roots"): `notifications/tools/list_changed` refreshes its tools before the model's
//! next request (a failed refresh keeps the last list), and `roots/list` answers with the project
//! and the writable roots. Test-support's server with `MCP_TEST_DYNAMIC=1` does both for real.

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::mcp::{Evidence, stderr, tool_messages, tool_names, wait_for_servers, write_home_mcp};
use super::run_e2e::run_elph;

/// mcp.json with the test server and its dynamic tools.
fn dynamic_server(env: &TestEnv, evidence: &Evidence) {
    let mut config = evidence.server(json!({}));
    config["servers"]["test"]["env"]["MCP_TEST_DYNAMIC"] = json!("1");
    write_home_mcp(env, &config);
}

#[tokio::test]
async fn a_tool_the_server_adds_is_offered_in_the_next_request_and_called() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    dynamic_server(&env, &evidence);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_test__add_tool", json!({})));
    server.enqueue(FakeReply::tool_call("mcp_test__late", json!({"text": "hi"})));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["add a tool"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", stderr(&output));
    let before = tool_names(&requests[1]);
    assert!(
        before.iter().any(|name| name == "mcp_test__add_tool"),
        "{before:?}"
    );
    assert!(!before.iter().any(|name| name == "mcp_test__late"), "{before:?}");
    let after = tool_names(&requests[2]);
    assert!(
        after.iter().any(|name| name == "mcp_test__late"),
        "the request right after the change offers the new tool: {after:?}"
    );
    assert!(after.iter().any(|name| name == "mcp_test__echo"), "{after:?}");
    assert_eq!(tool_messages(&requests[3]), ["added", "late: hi"]);
    assert!(
        stderr(&output).contains("MCP server 'test' changed its tools: ")
            && stderr(&output).contains("mcp_test__late"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_refresh_that_fails_keeps_the_last_good_list_and_says_so() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    dynamic_server(&env, &evidence);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_test__break_tool_list", json!({})));
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "still here"}),
    ));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["break the list"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "{}", stderr(&output));
    assert_eq!(
        tool_names(&requests[2]),
        tool_names(&requests[1]),
        "the last good list stays"
    );
    assert_eq!(tool_messages(&requests[3]), ["broken", "still here"]);
    let said = stderr(&output);
    assert!(
        said.contains("MCP server 'test' said its tools changed, but listing them again failed (")
            && said.contains("the tool list is broken on purpose")
            && said.contains("its last list stays"),
        "{said}"
    );
}

#[tokio::test]
async fn roots_list_answers_the_project_and_the_writable_roots() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    dynamic_server(&env, &evidence);
    let extra = env.root.path().join("shared space");
    std::fs::write(
        env.config_dir.join("settings.json"),
        json!({"sandbox": {"writableRoots": [extra.display().to_string()]}}).to_string(),
    )
    .unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_test__roots", json!({})));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["where are you"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    let answered = tool_messages(&requests[2]);
    let roots: Value = serde_json::from_str(&answered[0]).unwrap_or_else(|_| panic!("{answered:?}"));
    let uri = |path: &std::path::Path| format!("file://{}/", path.display().to_string().replace(' ', "%20"));
    assert_eq!(
        roots,
        json!([
            {"uri": uri(&env.project), "name": env.project.file_name().unwrap().to_string_lossy()},
            {"uri": uri(&extra), "name": "shared space"},
        ])
    );
}
