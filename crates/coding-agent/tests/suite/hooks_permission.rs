//! `permissionRequest` and `notification` over ACP, with real hook processes: a hook sees the
//! approval that waits (tool, input, reason) before the editor is asked, a `notification` hook
//! hears `approvalNeeded`, and a `deny` refuses the call without a question.

use agent_client_protocol::v1::schema::{PermissionOptionKind, StopReason};
use elph_agent::harness::ApprovalPolicy;
use serde_json::{Value, json};
use test_support::env::json_lines;
use test_support::fake_model::FakeReply;
use test_support::hook_scripts::write_script;

use super::acp::{Setup, answer, finish, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_hook_sees_the_waiting_approval_before_the_editor_asks() {
    let setup = Setup::new().await;
    let env = &setup.env;
    let seen = env.evidence("seen.jsonl");
    let record = write_script(
        &env.root.path().join("scripts"),
        "record.sh",
        &format!("cat >> '{}'\necho >> '{}'", seen.display(), seen.display()),
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "watch-approvals", "event": "permissionRequest", "command": record.display().to_string(),
         "matcher": {"toolNames": ["write_file"]}},
        {"id": "notify", "event": "notification", "command": record.display().to_string()},
    ]}));
    setup.server.enqueue_all([
        FakeReply::tool_call("write_file", json!({"path": "a.txt", "content": "a"})),
        FakeReply::text("done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Ask).await;
    let session = client.new_session(&env.project).await;
    let prompt = tokio::spawn(client.prompt_future(&session, "write a file"));

    let ask = client.next_permission().await;
    // Both hooks ran before the question reached the editor.
    let lines: Vec<Value> = json_lines(&seen);
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let request = &lines[0];
    assert_eq!(request["event"], "permissionRequest");
    assert_eq!(request["toolName"], "write_file");
    assert_eq!(request["toolInput"], json!({"path": "a.txt", "content": "a"}));
    assert_eq!(
        request["reason"],
        "write_file changes files or runs commands (approval policy: ask)"
    );
    assert_eq!(request["toolCallId"], ask.0.tool_call.tool_call_id.0.as_ref());
    assert_eq!(lines[1]["event"], "notification");
    assert_eq!(lines[1]["kind"], "approvalNeeded");
    answer(ask, PermissionOptionKind::AllowOnce);

    let response = within("prompt", prompt).await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(std::fs::read_to_string(env.project.join("a.txt")).unwrap(), "a");
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_hook_that_denies_refuses_the_call_without_a_question() {
    let setup = Setup::new().await;
    let env = &setup.env;
    let deny = write_script(
        &env.root.path().join("scripts"),
        "deny.sh",
        r#"cat > /dev/null; echo '{"decision": "deny", "reason": "no writes on Fridays"}'"#,
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "friday", "event": "permissionRequest", "command": deny.display().to_string()},
    ]}));
    setup.server.enqueue_all([
        FakeReply::tool_call("write_file", json!({"path": "a.txt", "content": "a"})),
        FakeReply::text("done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Ask).await;
    let session = client.new_session(&env.project).await;
    let response = within("prompt", client.prompt_future(&session, "write a file"))
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(client.no_pending_permission(), "the editor was asked anyway");
    assert!(!env.project.join("a.txt").exists());
    let last = setup.server.requests().last().cloned().unwrap();
    let result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        result.contains("denied by hook 'friday': no writes on Fridays"),
        "{result}"
    );
    finish(client, agent).await;
}

#[tokio::test]
async fn notification_hooks_hear_a_long_turn_end_and_a_failed_turn() {
    use super::run_e2e::run_elph;
    use test_support::fake_model::{FakeModelServer, Wire};

    let env = test_support::env::TestEnv::new();
    let seen = env.evidence("notifications.jsonl");
    let record = write_script(
        &env.root.path().join("scripts"),
        "record.sh",
        &format!("cat >> '{}'\necho >> '{}'", seen.display(), seen.display()),
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "notify", "event": "notification", "command": record.display().to_string()},
    ]}));
    // Every turn counts as long.
    std::fs::write(
        env.config_dir.join("settings.json"),
        json!({"hooks": {"notifyTurnAfterMs": 0}}).to_string(),
    )
    .unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["say done"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Too many model requests for one: the turn fails.
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    let output = run_elph(&env, &server, &["--max-turns", "1", "look"]).await;
    assert_eq!(output.status.code(), Some(1));

    let lines: Vec<Value> = json_lines(&seen);
    let kinds: Vec<&str> = lines.iter().map(|line| line["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["turnDone", "error"], "{lines:#?}");
    assert!(
        lines[1]["message"]
            .as_str()
            .unwrap()
            .contains("stopped after 1 model requests"),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_request_hook_denies_the_offer_to_rerun_a_refused_command_outside_the_sandbox() {
    let setup = Setup::new().await;
    let env = &setup.env;
    let outside = env.root.path().join("outside-escalated.txt");
    // Denies only the escalation offer: the policy's own question goes to the editor.
    let deny = write_script(
        &env.root.path().join("scripts"),
        "deny-reruns.sh",
        r#"input=$(cat)
case "$input" in
  *"once more"*) echo '{"decision": "deny", "reason": "no re-runs outside the sandbox"}' ;;
esac"#,
    );
    env.write_home_hooks(&json!({"hooks": [
        {"id": "no-reruns", "event": "permissionRequest", "command": deny.display().to_string()},
    ]}));
    setup.server.enqueue_all([
        FakeReply::tool_call(
            "shell_exec",
            json!({"command": format!("echo escaped > {}", outside.display())}),
        ),
        FakeReply::text("done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Ask).await;
    let session = client.new_session(&env.project).await;
    let prompt = tokio::spawn(client.prompt_future(&session, "write outside"));

    let ask = client.next_permission().await;
    answer(ask, PermissionOptionKind::AllowOnce);
    let response = within("prompt", prompt).await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(
        client.no_pending_permission(),
        "the editor was offered the re-run anyway"
    );
    assert!(!outside.exists(), "the command ran outside the sandbox");
    let last = setup.server.requests().last().cloned().unwrap();
    let result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .to_string();
    assert!(
        result.contains("not run again outside the sandbox")
            && result.contains("denied by hook 'no-reruns': no re-runs outside the sandbox"),
        "{result}"
    );
    finish(client, agent).await;
}
