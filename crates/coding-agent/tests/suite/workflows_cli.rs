//! Skills and prompt templates through `elph skills list` and `elph prompts list`: discovery from
//! CONFIG_DIR and a trusted project, and every validation rule with its exact diagnostic.

use std::path::Path;

use serde_json::Value;
use test_support::env::TestEnv;

use super::run_e2e::elph;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn user_skill(env: &TestEnv, folder: &str, text: &str) {
    write(&env.config_dir.join("skills").join(folder).join("SKILL.md"), text);
}

fn project_skill(env: &TestEnv, folder: &str, text: &str) {
    write(
        &env.project.join(".elph/skills").join(folder).join("SKILL.md"),
        text,
    );
}

fn list(env: &TestEnv, what: &str) -> Value {
    let output = env
        .command(&elph())
        .args([what, "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn names(listing: &Value, key: &str) -> Vec<String> {
    listing[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

fn messages(listing: &Value) -> Vec<String> {
    listing["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_string())
        .collect()
}

fn skill_text(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\nDo the thing.\n")
}

#[test]
fn user_and_trusted_project_skills_are_listed_with_their_sources() {
    let env = TestEnv::new();
    user_skill(&env, "pdf-tools", &skill_text("pdf-tools", "Fill PDF forms"));
    project_skill(
        &env,
        "release",
        &skill_text("release", "Cut a release of this project"),
    );
    let untrusted = list(&env, "skills");
    assert_eq!(names(&untrusted, "skills"), ["pdf-tools"]);
    assert_eq!(
        messages(&untrusted),
        ["the project's skills are skipped: the project is not trusted (run `elph trust` to use them)"]
    );

    env.trust_project();
    let trusted = list(&env, "skills");
    assert_eq!(names(&trusted, "skills"), ["pdf-tools", "release"]);
    assert_eq!(trusted["skills"][0]["source"], "user");
    assert_eq!(trusted["skills"][1]["source"], "project");
    assert_eq!(
        trusted["skills"][1]["description"],
        "Cut a release of this project"
    );
    assert!(
        trusted["skills"][1]["file"]
            .as_str()
            .unwrap()
            .ends_with(".elph/skills/release/SKILL.md")
    );
    assert!(messages(&trusted).is_empty(), "{trusted}");

    let plain = env.command(&elph()).args(["skills", "list"]).output().unwrap();
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.contains("pdf-tools  [user]"), "{plain}");
    assert!(plain.contains("    Cut a release of this project"), "{plain}");
}

#[test]
fn every_skill_rule_has_its_diagnostic() {
    let env = TestEnv::new();
    let long_name = "a".repeat(65);
    let cases: Vec<(String, String, &str)> = vec![
        (
            "no-front".into(),
            "# just text\n".into(),
            "skill skipped: SKILL.md must open with frontmatter: a `---` line, `name:` and `description:`, and a closing `---`",
        ),
        (
            long_name.clone(),
            skill_text(&long_name, "d"),
            "skill skipped: its folder's name has 65 characters; the limit is 64",
        ),
        (
            "no-desc".into(),
            "---\nname: no-desc\n---\nbody".into(),
            "skill skipped: frontmatter field 'description' is missing or empty (say what the skill does and when to use it)",
        ),
        (
            "empty-desc".into(),
            "---\nname: empty-desc\ndescription: \"  \"\n---\nbody".into(),
            "skill skipped: frontmatter field 'description' is missing or empty (say what the skill does and when to use it)",
        ),
        (
            "num-name".into(),
            "---\nname: 12\ndescription: d\n---\n".into(),
            "skill skipped: frontmatter field 'name' must be text, not a number",
        ),
        (
            "long-desc".into(),
            skill_text("long-desc", &"d".repeat(1025)),
            "skill 'long-desc': its description has 1025 characters, over the format's 1024; the model is offered the first 1024",
        ),
    ];
    for (folder, text, _) in &cases {
        user_skill(&env, folder, text);
    }
    // What Claude Code loads loads here too: the folder's name is the id, whatever `name` says.
    user_skill(&env, "max-desc", &skill_text("max-desc", &"d".repeat(1024)));
    user_skill(&env, "no-name", "---\ndescription: d\n---\nbody");
    user_skill(&env, "agent-development", &skill_text("Agent Development", "d"));
    user_skill(&env, "Upper_case", &skill_text("Upper_case", "d"));
    let listing = list(&env, "skills");
    assert_eq!(
        names(&listing, "skills"),
        [
            "Upper_case",
            "agent-development",
            "long-desc",
            "max-desc",
            "no-name"
        ]
    );
    assert_eq!(listing["skills"][1]["displayName"], "Agent Development");
    let long = listing["skills"][2]["description"].as_str().unwrap();
    assert_eq!(long.chars().count(), 1024);
    assert!(long.ends_with('…'));
    let diagnostics = listing["diagnostics"].as_array().unwrap();
    for (folder, _, expected) in &cases {
        let found = diagnostics.iter().find(|d| {
            d["file"]
                .as_str()
                .is_some_and(|f| f.ends_with(&format!("/{folder}/SKILL.md")))
        });
        let found = found.unwrap_or_else(|| panic!("no diagnostic for {folder}: {listing}"));
        assert_eq!(found["message"], *expected, "{folder}");
    }
    assert_eq!(diagnostics.len(), cases.len(), "{listing}");
}

#[test]
fn a_project_skill_never_replaces_a_user_skill_or_leads_out_of_the_project() {
    let env = TestEnv::new();
    env.trust_project();
    user_skill(&env, "deploy", &skill_text("deploy", "Mine"));
    project_skill(&env, "deploy", &skill_text("deploy", "The project's"));
    let outside = env.root.path().join("outside/escape");
    write(
        &outside.join("SKILL.md"),
        &skill_text("escape", "Reads ~/.ssh freely"),
    );
    std::fs::create_dir_all(env.project.join(".elph/skills")).unwrap();
    std::os::unix::fs::symlink(&outside, env.project.join(".elph/skills/escape")).unwrap();

    let listing = list(&env, "skills");
    assert_eq!(names(&listing, "skills"), ["deploy"]);
    assert_eq!(listing["skills"][0]["description"], "Mine");
    let messages = messages(&listing);
    assert!(
        messages.contains(
            &"project skill 'deploy' has the name of one of your skills; yours is kept".to_string()
        ),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("skill skipped: its folder leads out of the project")),
        "{messages:?}"
    );
}

#[test]
fn special_files_are_refused_without_hanging() {
    let env = TestEnv::new();
    let dir = env.config_dir.join("skills/fifo");
    std::fs::create_dir_all(&dir).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("SKILL.md"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::create_dir_all(env.config_dir.join("prompts")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", env.config_dir.join("prompts/zero.md")).unwrap();
    let both = [
        "skill skipped: is a FIFO (named pipe), not a regular file; Elph reads config only from regular files (a symlink to one is fine)",
        "template skipped: is a character device, not a regular file; Elph reads config only from regular files (a symlink to one is fine)",
    ];
    assert_eq!(messages(&list(&env, "skills")), both);
    assert_eq!(messages(&list(&env, "prompts")), both);
}

#[test]
fn templates_are_listed_and_every_rule_has_its_diagnostic() {
    let env = TestEnv::new();
    let prompts = env.config_dir.join("prompts");
    write(
        &prompts.join("review.md"),
        "---\ndescription: Review a file\nargument-hint: <file> [focus]\n---\nReview $1 with care for $2.\n",
    );
    write(&prompts.join("summarize.md"), "# Summarize the diff\nBe short.\n");
    write(&prompts.join("help.md"), "Shadow the help command\n");
    write(&prompts.join("my review.md"), "x\n");
    write(&prompts.join("empty.md"), "---\ndescription: nothing\n---\n\n");
    write(&prompts.join("bad-yaml.md"), "---\ndescription: [open\n---\nx\n");
    write(&prompts.join("notes.txt"), "not a template\n");
    write(
        &env.project.join(".elph/prompts/review.md"),
        "The project's review\n",
    );
    write(
        &env.project.join(".elph/prompts/deploy.md"),
        "Deploy $ARGUMENTS\n",
    );
    env.trust_project();

    let listing = list(&env, "prompts");
    assert_eq!(names(&listing, "prompts"), ["review", "summarize", "deploy"]);
    assert_eq!(listing["prompts"][0]["argumentHint"], "<file> [focus]");
    assert_eq!(listing["prompts"][0]["description"], "Review a file");
    assert_eq!(listing["prompts"][1]["description"], "Summarize the diff");
    assert_eq!(listing["prompts"][2]["source"], "project");
    let messages = messages(&listing);
    for expected in [
        "template skipped: /help is a built-in command; rename the file to use it as a template",
        "template skipped: its name 'my review' has ' '; use letters, digits, hyphens and underscores",
        "template skipped: it has no text after its frontmatter",
        "project template /review has the name of one of your templates; yours is kept",
    ] {
        assert!(
            messages.contains(&expected.to_string()),
            "{expected}: {messages:?}"
        );
    }
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("template skipped: its frontmatter is not valid YAML")),
        "{messages:?}"
    );
    assert_eq!(messages.len(), 5, "{messages:?}");

    let plain = env.command(&elph()).args(["prompts", "list"]).output().unwrap();
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.contains("/review <file> [focus]  [user]"), "{plain}");
}

fn repo_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The markdown block after each `<!-- KIND: NAME -->` marker in docs/skills.md.
fn marked_blocks(doc: &str, kind: &str) -> Vec<(String, String)> {
    let marker = format!("<!-- {kind}: ");
    let mut blocks = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .strip_prefix(&marker)
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(lines.next(), Some("```markdown"), "{name}");
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        blocks.push((name.to_string(), body.join("\n") + "\n"));
    }
    blocks
}

#[test]
fn the_docs_examples_and_the_repository_samples_load_cleanly() {
    let doc = std::fs::read_to_string(repo_root().join("docs/skills.md")).unwrap();
    let env = TestEnv::new();
    let skills = marked_blocks(&doc, "skill");
    let templates = marked_blocks(&doc, "template");
    assert!(!skills.is_empty() && !templates.is_empty());
    for (name, text) in &skills {
        user_skill(&env, name, text);
    }
    for (name, text) in &templates {
        write(&env.config_dir.join("prompts").join(format!("{name}.md")), text);
    }
    let listing = list(&env, "skills");
    assert!(messages(&listing).is_empty(), "{listing}");
    assert_eq!(names(&listing, "skills").len(), skills.len());
    assert_eq!(names(&list(&env, "prompts"), "prompts").len(), templates.len());

    // The repository's own .elph/, as a trusting user sees it.
    let repo = repo_root();
    std::fs::write(
        env.config_dir.join("trust.json"),
        serde_json::json!({"directories": {repo.display().to_string(): true}}).to_string(),
    )
    .unwrap();
    std::fs::remove_dir_all(env.config_dir.join("skills")).unwrap();
    std::fs::remove_dir_all(env.config_dir.join("prompts")).unwrap();
    let output = env
        .command(&elph())
        .args(["--cwd", repo.to_str().unwrap(), "skills", "list", "--json"])
        .output()
        .unwrap();
    let listing: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(names(&listing, "skills"), ["write-a-hook"]);
    assert!(messages(&listing).is_empty(), "{listing}");
    let output = env
        .command(&elph())
        .args(["--cwd", repo.to_str().unwrap(), "prompts", "list", "--json"])
        .output()
        .unwrap();
    let listing: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(names(&listing, "prompts"), ["review"]);
    assert_eq!(listing["prompts"][0]["argumentHint"], "<path> [focus]");
}

#[test]
fn doctor_lists_skills_templates_and_their_problems() {
    let env = TestEnv::new();
    user_skill(&env, "pdf-tools", &skill_text("pdf-tools", "Fill PDF forms"));
    user_skill(&env, "broken", "no frontmatter\n");
    write(&env.config_dir.join("prompts/review.md"), "Review $1\n");
    let output = env.command(&elph()).args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Skills: 1"), "{text}");
    assert!(text.contains("pdf-tools"), "{text}");
    assert!(text.contains("Prompt templates: 1"), "{text}");
    assert!(text.contains("/review"), "{text}");
    assert!(
        text.contains("broken/SKILL.md: skill skipped: SKILL.md must open with frontmatter"),
        "{text}"
    );
    let output = env.command(&elph()).args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["workflows"]["skills"][0]["name"], "pdf-tools");
    assert_eq!(report["workflows"]["prompts"][0]["name"], "review");
    assert!(
        report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["subject"] == "skills and templates"),
        "{report}"
    );
}

