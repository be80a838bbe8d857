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

/// The lines of `text` from the first that contains `start` up to (not including) the next that
/// starts with `end`: one model turn, or one section, of the demo's output.
fn section<'a>(text: &'a str, start: &str, end: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|line| !line.contains(start));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no line with {start:?} in:\n{text}"));
    std::iter::once(first)
        .chain(lines.take_while(|line| !line.starts_with(end)))
        .collect()
}

fn assert_lines(section: &[&str], expected: &[&str]) {
    let mut rest = section.iter();
    for line in expected {
        assert!(
            rest.any(|actual| actual.trim_end() == *line),
            "missing (or out of order) {line:?} in:\n{}",
            section.join("\n")
        );
    }
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

    // The model's turns are visible, each one, in order, as the script has them.
    let script: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(demo_dir().join("script.json")).unwrap()).unwrap();
    let turns: Vec<String> = script["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| format!("model: {}", turn["text"].as_str().unwrap()))
        .collect();
    let turn_lines: Vec<&str> = turns.iter().map(String::as_str).collect();
    assert_lines(&text.lines().collect::<Vec<_>>(), &turn_lines);

    // The added context: what the hook added, shown as what the model's system prompt ends with,
    // before the model's first turn.
    assert_lines(
        &section(&text, "you: Tidy up the build output", "model: "),
        &[
            "  • hook 'house-rules' added to the system prompt for this turn;",
            "    the model receives it at the end of its system prompt:",
            "      House rules: never delete the build folder wholesale; keep notes in docs/.",
        ],
    );

    // The redaction: the line as the file has it, then as the model received it; the rest of the
    // result reaches the model unchanged.
    assert_lines(
        &section(&text, "model: I'll check the service configuration.", "model: "),
        &[
            "    → read_file {\"path\": \"config.env\"}",
            "    • hook 'redact-secrets' replaced the tool result before the model saw it:",
            "      config.env on disk:  OPENAI_API_KEY=sk-demo-0123456789abcdef",
            "      the model received:  OPENAI_API_KEY=[REDACTED]",
            "    ← # Local settings for the demo service",
            "      SERVICE_URL=http://localhost:8080",
            "      OPENAI_API_KEY=[REDACTED]",
        ],
    );
    let secret = "sk-demo-0123456789abcdef";
    let with_secret: Vec<&str> = text.lines().filter(|line| line.contains(secret)).collect();
    assert_eq!(
        with_secret,
        ["      config.env on disk:  OPENAI_API_KEY=sk-demo-0123456789abcdef"],
        "the secret shows only as the file's own line, never as something the model received"
    );

    // The block: the hook's reason, then what the model received instead of a result.
    assert_lines(
        &section(&text, "model: Now I'll clear the stale build output.", "model: "),
        &[
            "    → shell_exec {\"command\": \"rm -rf build\"}",
            "    • hook 'block-rm-rf' blocked the tool call: rm -rf is not allowed in this project; delete files one by one",
            "    ✗ Tool call blocked by hook 'block-rm-rf': rm -rf is not allowed in this project; delete files one by one.",
        ],
    );

    // The rewritten input: the field the model asked for, then what ran.
    assert_lines(
        &section(&text, "model: That was blocked", "model: "),
        &[
            "    • hook 'notes-go-in-docs' rewrote the tool input:",
            "      the model asked for:  \"path\": \"notes.txt\"",
            "      what runs:            \"path\": \"docs/notes.txt\"",
            "    ← Created docs/notes.txt (70 bytes)",
        ],
    );

    // What the hooks left behind, checked in the project itself.
    assert_lines(
        &section(&text, "== What the hooks left behind", "== "),
        &[
            "-- build/ still exists (rm -rf was blocked):",
            "output.txt",
            "-- the notes landed in docs/ (write_file was rewritten):",
            "The build folder holds stale output; remove build/output.txt by hand.",
            "-- audit.log has one line per tool call, the blocked one included:",
            "list_dir, read_file, shell_exec, write_file",
            "4",
        ],
    );
    assert!(!text.contains(" ! "), "no hook problem in the demo:\n{text}");

    // The hooks table, with the temporary folder cut from its paths, keeps its columns aligned.
    let table = section(&text, "== The hooks it declares", "home file");
    let header = table
        .iter()
        .find(|line| line.starts_with("ID "))
        .unwrap_or_else(|| panic!("no table header in:\n{}", table.join("\n")));
    let rows: Vec<&&str> = table
        .iter()
        .filter(|line| line.contains("project/.elph/hooks.json  "))
        .collect();
    assert_eq!(rows.len(), 5, "one row per hook:\n{}", table.join("\n"));
    for (column, value) in [
        ("SOURCE", "project/.elph/hooks.json"),
        ("COMMAND", "project/.elph/hooks/"),
    ] {
        let at = header.find(column).unwrap();
        for row in &rows {
            assert_eq!(
                row.find(value),
                Some(at),
                "{column} aligned:\n{}",
                table.join("\n")
            );
        }
    }
    assert!(
        table.iter().all(|line| !line.contains("elph-demo.")),
        "the temporary folder is cut from every path of the table:\n{}",
        table.join("\n")
    );
}

/// A model that fails mid-way: the demo says the turn did not complete and exits with elph's
/// status, rather than showing a half-run session as a success.
#[tokio::test]
async fn the_demo_fails_when_the_turn_fails() {
    let checkout = tempfile::tempdir().unwrap();
    let copy = checkout.path().join("examples/demo");
    copy_tree(&demo_dir(), &copy);
    std::fs::write(
        copy.join("script.json"),
        r#"{"turns": [{"text": "Looking.", "toolCalls": [{"name": "list_dir", "input": {"path": "."}}]},
                    {"error": "the model is unreachable"}]}"#,
    )
    .unwrap();
    let output = run_demo(
        &copy.join("run.sh"),
        joined(&path_without_elph()),
        &[("ELPH_BIN", env!("CARGO_BIN_EXE_elph"))],
    )
    .await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("model: Looking."), "{text}");
    assert!(
        text.contains("the turn did not complete: failed") && text.contains("the model is unreachable"),
        "{text}"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("the demo's turn failed (exit 1)"),
        "{output:?}"
    );
    assert!(!text.contains("== What the hooks left behind"), "{text}");
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
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
