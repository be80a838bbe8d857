//! A 2026-07-28 server's resources and list changes, against the official TypeScript SDK v2
//! server of `mcp_2026.rs` (`tests/mcp_ts/server2026.mjs`), through the `elph` binary or `elph
//! acp`'s own code: a resource that asks for the client's roots, or for the user's input, before
//! it gives its text is read once that is answered (in the terminal UI's form; declined
//! headless); a prompt the server adds at runtime becomes a command (and one it disables stops
//! being one) and a resource it adds joins the list the model reads, both followed through
//! `subscriptions/listen`.

use agent_client_protocol::v1::schema::StopReason;
use elph_agent::harness::ApprovalPolicy;
use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::acp::{Setup, finish, last_commands};
use super::mcp::{stderr, tool_messages, wait_for_servers};
use super::mcp_2026::{assert_spoken_in_2026, configure, file_uri, methods, sdk_prefix};
use super::run_e2e::run_elph;
use super::tui_pty_support::{Model, Tui};

fn read(uri: &str) -> FakeReply {
    FakeReply::tool_call("mcp_read_resource", json!({"server": "ts", "uri": uri}))
}

fn count(methods: &[String], method: &str) -> usize {
    methods.iter().filter(|each| *each == method).count()
}

/// The description of the read tool offered in `request`, or "" when it is not offered.
fn read_tool_description(request: &Value) -> String {
    request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["function"]["name"] == "mcp_read_resource")
        .and_then(|tool| tool["function"]["description"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_2026_resource_that_asks_for_roots_first_is_read_once_they_are_given() {
    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    configure(&env, &prefix, &evidence, None);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue_all([wait_for_servers(), read("ts://where"), FakeReply::text("read")]);

    let output = run_elph(&env, &server, &["where do you work"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    assert!(
        read_tool_description(&requests[1]).contains("<ts://where>"),
        "{}",
        read_tool_description(&requests[1])
    );
    assert_eq!(
        tool_messages(&requests[2]),
        [format!("Resource for {}.", file_uri(&env.project))]
    );
    assert_spoken_in_2026(&evidence);
    assert_eq!(
        count(&methods(&evidence), "resources/read"),
        2,
        "asked, then asked again with the roots: {:?}",
        methods(&evidence)
    );
}

#[tokio::test]
async fn a_2026_resources_question_is_declined_headless_and_the_read_gets_the_decline() {
    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    configure(&env, &prefix, &evidence, None);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue_all([
        wait_for_servers(),
        read("ts://colour"),
        FakeReply::text("nobody answered"),
    ]);

    let output = run_elph(&env, &server, &["read the colour"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(
        said.contains(
            "MCP server 'ts' asks: Which colour for the resource? (declined: headless runs cannot answer)"
        ),
        "{said}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{said}");
    assert_eq!(tool_messages(&requests[2]), ["resource decline"]);
    assert_spoken_in_2026(&evidence);
}

#[test]
fn a_2026_resources_question_is_answered_in_the_terminal_ui_form_and_the_read_returns() {
    let prefix = sdk_prefix();
    let env = TestEnv::new();
    let evidence = env.evidence("ts-2026.jsonl");
    configure(&env, &prefix, &evidence, None);
    env.trust_project();
    let model = Model::start();
    model.server.enqueue_all([
        wait_for_servers(),
        read("ts://colour"),
        FakeReply::text("thanks for the resource"),
    ]);
    let mut tui = Tui::start_with(&env, &model, 40, 120, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("read the colour");
    tui.wait_for("MCP server 'ts' asks:");
    tui.wait_for("Which colour for the resource?");
    tui.press(b"amber");
    tui.wait_for("amber");
    tui.press(b"\r");
    tui.wait_for("thanks for the resource");
    tui.wait_idle();
    let requests = model.server.requests();
    assert_eq!(
        tool_messages(requests.last().unwrap()),
        ["resource colour: amber"],
        "{requests:#?}"
    );
    assert_spoken_in_2026(&evidence);
}

/// The prompt and resource the server adds while a tool runs are in before that tool's turn
/// ends: the model's next request lists the new resource (the tool's answer waited for the
/// listing), the editor's commands are updated after the answer (with the new prompt, without the
/// one the server disabled), and both work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_servers_new_prompt_becomes_a_command_and_its_new_resource_is_read() {
    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let setup = Setup::new().await;
    let evidence = setup.env.evidence("ts-2026.jsonl");
    configure(&setup.env, &prefix, &evidence, None);
    setup.server.enqueue_all([
        wait_for_servers(),
        FakeReply::tool_call("mcp_ts__change_offers", json!({})),
        read("ts://late"),
        FakeReply::text("changed"),
        FakeReply::text("late prompt done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&setup.env.project).await;

    let answer = client
        .prompt(&session, "change what you offer")
        .await
        .expect("answered");
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    // The session tells the commands between operations: after the answer.
    let updates = client
        .wait_for("the new prompt as a command", |update| {
            last_commands(std::slice::from_ref(update))
                .is_some_and(|commands| commands.iter().any(|name| name == "ts:late"))
        })
        .await;
    let commands = last_commands(&updates).expect("commands were advertised");
    assert!(!commands.iter().any(|name| name == "ts:where"), "{commands:?}");

    let answer = client.prompt(&session, "/ts:late").await.expect("answered");
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let requests = setup.server.requests();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    let before = read_tool_description(&requests[1]);
    assert!(before.contains("<ts://where>"), "{before}");
    assert!(!before.contains("ts://late"), "{before}");
    let after = read_tool_description(&requests[2]);
    assert!(
        after.contains("- server 'ts': late <ts://late>: A resource added late."),
        "the request right after the change lists the new resource: {after}"
    );
    assert_eq!(tool_messages(&requests[3]), ["changed", "late resource text"]);
    let user = requests[4]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_string();
    assert_eq!(user, "The late prompt.");
    finish(client, agent).await;

    assert_spoken_in_2026(&evidence);
    let methods = methods(&evidence);
    assert!(
        methods.iter().any(|method| method == "subscriptions/listen"),
        "{methods:?}"
    );
    assert!(count(&methods, "prompts/list") >= 2, "{methods:?}");
    assert!(count(&methods, "resources/list") >= 2, "{methods:?}");
}

/// An editor that declares form elicitation answers the question a 2026 server asks before it
/// gives a resource, through ACP's `elicitation/create` (the official TypeScript ACP SDK as the
/// editor, every message checked against its schema).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_editor_answers_a_2026_resources_question_and_the_read_returns() {
    use super::acp_ts::Scenario;

    let prefix = tokio::task::spawn_blocking(sdk_prefix)
        .await
        .expect("install the SDK");
    let setup = Setup::new().await;
    let evidence = setup.env.evidence("ts-2026.jsonl");
    configure(&setup.env, &prefix, &evidence, None);
    setup.server.enqueue_all([
        wait_for_servers(),
        read("ts://colour"),
        FakeReply::text("the editor answered"),
    ]);
    let mut scenario = Scenario::new(&setup.env, &["acp", "--model", "fake/gpt-test"])
        .step(
            "session/new",
            json!({"cwd": setup.env.project, "mcpServers": []}),
            Some("session"),
        )
        .step(
            "session/prompt",
            json!({"sessionId": "${session.sessionId}", "prompt": [{"type": "text", "text": "read the colour"}]}),
            None,
        );
    scenario.initialize = json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}});
    scenario.elicitation = json!({"action": "accept", "content": {"colour": "violet"}});
    let run = scenario.run().await;
    assert_eq!(run.ok(2)["stopReason"], "end_turn");
    let asked = &run.report["elicitations"];
    assert_eq!(asked.as_array().map(Vec::len), Some(1), "{asked}");
    assert_eq!(
        asked[0]["message"],
        "MCP server 'ts' asks: Which colour for the resource?"
    );
    let requests = setup.server.requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert_eq!(tool_messages(&requests[2]), ["resource colour: violet"]);
    assert_spoken_in_2026(&evidence);
}
