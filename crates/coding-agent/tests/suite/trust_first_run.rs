//! A first run in a project with hooks, through the real binary: `elph run` says which of the
//! project's hooks are off (ids and events) while it is not trusted, once and on lines of their
//! own; `elph untrust` says what the next start does.

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

/// A project whose guard would stop `rm -rf`, and an audit hook; both leave evidence when they run.
fn guarded_project(env: &TestEnv) -> std::path::PathBuf {
    let ran = env.evidence("ran");
    let body = format!("cat > /dev/null\necho \"$0\" >> '{}'\n", ran.display());
    env.project_script("guard.sh", &body);
    env.project_script("audit.sh", &body);
    env.write_project_hooks(&json!({"hooks": [
        {"id": "no-rm-rf", "event": "preToolUse", "command": "hooks/guard.sh"},
        {"id": "audit", "event": "stop", "command": "hooks/audit.sh"},
        {"id": "parked", "event": "stop", "command": "hooks/audit.sh", "enabled": false},
    ]}));
    ran
}

/// `elph run` with an offline scripted model that answers once.
async fn run_once(env: &TestEnv) -> Output {
    let script = env.home.join("script.json");
    std::fs::write(&script, r#"{"turns": [{"text": "hello"}]}"#).unwrap();
    let model = format!("scripted/{}", script.display());
    elph_in(env, &["run", "--no-session", "--model", &model, "hi"]).await
}

#[tokio::test]
async fn run_in_an_untrusted_project_names_the_hooks_that_are_off_once() {
    let env = TestEnv::new();
    let ran = guarded_project(&env);
    let output = run_once(&env).await;
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = text(&output.stderr);
    let project = env.project.display().to_string();
    let expected = format!(
        "elph: WARNING: 2 project hook(s) are OFF in this run: it is not trusted.\n\
         elph:   These hooks of {project}/.elph/hooks.json do not run, so nothing they guard is guarded:\n\
         elph:     - no-rm-rf (preToolUse)\n\
         elph:     - audit (stop)\n\
         elph:   Review them, then run `elph trust {project}` to turn them on.\n"
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
    assert_eq!(stderr.matches("no-rm-rf").count(), 1, "said once: {stderr}");
    assert!(!stderr.contains("parked"), "a disabled hook is not off: {stderr}");
    assert!(!ran.exists(), "no project hook ran");

    // stream-json keeps one diagnostic event, which names them too.
    let script = env.home.join("script.json");
    let model = format!("scripted/{}", script.display());
    let output = elph_in(
        &env,
        &[
            "run",
            "--no-session",
            "--output-format",
            "stream-json",
            "--model",
            &model,
            "hi",
        ],
    )
    .await;
    let stdout = text(&output.stdout);
    let diagnostics: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains(r#""type":"diagnostic""#))
        .collect();
    assert_eq!(diagnostics.len(), 1, "{stdout}");
    assert!(
        diagnostics[0].contains("off: no-rm-rf (preToolUse), audit (stop)"),
        "{stdout}"
    );

    // Trusted, the warning is gone and the hooks run.
    let output = elph_in(&env, &["trust"]).await;
    assert!(output.status.success(), "{output:?}");
    let output = run_once(&env).await;
    assert!(!text(&output.stderr).contains("OFF"), "{output:?}");
    assert!(ran.exists(), "the trusted project's hooks ran");

    // Changed since trusted: the same warning, with the reason.
    env.project_script("audit.sh", "cat > /dev/null\necho changed\n");
    let output = run_once(&env).await;
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(
            "2 project hook(s) are OFF in this run: it changed since you trusted it (file changed: \
             .elph/hooks/audit.sh)."
        ),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("changed since you trusted it").count(),
        1,
        "said once: {stderr}"
    );
}

#[tokio::test]
async fn the_warning_says_the_project_servers_are_off_too() {
    let env = TestEnv::new();
    guarded_project(&env);
    std::fs::write(
        env.project.join(".elph/mcp.json"),
        json!({"mcpServers": {"db": {"command": "/bin/true"}}}).to_string(),
    )
    .unwrap();
    let output = run_once(&env).await;
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("to turn them on (its MCP servers are off too).\n"),
        "{stderr}"
    );
}

#[tokio::test]
async fn untrust_says_what_the_next_start_does_under_each_default() {
    for (default, next) in [
        (
            None,
            "The next `elph` started here asks again whether to trust it (\"No\" exits); `elph run` \
             and `elph acp` run here with its hooks and MCP servers off.",
        ),
        (
            Some("never"),
            "The next `elph` started here refuses to start (\"defaultProjectTrust\": \"never\");",
        ),
        (
            Some("always"),
            "The next `elph` started here starts with its hooks and MCP servers off,",
        ),
    ] {
        let env = TestEnv::new();
        if let Some(default) = default {
            std::fs::write(
                env.config_dir.join("trust.json"),
                json!({"defaultProjectTrust": default}).to_string(),
            )
            .unwrap();
        }
        let output = elph_in(&env, &["trust"]).await;
        assert!(output.status.success(), "{output:?}");
        let output = elph_in(&env, &["untrust"]).await;
        assert!(output.status.success(), "{output:?}");
        let stdout = text(&output.stdout);
        assert!(
            stdout.starts_with(&format!(
                "Untrusted {}: its hooks and MCP servers are off.\n",
                env.project.display()
            )),
            "{stdout}"
        );
        assert!(stdout.contains(next), "{default:?}: {stdout}");
        assert!(!stdout.contains("stay off"), "{stdout}");
    }
}

#[test]
fn the_first_run_guides_trust_the_project_before_running_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (file, heading) in [
        ("README.md", "## First run in a project"),
        ("docs/hooks.md", "## Where hooks are configured"),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let start = text
            .find(heading)
            .unwrap_or_else(|| panic!("{file}: no {heading:?}"));
        let section = &text[start..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
        let trust = section
            .find("elph trust ")
            .or_else(|| section.find("elph trust\n"));
        let trust = trust.unwrap_or_else(|| panic!("{file}: no `elph trust` in {heading:?}"));
        let run = section
            .find("elph run \"")
            .unwrap_or_else(|| panic!("{file}: no `elph run` in {heading:?}"));
        assert!(
            trust < run,
            "{file}: `elph trust` comes before the first `elph run`"
        );
    }
}
