//! Elph's MCP client against a server that speaks MCP 2026-07-28, built with the official
//! TypeScript SDK v2 (`@modelcontextprotocol/server` from npm, installed once per target dir as
//! the other TypeScript tests install theirs; `tests/mcp_ts/server2026.mjs`), through the `elph`
//! binary: Elph opens with `server/discover` and never sends `initialize`, every request carries
//! the protocol version and Elph's capabilities in `_meta`, tools are listed and called, the
//! server's questions come back as "input required" results (its roots; a form for the user, in
//! the terminal UI and declined headless; its roots before it gives a prompt) and are answered, a
//! tool the server adds joins, and a server that starts later than rmcp's fixed 10 s probe is
//! still spoken to in 2026-07-28. The older revisions are tested against the servers in `mcp_ts.rs` and the other `mcp_*` files.

use std::path::{Path, PathBuf};

use serde_json::json;
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::acp_ts::npm_package_dir;
use super::mcp::{stderr, tool_messages, tool_names, wait_for_servers, write_home_mcp};
use super::run_e2e::run_elph;
use super::tui_pty_support::{Model, Tui};

/// The newest release on npm when this was written (`npm view @modelcontextprotocol/server
/// version`); its README says it implements the 2026-07-28 specification.
const TS_SERVER_VERSION: &str = "2.4.0";

pub(super) fn node() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("node"))
        .find(|path| path.is_file())
        .expect("these tests run the TypeScript SDK with node, which is not on PATH")
}

/// Where npm installed the SDK (blocking: call it off the async runtime).
pub(super) fn sdk_prefix() -> PathBuf {
    npm_package_dir("@modelcontextprotocol/server", TS_SERVER_VERSION)
}

/// The home mcp.json with the 2026 server as `ts`; `delay_ms`: how long it waits before it
/// reads its first message.
pub(super) fn configure(env: &TestEnv, prefix: &Path, evidence: &Path, delay_ms: Option<u64>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_ts/server2026.mjs");
    let mut args = vec![
        script.display().to_string(),
        prefix.display().to_string(),
        evidence.display().to_string(),
    ];
    args.extend(delay_ms.map(|ms| ms.to_string()));
    write_home_mcp(
        env,
        &json!({"servers": {"ts": {
            "command": node().display().to_string(),
            "args": args,
            "startupTimeoutMs": 60000,
        }}}),
    );
}

/// The methods Elph sent, in the order the server read them.
pub(super) fn methods(evidence: &Path) -> Vec<String> {
    json_lines(evidence)
        .iter()
        .map(|line| line["method"].as_str().unwrap().to_string())
        .collect()
}

/// Asserts that Elph opened with `server/discover`, never sent `initialize`, and put the
/// 2026-07-28 `_meta` (the revision, and capabilities with roots and elicitation) on every
/// request it sent.
pub(super) fn assert_spoken_in_2026(evidence: &Path) {
    let lines = json_lines(evidence);
    let methods = methods(evidence);
    assert_eq!(methods[0], "server/discover", "{methods:?}");
    assert!(
        !methods.iter().any(|method| method == "initialize"),
        "{methods:?}"
    );
    assert!(
        !methods.iter().any(|method| method == "notifications/initialized"),
        "{methods:?}"
    );
    for line in lines
        .iter()
        .filter(|line| !line["method"].as_str().unwrap().starts_with("notifications/"))
    {
        let meta = &line["meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
            "{line}"
        );
        let capabilities = &meta["io.modelcontextprotocol/clientCapabilities"];
        assert!(capabilities["roots"].is_object(), "{line}");
        assert!(capabilities["elicitation"].is_object(), "{line}");
    }
}

pub(super) fn file_uri(path: &Path) -> String {
    format!("file://{}/", path.display().to_string().replace(' ', "%20"))
}

