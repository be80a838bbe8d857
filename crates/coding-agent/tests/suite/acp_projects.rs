//! `elph acp` in process, per project: an untrusted cwd and the trust commands, `session/load`,
//! and two sessions with different cwds on one connection.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{ContentBlock, SessionUpdate, StopReason};
use elph_agent::harness::ApprovalPolicy;
use serde_json::{Value, json};
use test_support::env::json_lines;
use test_support::fake_model::FakeReply;

use super::acp::{
    Setup, agent_text, events_of, finish, hook, is_commands_update, last_commands, notice_text, recorder,
    recording_hooks,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_cwd_is_told_how_to_trust_it_and_the_commands_work() {
    let setup = Setup::new().await;
    let env = &setup.env;
    let log = env.evidence("events.jsonl");
    let record = recorder(env, "record.sh", &log);
    env.write_project_hooks(
        &json!({"hooks": [hook("start", "sessionStart", &record), hook("stop", "stop", &record)]}),
    );
    setup
        .server
        .enqueue_all([FakeReply::text("first"), FakeReply::text("second")]);

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    let dir = env.project.display().to_string();
    let opening = client
        .wait_for("the untrusted message", |update| {
            notice_text(std::slice::from_ref(update)).contains("not trusted")
        })
        .await;
    let text = notice_text(&opening);
    assert!(
        text.contains(&format!(
            "Project hooks are off: {dir} is not trusted. Trust it with `elph trust {dir}` or the /trust command."
        )),
        "{text}"
    );
    assert_eq!(
        last_commands(&opening).unwrap(),
        ["reload", "trust", "compact", "model"]
    );
    assert!(!log.exists(), "the untrusted project's hooks did not run");
    let mut written: Vec<String> = std::fs::read_dir(&env.project)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(
        written,
        [".elph"],
        "Elph wrote nothing into the untrusted project"
    );

    let response = client.prompt(&session, "/compact").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let text = agent_text(&client.drain());
    assert!(text.contains("Nothing to compact yet."), "{text}");

    // `/model` is offered to editors too: it says which model runs, and refuses an unknown one.
    client.prompt(&session, "/model").await.unwrap();
    let text = agent_text(&client.drain());
    assert!(text.contains("Model: "), "{text}");
    client.prompt(&session, "/model nosuch/thing").await.unwrap();
    let text = agent_text(&client.drain());
    assert!(
        text.contains("Cannot switch the model: unknown provider \"nosuch\"") && text.contains("Still using"),
        "{text}"
    );

    // `/trust` records the decision, reloads, and refreshes the commands; the model is not asked.
    let response = client.prompt(&session, "/trust").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.drain();
    assert!(
        agent_text(&updates).contains(&format!("Trusted {dir}")),
        "{}",
        agent_text(&updates)
    );
    assert_eq!(
        last_commands(&updates).unwrap(),
        ["reload", "untrust", "compact", "model"]
    );
    let trust: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config_dir.join("trust.json")).unwrap()).unwrap();
    assert_eq!(trust["directories"][&dir], true);

    client.prompt(&session, "hello").await.unwrap();
    assert_eq!(
        events_of(&log),
        ["stop"],
        "the project's hooks run once it is trusted"
    );

    let response = client.prompt(&session, "/untrust").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.drain();
    assert!(
        agent_text(&updates).contains("no longer trusted"),
        "{}",
        agent_text(&updates)
    );
    assert_eq!(
        last_commands(&updates).unwrap(),
        ["reload", "trust", "compact", "model"]
    );
    client.prompt(&session, "hello again").await.unwrap();
    assert_eq!(events_of(&log), ["stop"], "off again after /untrust");

    client.prompt(&session, "/reload").await.unwrap();
    let text = agent_text(&client.drain());
    assert!(
        text.contains("Reloaded hooks: 0 active hook(s), 1 diagnostic(s); project not trusted."),
        "{text}"
    );
    assert!(text.contains("Project hooks are off"), "{text}");

    assert_eq!(
        setup.server.requests().len(),
        2,
        "slash commands never reach the model"
    );

    // `/compact` summarizes through the model, with the user's instructions.
    let response = client.prompt(&session, "/compact keep the names").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let text = notice_text(&client.drain());
    assert!(
        text.contains("[elph] compacted 2 earlier message(s) into a summary"),
        "{text}"
    );
    let requests = setup.server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[2].to_string().contains("keep the names"),
        "{}",
        requests[2]
    );
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_replays_a_stored_session_and_fires_session_start_resume() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    let log = env.evidence("events.jsonl");
    recording_hooks(&env.project, &log, &["sessionStart", "sessionEnd"]);
    setup
        .server
        .enqueue_all([FakeReply::text("noted: 42"), FakeReply::text("it was 42")]);

    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    client.prompt(&session, "remember 42").await.unwrap();
    finish(client, agent).await;
    assert_eq!(events_of(&log), ["sessionStart", "sessionEnd"]);

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let missing = client.load_session("no-such-session", &env.project).await;
    assert!(missing.is_err(), "an unknown session cannot be loaded");
    client.load_session(&session, &env.project).await.unwrap();
    let replay = client.drain();
    let user: Vec<String> = replay
        .iter()
        .filter_map(|update| match &update.update {
            SessionUpdate::UserMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(user, ["remember 42"]);
    assert_eq!(
        agent_text(&replay),
        "noted: 42",
        "replayed before the load response"
    );
    let payloads = json_lines(&log);
    assert_eq!(events_of(&log), ["sessionStart", "sessionEnd", "sessionStart"]);
    assert_eq!(payloads[2]["source"], "resume");
    assert_eq!(payloads[2]["sessionId"], session.as_str());

    client.prompt(&session, "what was the number?").await.unwrap();
    let last = setup.server.requests().last().cloned().unwrap().to_string();
    assert!(
        last.contains("remember 42") && last.contains("noted: 42"),
        "{last}"
    );
    finish(client, agent).await;
    assert_eq!(
        events_of(&log),
        ["sessionStart", "sessionEnd", "sessionStart", "sessionEnd"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_with_different_cwds_see_their_own_hooks_and_trust() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    let project_a = env.project.clone();
    let project_b: PathBuf = {
        let dir = env.root.path().join("other");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(&dir).unwrap()
    };
    let log_a = env.evidence("a.jsonl");
    let log_b = env.evidence("b.jsonl");
    let pwd = env.evidence("pwd.txt");
    for (project, log) in [(&project_a, &log_a), (&project_b, &log_b)] {
        recording_hooks(project, log, &["sessionStart", "stop", "sessionEnd"]);
        let dir = project.join(".elph").join("hooks");
        test_support::hook_scripts::write_script(
            &dir,
            "pwd.sh",
            &format!("cat > /dev/null\npwd >> '{}'\n", pwd.display()),
        );
        let mut hooks: Value =
            serde_json::from_str(&std::fs::read_to_string(project.join(".elph/hooks.json")).unwrap())
                .unwrap();
        hooks["hooks"]
            .as_array_mut()
            .unwrap()
            .push(hook("where", "stop", "hooks/pwd.sh"));
        std::fs::write(project.join(".elph/hooks.json"), hooks.to_string()).unwrap();
    }
    setup.server.enqueue_all([
        FakeReply::text("a1"),
        FakeReply::text("b1"),
        FakeReply::text("b2"),
    ]);

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let a = client.new_session(&project_a).await;
    let opening_a = client.wait_for("A's commands", is_commands_update).await;
    let b = client.new_session(&project_b).await;
    let opening_b = client
        .wait_for("B's untrusted message", |update| {
            notice_text(std::slice::from_ref(update)).contains("not trusted")
        })
        .await;
    assert!(!notice_text(&opening_a).contains("not trusted"));
    assert_eq!(
        last_commands(&opening_a).unwrap(),
        ["reload", "untrust", "compact", "model"]
    );
    assert_eq!(
        last_commands(&opening_b).unwrap(),
        ["reload", "trust", "compact", "model"]
    );
    assert!(notice_text(&opening_b).contains(&project_b.display().to_string()));

    client.prompt(&a, "in a").await.unwrap();
    client.prompt(&b, "in b").await.unwrap();
    assert_eq!(events_of(&log_a), ["sessionStart", "stop"]);
    assert!(
        json_lines(&log_a)
            .iter()
            .all(|p| p["projectDir"] == project_a.display().to_string())
    );
    assert!(json_lines(&log_a).iter().all(|p| p["sessionId"] == a.as_str()));
    assert!(!log_b.exists(), "B is not trusted: its hooks stay off");
    assert_eq!(
        std::fs::read_to_string(&pwd).unwrap().trim(),
        project_a.display().to_string()
    );

    // Trusting B from its own session turns B's hooks on, and leaves A as it was.
    client.prompt(&b, "/trust").await.unwrap();
    client.prompt(&b, "again in b").await.unwrap();
    assert_eq!(events_of(&log_b), ["stop"]);
    assert_eq!(
        json_lines(&log_b)[0]["projectDir"],
        project_b.display().to_string()
    );
    assert_eq!(json_lines(&log_b)[0]["sessionId"], b.as_str());
    let dirs: Vec<String> = std::fs::read_to_string(&pwd)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        dirs,
        [project_a.display().to_string(), project_b.display().to_string()],
        "each hook ran in its project"
    );
    assert_eq!(events_of(&log_a), ["sessionStart", "stop"]);

    finish(client, agent).await;
    assert_eq!(events_of(&log_a), ["sessionStart", "stop", "sessionEnd"]);
    assert_eq!(events_of(&log_b), ["stop", "sessionEnd"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_changed_since_it_was_trusted_runs_no_hook_or_server_and_says_how_to_trust_it() {
    let setup = Setup::new().await;
    let env = &setup.env;
    let log = env.evidence("events.jsonl");
    let record = recorder(env, "record.sh", &log);
    env.write_project_hooks(&json!({"hooks": [hook("stop", "stop", &record)]}));
    // A project MCP server that leaves a canary if it is ever started.
    let server_ran = env.evidence("server-ran");
    let server = env.project_script(
        "server.sh",
        &format!("touch '{}'\nexit 1\n", server_ran.display()),
    );
    std::fs::write(
        env.project.join(".elph/mcp.json"),
        json!({"mcpServers": {"repo-server": {"command": server.display().to_string()}}}).to_string(),
    )
    .unwrap();
    // Trusted (and pinned), then a `git pull` changes the hook script.
    coding_agent::trust::TrustStore::new(&env.config_dir)
        .trust(&env.project)
        .unwrap();
    recorder(env, "record.sh", &env.evidence("elsewhere.jsonl"));
    setup
        .server
        .enqueue_all([FakeReply::text("first"), FakeReply::text("second")]);

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    let dir = env.project.display().to_string();
    let opening = client
        .wait_for("the changed-project message", |update| {
            notice_text(std::slice::from_ref(update)).contains("changed since you trusted it")
        })
        .await;
    let text = notice_text(&opening);
    assert!(
        text.contains(&format!(
            "Project hooks and MCP servers are off: {dir} changed since you trusted it (file changed: \
             .elph/hooks/record.sh). Review the change, then trust the new content with `elph trust {dir}` \
             or the /trust command."
        )),
        "{text}"
    );
    assert_eq!(
        text.matches("changed since you trusted it").count(),
        1,
        "said once: {text}"
    );
    assert_eq!(
        last_commands(&opening).unwrap(),
        ["reload", "trust", "compact", "model"]
    );

    client.prompt(&session, "hello").await.unwrap();
    let new_log = env.evidence("elsewhere.jsonl");
    assert!(
        !log.exists() && !new_log.exists(),
        "the changed project's hook did not run"
    );
    assert!(!server_ran.exists(), "the changed project's server did not start");

    // `/trust` pins the new content; its hooks run from the next prompt on.
    client.prompt(&session, "/trust").await.unwrap();
    let updates = client.drain();
    assert!(
        agent_text(&updates).contains(&format!("Trusted {dir}")),
        "{}",
        agent_text(&updates)
    );
    let status = coding_agent::trust::TrustStore::new(&env.config_dir).decide(&env.project);
    assert!(status.trusted && status.changes().is_none(), "{status:?}");
    client.prompt(&session, "hello again").await.unwrap();
    assert!(
        !json_lines(&env.evidence("elsewhere.jsonl")).is_empty(),
        "the new script ran"
    );
    finish(client, agent).await;
}
