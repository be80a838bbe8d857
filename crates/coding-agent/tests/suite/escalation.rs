//! Escalation on failure (docs/security.md, "Escalation"): under `ask`, a command the sandbox
//! refused is offered once more with the one permission it lacked, and runs so only after the user
//! approves that exact command — in the TUI through a real terminal, and over ACP's
//! `session/request_permission`; never under `auto`. Also the approval dialog's "always allow",
//! which saves a prefix rule that the next calls go through.

use std::io::{Read, Write};
use std::net::TcpListener;

use agent_client_protocol::v1::schema::{
    PermissionOptionKind, RequestPermissionOutcome, RequestPermissionResponse, SelectedPermissionOutcome,
    StopReason,
};
use elph_agent::harness::ApprovalPolicy;
use serde_json::json;
use test_support::env::TestEnv;
use test_support::fake_model::FakeReply;

use super::acp::{PermissionAsk, Setup, answer, finish, tool_text, within};
use super::tui_pty_support::{Model, Tui};

fn shell(command: &str) -> FakeReply {
    FakeReply::tool_call("shell_exec", json!({"command": command}))
}

/// A local HTTP server that answers every request with `body`; its port.
fn http_server(body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn question(ask: &PermissionAsk) -> String {
    tool_text(ask.0.tool_call.fields.content.as_deref().unwrap())
}

fn answer_with(ask: PermissionAsk, id: &str) {
    let (request, responder) = ask;
    assert!(
        request.options.iter().any(|option| &*option.option_id.0 == id),
        "no option {id} in {:?}",
        request.options
    );
    responder
        .respond(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id.to_string())),
        ))
        .expect("permission answered");
}

