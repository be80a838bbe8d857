//! The file policy over ACP: a read outside the project is a `session/request_permission` under
//! `ask`, refused under `deny`; reads inside the project never ask.

use agent_client_protocol::v1::schema::{PermissionOptionKind, StopReason, ToolKind};
use elph_agent::harness::ApprovalPolicy;
use serde_json::json;
use test_support::fake_model::FakeReply;

use super::acp::{Setup, answer, finish, tool_text, within};

/// The tool results the model received, in order.
fn tool_results(setup: &Setup) -> Vec<String> {
    let requests = setup.server.requests();
    requests.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_read_outside_the_project_asks_the_editor() {
    let setup = Setup::new().await;
    let env = &setup.env;
    let secret = env.root.path().join("outside.txt");
    std::fs::write(&secret, "OUTSIDE-7719\n").unwrap();
    std::fs::write(env.project.join("inside.txt"), "inside\n").unwrap();
    setup.server.enqueue_all([
        FakeReply::tool_call("read_file", json!({"path": "inside.txt"})),
        FakeReply::tool_call("read_file", json!({"path": "../outside.txt"})),
        FakeReply::tool_call("list_dir", json!({"path": ".."})),
        FakeReply::text("done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Ask).await;
    let session = client.new_session(&env.project).await;
    let prompt = tokio::spawn(client.prompt_future(&session, "look around"));

    // The inside read ran without a question; the first question is about the outside read.
    let ask = client.next_permission().await;
    assert_eq!(ask.0.tool_call.fields.kind, Some(ToolKind::Read));
    let question = tool_text(ask.0.tool_call.fields.content.as_deref().unwrap());
    assert!(
        question.contains("read_file reads outside the project: ../outside.txt"),
        "{question}"
    );
    answer(ask, PermissionOptionKind::AllowOnce);

    // The listing of the parent folder: rejected.
    let ask = client.next_permission().await;
    let question = tool_text(ask.0.tool_call.fields.content.as_deref().unwrap());
    assert!(
        question.contains("list_dir reads outside the project"),
        "{question}"
    );
    answer(ask, PermissionOptionKind::RejectOnce);

    let response = within("prompt", prompt).await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(client.no_pending_permission());
    let results = tool_results(&setup);
    assert_eq!(results[0], "inside\n");
    assert_eq!(results[1], "OUTSIDE-7719\n");
    assert!(results[2].contains("denied by the user"), "{}", results[2]);
    assert!(!results[2].contains("outside.txt"), "{}", results[2]);
    finish(client, agent).await;
}

#[tokio::test]
async fn a_read_outside_the_project_is_refused_under_deny_without_a_question() {
    let setup = Setup::new().await;
    let env = &setup.env;
    std::fs::write(env.root.path().join("outside.txt"), "OUTSIDE-7719\n").unwrap();
    setup.server.enqueue_all([
        FakeReply::tool_call("read_file", json!({"path": "../outside.txt"})),
        FakeReply::text("done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Deny).await;
    let session = client.new_session(&env.project).await;
    let response = within("prompt", client.prompt(&session, "peek")).await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(client.no_pending_permission());
    let results = tool_results(&setup);
    assert!(
        results[0].contains("would read outside the project"),
        "{}",
        results[0]
    );
    assert!(!results[0].contains("OUTSIDE-7719"));
    finish(client, agent).await;
}
