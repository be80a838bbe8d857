//! Messages that say what happened, once, in a bounded form, through the real binary: a block is
//! reported once, added context is shown (cut and escaped), a huge number in settings.json is not
//! echoed as hundreds of digits, and doctor reads a run log with one huge line in bounded memory.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::json;
use test_support::env::TestEnv;

use super::run_e2e::elph;

const DEADLINE: Duration = Duration::from_secs(60);

fn run(env: &TestEnv, args: &[&str]) -> Output {
    let mut command = assert_cmd::Command::from_std(env.command(&elph()));
    command.args(args).timeout(DEADLINE);
    let output = command.output().unwrap();
    assert!(output.status.code().is_some(), "elph {args:?}: {output:?}");
    output
}

fn scripted(env: &TestEnv, script: serde_json::Value) -> String {
    let path = env.evidence("script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    format!("scripted/{}", path.display())
}

#[test]
fn plain_run_reports_a_block_once_and_shows_the_context_a_hook_added() {
    let env = TestEnv::new();
    env.trust_project();
    env.project_script(
        "block.sh",
        "cat >/dev/null\necho '{\"block\": true, \"reason\": \"no rm here\"}'",
    );
    // Context with a screen clear in it, and longer than a notice shows.
    let long = "x".repeat(400);
    env.project_script(
        "context.sh",
        &format!(
            "cat >/dev/null\nprintf '%s' '{{\"additionalContext\": \"Branch: main\\u001b[2J {long}\"}}'"
        ),
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "no-rm", "event": "preToolUse", "command": "hooks/block.sh"},
        {"id": "branch", "event": "beforeAgent", "command": "hooks/context.sh"},
    ]}));
    let model = scripted(
        &env,
        json!({"turns": [
            {"text": "Running.", "toolCalls": [{"name": "shell_exec", "input": {"command": "rm -rf x"}}]},
            {"text": "It was blocked."}
        ]}),
    );
    let output = run(&env, &["run", "--model", &model, "go"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(err.matches("no rm here").count(), 1, "the block, once:\n{err}");
    assert!(
        err.contains("hook 'no-rm' blocked the tool call: no rm here"),
        "{err}"
    );
    let added = err
        .lines()
        .find(|line| line.contains("hook 'branch' added to the system prompt for this turn"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        added.contains(r#": "Branch: main\u001b[2J xxx"#),
        "what was added: {added}"
    );
    assert!(added.contains("… ("), "cut: {added}");
    assert!(added.len() < 300, "bounded: {added}");
    assert!(!err.contains('\x1b'), "{err:?}");
}

#[test]
fn a_huge_number_in_settings_is_not_echoed_digit_by_digit() {
    let env = TestEnv::new();
    let huge = format!("1{}", "0".repeat(300));
    let model = scripted(&env, json!({"turns": [{"text": "hi"}]}));
    for settings in [
        format!(r#"{{"compactionThreshold": {huge}}}"#),
        format!(r#"{{"readTools": {{"deadlineSeconds": {huge}}}}}"#),
        format!(r#"{{"hooks": {{"maxAddedContextBytes": {huge}}}}}"#),
    ] {
        std::fs::write(env.config_dir.join("settings.json"), &settings).unwrap();
        let output = run(&env, &["run", "--model", &model, "hi"]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.contains("settings.json"), "{err}");
        let longest = err
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(longest <= 24, "a {longest}-digit figure for {settings}:\n{err}");
    }
}

#[test]
fn doctor_reads_a_run_log_with_one_huge_line_in_bounded_memory() {
    let env = TestEnv::new();
    let logs = env.data_dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    // 256 MiB with no line break (sparse: nothing is written to disk), then one good run.
    let log = logs.join("hooks.jsonl");
    let file = std::fs::File::create(&log).unwrap();
    file.set_len(256 * 1024 * 1024).unwrap();
    drop(file);
    let run = json!({"time": "2025-01-01T00:00:00Z", "hookId": "a", "event": "stop", "durationMs": 3,
        "exit": 0, "signal": null, "timedOut": false, "status": "ok", "cause": null});
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, format!("\n{run}\n").as_bytes()).unwrap();
    drop(file);
    // Under a 200 MB address-space limit, a reader that held the line whole would abort.
    let mut command = env.command(Path::new("/bin/sh"));
    command
        .arg("-c")
        .arg("ulimit -v 204800 && exec \"$0\" doctor --json")
        .arg(elph());
    let mut command = assert_cmd::Command::from_std(command);
    let output = command.timeout(DEADLINE).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["runLog"]["skippedLines"], 1, "{}", report["runLog"]);
    assert_eq!(report["runLog"]["runs"], 1, "{}", report["runLog"]);
}

/// Every file and folder under `root`, relative to it.
fn tree(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(root).unwrap().display().to_string());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

/// docs/trust.md, "What untrusted means": nothing is stored in the project; the one thing that may
/// appear is an empty `.elph/`, made by the sandbox for a sandboxed command so that it stays
/// read-only.
#[test]
fn an_untrusted_project_gets_at_most_an_empty_elph_folder() {
    let env = TestEnv::new();
    let answer = scripted(&env, json!({"turns": [{"text": "hi"}]}));
    let output = run(&env, &["run", "--model", &answer, "hi"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(tree(&env.project), Vec::<String>::new());

    let shell = scripted(
        &env,
        json!({"turns": [
            {"text": "Looking.", "toolCalls": [{"name": "shell_exec", "input": {"command": "mkdir -p .elph/x; echo '{}' > .elph/hooks.json; ls"}}]},
            {"text": "done"}
        ]}),
    );
    let output = run(&env, &["run", "--approval", "auto", "--model", &shell, "look"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let found = tree(&env.project);
    assert!(
        found.is_empty() || found == [".elph"],
        "only an empty .elph/ may appear: {found:?}"
    );
}
