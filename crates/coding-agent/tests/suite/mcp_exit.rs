//! A stdio server that exits by itself between calls (docs/mcp.md, "Life of a server"): the
//! session hears of it when it happens, not at the server's next call. An editor that declares
//! `session.notices` gets a `notice` at once, one that does not gets it with its next prompt's
//! answer, the terminal UI shows it while it waits for the user; the server's tools leave the
//! model's list (the system prompt says why), its prompts leave the commands, and what was left
//! of its process group is gone. Test-support's server with `MCP_TEST_EXIT_GATE` exits (status 5)
//! when the test creates the gate file.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ClientSessionCapabilities, InitializeRequest, NoticeCapabilities,
    SessionNotification, SessionUpdate, StopReason,
};
use elph_agent::harness::ApprovalPolicy;
use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::FakeReply;

use super::acp::{Setup, finish, last_commands, notice_text};
use super::mcp::{Evidence, assert_group_gone, tool_names, write_home_mcp};

const STOPPED: &str = "MCP server 'test' stopped running: it exited with status 5; its stderr ends \
                       with: mcp-test-server: exiting on request. Its tools, prompts and resources \
                       are no longer offered in this session: Elph does not restart it (`/new` or a \
                       new session starts it again)";

/// The home mcp.json with the test server `test` (prompts and resources on), which exits when
/// `gate` appears.
fn exiting_server(env: &TestEnv, evidence: &Evidence, gate: &std::path::Path) {
    let mut config = evidence.server(json!({}));
    config["servers"]["test"]["env"]["MCP_TEST_EXIT_GATE"] = json!(gate.display().to_string());
    config["servers"]["test"]["env"]["MCP_TEST_OFFERS"] = json!("1");
    write_home_mcp(env, &config);
}

fn has_command(update: &SessionNotification, name: &str) -> bool {
    last_commands(std::slice::from_ref(update))
        .is_some_and(|commands| commands.iter().any(|command| command == name))
}

fn is_commands_without(update: &SessionNotification, name: &str) -> bool {
    last_commands(std::slice::from_ref(update)).is_some_and(|commands| !commands.iter().any(|c| c == name))
}

fn is_stopped_notice(update: &SessionNotification) -> bool {
    matches!(&update.update, SessionUpdate::Notice(notice) if notice.title.starts_with("MCP server 'test' stopped"))
}

/// The model's request after the exit: no tool of the server, and the system prompt says why.
fn assert_told_to_the_model(request: &Value) {
    let names = tool_names(request);
    assert!(
        !names.iter().any(|name| name.starts_with("mcp_test__")),
        "{names:?}"
    );
    let system = request["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains(
            "- 'test' is not available in this session: it exited with status 5; its stderr ends with: \
             mcp-test-server: exiting on request"
        ),
        "{system}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_shows_notices_hears_at_once_that_a_server_exited_between_calls() {
    let setup = Setup::new().await;
    let evidence = Evidence::new(&setup.env);
    let gate = setup.env.evidence("exit-gate");
    exiting_server(&setup.env, &evidence, &gate);
    setup.server.enqueue(FakeReply::text("hello"));
    let initialize = InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
        ClientCapabilities::new()
            .session(ClientSessionCapabilities::new().notices(NoticeCapabilities::new())),
    );
    let (mut client, agent) = setup.connect_with(ApprovalPolicy::Auto, initialize).await;
    let session = client.new_session(&setup.env.project).await;
    client
        .wait_for("the server's prompts as commands", |update| {
            has_command(update, "test:greet")
        })
        .await;

    // The session is idle (no prompt sent) when the server exits.
    std::fs::write(&gate, "").unwrap();
    let seen = client
        .wait_for("the notice that the server stopped", is_stopped_notice)
        .await;
    let SessionUpdate::Notice(notice) = &seen.last().unwrap().update else {
        unreachable!("matched a notice");
    };
    assert_eq!(notice.title, STOPPED);
    if !seen
        .iter()
        .any(|update| is_commands_without(update, "test:greet"))
    {
        client
            .wait_for("the server's prompts gone from the commands", |update| {
                is_commands_without(update, "test:greet")
            })
            .await;
    }
    assert_eq!(setup.server.requests().len(), 0, "no prompt was needed");
    assert_group_gone(&evidence);

    let answer = client.prompt(&session, "hi").await.expect("answered");
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let requests = setup.server.requests();
    assert_eq!(requests.len(), 1);
    assert_told_to_the_model(&requests[0]);
    // Said once.
    let after = client.drain();
    assert!(!after.iter().any(is_stopped_notice), "{after:?}");
    assert!(!notice_text(&after).contains("stopped running"), "{after:?}");
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_without_notices_hears_that_a_server_exited_with_its_next_answer() {
    let setup = Setup::new().await;
    let evidence = Evidence::new(&setup.env);
    let gate = setup.env.evidence("exit-gate");
    exiting_server(&setup.env, &evidence, &gate);
    setup.server.enqueue(FakeReply::text("hello"));
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&setup.env.project).await;
    client
        .wait_for("the server's prompts as commands", |update| {
            has_command(update, "test:greet")
        })
        .await;

    std::fs::write(&gate, "").unwrap();
    // Its prompts leaving the commands is told to any editor, right before the notice is queued.
    let before = client
        .wait_for("the server's prompts gone from the commands", |update| {
            is_commands_without(update, "test:greet")
        })
        .await;
    assert!(!before.iter().any(is_stopped_notice), "{before:?}");

    let answer = client.prompt(&session, "hi").await.expect("answered");
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let during = client.drain();
    assert_eq!(
        notice_text(&during).matches(&format!("[elph] {STOPPED}")).count(),
        1,
        "told once, with the prompt's answer: {during:?}"
    );
    assert!(!during.iter().any(is_stopped_notice), "never as a notice update");
    assert_told_to_the_model(&setup.server.requests()[0]);
    finish(client, agent).await;
}

/// The terminal UI shows the exit while it waits for the user, without a keypress.
#[test]
fn the_terminal_ui_shows_a_server_that_exited_while_it_is_idle_at_once() {
    use super::tui_pty_support::{Model, Tui};

    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    let gate = env.evidence("exit-gate");
    exiting_server(&env, &evidence, &gate);
    env.trust_project();
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 30, 200);
    tui.wait_for("MCP server 'test' is ready");
    tui.wait_idle();
    std::fs::write(&gate, "").unwrap();
    tui.wait_for("MCP server 'test' stopped running: it exited with status 5");
    assert!(model.server.requests().is_empty(), "nothing was sent");
    tui.send("/quit");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
}