#[tokio::test]
async fn a_2026_server_is_discovered_called_asked_for_roots_and_followed_without_initialize() {
    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    configure(&env, &prefix, &evidence, None);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_ts__echo", json!({"text": "from node"})));
    server.enqueue(FakeReply::tool_call("mcp_ts__roots", json!({})));
    server.enqueue(FakeReply::tool_call("mcp_ts__add_tool", json!({})));
    server.enqueue(FakeReply::tool_call("mcp_ts__late", json!({"text": "hi"})));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["use the node server"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 6, "{}", stderr(&output));
    let offered = tool_names(&requests[1]);
    for tool in ["mcp_ts__echo", "mcp_ts__roots", "mcp_ts__ask", "mcp_ts__add_tool"] {
        assert!(offered.iter().any(|name| name == tool), "{offered:?}");
    }
    assert!(!tool_names(&requests[3]).iter().any(|name| name == "mcp_ts__late"));
    assert!(
        tool_names(&requests[4]).iter().any(|name| name == "mcp_ts__late"),
        "{:?}",
        tool_names(&requests[4])
    );
    let answers = tool_messages(&requests[5]);
    assert_eq!(answers[0], "from node", "{answers:?}");
    // The roots came through the input-required round: the project first.
    assert_eq!(
        answers[1].lines().next(),
        Some(file_uri(&env.project).as_str()),
        "{answers:?}"
    );
    assert_eq!(answers[2..], ["added", "late: hi"], "{answers:?}");
    assert_spoken_in_2026(&evidence);
    let methods = methods(&evidence);
    // The tool list changes came on the stream Elph asked for.
    assert!(
        methods.iter().any(|method| method == "subscriptions/listen"),
        "{methods:?}"
    );
    // The roots question was answered by calling the tool again with the answer.
    assert_eq!(
        methods.iter().filter(|method| *method == "tools/call").count(),
        5,
        "{methods:?}"
    );
}

#[tokio::test]
async fn a_2026_servers_question_is_declined_headless_and_the_server_gets_the_decline() {
    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    configure(&env, &prefix, &evidence, None);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_ts__ask", json!({})));
    server.enqueue(FakeReply::text("nobody answered"));

    let output = run_elph(&env, &server, &["ask me"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let stderr = stderr(&output);
    assert!(
        stderr.contains("MCP server 'ts' asks: Which colour? (declined: headless runs cannot answer)"),
        "{stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{stderr}");
    assert_eq!(tool_messages(&requests[2]), ["decline"]);
    assert_spoken_in_2026(&evidence);
}

#[test]
fn a_2026_servers_question_is_answered_in_the_terminal_ui_form() {
    let prefix = sdk_prefix();
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    configure(&env, &prefix, &evidence, None);
    env.trust_project();
    let model = Model::start();
    model.server.enqueue_all([
        wait_for_servers(),
        FakeReply::tool_call("mcp_ts__ask", json!({})),
        FakeReply::text("thanks for the colour"),
    ]);
    let mut tui = Tui::start_with(&env, &model, 40, 120, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("ask me");
    tui.wait_for("MCP server 'ts' asks:");
    tui.wait_for("Which colour?");
    tui.press(b"teal");
    tui.wait_for("teal");
    tui.press(b"\r");
    tui.wait_for("thanks for the colour");
    tui.wait_idle();
    let requests = model.server.requests();
    assert_eq!(
        tool_messages(requests.last().unwrap()),
        ["colour: teal"],
        "{requests:#?}"
    );
    assert_spoken_in_2026(&evidence);
}

#[tokio::test]
async fn a_2026_server_that_starts_slower_than_a_fixed_probe_is_still_spoken_to_in_2026() {
    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    // rmcp's own negotiation gives `server/discover` 10 s, then sends `initialize` and breaks on
    // the late answer; Elph waits for the answer within the server's start budget (60 s here).
    configure(&env, &prefix, &evidence, Some(11_000));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_ts__echo",
        json!({"text": "late but here"}),
    ));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["use the slow server"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    assert_eq!(tool_messages(&requests[2]), ["late but here"]);
    assert_spoken_in_2026(&evidence);
    assert_eq!(
        methods(&evidence)
            .iter()
            .filter(|method| *method == "server/discover")
            .count(),
        2,
        "Elph's question, then rmcp's opening"
    );
}

#[tokio::test]
async fn a_2026_servers_prompt_that_asks_for_roots_first_becomes_the_turn() {
    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    configure(&env, &prefix, &evidence, None);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("working there"));

    let output = run_elph(&env, &server, &["/ts:where"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{}", stderr(&output));
    let user = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_string();
    assert_eq!(user, format!("Work in {}.", file_uri(&env.project)));
    assert_spoken_in_2026(&evidence);
    let methods = methods(&evidence);
    assert_eq!(
        methods.iter().filter(|method| *method == "prompts/get").count(),
        2,
        "asked, then asked again with the roots: {methods:?}"
    );
}
