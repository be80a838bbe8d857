//! What one spawned hook costs, in microseconds, through `elph_process::process::run` (the one spawn
//! path: a session and process group of its own, the orphan watcher, the caps and the timeout),
//! against a bare std spawn-and-wait of the same command (std's `posix_spawn`, none of Elph's
//! steps), in the same run.
//!
//! The command is a hook in miniature: `/bin/cat` reads a 1 KiB payload on stdin and writes it
//! back. A fork copies the parent's page tables, so its cost grows with the memory Elph has
//! written: each bench runs with 0, 64 and 256 MiB of touched heap (`ballast`) beside the
//! runtime. An idle `elph` holds about 1 MiB of anonymous
//! memory, a long session a few MiB more: the 0 MiB row is Elph's case.
//!
//! An unconfined child (this bench's hook has no sandbox) starts in a child that shares Elph's
//! memory until it executes (`process/vfork.rs`); `ELPH_SPAWN=fork` sends it through the fork that
//! confined children take. Run the bench both ways: the ratios are each against a bare spawn
//! measured in the same run.
//!
//! The steps of the difference, each measured on its own in the same run (`summary`, printed by
//! `cargo bench -p elph-process --bench spawn` after divan's table, quiet and then under load):
//! std's fork path with only `setsid` in `pre_exec` (what forking alone costs over
//! `posix_spawn`), glibc's `posix_spawn` with `POSIX_SPAWN_SETSID` and the orphan-watcher record
//! written by the parent after it returns (how long such a group would go unregistered, which the
//! shared-memory child avoids by registering before exec), `process::spawn` and a blocking wait
//! (our spawn alone), and `process::run` (the whole hook). One run each way on the 2-core machine,
//! at a load average of 12-13 from other builds (fastest / median, µs, the "quiet" phase):
//!
//! | | default (shared-memory child) | `ELPH_SPAWN=fork` |
//! | --- | --- | --- |
//! | bare std spawn | 616 / 866 | 604 / 735 |
//! | std fork + setsid | 809 / 1,238 | 787 / 993 |
//! | posix_spawn + SETSID, parent registers | 639 / 914 | 634 / 766 |
//! | process::spawn + wait | 687 / 1,030 | 854 / 1,102 |
//! | process::run (the hook) | 681 / 1,006: 1.10× / 1.16× | 839 / 1,086: 1.39× / 1.48× |
//!
//! docs/architecture.md, "Starting a child", has why each path is where it is.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "bench code: a failure should stop loudly"
)]
#![expect(
    unsafe_code,
    reason = "the fork-path baseline needs a pre_exec step, which std marks unsafe"
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
    // `cargo bench` passes --bench; `cargo test --benches` does not, and only checks that it runs.
    if std::env::args().any(|arg| arg == "--bench") {
        summary();
    }
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

/// std's fork path with nothing but `setsid` before exec, and a blocking wait: what forking costs
/// over the bare spawn, without any other step of ours.
fn std_fork_setsid() {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(CAT);
    command
        .env_clear()
        .envs(env().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| nix::unistd::setsid().map(drop).map_err(std::io::Error::from));
    }
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(&PAYLOAD).unwrap();
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    assert!(child.wait().unwrap().success() && stdout.len() == PAYLOAD.len());
}

/// glibc's `posix_spawn` (`CLONE_VM | CLONE_VFORK`, no copy of the page tables) with
/// `POSIX_SPAWN_SETSID` and an empty signal mask, the group's record written by the parent to
/// `watcher` once it returns, and a blocking wait. Returns how long `posix_spawn` took and how
/// long after it returned the record was written: the child's program already runs then, and
/// until the record is written a SIGKILL of Elph would leave its group running.
fn posix_spawn_setsid(watcher: &std::os::fd::OwnedFd) -> (Duration, Duration) {
    use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawn};
    use std::os::fd::AsRawFd;
    let (stdin_read, stdin_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let (stdout_read, stdout_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let (stderr_read, stderr_write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let mut attr = PosixSpawnAttr::init().unwrap();
    attr.set_flags(
        PosixSpawnFlags::from_bits_retain(i32::from(libc::POSIX_SPAWN_SETSID))
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK
            | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )
    .unwrap();
    attr.set_sigmask(&nix::sys::signal::SigSet::empty()).unwrap();
    let mut pipe_default = nix::sys::signal::SigSet::empty();
    pipe_default.add(nix::sys::signal::Signal::SIGPIPE);
    attr.set_sigdefault(&pipe_default).unwrap();
    let mut actions = PosixSpawnFileActions::init().unwrap();
    actions.add_dup2(stdin_read.as_raw_fd(), 0).unwrap();
    actions.add_dup2(stdout_write.as_raw_fd(), 1).unwrap();
    actions.add_dup2(stderr_write.as_raw_fd(), 2).unwrap();
    let program = std::ffi::CString::new(CAT).unwrap();
    let env: Vec<std::ffi::CString> = env()
        .iter()
        .map(|(k, v)| {
            let mut pair = k.clone();
            pair.push("=");
            pair.push(v);
            std::ffi::CString::new(std::os::unix::ffi::OsStringExt::into_vec(pair)).unwrap()
        })
        .collect();
    let before = std::time::Instant::now();
    let pid = posix_spawn(program.as_c_str(), &actions, &attr, &[program.as_c_str()], &env).unwrap();
    let returned = std::time::Instant::now();
    let mut record = format!("+{pid}\n").into_bytes();
    nix::unistd::write(watcher, &record).unwrap();
    let window = returned.elapsed();
    record.clear();
    drop((stdin_read, stdout_write, stderr_write));
    let mut stdin = std::fs::File::from(stdin_write);
    stdin.write_all(&PAYLOAD).unwrap();
    drop(stdin);
    let mut stdout = Vec::new();
    std::fs::File::from(stdout_read).read_to_end(&mut stdout).unwrap();
    let mut stderr = Vec::new();
    std::fs::File::from(stderr_read).read_to_end(&mut stderr).unwrap();
    let status = nix::sys::wait::waitpid(pid, None).unwrap();
    assert_eq!(status, nix::sys::wait::WaitStatus::Exited(pid, 0));
    assert_eq!(stdout.len(), PAYLOAD.len());
    (returned - before, window)
}

/// `process::spawn` (our whole spawn: session, orphan watcher, empty mask, pidfd) and a plain
/// wait for the child on the runtime: the spawn without the bounded run around it.
fn our_spawn_and_wait() {
    runtime().block_on(async {
        let mut child = process::spawn(&process::SpawnSpec {
            program: Path::new(CAT),
            args: &[],
            cwd: Path::new("/"),
            env: env(),
            stdin: process::Input::Piped,
            stdout: process::Output::Piped,
            stderr: process::Output::Piped,
            sandbox: None,
        })
        .await
        .unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&PAYLOAD).await.unwrap();
        drop(stdin);
        let mut stdout = Vec::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut stdout)
            .await
            .unwrap();
        let mut stderr = Vec::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut stderr)
            .await
            .unwrap();
        assert!(child.wait().await.unwrap().success() && stdout.len() == PAYLOAD.len());
    });
}

