//! Skills and prompt templates in a real `elph run` against a fake provider: what reaches the
//! model's request, and what `userPromptSubmit` hooks see.

use std::path::Path;

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::run_elph;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill(root: &Path, name: &str, description: &str, body: &str) {
    write(
        &root.join(name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    );
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn last_user_text(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &user["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[tokio::test]
async fn the_system_prompt_lists_user_and_trusted_project_skills_only() {
    let env = TestEnv::new();
    skill(
        &env.config_dir.join("skills"),
        "pdf-tools",
        "Fill PDF forms",
        "Use pdftk.",
    );
    skill(
        &env.project.join(".elph/skills"),
        "release",
        "Cut a release",
        "Tag it.",
    );

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{output:?}");
    let prompt = system_prompt(&server.requests()[0]);
    assert!(prompt.contains("<name>pdf-tools</name>"), "{prompt}");
    assert!(
        prompt.contains("<description>Fill PDF forms</description>"),
        "{prompt}"
    );
    let user_file = env
        .config_dir
        .canonicalize()
        .unwrap()
        .join("skills/pdf-tools/SKILL.md");
    assert!(
        prompt.contains(&format!("<location>{}</location>", user_file.display())),
        "{prompt}"
    );
    assert!(
        !prompt.contains("release"),
        "an untrusted project's skill was offered: {prompt}"
    );
    // The body is disclosed only when read.
    assert!(!prompt.contains("Use pdftk."), "{prompt}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the project's skills are skipped: the project is not trusted"),
        "{stderr}"
    );

    env.trust_project();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{output:?}");
    let prompt = system_prompt(&server.requests()[0]);
    assert!(
        prompt.contains("<name>pdf-tools</name>") && prompt.contains("<name>release</name>"),
        "{prompt}"
    );
}

#[tokio::test]
async fn skill_command_puts_the_body_into_the_turn() {
    let env = TestEnv::new();
    skill(
        &env.config_dir.join("skills"),
        "pdf-tools",
        "Fill PDF forms",
        "# PDF\nAlways use pdftk for forms.",
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["/skill:pdf-tools fill in form.pdf"]).await;
    assert!(output.status.success(), "{output:?}");
    let text = last_user_text(&server.requests()[0]);
    assert!(text.starts_with("<skill name=\"pdf-tools\""), "{text}");
    assert!(text.contains("Always use pdftk for forms."), "{text}");
    assert!(text.ends_with("</skill>\n\nfill in form.pdf"), "{text}");
    assert!(!text.contains("description:"), "the frontmatter leaked: {text}");
}

#[tokio::test]
async fn an_unknown_skill_is_a_clear_error_and_nothing_is_sent() {
    let env = TestEnv::new();
    skill(&env.config_dir.join("skills"), "pdf-tools", "Fill PDF forms", "x");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let output = run_elph(&env, &server, &["/skill:nope do it"]).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("elph run: no skill named 'nope' (skills: pdf-tools)"),
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_template_is_expanded_and_the_user_prompt_submit_hook_sees_it() {
    let env = TestEnv::new();
    env.trust_project();
    write(
        &env.project.join(".elph/prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 carefully. Focus: $ARGUMENTS\n",
    );
    let log = env.evidence("prompts.jsonl");
    let script = env.project_script(
        "record.sh",
        &format!(
            "cat >> '{}'\nprintf '\\n' >> '{}'\n",
            log.display(),
            log.display()
        ),
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "record-prompt", "event": "userPromptSubmit", "command": script.display().to_string()}
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("looks fine"));
    let output = run_elph(&env, &server, &["/review src/lib.rs"]).await;
    assert!(output.status.success(), "{output:?}");
    let expected = "Review src/lib.rs carefully. Focus: src/lib.rs";
    assert_eq!(last_user_text(&server.requests()[0]), expected);
    let seen = json_lines(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["prompt"], expected);
    assert_eq!(seen[0]["template"], "review");
}

#[tokio::test]
async fn an_ordinary_slash_word_stays_a_prompt() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["/usr/bin is where it lives"]).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        last_user_text(&server.requests()[0]),
        "/usr/bin is where it lives"
    );
}

fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

#[tokio::test]
async fn the_model_reads_a_skill_without_approval_but_nothing_else_outside() {
    let env = TestEnv::new();
    let skills = env.config_dir.join("skills");
    skill(
        &skills,
        "pdf-tools",
        "Fill PDF forms",
        "Always use pdftk for forms.",
    );
    write(&skills.join("pdf-tools/reference.md"), "pdftk fill_form details");
    let secret = env.root.path().join("elsewhere/notes.txt");
    write(&secret, "private notes");
    let skill_file = skills.canonicalize().unwrap().join("pdf-tools/SKILL.md");
    let reference = skills.join("pdf-tools/reference.md");

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "read_file",
        json!({"path": skill_file.display().to_string()}),
    ));
    server.enqueue(FakeReply::tool_call(
        "read_file",
        json!({"path": reference.display().to_string()}),
    ));
    server.enqueue(FakeReply::tool_call(
        "read_file",
        json!({"path": secret.display().to_string()}),
    ));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["--approval", "ask", "fill the form"]).await;
    assert!(output.status.success(), "{output:?}");
    let requests = server.requests();
    let results = tool_results(&requests[3]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].contains("Always use pdftk for forms."),
        "{}",
        results[0]
    );
    assert!(results[1].contains("pdftk fill_form details"), "{}", results[1]);
    assert!(
        !results[2].contains("private notes"),
        "a read outside the project ran unapproved: {}",
        results[2]
    );
}
