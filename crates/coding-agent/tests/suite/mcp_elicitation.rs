//! MCP elicitation end to end (docs/mcp.md, "Elicitation"), against the reference server
//! `@modelcontextprotocol/server-everything` from npm (installed once per target dir): its
//! `trigger-elicitation-request` tool asks for a form of every kind of field (text with formats,
//! numbers with bounds, a boolean, single and multiple choices with and without titles) and
//! returns what it got. Through the `elph` binary: the terminal UI's form (accept, decline,
//! cancel, and a cancelled turn that withdraws it), a headless run that declines and says so, and
//! an editor over ACP that answers with the official TypeScript SDK (or, without the capability,
//! gets a notice).

use std::path::PathBuf;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::acp::Setup;
use super::acp_ts::{Scenario, npm_package_dir};
use super::mcp::{stderr, tool_messages, wait_for_servers, write_home_mcp};
use super::run_e2e::run_elph;
use super::tui_pty_support::{Model, Tui};

const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
const EVERYTHING_VERSION: &str = "2026.8.31";
const ELICIT: &str = "mcp_everything__trigger-elicitation-request";

/// server-everything's entry point, installed from npm once per target dir.
fn everything_entry() -> PathBuf {
    npm_package_dir(EVERYTHING, EVERYTHING_VERSION)
        .join("node_modules")
        .join(EVERYTHING)
        .join("dist/index.js")
}

/// `node`'s full path: the server's command (its environment is the allowlisted one).
fn node() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("node"))
        .find(|path| path.is_file())
        .expect("these tests need node on PATH")
}

/// The home mcp.json with server-everything as `everything`.
fn configure(env: &TestEnv, entry: &std::path::Path) {
    write_home_mcp(
        env,
        &json!({"mcpServers": {"everything": {
            "command": node().display().to_string(),
            "args": [entry.display().to_string(), "stdio"],
            "startupTimeoutMs": 60000
        }}}),
    );
}

/// The model's script for one elicitation: wait for the servers, call the tool, then say `done`.
fn elicit_script(done: &str) -> [FakeReply; 3] {
    [
        wait_for_servers(),
        FakeReply::tool_call(ELICIT, json!({})),
        FakeReply::text(done),
    ]
}

/// The tool result the model got for the elicitation (in the request after the call).
fn elicitation_result(requests: &[Value]) -> String {
    requests
        .iter()
        .flat_map(tool_messages)
        .find(|text| text.contains("Raw result"))
        .unwrap_or_else(|| panic!("no elicitation result reached the model: {requests:#?}"))
}

