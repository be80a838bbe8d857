//! The hook host's cost, as ratios measured in the same run:
//!
//! - one round trip of a trivial compiled hook (`trivial-hook` of test-support: reads stdin, prints
//!   `{}`) through the host, against a bare spawn-and-wait of the same binary with the same payload
//!   (target: at most 1.15x);
//! - a chain of ten such hooks against one (target: at most 10.5x);
//! - one round trip of a persistent hook (`line-hook` of test-support: answers `{}` to every
//!   line) against one spawned hook (target: at most 0.1 ms);
//! - ten persistent hooks against one spawned hook (target: less).
//!
//! Run with `cargo bench -p coding-agent --bench host`. divan prints each benchmark; then an
//! interleaved measurement of the three prints the ratios and whether they meet their targets.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use coding_agent::hooks::config::Protocol;
use coding_agent::hooks::discovery::resolve_command;
use coding_agent::hooks::{HookDefinition, HookHost, HookScope, HookSet};
use elph_agent::hooks::{HookEvent, HookPayload, Matcher, PayloadBase, PreToolUsePayload};
use serde_json::json;

const ROUND_TRIP_TARGET: f64 = 1.15;
const CHAIN_TARGET: f64 = 10.5;
const PERSISTENT_TARGET: Duration = Duration::from_micros(100);

fn main() {
    divan::main();
    // `cargo bench` passes --bench; `cargo test --benches` does not, and only checks that it runs.
    if std::env::args().any(|arg| arg == "--bench") {
        ratio_summary();
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    binary: PathBuf,
    payload: HookPayload,
    one: HookHost,
    ten: HookHost,
    one_persistent: HookHost,
    ten_persistent: HookHost,
    runtime: tokio::runtime::Runtime,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        let data = project.join("data");
        let binary = test_support::hook_scripts::trivial_hook_binary();
        let line_binary = test_support::hook_scripts::test_support_binary("line-hook");
        let hook = |i: usize| HookDefinition {
            id: format!("trivial-{i}"),
            event: HookEvent::PreToolUse,
            matcher: Matcher::any(),
            handler: coding_agent::hooks::discovery::Handler::Command(resolve_command(
                binary.to_str().unwrap(),
                &project,
                "",
            )),
            args: Vec::new(),
            timeout: Duration::from_secs(10),
            budget: None,
            enabled: true,
            persistent: false,
            run_async: false,
            source: project.join("hooks.json"),
            scope: HookScope::Home,
            protocol: Protocol::Elph,
            sandbox: None,
            fail_closed: false,
            max_input_bytes: elph_agent::hooks::limits::MAX_INPUT_BYTES,
            max_output_bytes: elph_agent::hooks::limits::MAX_STDOUT_BYTES,
            env: Default::default(),
        };
        let persistent = |i: usize| HookDefinition {
            id: format!("line-{i}"),
            handler: coding_agent::hooks::discovery::Handler::Command(resolve_command(
                line_binary.to_str().unwrap(),
                &project,
                "",
            )),
            persistent: true,
            run_async: false,
            ..hook(i)
        };
        let set = |n: usize| HookSet {
            hooks: (0..n).map(hook).collect(),
            ..HookSet::default()
        };
        let persistent_set = |n: usize| HookSet {
            hooks: (0..n).map(persistent).collect(),
            ..HookSet::default()
        };
        let payload = HookPayload::PreToolUse(PreToolUsePayload {
            base: PayloadBase::new("bench-session", &project),
            tool_name: "shell_exec".into(),
            tool_call_id: "call_1".into(),
            tool_input: json!({"command": "cargo test --workspace", "timeoutMs": 120000}),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Setup {
            one: HookHost::new(set(1), project.clone(), &data),
            ten: HookHost::new(set(10), project.clone(), &data),
            one_persistent: HookHost::new(persistent_set(1), project.clone(), &data),
            ten_persistent: HookHost::new(persistent_set(10), project.clone(), &data),
            _dir: dir,
            binary,
            payload,
            runtime,
        }
    }

    /// Spawn the binary, write the payload, read its output, wait: nothing else.
    fn bare(&self) {
        let stdin = self.payload.to_stdin_bytes();
        bare_spawn_and_wait(&self.binary, &stdin);
    }

    fn through(&self, host: &HookHost) {
        let dispatch = self.runtime.block_on(host.run_chain(self.payload.clone()));
        assert!(dispatch.diagnostics.is_empty(), "{:?}", dispatch.diagnostics);
    }
}

fn bare_spawn_and_wait(binary: &Path, stdin: &[u8]) {
    let mut child = Command::new(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success() && output.stdout.starts_with(b"{}"));
}

/// The same with a `pre_exec` step (`setsid`), which puts std on its fork path: what every hook
/// paid before `vfork_spawn`, for comparison.
#[expect(unsafe_code, reason = "pre_exec puts std on its fork path")]
fn bare_fork_and_wait(binary: &Path, stdin: &[u8]) {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(binary);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setsid(2) only, in the forked child.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success() && output.stdout.starts_with(b"{}"));
}

#[divan::bench(sample_count = 200)]
fn bare_fork_and_wait_of_the_hook_binary(bencher: divan::Bencher) {
    let setup = Setup::new();
    let stdin = setup.payload.to_stdin_bytes();
    bencher.bench_local(|| bare_fork_and_wait(&setup.binary, &stdin));
}

#[divan::bench(sample_count = 200)]
fn bare_spawn_and_wait_of_the_hook_binary(bencher: divan::Bencher) {
    let setup = Setup::new();
    bencher.bench_local(|| setup.bare());
}

#[divan::bench(sample_count = 200)]
fn one_hook_through_the_host(bencher: divan::Bencher) {
    let setup = Setup::new();
    bencher.bench_local(|| setup.through(&setup.one));
}

#[divan::bench(sample_count = 50)]
fn ten_hooks_through_the_host(bencher: divan::Bencher) {
    let setup = Setup::new();
    bencher.bench_local(|| setup.through(&setup.ten));
}

#[divan::bench(sample_count = 500)]
fn one_persistent_hook_through_the_host(bencher: divan::Bencher) {
    let setup = Setup::new();
    setup.through(&setup.one_persistent);
    bencher.bench_local(|| setup.through(&setup.one_persistent));
}

#[divan::bench(sample_count = 200)]
fn ten_persistent_hooks_through_the_host(bencher: divan::Bencher) {
    let setup = Setup::new();
    setup.through(&setup.ten_persistent);
    bencher.bench_local(|| setup.through(&setup.ten_persistent));
}

/// The `q` quantile (0.5: the median) of `samples`.
fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort();
    samples[((samples.len() - 1) as f64 * q).round() as usize]
}

