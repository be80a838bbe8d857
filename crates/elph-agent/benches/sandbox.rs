//! What the sandbox costs a command: a trivial `shell_exec` (`true`) under `workspace-write`
//! (Landlock, the seccomp filter, the mount namespace that keeps `.elph/` read-only, the user
//! namespace, the PID namespace with its own `/proc` and its init, the capabilities cleared, the
//! limits set) against the same call under `full-access` (no confinement), in the same run. The
//! claim is the ratio of the two medians (target: at most 1.3×). Both start their child sharing
//! Elph's memory (the sandboxed one created by its view's starter, `elph-process`'s
//! `sandbox/starter.rs`); run it as root and as a user who is not (`setpriv --reuid N --regid N
//! --clear-groups env HOME=/tmp BENCH --bench`). On a loaded machine the medians mostly measure
//! how long each process waits for a CPU: compare them on a quiet one.
//!
//! divan's table measures each bench after the other, so a change in the machine's load between
//! them moves the ratio; the summary printed after it (`cargo bench` passes `--bench`) runs the
//! three interleaved, round by round, quiet and then beside two busy loops, and prints each
//! one's fastest and median with its ratio to the unsandboxed call of the same rounds.
//!
//! The quiet phase on the 2-core machine while other engineers built (load average 11-14), before
//! (`a4c0e88`: each command joined the view and cleared its capabilities itself; not root, through
//! a helper process) and after the view's starter, two runs of each alternated, µs fastest /
//! median (ratio to unsandboxed):
//!
//! | | unsandboxed | read-only | workspace-write |
//! | --- | --- | --- | --- |
//! | root, before | 703-708 / 765-878 | 1.21-1.22× / 1.23-1.24× | 1.25-1.28× / 1.25-1.30× |
//! | root, after | 706-716 / 796-1,117 | 1.06-1.07× / 1.07-1.08× | 1.10× / 1.10-1.11× |
//! | uid 64123, before | 708-719 / 933-946 | 1.40-1.42× / 1.47-1.75× | 1.43-1.44× / 1.53-1.57× |
//! | uid 64123, after | 719-735 / 816-1,125 | 1.06-1.09× / 1.05-1.08× | 1.08-1.11× / 1.08-1.09× |
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::sync::OnceLock;

use divan::Bencher;
use elph_agent::tools::{ToolCatalog, ToolContext};
use elph_process::sandbox::{SandboxMode, SandboxPolicy};
use serde_json::json;

fn main() {
    divan::main();
    // `cargo test --benches` does not pass --bench, and only checks that the benches run.
    if std::env::args().any(|arg| arg == "--bench") {
        summary();
    }
}

struct Setup {
    runtime: tokio::runtime::Runtime,
    catalog: ToolCatalog,
    project: tempfile::TempDir,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| Setup {
        runtime: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
        catalog: ToolCatalog::native(),
        project: tempfile::tempdir().unwrap(),
    })
}

fn context(mode: SandboxMode) -> ToolContext {
    let project = setup().project.path();
    ToolContext::new(project).with_sandbox(SandboxPolicy::workspace(project).with_mode(mode))
}

fn shell_true(bencher: Bencher, mode: SandboxMode) {
    let mut call = shell_call(mode);
    bencher.bench_local(&mut call);
}

/// One `shell_exec` of `true` in `mode`, as a closure to call again and again.
fn shell_call(mode: SandboxMode) -> impl FnMut() {
    let setup = setup();
    let tool = setup.catalog.get("shell_exec").unwrap().clone();
    let ctx = context(mode);
    move || {
        let output = setup
            .runtime
            .block_on(tool.execute(json!({"command": "true"}), &ctx));
        assert!(!output.is_error, "{output:?}");
    }
}

/// Two processes that keep both cores busy while they live.
struct Load(Vec<std::process::Child>);

impl Load {
    fn start(n: usize) -> Self {
        Load(
            (0..n)
                .map(|_| {
                    std::process::Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The three calls interleaved round by round, so that drift in the machine's load hits them
/// alike; fastest and median of each, and their ratios to the unsandboxed call's.
fn summary() {
    const ROUNDS: usize = 500;
    const TARGET: f64 = 1.3;
    let modes = [
        ("unsandboxed (full-access)", SandboxMode::FullAccess),
        ("sandboxed read-only", SandboxMode::ReadOnly),
        ("sandboxed workspace-write", SandboxMode::WorkspaceWrite),
    ];
    let mut calls: Vec<_> = modes.iter().map(|(_, mode)| shell_call(*mode)).collect();
    println!();
    println!(
        "a trivial shell_exec (`true`), {ROUNDS} rounds interleaved, fastest / median in µs \
         (ratio to unsandboxed), as uid {}:",
        // `/proc/self` belongs to the process's effective user.
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap())
    );
    for (phase, busy) in [("quiet", 0), ("loaded", 2)] {
        let _load = Load::start(busy);
        let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); calls.len()];
        for _ in 0..ROUNDS {
            for (call, samples) in calls.iter_mut().zip(samples.iter_mut()) {
                let started = std::time::Instant::now();
                call();
                samples.push(started.elapsed().as_secs_f64() * 1e6);
            }
        }
        let spread = |samples: &mut Vec<f64>| {
            samples.sort_by(f64::total_cmp);
            (samples[0], samples[samples.len() / 2])
        };
        let (base_fast, base_median) = spread(&mut samples[0]);
        println!("  {phase} ({busy} busy loops):");
        for ((name, _), samples) in modes.iter().zip(samples.iter_mut()) {
            let (fast, median) = spread(samples);
            let ratio = median / base_median;
            println!(
                "    {name:<28} {fast:>7.0} / {median:>7.0}  ({:.2}x / {ratio:.2}x){}",
                fast / base_fast,
                if ratio > TARGET { "  over the target" } else { "" }
            );
        }
    }
    println!("  target: a sandboxed call at most {TARGET}x the unsandboxed one (median)");
}

#[divan::bench]
fn unsandboxed_full_access(bencher: Bencher) {
    shell_true(bencher, SandboxMode::FullAccess);
}

#[divan::bench]
fn sandboxed_workspace_write(bencher: Bencher) {
    shell_true(bencher, SandboxMode::WorkspaceWrite);
}

#[divan::bench]
fn sandboxed_read_only(bencher: Bencher) {
    shell_true(bencher, SandboxMode::ReadOnly);
}