#[divan::bench(sample_count = 300)]
fn std_fork_with_setsid_and_wait(bencher: Bencher) {
    bencher.bench_local(std_fork_setsid);
}

#[divan::bench(sample_count = 300)]
fn posix_spawn_with_setsid_and_wait(bencher: Bencher) {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let drain =
        std::thread::spawn(move || std::io::copy(&mut std::fs::File::from(read), &mut std::io::sink()));
    bencher.bench_local(|| posix_spawn_setsid(&write));
    drop(write);
    drain.join().unwrap().unwrap();
}

/// Busy loops beside the measurement, killed when dropped.
struct Load(Vec<std::process::Child>);

impl Load {
    fn start(n: usize) -> Self {
        Load(
            (0..n)
                .map(|_| {
                    Command::new("sh")
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

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Fastest and median, in µs.
fn spread(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (samples[0], samples[samples.len() / 2])
}

/// Every variant, interleaved round by round so that drift in the machine's load hits them alike,
/// quiet and then beside two busy loops; the ratio to the bare spawn (fastest and median), and the
/// window in which a `posix_spawn`ed group is not yet registered.
fn summary() {
    const ROUNDS: usize = 500;
    const TARGET: f64 = 1.15;
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let drain =
        std::thread::spawn(move || std::io::copy(&mut std::fs::File::from(read), &mut std::io::sink()));
    println!();
    println!(
        "one spawned hook (/bin/cat, 1 KiB in and out) against a bare std spawn of the same command, \
         {ROUNDS} rounds interleaved, fastest / median in µs (ratio to bare):"
    );
    for (phase, busy) in [("quiet", 0), ("loaded", 2)] {
        let _load = Load::start(busy);
        let time = |f: &mut dyn FnMut()| {
            let started = std::time::Instant::now();
            f();
            micros(started.elapsed())
        };
        let mut samples: [Vec<f64>; 5] = Default::default();
        let mut windows = Vec::new();
        for _ in 0..ROUNDS {
            samples[0].push(time(&mut bare_std_spawn));
            samples[1].push(time(&mut std_fork_setsid));
            samples[2].push(time(&mut || {
                let (_, window) = posix_spawn_setsid(&write);
                windows.push(micros(window));
            }));
            samples[3].push(time(&mut our_spawn_and_wait));
            samples[4].push(time(&mut hook));
        }
        let names = [
            "bare std spawn (posix_spawn)",
            "std fork + setsid",
            "posix_spawn + SETSID + parent registers",
            "process::spawn + wait",
            "process::run (the hook)",
        ];
        let (bare_fast, bare_median) = spread(&mut samples[0].clone());
        println!("  {phase} ({busy} busy loops):");
        for (name, samples) in names.iter().zip(samples.iter_mut()) {
            let (fast, median) = spread(samples);
            println!(
                "    {name:<42} {fast:>7.0} / {median:>7.0}  ({:.2}x / {:.2}x)",
                fast / bare_fast,
                median / bare_median
            );
        }
        let (hook_fast, _) = spread(&mut samples[4]);
        println!(
            "    a hook is {:.2}x a bare spawn (fastest; target <= {TARGET}x: {}), {:.0} µs more",
            hook_fast / bare_fast,
            if hook_fast / bare_fast <= TARGET {
                "ok"
            } else {
                "MISSED"
            },
            hook_fast - bare_fast
        );
        windows.sort_by(f64::total_cmp);
        let at = |q: f64| windows[((windows.len() - 1) as f64 * q) as usize];
        println!(
            "    posix_spawn's child runs unregistered for at least (after posix_spawn returned): \
             median {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
    drop(write);
    drain.join().unwrap().unwrap();
}