/// Interleaves the measurements, so drift in machine load hits them alike, and prints ratios of the
/// medians (the claim) and of the 10th percentiles (less sensitive to a busy machine), with a
/// control: how ten bare spawns in a row scale against one on the same machine at the same time.
fn ratio_summary() {
    let setup = Setup::new();
    for _ in 0..20 {
        setup.bare();
        setup.through(&setup.one);
    }
    setup.through(&setup.one_persistent);
    setup.through(&setup.ten_persistent);
    let rounds = 300;
    let (mut bare, mut one, mut ten, mut bare_ten) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut persistent, mut ten_persistent, mut forked) = (Vec::new(), Vec::new(), Vec::new());
    let stdin = setup.payload.to_stdin_bytes();
    for round in 0..rounds {
        let started = Instant::now();
        setup.through(&setup.one_persistent);
        persistent.push(started.elapsed());
        let started = Instant::now();
        setup.through(&setup.ten_persistent);
        ten_persistent.push(started.elapsed());
        let started = Instant::now();
        setup.bare();
        bare.push(started.elapsed());
        let started = Instant::now();
        setup.through(&setup.one);
        one.push(started.elapsed());
        let started = Instant::now();
        bare_fork_and_wait(&setup.binary, &stdin);
        forked.push(started.elapsed());
        if round % 5 == 0 {
            let started = Instant::now();
            setup.through(&setup.ten);
            ten.push(started.elapsed());
            // The control: how ten spawns in a row scale on this machine, with no host at all.
            let started = Instant::now();
            for _ in 0..10 {
                setup.bare();
            }
            bare_ten.push(started.elapsed());
        }
    }
    let verdict = |ratio: f64, target: f64| if ratio <= target { "ok" } else { "MISSED" };
    println!();
    println!(
        "hook host, interleaved ({rounds} rounds of bare and one, {} of ten):",
        ten.len()
    );
    for (label, q) in [("median", 0.5), ("p10", 0.1), ("fastest", 0.0)] {
        let (b, o, t, bt) = (
            quantile(&mut bare, q),
            quantile(&mut one, q),
            quantile(&mut ten, q),
            quantile(&mut bare_ten, q),
        );
        let round_trip = o.as_secs_f64() / b.as_secs_f64();
        let chain = t.as_secs_f64() / o.as_secs_f64();
        println!("  {label}:");
        println!("    bare spawn-and-wait of trivial-hook  {b:>10.1?}");
        println!(
            "    one hook through the host            {o:>10.1?}  {round_trip:.3}x bare  (target <= {ROUND_TRIP_TARGET}x: {})",
            verdict(round_trip, ROUND_TRIP_TARGET)
        );
        let f = quantile(&mut forked, q);
        println!(
            "    control: bare fork-and-wait (setsid) {f:>10.1?}  {:.3}x bare  (std's fork path, what hooks took before)",
            f.as_secs_f64() / b.as_secs_f64()
        );
        println!(
            "    ten hooks through the host           {t:>10.1?}  {chain:.2}x one  (target <= {CHAIN_TARGET}x: {})",
            verdict(chain, CHAIN_TARGET)
        );
        println!(
            "    control: ten bare spawns in a row    {bt:>10.1?}  {:.2}x one bare spawn",
            bt.as_secs_f64() / b.as_secs_f64()
        );
        let (p, pt) = (quantile(&mut persistent, q), quantile(&mut ten_persistent, q));
        println!(
            "    one persistent hook round trip       {p:>10.1?}  {:.4}x one spawned hook  (target <= 100µs: {})",
            p.as_secs_f64() / o.as_secs_f64(),
            verdict(p.as_secs_f64(), PERSISTENT_TARGET.as_secs_f64())
        );
        println!(
            "    ten persistent hooks                 {pt:>10.1?}  {:.3}x one spawned hook  (target < 1x: {})",
            pt.as_secs_f64() / o.as_secs_f64(),
            verdict(pt.as_secs_f64() / o.as_secs_f64(), 0.999)
        );
    }
}
