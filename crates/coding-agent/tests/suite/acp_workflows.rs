//! `elph acp` with prompt templates and skills: the editor's command list carries them, `/reload`
//! brings a new one, and a template prompt reaches the model expanded.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    AvailableCommandInput, SessionNotification, SessionUpdate, StopReason,
};
use elph_agent::harness::ApprovalPolicy;
use serde_json::Value;
use test_support::fake_model::FakeReply;

use super::acp::{Setup, agent_text, finish, is_commands_update, last_commands};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The input hint the last command list gave `name`.
fn hint_of(updates: &[SessionNotification], name: &str) -> Option<String> {
    updates.iter().rev().find_map(|update| match &update.update {
        SessionUpdate::AvailableCommandsUpdate(commands) => commands
            .available_commands
            .iter()
            .find(|command| command.name == name)
            .and_then(|command| match &command.input {
                Some(AvailableCommandInput::Unstructured(input)) => Some(input.hint.clone()),
                _ => None,
            }),
        _ => None,
    })
}

fn last_user_text(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_and_skills_are_offered_and_reload_brings_a_new_template() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    write(
        &env.project.join(".elph/prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully.\n",
    );
    write(
        &env.config_dir.join("skills/pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Work with PDF files\n---\nUse pdftotext.\n",
    );
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    let opening = client.wait_for("available commands", is_commands_update).await;
    assert_eq!(
        last_commands(&opening).unwrap(),
        ["reload", "untrust", "compact", "model", "review", "skill:pdf"]
    );
    assert_eq!(hint_of(&opening, "review").as_deref(), Some("<file>"));

    write(
        &env.project.join(".elph/prompts/explain.md"),
        "---\ndescription: Explain code\n---\nExplain $ARGUMENTS.\n",
    );
    let response = client.prompt(&session, "/reload").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.wait_for("commands after reload", is_commands_update).await;
    assert_eq!(
        last_commands(&updates).unwrap(),
        [
            "reload",
            "untrust",
            "compact",
            "model",
            "explain",
            "review",
            "skill:pdf"
        ]
    );
    assert!(setup.server.requests().is_empty(), "/reload reached no model");
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_prompt_reaches_the_model_expanded_and_an_unknown_skill_is_refused() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    write(
        &env.project.join(".elph/prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully.\n",
    );
    setup.server.enqueue(FakeReply::text("looks fine"));
    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    let response = client.prompt(&session, "/review src/lib.rs").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let requests = setup.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(last_user_text(&requests[0]), "Review src/lib.rs carefully.");

    client.drain();
    let response = client.prompt(&session, "/skill:nope x").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let said = agent_text(&client.drain());
    assert!(said.contains("no skill named 'nope'"), "{said}");
    assert_eq!(setup.server.requests().len(), 1, "nothing more reached the model");
    finish(client, agent).await;
}