/// A "billion laughs": 9 levels of 9 aliases each, under 300 bytes, that a loader expanding aliases
/// turns into 9^9 strings (several GB).
fn billion_laughs(name: &str) -> String {
    let mut text = format!(
        "---\nname: {name}\ndescription: laughs\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
    );
    for (level, below) in ["b", "c", "d", "e", "f", "g", "h", "i"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
    {
        let refs = vec![format!("*{below}"); 9].join(",");
        text.push_str(&format!("{level}: &{level} [{refs}]\n"));
    }
    text.push_str("---\nLaugh.\n");
    text
}

/// `elph skills list` / `prompts list` / `run /skill:…` under a 2 GiB address-space limit: a loader
/// that expanded the aliases would abort (or be killed) long before it finished.
fn bounded_elph(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let elph = elph();
    let mut command = env.command(Path::new("/bin/sh"));
    command
        .arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" \"$@\"")
        .arg(&elph)
        .args(args);
    command.output().unwrap()
}

#[test]
fn a_billion_laughs_frontmatter_is_refused_with_the_file_and_the_reason() {
    let env = TestEnv::new();
    let laughs = billion_laughs("laughs");
    assert!(laughs.len() < 400, "{}", laughs.len());
    user_skill(&env, "laughs", &laughs);
    write(&env.config_dir.join("prompts/laughs.md"), &laughs);
    let skill_file = env.config_dir.join("skills/laughs/SKILL.md");
    let template_file = env.config_dir.join("prompts/laughs.md");
    let why = "its frontmatter uses a YAML alias (`*name`); aliases are refused in frontmatter";

    for (what, kind, file) in [
        ("skills", "skill", &skill_file),
        ("prompts", "template", &template_file),
    ] {
        let output = bounded_elph(&env, &[what, "list", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{what}: {output:?}");
        let listing: Value = serde_json::from_slice(&output.stdout).unwrap();
        let diagnostics = listing["diagnostics"].as_array().unwrap();
        assert_eq!(diagnostics.len(), 2, "{listing}");
        let ours = diagnostics
            .iter()
            .find(|d| {
                d["message"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{kind} skipped: {why}"))
            })
            .unwrap_or_else(|| panic!("{listing}"));
        assert_eq!(ours["file"].as_str(), Some(file.to_str().unwrap()), "{listing}");
    }

    // The plain listing names the file too; /skill:laughs in a headless run says it is unknown.
    let output = bounded_elph(&env, &["skills", "list"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains(skill_file.to_str().unwrap()), "{text}");
    assert!(text.contains("aliases are refused"), "{text}");
    let output = bounded_elph(
        &env,
        &["run", "--model", "scripted/none.json", "/skill:laughs go"],
    );
    assert_ne!(output.status.code(), Some(101), "{output:?}");
    assert!(output.status.code().is_some(), "killed: {output:?}");
}
