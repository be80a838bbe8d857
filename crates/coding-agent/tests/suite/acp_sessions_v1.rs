//! ACP v1's session surface beyond new/load/prompt: `session/list` (cwd filter, cursor),
//! `session/close`, `session/resume` (no replay), `session/delete`, config options for the mode and
//! the model (`session/set_config_option`), and the `usage_update` and `session_info_update` a
//! prompt sends.

use agent_client_protocol::ErrorCode;
use agent_client_protocol::v1::schema::{
    CloseSessionRequest, DeleteSessionRequest, ListSessionsRequest, ListSessionsResponse, NewSessionRequest,
    ResumeSessionRequest, SessionConfigKind, SessionConfigOption, SessionConfigSelectOptions, SessionUpdate,
    SetSessionConfigOptionRequest,
};
use elph_agent::harness::ApprovalPolicy;
use serde_json::json;
use test_support::fake_model::FakeReply;

use super::acp::{Setup, TestClient, agent_text, finish, within};

async fn list(
    client: &TestClient,
    request: ListSessionsRequest,
) -> Result<ListSessionsResponse, agent_client_protocol::Error> {
    within("session/list", client.cx.send_request(request).block_task()).await
}

fn ids(response: &ListSessionsResponse) -> Vec<String> {
    response
        .sessions
        .iter()
        .map(|info| info.session_id.0.to_string())
        .collect()
}