#[test]
fn the_terminal_ui_form_sends_the_typed_and_default_values_to_the_server() {
    let env = TestEnv::new();
    configure(&env, &everything_entry());
    env.trust_project();
    let model = Model::start();
    model.server.enqueue_all(elicit_script("thanks for the form"));
    let mut tui = Tui::start_with(&env, &model, 40, 120, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("fill in the form");
    tui.wait_for("MCP server 'everything' asks:");
    let screen = tui.contents();
    assert!(
        screen.contains("Please provide inputs for the following fields:"),
        "{screen}"
    );
    assert!(screen.contains("should not ask for passwords"), "{screen}");
    // The first field is the required name (titled "String" by the server), with its description.
    assert!(screen.contains("› String *:"), "{screen}");
    assert!(screen.contains("Your full, legal name"), "{screen}");
    // A default shows in its field.
    assert!(screen.contains("It was a dark and stormy night."), "{screen}");
    // Enter on an empty required field sends nothing and says why.
    tui.press(b"\r");
    tui.wait_for("String: required");
    tui.press(b"Ada Lovelace");
    tui.wait_for("Ada Lovelace");
    tui.press(b"\t");
    tui.press(b" ");
    tui.wait_for("[x] yes");
    tui.press(b"\r");
    tui.wait_for("thanks for the form");
    tui.wait_idle();
    let result = elicitation_result(&model.server.requests());
    assert!(
        result.contains("User provided the requested information"),
        "{result}"
    );
    assert!(result.contains("- Name: Ada Lovelace"), "{result}");
    assert!(result.contains("- Agreed to terms: true"), "{result}");
    assert!(result.contains("- Favorite Integer: 42"), "{result}");
    assert!(
        result.contains("\"untitledMultipleSelectEnum\": [\n      \"Guitar\"\n    ]"),
        "{result}"
    );
    assert!(
        result.contains("\"titledSingleSelectEnum\": \"hero-1\""),
        "{result}"
    );
    assert!(
        tui.contents()
            .contains("sent your answer to MCP server 'everything'")
    );
}

#[test]
fn ctrl_d_declines_and_esc_cancels_the_servers_question() {
    let env = TestEnv::new();
    configure(&env, &everything_entry());
    env.trust_project();
    let model = Model::start();
    model.server.enqueue_all(elicit_script("declined, fine"));
    model.server.enqueue_all([
        FakeReply::tool_call(ELICIT, json!({})),
        FakeReply::text("cancelled, fine"),
    ]);
    let mut tui = Tui::start_with(&env, &model, 40, 120, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("ask me");
    tui.wait_for("MCP server 'everything' asks:");
    tui.press(b"\x04");
    tui.wait_for("declined, fine");
    tui.wait_idle();
    let requests = model.server.requests();
    let declined = elicitation_result(&requests);
    assert!(
        declined.contains("User declined to provide the requested information"),
        "{declined}"
    );

    tui.send("ask me again");
    tui.wait_for("MCP server 'everything' asks:");
    tui.press(b"\x1b");
    tui.wait_for("cancelled, fine");
    tui.wait_idle();
    let requests = model.server.requests();
    let cancelled = tool_messages(requests.last().unwrap());
    assert!(
        cancelled
            .iter()
            .any(|text| text.contains("User cancelled the elicitation dialog")),
        "{cancelled:?}"
    );
}

#[test]
fn a_link_question_shows_the_whole_address_and_enter_agrees_to_open_it() {
    let env = TestEnv::new();
    configure(&env, &everything_entry());
    env.trust_project();
    let model = Model::start();
    let url = "https://example.org/verify?code=42";
    model.server.enqueue_all([
        wait_for_servers(),
        FakeReply::tool_call(
            "mcp_everything__trigger-url-elicitation",
            json!({"url": url, "message": "Confirm your account in the browser"}),
        ),
        FakeReply::text("link handled"),
    ]);
    let mut tui = Tui::start_with(&env, &model, 40, 120, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("verify me");
    tui.wait_for("MCP server wants you to open a link");
    let screen = tui.contents();
    assert!(screen.contains("Confirm your account in the browser"), "{screen}");
    assert!(screen.contains(url), "{screen}");
    assert!(screen.contains("should not ask for passwords"), "{screen}");
    tui.press(b"\r");
    tui.wait_for("link handled");
    tui.wait_idle();
    let result = elicitation_result(&model.server.requests());
    assert!(
        result.contains("User completed the URL elicitation flow"),
        "{result}"
    );
    assert!(result.contains(&format!("URL: {url}")), "{result}");
}

#[test]
fn a_cancelled_turn_withdraws_the_open_form() {
    let env = TestEnv::new();
    configure(&env, &everything_entry());
    env.trust_project();
    let model = Model::start();
    model
        .server
        .enqueue_all([wait_for_servers(), FakeReply::tool_call(ELICIT, json!({}))]);
    let mut tui = Tui::start_with(&env, &model, 40, 120, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("ask and give up");
    tui.wait_for("MCP server 'everything' asks:");
    // Ctrl+C cancels the turn; the form goes with it.
    tui.press(b"\x03");
    tui.wait_until("the form to close", |screen| {
        !screen.contains("MCP server 'everything' asks:")
    });
    tui.wait_idle();
    assert_eq!(
        model.server.requests().len(),
        2,
        "the turn ended without another request"
    );
}

#[tokio::test]
async fn a_headless_run_declines_and_says_which_server_asked_what() {
    let env = TestEnv::new();
    let entry = tokio::task::spawn_blocking(everything_entry).await.unwrap();
    configure(&env, &entry);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue_all(elicit_script("nobody answered"));

    let output = run_elph(&env, &server, &["fill in the form"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let stderr = stderr(&output);
    assert!(
        stderr.contains(
            "MCP server 'everything' asks: Please provide inputs for the following fields: \
             (declined: headless runs cannot answer)"
        ),
        "{stderr}"
    );
    let result = elicitation_result(&server.requests());
    assert!(
        result.contains("User declined to provide the requested information"),
        "{result}"
    );
}

const ACP_ARGS: &[&str] = &["acp", "--model", "fake/gpt-test"];

fn acp_session(env: &TestEnv) -> Value {
    json!({"cwd": env.project, "mcpServers": []})
}

fn acp_prompt() -> Value {
    json!({"sessionId": "${session.sessionId}", "prompt": [{"type": "text", "text": "fill it in"}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_editor_that_declares_elicitation_answers_the_form() {
    let setup = Setup::new().await;
    let entry = tokio::task::spawn_blocking(everything_entry).await.unwrap();
    configure(&setup.env, &entry);
    setup.server.enqueue_all(elicit_script("the editor answered"));
    let mut scenario = Scenario::new(&setup.env, ACP_ARGS)
        .step("session/new", acp_session(&setup.env), Some("session"))
        .step("session/prompt", acp_prompt(), None);
    scenario.initialize = json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}});
    scenario.elicitation =
        json!({"action": "accept", "content": {"name": "Grace Hopper", "check": true, "integer": 7}});
    let run = scenario.run().await;
    let asked = &run.report["elicitations"];
    assert_eq!(asked.as_array().map(Vec::len), Some(1), "{asked}");
    assert_eq!(asked[0]["mode"], "form");
    assert_eq!(asked[0]["sessionId"], run.ok(1)["sessionId"]);
    assert_eq!(
        asked[0]["message"],
        "MCP server 'everything' asks: Please provide inputs for the following fields:"
    );
    assert_eq!(asked[0]["requestedSchema"]["required"], json!(["name"]));
    assert_eq!(run.ok(2)["stopReason"], "end_turn");
    let result = elicitation_result(&setup.server.requests());
    assert!(result.contains("- Name: Grace Hopper"), "{result}");
    assert!(result.contains("- Favorite Integer: 7"), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_editor_whose_answer_breaks_the_form_or_that_cannot_ask_gets_a_decline() {
    let setup = Setup::new().await;
    let entry = tokio::task::spawn_blocking(everything_entry).await.unwrap();
    configure(&setup.env, &entry);

    // An integer out of its bounds (1-100): the server never sees it.
    setup.server.enqueue_all(elicit_script("declined for the editor"));
    let mut scenario = Scenario::new(&setup.env, ACP_ARGS)
        .step("session/new", acp_session(&setup.env), Some("session"))
        .step("session/prompt", acp_prompt(), None);
    scenario.initialize = json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}});
    scenario.elicitation = json!({"action": "accept", "content": {"name": "Grace", "integer": 500}});
    let run = scenario.run().await;
    let result = elicitation_result(&setup.server.requests());
    assert!(result.contains("User declined"), "{result}");
    assert!(
        thoughts(&run).contains("does not fit its form (Integer: must be at most 100); declined"),
        "{}",
        thoughts(&run)
    );

    // No elicitation capability: a notice, and the server's question declined.
    let before = setup.server.requests().len();
    setup.server.enqueue_all(elicit_script("the editor cannot ask"));
    let run = Scenario::new(&setup.env, ACP_ARGS)
        .step("session/new", acp_session(&setup.env), Some("session"))
        .step("session/prompt", acp_prompt(), None)
        .run()
        .await;
    assert_eq!(run.report["elicitations"], json!([]));
    assert!(
        thoughts(&run).contains(
            "MCP server 'everything' asks: Please provide inputs for the following fields: \
             (declined: the editor does not declare form elicitation)"
        ),
        "{}",
        thoughts(&run)
    );
    let result = elicitation_result(&setup.server.requests()[before..]);
    assert!(result.contains("User declined"), "{result}");
}

/// Every thought chunk the editor got (Elph's notices), joined.
fn thoughts(run: &super::acp_ts::Run) -> String {
    run.updates("agent_thought_chunk")
        .iter()
        .map(|update| update["content"]["text"].as_str().unwrap_or_default().to_string())
        .collect()
}
