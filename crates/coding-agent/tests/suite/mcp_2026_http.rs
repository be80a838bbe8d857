//! Elph's MCP client against streamable HTTP servers of both revisions, through the `elph`
//! binary: one built with the official TypeScript SDK v2 (`@modelcontextprotocol/server`,
//! `createMcpHandler` behind node's HTTP server; `tests/mcp_ts/http2026.mjs`), which speaks MCP
//! 2026-07-28 and is spoken to in it (`server/discover`, no `initialize`, `_meta` on every
//! request, input-required rounds, `subscriptions/listen`); and one built with the TypeScript SDK
//! 1.32.2 (`tests/mcp_ts/http_server.mjs`, with sessions), which refuses `server/discover` with a
//! 400 and is then initialized with 2025-11-25. The OAuth answers (401: log in) are tested in
//! `mcp_oauth.rs`, against a server that now hears `server/discover` first.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::acp_ts::npm_package_dir;
use super::mcp::{stderr, tool_messages, tool_names, wait_for_servers, write_home_mcp};
use super::run_e2e::run_elph;

/// The SDK v2 release the stdio tests use (`mcp_2026.rs`).
const TS_SERVER_VERSION: &str = "2.4.0";
/// The SDK 1.x release the stdio tests use (`mcp_ts.rs`).
const TS_SDK_V1_VERSION: &str = "1.32.2";

fn node() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("node"))
        .find(|path| path.is_file())
        .expect("these tests run the TypeScript SDK with node, which is not on PATH")
}

/// A node HTTP server of `tests/mcp_ts`, killed when dropped.
struct NodeServer {
    child: Child,
    url: String,
    evidence: PathBuf,
}

impl NodeServer {
    /// Starts `script` with the SDK installed under `prefix` and waits until it listens.
    fn start(env: &TestEnv, script: &str, prefix: &Path) -> NodeServer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/mcp_ts")
            .join(script);
        let port_file = env.evidence("http-server-port");
        let evidence = env.evidence("http-server.jsonl");
        let mut child = Command::new(node())
            .arg(&script)
            .arg(prefix)
            .arg(&evidence)
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start node with the HTTP MCP server");
        // Node loads the SDK slowly on a loaded machine.
        let deadline = Instant::now() + Duration::from_secs(120);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .filter(|port| !port.is_empty())
            {
                break port;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the HTTP MCP server exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the HTTP MCP server listens within 120 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        NodeServer {
            child,
            url: format!("http://127.0.0.1:{}/mcp", port.trim()),
            evidence,
        }
    }
}

impl Drop for NodeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON-RPC methods Elph POSTed, in the order the server read them.
fn methods(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|line| line["method"].as_str().map(str::to_string))
        .collect()
}

fn file_uri(path: &Path) -> String {
    format!("file://{}/", path.display().to_string().replace(' ', "%20"))
}

