//! A line that starts with `/` is taken the same way by every front end (docs/cli.md, "What a line
//! starting with `/` does"): an unknown command is refused with the nearest name and reaches no
//! model; a path, or a command escaped with `//`, is text. Through the real binary: `elph run`, the
//! terminal UI in a pseudo-terminal, and `elph acp` driven by the official TypeScript SDK.

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::acp::Setup;
use super::acp_ts::Scenario;
use super::mcp::{Evidence, write_home_mcp};
use super::run_e2e::run_elph;
use super::tui_pty_support::{Model, Tui};

const REFUSED_TAIL: &str = "Nothing was sent; to send the line to the model as text, start it with //";

/// A trusted project with the template `/review`.
fn project_with_review(env: &TestEnv) {
    env.trust_project();
    let file = env.project.join(".elph/prompts/review.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(
        &file,
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully.\n",
    )
    .unwrap();
}

fn last_user_text(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn elph_run_refuses_an_unknown_command_with_the_nearest_name_and_asks_no_model() {
    let env = TestEnv::new();
    project_with_review(&env);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("Reviewed it."));
    for (prompt, said) in [
        (
            "/reveiw src/lib.rs",
            "elph run: unknown command /reveiw (did you mean /review?). ",
        ),
        ("/nosuch:thing 42", "elph run: unknown command /nosuch:thing. "),
        ("/tmp is full", "elph run: unknown command /tmp. "),
        (
            "/compact",
            "elph run: /compact works in the terminal UI and in editors, not in `elph run`. ",
        ),
        (
            "/skill:nope x",
            "elph run: no skill named 'nope': no skills are loaded",
        ),
    ] {
        let output = run_elph(&env, &server, &[prompt]).await;
        let stderr = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{prompt}: {stderr}");
        assert!(stderr.contains(said), "{prompt}: {stderr}");
        assert!(stderr.contains(REFUSED_TAIL), "{prompt}: {stderr}");
        assert!(output.stdout.is_empty(), "{prompt}: {output:?}");
    }
    assert!(
        server.requests().is_empty(),
        "a refused command reached the model"
    );

    // The template itself still runs.
    let output = run_elph(&env, &server, &["/review src/lib.rs"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        last_user_text(&server.requests()[0]),
        "Review src/lib.rs carefully."
    );
}

#[tokio::test]
async fn elph_run_sends_a_path_and_an_escaped_command_as_text() {
    let env = TestEnv::new();
    project_with_review(&env);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let sent = [
        ("/etc/hosts looks odd", "/etc/hosts looks odd"),
        ("//reveiw is a typo of mine", "/reveiw is a typo of mine"),
        ("// a comment stays as written", "// a comment stays as written"),
    ];
    for (prompt, expected) in sent {
        server.enqueue(FakeReply::text("noted"));
        let output = run_elph(&env, &server, &[prompt]).await;
        assert!(output.status.success(), "{prompt}: {}", stderr(&output));
        let requests = server.requests();
        assert_eq!(last_user_text(requests.last().unwrap()), expected);
    }
    assert_eq!(server.requests().len(), sent.len());
}

#[tokio::test]
async fn elph_run_runs_an_mcp_servers_prompt_and_suggests_the_server_for_a_misspelt_one() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    let mut config = evidence.server(json!({}));
    config["servers"]["test"]["env"]["MCP_TEST_OFFERS"] = json!("1");
    write_home_mcp(&env, &config);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hello Ada"));

    // Decided from the session's servers, whether or not this one has listed its prompts yet.
    let output = run_elph(&env, &server, &["/tset:greet Ada"]).await;
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("elph run: unknown command /tset:greet (did you mean /test:greet?). "),
        "{said}"
    );
    assert!(server.requests().is_empty(), "nothing reached the model");
    assert!(
        !evidence.calls().iter().any(|call| call.get("prompt").is_some()),
        "the server was not asked: {:?}",
        evidence.calls()
    );

    let output = run_elph(&env, &server, &["/test:greet Ada"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        last_user_text(&server.requests()[0]),
        "Say hello to Ada in a plain style."
    );
}

