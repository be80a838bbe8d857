//! Loading and validating a 1,000-hook hooks.json, against reading and parsing the same file as
//! plain JSON (the baseline). Run with `cargo bench -p coding-agent --bench config_load`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::path::PathBuf;

use coding_agent::hooks::config::read_file;
use coding_agent::hooks::discovery::{FileLoad, HookScope, merge};

fn main() {
    divan::main();
}

fn thousand_hook_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let events = ["preToolUse", "postToolUse", "stop", "beforeAgent", "sessionStart"];
    let hooks: Vec<String> = (0..1000)
        .map(|i| {
            let event = events[i % events.len()];
            let matcher = if event.ends_with("ToolUse") {
                r#", "matcher": {"toolNames": ["shell_exec", "mcp_*"]}"#
            } else {
                ""
            };
            format!(
                r#"{{"id": "hook-{i}", "event": "{event}", "command": "hooks/h{i}.sh", "args": ["--flag", "{i}"], "timeoutMs": 5000{matcher}}}"#
            )
        })
        .collect();
    let path = dir.path().join("hooks.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"$schema": "https://elph.space/hooks-schema.json", "hooks": [{}]}}"#,
            hooks.join(",\n")
        ),
    )
    .unwrap();
    (dir, path)
}

#[divan::bench]
fn baseline_read_and_parse_json(bencher: divan::Bencher) {
    let (_dir, path) = thousand_hook_file();
    bencher.bench(|| {
        let bytes = std::fs::read(&path).unwrap();
        serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()
    });
}

#[divan::bench]
fn load_and_validate(bencher: divan::Bencher) {
    let (_dir, path) = thousand_hook_file();
    bencher.bench(|| read_file(&path).unwrap().unwrap());
}

#[divan::bench]
fn load_validate_and_merge(bencher: divan::Bencher) {
    let (_dir, path) = thousand_hook_file();
    bencher.bench(|| {
        merge(
            vec![FileLoad::read(path.clone(), HookScope::Home)],
            Some("/usr/bin:/bin"),
        )
    });
}
