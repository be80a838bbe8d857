//! The README's first command: the offline demo runs and every hook does its part, with the
//! `elph` it finds the way the README says (`$ELPH_BIN`, else PATH, else the checkout's build).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn demo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo")
}

/// The inherited PATH without any folder that holds an `elph`, so only the test decides which
/// `elph` the demo finds.
fn path_without_elph() -> Vec<PathBuf> {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&inherited)
        .filter(|dir| !dir.join("elph").exists())
        .collect()
}

fn joined(dirs: &[PathBuf]) -> OsString {
    std::env::join_paths(dirs).unwrap()
}

/// Runs `script` with nothing but an empty HOME and `path`, plus `extra` variables, under a deadline.
async fn run_demo(script: &Path, path: OsString, extra: &[(&str, &str)]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut command = Command::new(script);
    command.env_clear().env("HOME", home.path()).env("PATH", path);
    for (name, value) in extra {
        command.env(name, value);
    }
    tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("the demo finishes")
    .unwrap()
    .unwrap()
}

fn stdout_of(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

#[tokio::test]
async fn the_offline_demo_shows_each_hook_at_work() {
    let output = run_demo(
        &demo_dir().join("run.sh"),
        joined(&path_without_elph()),
        &[("ELPH_BIN", env!("CARGO_BIN_EXE_elph"))],
    )
    .await;
    let text = stdout_of(&output);
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

/// The README installs `elph` and then runs the demo with no `ELPH_BIN`: the demo must take the
/// `elph` on PATH, and say which one it took.
#[tokio::test]
async fn the_demo_uses_the_elph_on_path_and_names_it() {
    let bin = tempfile::tempdir().unwrap();
    let installed = bin.path().join("elph");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_elph"), &installed).unwrap();
    let mut path = vec![bin.path().to_path_buf()];
    path.extend(path_without_elph());
    let output = run_demo(&demo_dir().join("run.sh"), joined(&path), &[]).await;
    let text = stdout_of(&output);
    let using = format!("== Using {} (elph ", installed.display());
    assert!(text.contains(&using), "missing {using:?} in:\n{text}");
    assert!(
        text.contains("hook 'block-rm-rf' blocked the tool call"),
        "{text}"
    );
}

/// A fresh checkout where nothing is installed or built: the demo says how to get an `elph`,
/// including the PATH step, and fails without touching anything.
#[tokio::test]
async fn the_demo_without_any_elph_says_how_to_install_it() {
    let checkout = tempfile::tempdir().unwrap();
    let copy = checkout.path().join("examples/demo");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(demo_dir().join("run.sh"), copy.join("run.sh")).unwrap();
    let output = run_demo(&copy.join("run.sh"), joined(&path_without_elph()), &[]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "no elph found",
        "cargo install --locked --path crates/coding-agent",
        ".cargo/env",
        "cargo build",
    ] {
        assert!(stderr.contains(expected), "missing {expected:?} in:\n{stderr}");
    }
    assert!(output.stdout.is_empty(), "nothing ran: {output:?}");
}