#[tokio::test]
async fn a_2026_http_server_is_discovered_called_asked_and_followed_without_initialize() {
    let prefix =
        tokio::task::spawn_blocking(|| npm_package_dir("@modelcontextprotocol/server", TS_SERVER_VERSION))
            .await
            .expect("install the SDK");
    let env = TestEnv::new();
    let http = NodeServer::start(&env, "http2026.mjs", &prefix);
    write_home_mcp(
        &env,
        &json!({"servers": {"ts": {"url": http.url, "startupTimeoutMs": 60000}}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_ts__echo", json!({"text": "over http"})));
    server.enqueue(FakeReply::tool_call("mcp_ts__roots", json!({})));
    server.enqueue(FakeReply::tool_call("mcp_ts__ask", json!({})));
    server.enqueue(FakeReply::tool_call("mcp_ts__add_tool", json!({})));
    server.enqueue(FakeReply::tool_call("mcp_ts__late", json!({"text": "hi"})));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["use the http server"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let stderr = stderr(&output);
    let requests = server.requests();
    assert_eq!(requests.len(), 7, "{stderr}");
    let offered = tool_names(&requests[1]);
    for tool in ["mcp_ts__echo", "mcp_ts__roots", "mcp_ts__ask", "mcp_ts__add_tool"] {
        assert!(offered.iter().any(|name| name == tool), "{offered:?}");
    }
    assert!(!tool_names(&requests[4]).iter().any(|name| name == "mcp_ts__late"));
    assert!(
        tool_names(&requests[5]).iter().any(|name| name == "mcp_ts__late"),
        "{:?}",
        tool_names(&requests[5])
    );
    let answers = tool_messages(&requests[6]);
    assert_eq!(answers[0], "over http", "{answers:?}");
    // The roots came through an input-required round: the project first.
    assert_eq!(
        answers[1].lines().next(),
        Some(file_uri(&env.project).as_str()),
        "{answers:?}"
    );
    // The form came through one too, and a headless run declines it.
    assert_eq!(answers[2], "decline", "{answers:?}");
    assert!(
        stderr.contains("MCP server 'ts' asks: Which colour? (declined: headless runs cannot answer)"),
        "{stderr}"
    );
    assert_eq!(answers[3..], ["added", "late: hi"], "{answers:?}");

    let lines = json_lines(&http.evidence);
    let methods = methods(&lines);
    assert_eq!(methods[0], "server/discover", "{methods:?}");
    assert!(
        !methods
            .iter()
            .any(|method| method == "initialize" || method == "notifications/initialized"),
        "{methods:?}"
    );
    for line in lines.iter().filter(|line| {
        line["method"]
            .as_str()
            .is_some_and(|method| !method.starts_with("notifications/"))
    }) {
        let meta = &line["meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{line}"
        );
        let capabilities = &meta["io.modelcontextprotocol/clientCapabilities"];
        assert!(capabilities["roots"].is_object(), "{line}");
        assert!(capabilities["elicitation"].is_object(), "{line}");
    }
    // The tool list change came on the stream Elph asked for.
    assert!(
        methods.iter().any(|method| method == "subscriptions/listen"),
        "{methods:?}"
    );
    // echo, roots twice (asked, then called again with the roots), ask twice, add_tool, late.
    assert_eq!(
        methods.iter().filter(|method| *method == "tools/call").count(),
        7,
        "{methods:?}"
    );
    // No session: 2026-07-28 has none, so no GET stream and no DELETE.
    assert!(lines.iter().all(|line| line.get("http").is_none()), "{lines:?}");
}

#[tokio::test]
async fn an_http_server_of_2025_refuses_discover_and_is_initialized_with_2025_11_25() {
    let prefix =
        tokio::task::spawn_blocking(|| npm_package_dir("@modelcontextprotocol/sdk", TS_SDK_V1_VERSION))
            .await
            .expect("install the SDK");
    let env = TestEnv::new();
    let http = NodeServer::start(&env, "http_server.mjs", &prefix);
    write_home_mcp(
        &env,
        &json!({"servers": {"old": {"url": http.url, "startupTimeoutMs": 60000}}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_old__echo",
        json!({"text": "still here"}),
    ));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["use the old server"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    assert!(
        tool_names(&requests[1])
            .iter()
            .any(|name| name == "mcp_old__echo"),
        "{:?}",
        tool_names(&requests[1])
    );
    assert_eq!(tool_messages(&requests[2]), ["still here"]);

    let lines = json_lines(&http.evidence);
    let posts: Vec<&Value> = lines.iter().filter(|line| line["http"] == "POST").collect();
    // The SDK refuses a request outside a session with a 400 (its JSON-RPC error), which Elph
    // takes for an earlier revision.
    assert_eq!(
        posts[0],
        &json!({"http": "POST", "method": "server/discover", "offered": null, "session": false, "status": 400}),
        "{lines:?}"
    );
    assert_eq!(
        posts[1],
        &json!({"http": "POST", "method": "initialize", "offered": "2025-11-25", "session": false, "status": 200}),
        "{lines:?}"
    );
    let methods = methods(&lines);
    assert_eq!(methods[2], "notifications/initialized", "{methods:?}");
    // Everything after `initialize` belongs to the session it opened.
    let call = posts
        .iter()
        .find(|line| line["method"] == "tools/call")
        .expect("the tool was called");
    assert_eq!(call["session"], true, "{lines:?}");
    assert_eq!(call["status"], 200, "{lines:?}");
    assert_eq!(
        methods
            .iter()
            .filter(|method| *method == "server/discover")
            .count(),
        1,
        "{methods:?}"
    );
}
