//! The `grep` tool against ripgrep on a large real tree: the cargo registry's sources
//! (`$CARGO_HOME/registry/src`, or `ELPH_BENCH_TREE`). Two searches, each against its own baseline
//! measured in the same run:
//!
//! - a pattern that matches nowhere, so every file is read: `grep` vs `rg PATTERN` (target: median
//!   at most 1.3×);
//! - a common word, so the result cap is reached: `grep` (200 matches, its default cap) vs
//!   `rg -m 200 WORD` (target: median at most 1.3×).
//!
//! `cargo bench -p elph-agent --bench search` runs divan's timings, then the claim: the tool and
//! `rg` interleaved round by round, so that drift in the machine's load hits both alike, with the
//! ratios of the medians. `rg`'s output is read through a pipe, as the tool collects its own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use divan::Bencher;
use elph_agent::tools::{Tool, ToolCatalog, ToolContext};
use serde_json::json;

/// Matches no line of any crate's source.
const NO_MATCH: &str = "elph-never-matches-zqxjv";
/// Matches on most lines of prose and many of code.
const COMMON_WORD: &str = "the";
/// The grep tool's default cap, which `rg -m` is given too.
const CAP: &str = "200";
const TARGET: f64 = 1.3;
const ROUNDS: usize = 9;

fn main() {
    divan::main();
    // `cargo bench` passes --bench; `cargo test --benches` does not, and only checks that it runs.
    if std::env::args().any(|arg| arg == "--bench") {
        summary();
    }
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    grep: std::sync::Arc<dyn Tool>,
    tree: PathBuf,
    ctx: ToolContext,
}

fn tree() -> PathBuf {
    if let Some(tree) = std::env::var_os("ELPH_BENCH_TREE") {
        return PathBuf::from(tree);
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    cargo_home.join("registry/src")
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let tree = tree()
            .canonicalize()
            .expect("the cargo registry's sources (or ELPH_BENCH_TREE)");
        let mut ctx = ToolContext::new(&tree);
        ctx.read_deadline = Duration::from_secs(600);
        Setup {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
            grep: ToolCatalog::native().get("grep").unwrap().clone(),
            tree,
            ctx,
        }
    })
}

/// One grep tool call; returns how many matches it reported.
fn tool(pattern: &str) -> u64 {
    let setup = setup();
    let output = setup
        .runtime
        .block_on(setup.grep.execute(json!({"pattern": pattern}), &setup.ctx));
    assert!(!output.is_error, "{output:?}");
    assert_ne!(
        output.details["truncated"], true,
        "the deadline passed: {output:?}"
    );
    output.details["matches"].as_u64().unwrap()
}

/// One tool call that reaches the cap.
fn tool_capped() {
    let setup = setup();
    let output = setup
        .runtime
        .block_on(setup.grep.execute(json!({"pattern": COMMON_WORD}), &setup.ctx));
    assert!(!output.is_error, "{output:?}");
    assert_eq!(output.details["matches"], 200, "{:?}", output.details);
    assert!(output.details.get("deadlineReached").is_none());
}

/// One `rg` run over the same tree with `args`, its output read through a pipe.
fn rg(args: &[&str]) -> usize {
    let output = Command::new("rg")
        .args(args)
        .arg(&setup().tree)
        .env_remove("RIPGREP_CONFIG_PATH")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("rg on PATH (apt-get install ripgrep)");
    // 0: matches, 1: none; 2 is an error (unreadable files count too, as for the tool).
    assert!(
        output.status.code().is_some_and(|code| code <= 2),
        "{:?}",
        output.status
    );
    output.stdout.len()
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn grep_tool_no_match(bencher: Bencher) {
    bencher.bench_local(|| assert_eq!(tool(NO_MATCH), 0));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn ripgrep_no_match(bencher: Bencher) {
    bencher.bench_local(|| assert_eq!(rg(&[NO_MATCH]), 0));
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn grep_tool_common_word_capped(bencher: Bencher) {
    bencher.bench_local(tool_capped);
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn ripgrep_common_word_max_count(bencher: Bencher) {
    bencher.bench_local(|| rg(&["-m", CAP, COMMON_WORD]));
}

fn timed(work: impl FnOnce()) -> f64 {
    let started = Instant::now();
    work();
    started.elapsed().as_secs_f64()
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The claim: each search and its baseline, interleaved round by round; ratios of the medians.
fn summary() {
    println!();
    println!(
        "grep tool vs ripgrep over {}, interleaved ({ROUNDS} rounds):",
        setup().tree.display()
    );
    // Warm the page cache and the tool's first call.
    tool(NO_MATCH);
    rg(&[NO_MATCH]);
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut ours_capped, mut theirs_capped) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ours.push(timed(|| assert_eq!(tool(NO_MATCH), 0)));
        theirs.push(timed(|| assert_eq!(rg(&[NO_MATCH]), 0)));
        ours_capped.push(timed(tool_capped));
        theirs_capped.push(timed(|| {
            rg(&["-m", CAP, COMMON_WORD]);
        }));
    }
    for (label, ours, theirs, baseline) in [
        ("no match", ours, theirs, "rg"),
        ("common word, capped", ours_capped, theirs_capped, "rg -m 200"),
    ] {
        let (a, b) = (median(ours), median(theirs));
        println!(
            "  {label:>20}: grep tool {:>8.1} ms  {baseline:<9} {:>8.1} ms  {:.2}x  (target <= {TARGET}x: {})",
            a * 1e3,
            b * 1e3,
            a / b,
            if a / b <= TARGET { "ok" } else { "MISSED" }
        );
    }
}
