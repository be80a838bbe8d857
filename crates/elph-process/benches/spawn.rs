//! What one spawned hook costs, in microseconds, through `elph_process::process::run` (the one spawn
//! path: a session and process group of its own, the orphan watcher, the caps and the timeout),
//! against a bare std spawn-and-wait of the same command (std's `posix_spawn`, none of Elph's
//! steps), in the same run.
//!
//! The command is a hook in miniature: `/bin/cat` reads a 1 KiB payload on stdin and writes it
//! back. The spawn forks (std's `pre_exec` path), and a fork copies the parent's page tables, so
//! its cost grows with the memory Elph has written: each bench runs with 0, 64 and 256 MiB of
//! touched heap (`ballast`) beside the runtime. An idle `elph` holds about 1 MiB of anonymous
//! memory, a long session a few MiB more: the 0 MiB row is Elph's case.
//!
//! The `CLONE_VM` spawn that once sat beside the fork path was decided on these figures: in one run
//! on the 2-core machine (heavily loaded, so the fastest sample is the steadier figure), fastest /
//! median per hook, 0 MiB: bare std spawn 600 / 691 µs, CLONE_VM 679 / 1,088 µs, fork 873 / 1,398
//! µs; at 64 MiB the fork took 3.2 ms (fastest), at 256 MiB 24 ms. At Elph's size the CLONE_VM path
//! saved 0.2-0.3 ms per hook, under 0.1 % of a model round trip (hundreds of ms): no user waits
//! for it, so it went, with its shared-memory child and most of the crate's `unsafe`. The ratio to
//! a bare spawn is reported, not enforced: 1.45× (fastest; 2.0× median) through the fork path,
//! where the CLONE_VM path had 1.13× (1.58×). docs/architecture.md, "Starting a child", has the
//! decision.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "bench code: a failure should stop loudly"
)]

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use divan::Bencher;
use elph_process::process::{self, CaptureMode, Leftovers, RunSpec, Stdin};

fn main() {
    divan::main();
}

const CAT: &str = "/bin/cat";
const PAYLOAD: [u8; 1024] = [b'x'; 1024];
const BALLAST_MIB: [usize; 3] = [0, 64, 256];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// `mib` MiB of heap, every page written, so a fork has that much more to copy.
fn ballast(mib: usize) -> Vec<u8> {
    vec![1u8; mib << 20]
}

fn env() -> &'static [(OsString, OsString)] {
    static ENV: OnceLock<Vec<(OsString, OsString)>> = OnceLock::new();
    ENV.get_or_init(|| vec![("PATH".into(), "/usr/bin:/bin".into())])
}

/// One hook run the way the host runs one: its own session and group, the orphan watcher, the
/// caps, the timeout, the group killed at the end.
fn hook() {
    let out = runtime().block_on(process::run(&RunSpec {
        program: Path::new(CAT),
        args: &[] as &[&OsStr],
        cwd: Path::new("/"),
        env: env(),
        stdin: Stdin::Bytes(&PAYLOAD),
        stdout: CaptureMode::KillPastCap(64 * 1024),
        stderr: CaptureMode::KillPastCap(64 * 1024),
        timeout: Duration::from_secs(10),
        grace: process::EXIT_GRACE,
        leftovers: Leftovers::Kill,
        sandbox: None,
    }));
    assert_eq!(out.exit_code, Some(0), "{:?}", out.spawn_error);
    assert_eq!(out.stdout.total(), PAYLOAD.len() as u64);
}

/// The baseline: std's spawn (posix_spawn: no fork of Elph's page tables, no steps of Elph's).
fn bare_std_spawn() {
    let mut child = Command::new(CAT)
        .env_clear()
        .envs(env().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&PAYLOAD).unwrap();
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    assert!(child.wait().unwrap().success() && stdout.len() == PAYLOAD.len());
}

#[divan::bench(args = BALLAST_MIB, sample_count = 300)]
fn bare_std_spawn_and_wait(bencher: Bencher, mib: usize) {
    let ballast = ballast(mib);
    bencher.bench_local(bare_std_spawn);
    drop(divan::black_box(ballast));
}

#[divan::bench(args = BALLAST_MIB, sample_count = 300)]
fn hook_through_spawn(bencher: Bencher, mib: usize) {
    let ballast = ballast(mib);
    bencher.bench_local(hook);
    drop(divan::black_box(ballast));
}
