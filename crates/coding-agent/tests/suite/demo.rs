//! The README's first command: the offline demo runs and every hook does its part.

use std::path::Path;
use std::time::Duration;

#[tokio::test]
async fn the_offline_demo_shows_each_hook_at_work() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo/run.sh");
    let home = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(script);
    command
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("ELPH_BIN", env!("CARGO_BIN_EXE_elph"));
    let output = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("the demo finishes")
    .unwrap()
    .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for expected in [
        "hook 'house-rules' added to the system prompt",
        "hook 'redact-secrets' replaced the tool result",
        "hook 'block-rm-rf' blocked the tool call",
        "hook 'notes-go-in-docs' rewrote the tool input",
        "wrote my notes to docs/notes.txt",
        "remove build/output.txt by hand",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(
        !text.contains("sk-demo-0123456789abcdef"),
        "the secret never reaches the output"
    );
    let audit_lines = text.lines().last().unwrap().trim();
    assert_eq!(audit_lines, "4", "one audit line per tool call");
}