/// `(id, current value, offered values)` of each option.
fn selects(options: &[SessionConfigOption]) -> Vec<(String, String, Vec<String>)> {
    options
        .iter()
        .map(|option| match &option.kind {
            SessionConfigKind::Select(select) => {
                let offered = match &select.options {
                    SessionConfigSelectOptions::Ungrouped(options) => {
                        options.iter().map(|option| option.value.0.to_string()).collect()
                    }
                    other => panic!("grouped options: {other:?}"),
                };
                (
                    option.id.0.to_string(),
                    select.current_value.0.to_string(),
                    offered,
                )
            }
            other => panic!("not a select: {other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_listed_closed_resumed_without_replay_and_deleted() {
    let setup = Setup::new().await;
    let env = &setup.env;
    setup.server.enqueue_all([
        FakeReply::text("first reply"),
        FakeReply::text("second reply"),
        FakeReply::text("after the resume"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;

    let first = client.new_session(&env.project).await;
    client.prompt(&first, "the first task").await.unwrap();
    let updates = client.drain();
    // The first prompt names the session; each model request reports its usage of the window.
    let titles: Vec<String> = updates
        .iter()
        .filter_map(|update| match &update.update {
            SessionUpdate::SessionInfoUpdate(info) => Some(format!("{:?}", info.title)),
            _ => None,
        })
        .collect();
    assert_eq!(titles.len(), 1, "{updates:?}");
    assert!(titles[0].contains("the first task"), "{titles:?}");
    let usage = updates
        .iter()
        .find_map(|update| match &update.update {
            SessionUpdate::UsageUpdate(usage) => Some(usage.clone()),
            _ => None,
        })
        .expect("a usage_update after the model request");
    assert!(usage.used > 0 && usage.size >= usage.used, "{usage:?}");

    let second = client.new_session(&env.project).await;
    client.prompt(&second, "the second task").await.unwrap();
    client.drain();

    // Newest first, with titles; filtered by cwd; another folder has none.
    let listed = list(&client, ListSessionsRequest::new().cwd(env.project.clone()))
        .await
        .unwrap();
    assert_eq!(ids(&listed), [second.clone(), first.clone()]);
    assert_eq!(listed.sessions[1].title.as_deref(), Some("the first task"));
    assert!(listed.sessions[0].updated_at.is_some());
    assert!(listed.next_cursor.is_none());
    let everywhere = list(&client, ListSessionsRequest::new()).await.unwrap();
    assert_eq!(ids(&everywhere), [second.clone(), first.clone()]);
    let elsewhere = list(&client, ListSessionsRequest::new().cwd(env.home.clone()))
        .await
        .unwrap();
    assert!(elsewhere.sessions.is_empty());
    let relative = list(&client, ListSessionsRequest::new().cwd("project"))
        .await
        .unwrap_err();
    assert_eq!(relative.code, ErrorCode::INVALID_PARAMS, "{relative:?}");
    let bad_cursor = list(&client, ListSessionsRequest::new().cursor("page-two".to_string()))
        .await
        .unwrap_err();
    assert_eq!(bad_cursor.code, ErrorCode::INVALID_PARAMS, "{bad_cursor:?}");
    assert!(bad_cursor.message.contains("nextCursor"), "{bad_cursor:?}");

    // An open session is not deleted under the client.
    let cx = client.cx.clone();
    let delete = |id: &str| {
        cx.send_request(DeleteSessionRequest::new(id.to_string()))
            .block_task()
    };
    let refused = within("session/delete", delete(&first)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    assert!(refused.message.contains("session/close"), "{refused:?}");

    // Closed: its prompts are refused; resumed: it goes on, without the conversation sent again.
    within(
        "session/close",
        client
            .cx
            .send_request(CloseSessionRequest::new(first.clone()))
            .block_task(),
    )
    .await
    .expect("session/close answered");
    let gone = client.prompt(&first, "still there?").await.unwrap_err();
    assert_eq!(gone.code, ErrorCode::RESOURCE_NOT_FOUND, "{gone:?}");
    let resumed = within(
        "session/resume",
        client
            .cx
            .send_request(ResumeSessionRequest::new(first.clone(), env.project.clone()))
            .block_task(),
    )
    .await
    .expect("session/resume answered");
    assert!(resumed.config_options.is_some());
    assert_eq!(agent_text(&client.drain()), "", "session/resume replays nothing");
    client.prompt(&first, "go on").await.unwrap();
    assert_eq!(agent_text(&client.drain()), "after the resume");
    let history = setup.server.requests().last().unwrap().to_string();
    assert!(
        history.contains("the first task"),
        "the model sees the conversation: {history}"
    );

    // Closed again, it can be deleted; then it is gone from the list and cannot be resumed.
    within(
        "session/close",
        client
            .cx
            .send_request(CloseSessionRequest::new(first.clone()))
            .block_task(),
    )
    .await
    .unwrap();
    within("session/delete", delete(&first)).await.expect("deleted");
    let listed = list(&client, ListSessionsRequest::new().cwd(env.project.clone()))
        .await
        .unwrap();
    assert_eq!(ids(&listed), std::slice::from_ref(&second));
    let missing = within(
        "session/resume",
        client
            .cx
            .send_request(ResumeSessionRequest::new(first.clone(), env.project.clone()))
            .block_task(),
    )
    .await
    .unwrap_err();
    assert_eq!(missing.code, ErrorCode::RESOURCE_NOT_FOUND, "{missing:?}");
    let unknown = within("session/delete", delete("no-such-session"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::RESOURCE_NOT_FOUND, "{unknown:?}");
    assert_eq!(agent_text(&client.drain()), "");
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_pages_with_a_cursor() {
    let setup = Setup::new().await;
    let env = &setup.env;
    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    // More sessions than one page holds, stored as every front end stores them.
    let store = coding_agent::store::SessionStore::open(&env.data_dir).unwrap();
    let mut opened = Vec::new();
    for _ in 0..52 {
        let id = coding_agent::store::new_session_id();
        store.create_session(&id, &env.project, "fake/gpt-test").unwrap();
        opened.push(id);
    }
    let first = list(&client, ListSessionsRequest::new()).await.unwrap();
    assert_eq!(first.sessions.len(), 50);
    let cursor = first.next_cursor.clone().expect("a next page");
    let rest = list(&client, ListSessionsRequest::new().cursor(cursor))
        .await
        .unwrap();
    assert_eq!(rest.sessions.len(), 2);
    assert!(rest.next_cursor.is_none());
    let mut all: Vec<String> = ids(&first).into_iter().chain(ids(&rest)).collect();
    all.sort();
    opened.sort();
    assert_eq!(all, opened, "every session once, across the pages");
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_options_switch_the_mode_and_the_model() {
    let setup = Setup::new().await;
    let env = &setup.env;
    // A second model of the same provider, named in its file: it is offered.
    std::fs::write(
        env.config_dir.join("providers").join("fake.json"),
        json!({"name": "fake", "api": "openai-chat", "baseUrl": setup.server.base_url(),
               "models": [{"id": "gpt-other"}]})
        .to_string(),
    )
    .unwrap();
    setup
        .server
        .enqueue_all([FakeReply::text("planned"), FakeReply::text("other model")]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let response = within(
        "session/new",
        client
            .cx
            .send_request(NewSessionRequest::new(&env.project))
            .block_task(),
    )
    .await
    .unwrap();
    let session = response.session_id.0.to_string();
    let options = selects(&response.config_options.expect("config options"));
    assert_eq!(
        options,
        [
            (
                "mode".to_string(),
                "build".to_string(),
                vec!["build".to_string(), "plan".to_string()]
            ),
            (
                "model".to_string(),
                "fake/gpt-test".to_string(),
                vec!["fake/gpt-test".to_string(), "fake/gpt-other".to_string()]
            ),
        ]
    );

    let cx = client.cx.clone();
    let set = |id: &str, value: &str| {
        cx.send_request(SetSessionConfigOptionRequest::new(
            session.clone(),
            id.to_string(),
            value,
        ))
        .block_task()
    };
    let answer = within("set mode", set("mode", "plan")).await.expect("mode set");
    assert_eq!(selects(&answer.config_options)[0].1, "plan");
    client.prompt(&session, "plan it").await.unwrap();
    let tools = setup.server.requests()[0]["tools"].to_string();
    assert!(
        tools.contains("read_file") && !tools.contains("write_file"),
        "plan mode's tools: {tools}"
    );

    let answer = within("set model", set("model", "fake/gpt-other"))
        .await
        .expect("model set");
    assert_eq!(selects(&answer.config_options)[1].1, "fake/gpt-other");
    client.prompt(&session, "again").await.unwrap();
    assert_eq!(setup.server.requests()[1]["model"], "gpt-other");
    assert_eq!(
        agent_text(&client.drain()),
        "plannedother model",
        "no message about the switch"
    );

    for (id, value, says) in [
        ("model", "nobody/none", "not one of the models offered"),
        ("mode", "yolo", "yolo"),
        ("colour", "blue", "no config option"),
    ] {
        let refused = within("refused", set(id, value)).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS, "{refused:?}");
        assert!(refused.message.contains(says), "{refused:?}");
    }
    finish(client, agent).await;
}
