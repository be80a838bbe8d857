//! Editor MCP servers over ACP: the SDK's client sends a stdio MCP server with `session/new`, the
//! model's call reaches it, a preToolUse hook can block it, and the server stops with the session.

use agent_client_protocol::v1::schema::{
    EnvVariable, McpServer, McpServerStdio, NewSessionRequest, SessionUpdate, StopReason,
};
use elph_agent::harness::ApprovalPolicy;
use serde_json::json;
use test_support::env::json_lines;
use test_support::fake_model::FakeReply;
use test_support::hook_scripts::live_group_members;

use super::acp::{Setup, finish, tool_text, within};
use super::mcp::wait_for_servers;

fn editor_server(setup: &Setup) -> (McpServer, std::path::PathBuf, std::path::PathBuf) {
    let started = setup.env.evidence("editor-mcp-started.jsonl");
    let calls = setup.env.evidence("editor-mcp-calls.jsonl");
    let binary = test_support::hook_scripts::test_support_binary("mcp-test-server");
    let server = McpServer::Stdio(McpServerStdio::new("test", binary).env(vec![
        EnvVariable::new("MCP_TEST_STARTED", started.display().to_string()),
        EnvVariable::new("MCP_TEST_CALLS", calls.display().to_string()),
    ]));
    (server, started, calls)
}

#[tokio::test]
async fn an_editor_stdio_server_is_started_called_guarded_by_hooks_and_stopped() {
    let setup = Setup::new().await;
    // A home hook (no trust needed, like the editor's servers) that blocks the sleep tool.
    let guard = test_support::hook_scripts::write_script(
        &setup.env.config_dir.join("hooks"),
        "no-sleep.sh",
        "cat >/dev/null\necho '{\"block\": true, \"reason\": \"no sleeping\"}'",
    );
    setup.env.write_home_hooks(&json!({"hooks": [{
        "id": "no-sleep", "event": "preToolUse", "command": guard.display().to_string(),
        "matcher": {"toolNames": ["mcp_test__sleep"]}
    }]}));
    // Servers start in the background: the model waits for them, then has their tools.
    setup.server.enqueue(wait_for_servers());
    setup.server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "from the editor's server"}),
    ));
    setup
        .server
        .enqueue(FakeReply::tool_call("mcp_test__sleep", json!({"ms": 5})));
    setup.server.enqueue(FakeReply::text("done"));

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let caps = &client.init.agent_capabilities.mcp_capabilities;
    assert!(caps.http && !caps.sse, "mcpCapabilities: {caps:?}");

    let (server, started, calls) = editor_server(&setup);
    let response = within(
        "session/new",
        client
            .cx
            .send_request(NewSessionRequest::new(&setup.env.project).mcp_servers(vec![server]))
            .block_task(),
    )
    .await
    .expect("session/new answered");
    let session_id = response.session_id.0.to_string();

    let result = client
        .prompt(&session_id, "use the editor's tools")
        .await
        .unwrap();
    assert_eq!(result.stop_reason, StopReason::EndTurn);

    let requests = setup.server.requests();
    let names: Vec<String> = requests[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.iter().any(|n| n == "mcp_test__echo"), "{names:?}");
    // The echo call reached the server; the sleep call was blocked before it.
    assert_eq!(
        json_lines(&calls),
        [json!({"tool": "echo", "arguments": {"text": "from the editor's server"}})]
    );
    let updates = client.drain();
    let finished: Vec<String> = updates
        .iter()
        .filter_map(|u| match &u.update {
            SessionUpdate::ToolCallUpdate(update) => update.fields.content.as_deref().map(tool_text),
            _ => None,
        })
        .collect();
    let all = finished.join("\n");
    assert!(all.contains("from the editor's server"), "{all}");
    assert!(all.contains("no sleeping"), "{all}");

    let pid = json_lines(&started)[0]["pid"].as_i64().unwrap() as i32;
    finish(client, agent).await;
    let live = live_group_members(pid, std::time::Duration::from_secs(10));
    assert!(
        live.is_empty(),
        "the editor's server outlived its session: {live:?}"
    );
}

#[tokio::test]
async fn an_image_prompt_is_refused_with_a_clear_error_and_nothing_reaches_the_model() {
    use agent_client_protocol::v1::schema::{ContentBlock, ImageContent, PromptRequest};
    let setup = Setup::new().await;
    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    assert!(!client.init.agent_capabilities.prompt_capabilities.image);
    let session = client.new_session(&setup.env.project).await;
    let request = PromptRequest::new(
        session.clone(),
        vec![
            ContentBlock::from("what is in this screenshot?".to_string()),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
        ],
    );
    let error = within("session/prompt", client.cx.send_request(request).block_task())
        .await
        .expect_err("an image prompt is refused");
    assert!(error.message.contains("an image"), "{error:?}");
    assert!(setup.server.requests().is_empty(), "nothing reached the model");
    // The session still works.
    client.prompt(&session, "plain text").await.unwrap();
    finish(client, agent).await;
}

#[tokio::test]
async fn session_load_starts_the_editors_http_server_with_its_headers() {
    use agent_client_protocol::v1::schema::{HttpHeader, LoadSessionRequest, McpServerHttp};
    let setup = Setup::new().await;
    setup.server.enqueue(FakeReply::text("noted"));
    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&setup.env.project).await;
    client.prompt(&session, "remember this").await.unwrap();
    finish(client, agent).await;

    let http = super::mcp::HttpMcpServer::start().await;
    let server = McpServer::Http(
        McpServerHttp::new("remote", http.url.clone())
            .headers(vec![HttpHeader::new("Authorization", "Bearer editor-token")]),
    );
    setup.server.enqueue(wait_for_servers());
    setup.server.enqueue(FakeReply::tool_call(
        "mcp_remote__shout",
        json!({"text": "quiet"}),
    ));
    setup.server.enqueue(FakeReply::text("ok"));
    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    within(
        "session/load",
        client
            .cx
            .send_request(
                LoadSessionRequest::new(session.clone(), &setup.env.project).mcp_servers(vec![server]),
            )
            .block_task(),
    )
    .await
    .expect("session/load answered");
    let result = client.prompt(&session, "shout").await.unwrap();
    assert_eq!(result.stop_reason, StopReason::EndTurn);
    let requests = setup.server.requests();
    let last = requests.last().unwrap();
    let tool_result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(tool_result["content"], "QUIET");
    assert_eq!(*http.authorizations.lock().unwrap(), ["Bearer editor-token"]);
    finish(client, agent).await;
}
