//! Agent modes over ACP: `session/new` and `session/load` report the modes with the current one,
//! and `session/set_mode` switches the mode of that session for its next prompts.

use agent_client_protocol::v1::schema::{
    LoadSessionRequest, NewSessionRequest, SessionModeState, SessionUpdate, SetSessionModeRequest, StopReason,
};
use elph_agent::harness::ApprovalPolicy;
use serde_json::Value;
use test_support::fake_model::FakeReply;

use super::acp::{Setup, TestClient, finish, within};

/// The tool names offered in a request the fake model received.
fn offered_tools(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn mode_ids(modes: &SessionModeState) -> Vec<String> {
    modes
        .available_modes
        .iter()
        .map(|mode| mode.id.0.to_string())
        .collect()
}

async fn set_mode(
    client: &TestClient,
    session: &str,
    mode: &str,
) -> Result<(), agent_client_protocol::Error> {
    within(
        "session/set_mode",
        client
            .cx
            .send_request(SetSessionModeRequest::new(session.to_string(), mode.to_string()))
            .block_task(),
    )
    .await
    .map(|_| ())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_mode_to_plan_takes_the_write_tools_from_the_next_prompt() {
    let setup = Setup::new().await;
    let env = &setup.env;
    setup.server.enqueue_all([
        FakeReply::text("building"),
        FakeReply::text("planning"),
        FakeReply::text("building again"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let response = within(
        "session/new",
        client
            .cx
            .send_request(NewSessionRequest::new(&env.project))
            .block_task(),
    )
    .await
    .expect("session/new answered");
    let session = response.session_id.0.to_string();
    let modes = response.modes.expect("session/new reports the modes");
    assert_eq!(modes.current_mode_id.0.as_ref(), "build");
    assert_eq!(mode_ids(&modes), ["build", "plan"]);
    assert!(
        modes
            .available_modes
            .iter()
            .all(|mode| mode.description.is_some())
    );

    let answer = client.prompt(&session, "go").await.unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);

    // An unknown mode is refused and changes nothing; the known one is taken.
    assert!(set_mode(&client, &session, "yolo").await.is_err());
    assert!(set_mode(&client, "no-such-session", "plan").await.is_err());
    set_mode(&client, &session, "plan").await.unwrap();
    client.prompt(&session, "look").await.unwrap();
    set_mode(&client, &session, "build").await.unwrap();
    client.prompt(&session, "go on").await.unwrap();

    let requests = setup.server.requests();
    assert_eq!(requests.len(), 3);
    let build = offered_tools(&requests[0]);
    assert!(build.iter().any(|name| name == "write_file"), "{build:?}");
    let plan = offered_tools(&requests[1]);
    for write in ["write_file", "edit_file"] {
        assert!(!plan.iter().any(|name| name == write), "{plan:?}");
    }
    assert!(plan.iter().any(|name| name == "read_file"), "{plan:?}");
    assert!(
        offered_tools(&requests[2])
            .iter()
            .any(|name| name == "write_file")
    );

    // The client heard each switch as a current-mode update, in order.
    let switches: Vec<String> = client
        .drain()
        .into_iter()
        .filter_map(|update| match update.update {
            SessionUpdate::CurrentModeUpdate(current) => Some(current.current_mode_id.0.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(switches, ["plan", "build"]);
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_load_reports_the_modes_with_the_current_one() {
    let setup = Setup::new().await;
    let env = &setup.env;
    setup.server.enqueue_all([FakeReply::text("noted")]);
    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    client.prompt(&session, "remember").await.unwrap();
    finish(client, agent).await;

    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let response = within(
        "session/load",
        client
            .cx
            .send_request(LoadSessionRequest::new(session.clone(), &env.project))
            .block_task(),
    )
    .await
    .expect("session/load answered");
    let modes = response.modes.expect("session/load reports the modes");
    assert_eq!(modes.current_mode_id.0.as_ref(), "build");
    assert_eq!(mode_ids(&modes), ["build", "plan"]);
    finish(client, agent).await;
}
