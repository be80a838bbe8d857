//! Notices that come while no prompt runs (docs/cli.md, `elph acp`): an MCP server that answers
//! after the session opened is told at once, as a `notice` update, to an editor that declared
//! `session.notices`, and with the next prompt's answer (a `[elph]` thought) to one that did not.
//! The SDK's own client, an editor MCP server of test-support whose start the test holds back
//! until the session is idle (`MCP_TEST_START_GATE`), and a fake model.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ClientSessionCapabilities, EnvVariable, InitializeRequest, McpServer, McpServerStdio,
    NewSessionRequest, NoticeCapabilities, SessionNotification, SessionUpdate,
};
use elph_agent::harness::ApprovalPolicy;
use test_support::fake_model::FakeReply;

use super::acp::{Setup, TestClient, finish, notice_text, within};

const READY: &str = "MCP server 'test' is ready";

/// The editor's MCP server `test`, which answers nothing until `gate` exists; with its prompts
/// and resources on, so that its readiness is also seen as new commands.
fn gated_server(setup: &Setup, gate: &std::path::Path) -> McpServer {
    let binary = test_support::hook_scripts::test_support_binary("mcp-test-server");
    McpServer::Stdio(McpServerStdio::new("test", binary).env(vec![
        EnvVariable::new("MCP_TEST_START_GATE", gate.display().to_string()),
        EnvVariable::new("MCP_TEST_OFFERS", "1"),
        EnvVariable::new(
            "MCP_TEST_STARTED",
            setup.env.evidence("gated-started.jsonl").display().to_string(),
        ),
    ]))
}

async fn open_gated_session(client: &TestClient, setup: &Setup, gate: &std::path::Path) -> String {
    let response = within(
        "session/new",
        client
            .cx
            .send_request(
                NewSessionRequest::new(&setup.env.project).mcp_servers(vec![gated_server(setup, gate)]),
            )
            .block_task(),
    )
    .await
    .expect("session/new answered");
    response.session_id.0.to_string()
}

fn is_ready_notice(update: &SessionNotification) -> bool {
    matches!(&update.update, SessionUpdate::Notice(notice) if notice.title.starts_with(READY))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_shows_notices_hears_of_a_server_between_turns_at_once() {
    let setup = Setup::new().await;
    setup.server.enqueue(FakeReply::text("hello"));
    let gate = setup.env.evidence("gate");
    let initialize = InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
        ClientCapabilities::new()
            .session(ClientSessionCapabilities::new().notices(NoticeCapabilities::new())),
    );
    let (mut client, agent) = setup.connect_with(ApprovalPolicy::Auto, initialize).await;
    let session = open_gated_session(&client, &setup, &gate).await;

    // The session is idle (its opening answered, no prompt sent) when the server answers.
    std::fs::write(&gate, "").unwrap();
    let seen = client
        .wait_for("the server's ready notice", is_ready_notice)
        .await;
    let notice = seen.last().unwrap();
    let SessionUpdate::Notice(notice) = &notice.update else {
        unreachable!("matched a notice");
    };
    assert!(notice.title.ends_with(" tools"), "{notice:?}");
    assert_eq!(setup.server.requests().len(), 0, "no prompt was needed");

    // Said once: the next prompt's answer does not repeat it.
    let answer = client.prompt(&session, "hi").await.expect("answered");
    assert_eq!(
        answer.stop_reason,
        agent_client_protocol::v1::schema::StopReason::EndTurn
    );
    let after = client.drain();
    assert!(!notice_text(&after).contains(READY), "{after:?}");
    assert!(!after.iter().any(is_ready_notice), "{after:?}");
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_without_notices_hears_of_a_server_between_turns_with_the_next_prompt() {
    let setup = Setup::new().await;
    setup
        .server
        .enqueue_all([super::mcp::wait_for_servers(), FakeReply::text("hello")]);
    let gate = setup.env.evidence("gate");
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = open_gated_session(&client, &setup, &gate).await;

    std::fs::write(&gate, "").unwrap();
    // Its prompts arrive as commands (told at once: that update is for any editor); its ready
    // notice follows them, and is not sent as a `notice` to an editor that did not ask for those.
    let before = client
        .wait_for("the server's prompts as commands", |update| {
            super::acp::last_commands(std::slice::from_ref(update))
                .is_some_and(|commands| commands.iter().any(|name| name == "test:greet"))
        })
        .await;
    assert!(!notice_text(&before).contains(READY), "{before:?}");

    // The first prompt's model waits for the servers, which have told their notices by then:
    // whether the notice reached the session before the prompt (held) or during it, it is said
    // with this prompt's answer, once.
    let answer = client.prompt(&session, "hi").await.expect("answered");
    assert_eq!(
        answer.stop_reason,
        agent_client_protocol::v1::schema::StopReason::EndTurn
    );
    let during = client.drain();
    assert_eq!(
        notice_text(&during).matches(&format!("[elph] {READY}: ")).count(),
        1,
        "told once, with the prompt's answer: {during:?}"
    );
    assert!(
        !before.iter().chain(&during).any(is_ready_notice),
        "never as a notice update"
    );
    finish(client, agent).await;
}
