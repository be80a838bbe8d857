//! A headless agent run of 100 tool calls through the scripted provider: with no hooks, with
//! 10 trivial hooks on preToolUse and 10 on postToolUse (2,000 hook runs), and with 10 persistent
//! hooks on preToolUse (1,000 round trips to 10 processes). The cost per hook run is
//! compared with a bare spawn-and-wait of the same hook binary, measured in the same run.
//!
//! `cargo bench -p coding-agent --bench agent_run`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use coding_agent::hooks::discovery::{FileLoad, HookScope, merge};
use coding_agent::hooks::host::HookHost;
use elph_agent::harness::{AgentHarness, HarnessConfig};
use elph_agent::hooks::HookRegistry;
use elph_agent::tools::ToolCatalog;
use elph_ai::ScriptedProvider;
use tokio_util::sync::CancellationToken;

const TOOL_CALLS: usize = 100;
const HOOKS_PER_EVENT: usize = 10;

fn main() {
    divan::main();
    // `cargo bench` passes --bench; `cargo test --benches` does not, and only checks that it runs.
    if std::env::args().any(|arg| arg == "--bench") {
        per_hook_summary();
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    project: PathBuf,
    script: PathBuf,
    hooks_file: PathBuf,
    persistent_file: PathBuf,
    empty_file: PathBuf,
    hook_binary: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    let mut turns: Vec<serde_json::Value> = (0..TOOL_CALLS)
        .map(|_| serde_json::json!({"text": "", "toolCalls": [{"name": "list_dir", "input": {"path": "."}}]}))
        .collect();
    turns.push(serde_json::json!({"text": "done"}));
    let script = project.join("script.json");
    std::fs::write(&script, serde_json::json!({ "turns": turns }).to_string()).unwrap();
    let hook_binary = test_support::hook_scripts::trivial_hook_binary();
    let mut hooks = Vec::new();
    for event in ["preToolUse", "postToolUse"] {
        for i in 0..HOOKS_PER_EVENT {
            hooks.push(
                serde_json::json!({"id": format!("{event}-{i}"), "event": event, "command": hook_binary}),
            );
        }
    }
    let hooks_file = project.join("hooks.json");
    std::fs::write(&hooks_file, serde_json::json!({ "hooks": hooks }).to_string()).unwrap();
    let line_hook = test_support::hook_scripts::test_support_binary("line-hook");
    let persistent: Vec<_> = (0..HOOKS_PER_EVENT)
        .map(|i| {
            serde_json::json!({"id": format!("persistent-{i}"), "event": "preToolUse", "command": line_hook, "persistent": true})
        })
        .collect();
    let persistent_file = project.join("persistent.json");
    std::fs::write(
        &persistent_file,
        serde_json::json!({ "hooks": persistent }).to_string(),
    )
    .unwrap();
    let empty_file = project.join("empty.json");
    std::fs::write(&empty_file, r#"{"hooks": []}"#).unwrap();
    Fixture {
        _dir: dir,
        project,
        script,
        hooks_file,
        persistent_file,
        empty_file,
        hook_binary,
    }
}

fn run_once(runtime: &tokio::runtime::Runtime, fixture: &Fixture, hooks_file: &Path) {
    let set = merge(
        vec![FileLoad::read(hooks_file.to_path_buf(), HookScope::Home)],
        None,
    );
    let host = Arc::new(HookHost::new(set, fixture.project.clone(), &fixture.project).without_run_log());
    let provider = Arc::new(ScriptedProvider::load(&fixture.script).unwrap());
    let mut harness = AgentHarness::new(
        provider,
        Arc::new(ToolCatalog::native()),
        HookRegistry::new(host),
        HarnessConfig {
            max_turns: 1000,
            ..HarnessConfig::new("bench", fixture.project.clone())
        },
    );
    let result = runtime.block_on(harness.run_turn("go", &CancellationToken::new()));
    assert_eq!(result.text, "done");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[divan::bench(sample_count = 5)]
fn run_100_tool_calls_without_hooks(bencher: divan::Bencher) {
    let fixture = fixture();
    let runtime = runtime();
    bencher.bench_local(|| run_once(&runtime, &fixture, &fixture.empty_file));
}

#[divan::bench(sample_count = 5)]
fn run_100_tool_calls_with_20_hooks(bencher: divan::Bencher) {
    let fixture = fixture();
    let runtime = runtime();
    bencher.bench_local(|| run_once(&runtime, &fixture, &fixture.hooks_file));
}

/// Ten persistent hooks on every tool call (one process each for the run): compare with the run
/// without hooks, and with one spawned hook's cost (`bare_spawn_of_the_hook_binary`).
#[divan::bench(sample_count = 5)]
fn run_100_tool_calls_with_10_persistent_hooks(bencher: divan::Bencher) {
    let fixture = fixture();
    let runtime = runtime();
    bencher.bench_local(|| run_once(&runtime, &fixture, &fixture.persistent_file));
}

/// The baseline: one bare spawn-and-wait of the hook binary, writing a small payload.
#[divan::bench(sample_count = 50)]
fn bare_spawn_of_the_hook_binary(bencher: divan::Bencher) {
    let fixture = fixture();
    bencher.bench_local(|| bare_spawn(&fixture));
}

/// The cost of one hook run in a real run — (run with 20 hooks − run without) / 2,000 — against
/// a bare spawn-and-wait of the hook binary, interleaved so that drift in the machine's load hits
/// all alike; on the multi-thread runtime (the TUI, the benches above) and on the current-thread
/// one (`elph run`).
fn per_hook_summary() {
    const TARGET: f64 = 1.15;
    const ROUNDS: usize = 5;
    const BARE_PER_ROUND: usize = 200;
    let fixture = fixture();
    let runtimes = [
        ("multi-thread", runtime()),
        (
            "current-thread",
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        ),
    ];
    let hook_runs = (TOOL_CALLS * 2 * HOOKS_PER_EVENT) as f64;
    println!();
    println!("one hook run in a real run vs a bare spawn-and-wait, interleaved ({ROUNDS} rounds):");
    for (name, runtime) in &runtimes {
        run_once(runtime, &fixture, &fixture.hooks_file);
        let (mut per_hook, mut bare) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let started = std::time::Instant::now();
            run_once(runtime, &fixture, &fixture.empty_file);
            let without = started.elapsed().as_secs_f64();
            let started = std::time::Instant::now();
            run_once(runtime, &fixture, &fixture.hooks_file);
            let with = started.elapsed().as_secs_f64();
            per_hook.push((with - without) / hook_runs);
            for _ in 0..BARE_PER_ROUND {
                let started = std::time::Instant::now();
                bare_spawn(&fixture);
                bare.push(started.elapsed().as_secs_f64());
            }
        }
        per_hook.sort_by(f64::total_cmp);
        bare.sort_by(f64::total_cmp);
        for (label, q) in [("median", 0.5), ("fastest", 0.0)] {
            let pick = |v: &[f64]| v[((v.len() - 1) as f64 * q).round() as usize];
            let (h, b) = (pick(&per_hook), pick(&bare));
            println!(
                "  {name:>14} {label:>7}: one hook run {:>7.1} µs  bare {:>7.1} µs  {:.3}x bare  (target <= {TARGET}x: {})",
                h * 1e6,
                b * 1e6,
                h / b,
                if h / b <= TARGET { "ok" } else { "MISSED" }
            );
        }
    }
}

fn bare_spawn(fixture: &Fixture) {
    use std::io::Write;
    {
        let mut child = std::process::Command::new(&fixture.hook_binary)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"{\"event\":\"preToolUse\"}\n")
            .unwrap();
        child.wait_with_output().unwrap();
    }
}
