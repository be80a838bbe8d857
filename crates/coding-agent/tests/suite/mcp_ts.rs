//! Elph's MCP client against a server built with the newest official TypeScript SDK
//! (`@modelcontextprotocol/sdk` from npm, installed once per target dir as the ACP TypeScript
//! tests install theirs; `tests/mcp_ts/server.mjs`): the protocol revision both sides agree on,
//! a call, and a tool the server adds during the session (`notifications/tools/list_changed` as
//! that SDK sends it).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::acp_ts::npm_package_dir;
use super::mcp::{stderr, tool_messages, tool_names, wait_for_servers, write_home_mcp};
use super::run_e2e::run_elph;

/// The newest release on npm when this was written (`npm view @modelcontextprotocol/sdk version`).
const TS_SDK_VERSION: &str = "1.32.2";

fn node() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("node"))
        .find(|path| path.is_file())
        .expect("these tests run the TypeScript SDK with node, which is not on PATH")
}

#[tokio::test]
async fn the_typescript_sdk_v1_server_is_asked_for_2026_then_agrees_on_2025_11_25_and_a_tool_it_adds_joins() {
    let prefix = tokio::task::spawn_blocking(|| npm_package_dir("@modelcontextprotocol/sdk", TS_SDK_VERSION))
        .await
        .expect("install the SDK");
    let env = TestEnv::new();
    let evidence = env.evidence("ts-server.jsonl");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_ts/server.mjs");
    write_home_mcp(
        &env,
        &json!({"servers": {"ts": {
            "command": node().display().to_string(),
            "args": [script.display().to_string(), prefix.display().to_string(), evidence.display().to_string()],
            "startupTimeoutMs": 60000,
        }}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_ts__echo", json!({"text": "from node"})));
    server.enqueue(FakeReply::tool_call("mcp_ts__add_tool", json!({})));
    server.enqueue(FakeReply::tool_call("mcp_ts__late", json!({"text": "hi"})));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["use the node server"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 5, "{}", stderr(&output));
    // Elph asks first whether the server speaks 2026-07-28 (`server/discover`); this SDK does not
    // know the method, so Elph initializes with 2025-11-25, on the same connection.
    let methods: Vec<Value> = json_lines(&evidence)
        .into_iter()
        .filter_map(|line| line.get("method").cloned())
        .collect();
    assert_eq!(
        methods[..3],
        [
            json!("server/discover"),
            json!("initialize"),
            json!("notifications/initialized")
        ],
        "{methods:?}"
    );
    let initialize: Vec<Value> = json_lines(&evidence)
        .into_iter()
        .filter_map(|line| line.get("initialize").cloned())
        .collect();
    assert_eq!(initialize.len(), 1, "{initialize:?}");
    assert_eq!(initialize[0]["offered"], "2025-11-25", "{initialize:?}");
    assert_eq!(initialize[0]["answered"], "2025-11-25", "{initialize:?}");
    assert!(
        !initialize[0]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{initialize:?}"
    );
    assert!(!tool_names(&requests[2]).iter().any(|name| name == "mcp_ts__late"));
    assert!(
        tool_names(&requests[3]).iter().any(|name| name == "mcp_ts__late"),
        "{:?}",
        tool_names(&requests[3])
    );
    assert_eq!(tool_messages(&requests[4]), ["from node", "added", "late: hi"]);
}