/// The tool results the model received in its last request, in order.
fn tool_results(setup: &Setup) -> Vec<String> {
    setup.server.requests().last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn over_acp_a_refused_connection_runs_again_with_the_network_only_after_the_user_approves() {
    let port = http_server("NET-OK-4242\n");
    let curl = format!("curl -sS --max-time 5 http://127.0.0.1:{port}/");
    let setup = Setup::new().await;
    setup
        .server
        .enqueue_all([shell(&curl), shell(&curl), FakeReply::text("done")]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Ask).await;
    let session = client.new_session(&setup.env.project).await;
    let prompt = tokio::spawn(client.prompt_future(&session, "fetch it"));

    // The first call: the policy's question, then the sandbox refuses it, then the offer.
    let ask = client.next_permission().await;
    assert!(question(&ask).contains("runs commands"), "{}", question(&ask));
    answer(ask, PermissionOptionKind::AllowOnce);
    let ask = client.next_permission().await;
    let offer = question(&ask);
    assert!(
        offer.contains("run this exact command once more with the network on"),
        "{offer}"
    );
    assert!(
        ask.0
            .options
            .iter()
            .any(|option| option.name == "Run it again with the network on"),
        "{:?}",
        ask.0.options
    );
    assert!(
        !ask.0
            .options
            .iter()
            .any(|option| option.kind == PermissionOptionKind::AllowAlways),
        "a re-run is approved one command at a time: {:?}",
        ask.0.options
    );
    answer(ask, PermissionOptionKind::AllowOnce);

    // The second call: approved, refused, and the offer declined.
    let ask = client.next_permission().await;
    answer(ask, PermissionOptionKind::AllowOnce);
    let ask = client.next_permission().await;
    answer(ask, PermissionOptionKind::RejectOnce);

    let response = within("prompt", prompt).await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let results = tool_results(&setup);
    assert!(results[0].contains("NET-OK-4242"), "{}", results[0]);
    assert!(results[0].contains("the user approved running this command once more with the network on"));
    assert!(!results[1].contains("NET-OK-4242"), "{}", results[1]);
    assert!(
        results[1].contains("did not approve running it again"),
        "{}",
        results[1]
    );
    finish(client, agent).await;
}

#[tokio::test]
async fn under_auto_a_refused_command_is_never_offered_again() {
    let port = http_server("NET-OK-4243\n");
    let setup = Setup::new().await;
    let outside = setup.env.root.path().join("outside-auto.txt");
    setup.server.enqueue_all([
        shell(&format!("curl -sS --max-time 5 http://127.0.0.1:{port}/")),
        shell(&format!("echo no > {}", outside.display())),
        FakeReply::text("done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&setup.env.project).await;
    let response = within("prompt", client.prompt(&session, "fetch it"))
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(client.no_pending_permission());
    let results = tool_results(&setup);
    assert!(!results[0].contains("NET-OK-4243"), "{}", results[0]);
    assert!(!outside.exists());
    finish(client, agent).await;
}

#[tokio::test]
async fn over_acp_always_allow_saves_the_rule_and_the_next_call_runs_without_a_question() {
    let setup = Setup::new().await;
    std::fs::write(
        setup.env.config_dir.join("settings.json"),
        json!({"permissions": {"allow": ["shell_exec(echo ruled*)"]}}).to_string(),
    )
    .unwrap();
    setup.server.enqueue_all([
        shell("echo ruled-by-settings"),
        shell("touch first.txt"),
        shell("touch second.txt"),
        shell("rm -f first.txt"),
        FakeReply::text("done"),
    ]);
    let (mut client, agent) = setup.connect(ApprovalPolicy::Ask).await;
    let session = client.new_session(&setup.env.project).await;
    let prompt = tokio::spawn(client.prompt_future(&session, "go"));
    // `echo ruled…` ran on the settings' rule; `touch first.txt` is asked, and always allowed.
    let ask = client.next_permission().await;
    assert!(question(&ask).contains("runs commands"), "{}", question(&ask));
    assert_eq!(
        ask.0.tool_call.fields.raw_input,
        Some(json!({"command": "touch first.txt"}))
    );
    answer_with(ask, "allow_rule");
    // `touch second.txt` ran on the new rule; `rm` is still asked.
    let ask = client.next_permission().await;
    assert_eq!(
        ask.0.tool_call.fields.raw_input,
        Some(json!({"command": "rm -f first.txt"}))
    );
    answer(ask, PermissionOptionKind::RejectOnce);
    let response = within("prompt", prompt).await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(setup.env.project.join("second.txt").exists());
    assert!(setup.env.project.join("first.txt").exists());
    let saved = std::fs::read_to_string(setup.env.config_dir.join("settings.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    assert_eq!(
        saved["permissions"]["allow"],
        json!(["shell_exec(echo ruled*)", "shell_exec(touch*)"])
    );
    finish(client, agent).await;
}

#[test]
fn in_the_tui_a_refused_write_runs_again_outside_the_sandbox_after_the_user_approves() {
    let env = TestEnv::new();
    env.trust_project();
    let outside = env.root.path().join("outside.txt");
    let model = Model::start();
    model.server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("echo ESCALATED-77 > {}", outside.display())}),
    ));
    model.server.enqueue(FakeReply::text("Wrote it."));
    let mut tui = Tui::start(&env, &model, 30, 120);
    tui.wait_idle();
    tui.send("write it");
    tui.wait_for("Approve tool call");
    tui.press(b"1");
    tui.wait_for("Yes, run it again outside the sandbox");
    assert!(!outside.exists(), "the first run was refused");
    tui.press(b"1");
    tui.wait_for("● Wrote it.");
    tui.wait_idle();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "ESCALATED-77\n");
    let last = model.server.requests().last().unwrap().to_string();
    assert!(last.contains("once more outside the sandbox"), "{last}");
}

#[test]
fn in_the_tui_always_allow_saves_a_prefix_rule_that_the_next_call_goes_through() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    model
        .server
        .enqueue(FakeReply::tool_call("shell_exec", json!({"command": "ls -a"})));
    model
        .server
        .enqueue(FakeReply::tool_call("shell_exec", json!({"command": "ls -la"})));
    model.server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "touch asked.txt"}),
    ));
    model.server.enqueue(FakeReply::text("Listed."));
    let mut tui = Tui::start(&env, &model, 30, 120);
    tui.wait_idle();
    tui.send("list");
    tui.wait_for("Yes, always allow shell_exec(ls*)");
    tui.press(b"3");
    // `ls -la` goes through on the rule: the next question is about the touch.
    tui.wait_for("touch asked.txt");
    tui.wait_for("Approve tool call");
    tui.press(b"\x1b");
    tui.wait_for("● Listed.");
    tui.wait_idle();
    assert!(!env.project.join("asked.txt").exists());
    let saved = std::fs::read_to_string(env.config_dir.join("settings.json")).unwrap();
    assert!(saved.contains("shell_exec(ls*)"), "{saved}");
    let last = model.server.requests().last().unwrap().to_string();
    assert!(last.contains("denied by the user"), "{last}");
}