#[test]
fn the_terminal_ui_keeps_a_refused_line_for_editing_and_sends_it_corrected() {
    let env = TestEnv::new();
    project_with_review(&env);
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 30, 120);
    tui.wait_idle();
    tui.send("/reveiw src/lib.rs");
    tui.wait_for("unknown command /reveiw (did you mean /review?)");
    assert!(
        tui.input_row().contains("› /reveiw src/lib.rs"),
        "the line stays in the input box:\n{}",
        tui.contents()
    );
    assert!(model.server.requests().is_empty(), "nothing reached the model");

    // Corrected in place: back to the `/`, then the right name.
    tui.press(&[0x7f; "reveiw src/lib.rs".len()]);
    tui.wait_until("the input to hold only '/'", |_| {
        tui.input_row().trim_end().ends_with("› /")
    });
    model.server.enqueue(FakeReply::text("Reviewed it."));
    tui.press(b"review src/lib.rs");
    tui.wait_for("› /review src/lib.rs");
    tui.press(b"\r");
    tui.wait_for("● Reviewed it.");
    tui.wait_idle();
    let requests = model.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(last_user_text(&requests[0]), "Review src/lib.rs carefully.");

    // A path is no command.
    model.server.enqueue(FakeReply::text("It maps names."));
    tui.send("/etc/hosts looks odd");
    tui.wait_for("● It maps names.");
    tui.wait_idle();
    assert_eq!(
        last_user_text(model.server.requests().last().unwrap()),
        "/etc/hosts looks odd"
    );
    tui.send("/quit");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_hears_why_an_unknown_command_ended_the_turn_and_no_model_is_asked() {
    let setup = Setup::new().await;
    project_with_review(&setup.env);
    setup
        .server
        .enqueue_all([FakeReply::text("Reviewed it."), FakeReply::text("A typo indeed.")]);
    let prompt =
        |text: &str| json!({"sessionId": "${s.sessionId}", "prompt": [{"type": "text", "text": text}]});
    let refused = [
        (
            "/reveiw src/lib.rs",
            "unknown command /reveiw (did you mean /review?). ",
        ),
        ("/relaod", "unknown command /relaod (did you mean /reload?). "),
        ("/help", "/help works in the terminal UI only, not in an editor. "),
        ("/trust me", "/trust takes no argument. "),
        ("/nosuch:thing", "unknown command /nosuch:thing. "),
    ];
    let mut scenario = Scenario::new(&setup.env, &["acp", "--model", "fake/gpt-test"]).step(
        "session/new",
        json!({"cwd": setup.env.project, "mcpServers": []}),
        Some("s"),
    );
    for (text, _) in refused {
        scenario = scenario.step("session/prompt", prompt(text), None);
    }
    let run = scenario
        .step("session/prompt", prompt("/review src/lib.rs"), None)
        .step("session/prompt", prompt("//reveiw was a typo"), None)
        .run()
        .await;
    // Every prompt is answered (the refused ones too, as a turn that ended), never an error.
    for index in 2..2 + refused.len() + 2 {
        assert_eq!(run.ok(index)["stopReason"], "end_turn", "prompt {index}");
    }
    let said: String = run
        .updates("agent_message_chunk")
        .iter()
        .map(|update| update["content"]["text"].as_str().unwrap_or_default())
        .collect();
    for (text, message) in refused {
        assert!(said.contains(message), "{text}: {said}");
    }
    assert!(said.contains(REFUSED_TAIL), "{said}");
    let requests = setup.server.requests();
    assert_eq!(
        requests.len(),
        2,
        "only the template and the escaped line reached the model"
    );
    assert_eq!(last_user_text(&requests[0]), "Review src/lib.rs carefully.");
    assert_eq!(last_user_text(&requests[1]), "/reveiw was a typo");
}
