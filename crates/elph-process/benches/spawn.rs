//! What one spawned hook costs, in microseconds, by way of creating the child: the
//! `clone(CLONE_VM | CLONE_VFORK)` path and std's plain fork path of `elph_process::process::run`,
//! against a bare std spawn-and-wait of the same command (std's `posix_spawn`, with none of Elph's
//! steps), all in the same run.
//!
//! The command is a hook in miniature: `/bin/cat` reads a 1 KiB payload on stdin and writes it
//! back. A fork copies the parent's page tables, so its cost grows with the memory Elph has mapped:
//! each bench runs with 0, 64 and 256 MiB of touched heap (`ballast`) beside the runtime. (A
//! release `elph` in a session holds tens of MiB; see docs/building.md.)
//!
//! How to read it: the decision about the `CLONE_VM` path is made on the absolute difference per
//! hook, next to what a user waits for anyway — a model round trip, hundreds of milliseconds. The
//! figures and the decision are in docs/architecture.md ("Starting a child").
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
use elph_process::process::{self, CaptureMode, Leftovers, RunSpec, SpawnPath, Stdin};

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
fn hook_through(path: SpawnPath) {
    process::use_spawn_path(path);
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
fn hook_through_clone_vm(bencher: Bencher, mib: usize) {
    let ballast = ballast(mib);
    bencher.bench_local(|| hook_through(SpawnPath::Vfork));
    drop(divan::black_box(ballast));
}

#[divan::bench(args = BALLAST_MIB, sample_count = 300)]
fn hook_through_fork(bencher: Bencher, mib: usize) {
    let ballast = ballast(mib);
    bencher.bench_local(|| hook_through(SpawnPath::Fork));
    drop(divan::black_box(ballast));
}
