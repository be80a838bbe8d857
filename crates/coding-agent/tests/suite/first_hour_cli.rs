//! The small rough edges of a first hour with `elph`, each through the real binary: a bad
//! `--cwd`, `hooks list` in an untrusted project without hooks, `elph trust`'s advice, and
//! `elph run --max-turns`.

use std::process::Output;
use std::time::Duration;

use serde_json::json;
use test_support::env::TestEnv;

use super::run_e2e::elph;

/// Runs `elph ARGS` in `env` under a deadline.
async fn elph_in(env: &TestEnv, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::from(env.command(&elph()));
    command.args(args).kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("elph finishes")
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn a_missing_cwd_names_the_os_error_once() {
    let env = TestEnv::new();
    let missing = env.root.path().join("no-such-project");
    let missing = missing.to_str().unwrap();
    let output = elph_in(&env, &["--cwd", missing, "hooks", "list"]).await;
    assert_ne!(output.status.code(), Some(0), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(stderr.contains(missing), "{stderr}");
    assert_eq!(stderr.matches("No such file or directory").count(), 1, "{stderr}");
}

#[tokio::test]
async fn hooks_list_in_an_untrusted_project_without_hooks_says_not_present() {
    let env = TestEnv::new();
    let output = elph_in(&env, &["hooks", "list"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = text(&output.stdout);
    let project_line = stdout
        .lines()
        .find(|line| line.starts_with("project file"))
        .unwrap_or_else(|| panic!("no project line in:\n{stdout}"));
    assert!(project_line.ends_with(": not present"), "{stdout}");

    // With a file, an untrusted project still says why it is skipped.
    env.write_project_hooks(&json!({"hooks": [{"id": "a", "event": "stop", "command": "/bin/true"}]}));
    let output = elph_in(&env, &["hooks", "list"]).await;
    let stdout = text(&output.stdout);
    assert!(stdout.contains("skipped: project not trusted"), "{stdout}");
}

#[tokio::test]
async fn cli_trust_does_not_point_to_a_tui_command() {
    let env = TestEnv::new();
    let output = elph_in(&env, &["trust"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = text(&output.stdout);
    assert!(stdout.contains("Trusted"), "{stdout}");
    assert!(stdout.contains("from the next session on"), "{stdout}");
    assert!(!stdout.contains("/reload"), "{stdout}");
}

#[tokio::test]
async fn run_rejects_zero_max_turns_before_starting() {
    let env = TestEnv::new();
    let output = elph_in(&env, &["run", "--max-turns", "0", "--no-session", "hello"]).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("--max-turns"), "{stderr}");
    assert!(stderr.contains("invalid value '0'"), "{stderr}");
}

#[tokio::test]
async fn run_help_shows_the_defaults() {
    let env = TestEnv::new();
    let output = elph_in(&env, &["run", "--help"]).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = text(&output.stdout);
    let max_turns = stdout.split("--max-turns").nth(1).expect("--max-turns in help");
    let default = format!("[default: {}]", elph_agent::harness::DEFAULT_MAX_TURNS);
    let before_next_option = max_turns.split("--approval").next().unwrap();
    assert!(before_next_option.contains(&default), "{stdout}");
    for default in ["[default: plain]", "[default: auto]", "[default: build]"] {
        assert!(stdout.contains(default), "{default} missing in:\n{stdout}");
    }
}

/// A reader copying two recipes from `docs/hooks.md` into one file must not get a duplicate id.
#[test]
fn hook_ids_in_the_hooks_guide_are_unique_across_its_examples() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/hooks.md");
    let guide = std::fs::read_to_string(path).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    let mut files = 0;
    for block in guide.split("```json\n").skip(1) {
        let body = block.split("```").next().unwrap();
        let Ok(document) = serde_json::from_str::<serde_json::Value>(body) else {
            continue;
        };
        let Some(hooks) = document.get("hooks").and_then(|hooks| hooks.as_array()) else {
            continue;
        };
        files += 1;
        for id in hooks.iter().filter_map(|hook| hook["id"].as_str()) {
            assert!(
                seen.insert(id.to_string()),
                "hook id {id:?} is used by two examples"
            );
        }
    }
    assert!(files > 5, "found only {files} hooks.json examples");
}

/// `elph run --help` and the manual page teach the scripted model (how people try their hooks),
/// and the script they show plays as shown: its shell call runs, and its last turn is the answer.
#[tokio::test]
async fn run_help_and_the_manual_show_a_scripted_model_that_plays() {
    let env = TestEnv::new();
    let help = text(&elph_in(&env, &["run", "--help"]).await.stdout);
    assert!(help.contains("--model scripted/PATH plays a JSON file"), "{help}");
    for field in ["toolCalls", "error", "delayMs", "contextWindow"] {
        assert!(help.contains(field), "{field} missing from:\n{help}");
    }
    let pages = env.root.path().join("man");
    let written = elph_in(&env, &["man", "--dir", pages.to_str().unwrap()]).await;
    assert_eq!(written.status.code(), Some(0), "{written:?}");
    let manual = std::fs::read_to_string(pages.join("elph-run.1")).unwrap();
    assert!(
        manual.contains("scripted/PATH plays a JSON file"),
        "not in elph-run.1"
    );

    // The example between `{"turns"` and its closing `]}`, run as the help says.
    let start = help.find("{\"turns\"").expect("an example script");
    let end = start + help[start..].find("\n  ]}").expect("the example's end") + 5;
    let script: serde_json::Value = serde_json::from_str(&help[start..end])
        .unwrap_or_else(|err| panic!("the help's script is not JSON: {err}\n{}", &help[start..end]));
    std::fs::write(env.project.join("script.json"), script.to_string()).unwrap();
    std::fs::create_dir_all(env.project.join("build")).unwrap();
    let output = elph_in(
        &env,
        &[
            "run",
            "--model",
            "scripted/script.json",
            "Remove the build folder",
        ],
    )
    .await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        text(&output.stdout).trim(),
        "The hook blocked that, so I left build/ alone."
    );
    assert!(
        !env.project.join("build").exists(),
        "the script's rm -rf build ran"
    );
}
