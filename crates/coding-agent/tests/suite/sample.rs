//! The sample project hook in the repository root (`.elph/hooks.json` and
//! `.elph/hooks/audit-session-starts.sh`), copied as it is into a trusted temp project and run by a
//! real `elph run` session against a fake model server.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::run_elph;

/// The repository's `.elph` folder.
fn sample_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.elph")
}

/// Copies the two sample files, keeping their modes (the script's exec bit).
fn copy_sample(project: &Path) {
    let from = sample_dir();
    let to = project.join(".elph");
    std::fs::create_dir_all(to.join("hooks")).unwrap();
    for file in ["hooks.json", "hooks/audit-session-starts.sh"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap_or_else(|err| panic!("copy {file}: {err}"));
    }
}

async fn elph_run(env: &TestEnv, server: &FakeModelServer, prompt: &str) -> Output {
    run_elph(env, server, &["--output-format", "json", prompt]).await
}

#[tokio::test]
async fn the_sample_hook_audits_session_start_and_prints_nothing() {
    let env = TestEnv::new();
    copy_sample(&env.project);
    let script = env.project.join(".elph/hooks/audit-session-starts.sh");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_ne!(
        mode & 0o111,
        0,
        "the sample script is executable in the repository and in the copy"
    );
    env.trust_project();

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("audited"));
    let output = elph_run(&env, &server, "hello").await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "no diagnostics: {stderr}");
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["result"], "audited");
    let session_id = result["sessionId"].as_str().unwrap();

    // Exactly one line: the sessionStart payload, with the session id and the project.
    let log = env.project.join(".elph-hook-audit.log");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.ends_with('\n'));
    let lines = json_lines(&log);
    assert_eq!(lines[0]["event"], "sessionStart");
    assert_eq!(lines[0]["sessionId"], session_id);
    assert_eq!(lines[0]["projectDir"], env.project.display().to_string());
    assert_eq!(lines[0]["source"], "new");

    // The hook ran once, succeeded, and printed nothing on stdout or stderr.
    let runs: Vec<&Value> = result["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|dispatch| dispatch["runs"].as_array().unwrap())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["hookId"], "audit-session-starts");
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(
        (&runs[0]["stdoutBytes"], &runs[0]["stderrBytes"]),
        (&Value::from(0), &Value::from(0))
    );
    assert_eq!(runs[0]["outcome"], Value::Null);
}
