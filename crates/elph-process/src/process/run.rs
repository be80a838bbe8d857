//! Run a child as a bounded process: the runner behind one-shot hooks (`coding-agent`) and
//! `shell_exec`.
//!
//! The program is started by [`spawn`] (its own session and process group, the orphan watcher,
//! the confinement, exactly the environment given).
//! What goes to stdin, how much of stdout and stderr is kept, the timeout, the grace and what
//! happens to the group at the end are the caller's `RunSpec`. stdin is written from its own
//! future (a child that never reads it is not an error); stdout and stderr are read concurrently,
//! in chunks of `CHUNK` bytes. The bounds are enforced on the whole group with `killpg(SIGKILL)`:
//!
//! - on timeout, and when a `KillPastCap` stream passes its cap;
//! - `grace` after the direct child exits (never past the timeout), if something it left behind
//!   still holds a pipe open: the run never waits for pipe EOF alone;
//! - when the run ends, if the spec says `Leftovers::Kill`; with `Leftovers::Leave`, background
//!   processes that let go of the pipes (`server > log 2>&1 &`) keep running;
//! - when the future is dropped (a cancelled call), by the [`Child`] that owns the group.
//!
//! A failure here is data: `run` never returns an error, it returns a `RunOutput` that says what
//! happened. Wording is the caller's: spawn errors come back as `io::Error`, wait errors as
//! `WaitError`.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::capture::{Capture, CaptureMode, keep};
use super::child::Child;
use super::spawn::{Input, Output, SpawnSpec, spawn};
use crate::sandbox::SandboxPolicy;

/// The usual grace: how long the pipes may stay open after the direct child exited.
pub const EXIT_GRACE: Duration = Duration::from_millis(100);
/// The size of one read from a pipe: a `KillPastCap` stream reads at most this much past its cap.
pub const CHUNK: usize = 8 * 1024;
/// After a kill, how long to keep reading what is already in the pipes.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(50);
/// After a kill, how long to wait for the kernel to let the child be reaped.
const REAP_LIMIT: Duration = Duration::from_secs(2);

/// What the child reads on stdin.
#[derive(Clone, Copy, Debug)]
pub enum Stdin<'a> {
    /// Nothing: stdin is `/dev/null`, so a prompt fails instead of waiting.
    Null,
    /// These bytes, then EOF.
    Bytes(&'a [u8]),
}

/// What becomes of the process group when the run ends without a kill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftovers {
    /// Kill whatever is left of it: nothing the child started outlives the run.
    Kill,
    /// Leave it: background processes that let go of the pipes keep running.
    Leave,
}

/// What to run, and its bounds.
#[derive(Clone, Copy, Debug)]
pub struct RunSpec<'a> {
    /// The program to run (no shell is involved).
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [&'a OsStr],
    /// The directory it starts in.
    pub cwd: &'a Path,
    /// Its whole environment: an allowlist or the shell environment policy, never Elph's own.
    pub env: &'a [(OsString, OsString)],
    /// What it reads on stdin.
    pub stdin: Stdin<'a>,
    /// How much of stdout is kept, and what happens past that.
    pub stdout: CaptureMode,
    /// How much of stderr is kept, and what happens past that.
    pub stderr: CaptureMode,
    /// How long the run may last before its process group is killed.
    pub timeout: Duration,
    /// How long the pipes may stay open after the direct child exited before the group is killed.
    pub grace: Duration,
    /// What happens to processes the child leaves behind when it exits.
    pub leftovers: Leftovers,
    /// The confinement of the child and everything it starts; `None` (or `full-access`) runs it
    /// unconfined.
    pub sandbox: Option<&'a SandboxPolicy>,
}

/// Which output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The child's standard output.
    Stdout,
    /// The child's standard error.
    Stderr,
}

/// Why the child's status is unknown.
#[derive(Debug)]
pub enum WaitError {
    /// Waiting for it failed (should not happen).
    Failed(io::Error),
    /// It could not be reaped within a limit after it was killed.
    NotReaped,
}

impl WaitError {
    /// In words, with the child called `what` ("the hook").
    pub fn describe(&self, what: &str) -> String {
        match self {
            WaitError::Failed(error) => format!("cannot wait for {what}: {error}"),
            WaitError::NotReaped => format!("{what} could not be reaped after it was killed"),
        }
    }
}

/// Everything that happened to one run. Output beyond the captures was never kept.
#[derive(Debug)]
pub struct RunOutput {
    /// The program could not be started.
    pub spawn_error: Option<io::Error>,
    /// The process group the child ran in (its pid).
    pub pgid: Option<i32>,
    /// The exit code, if the child exited rather than being killed.
    pub exit_code: Option<i32>,
    /// The signal that killed the child, if one did.
    pub signal: Option<i32>,
    /// The timeout expired and the group was killed.
    pub timed_out: bool,
    /// The first `KillPastCap` stream that passed its cap; the group was killed.
    pub overflow: Option<Stream>,
    /// The pipes were still open `grace` after the direct child exited: something it left behind
    /// held them, and the group was killed.
    pub pipes_held_open: bool,
    /// Why the child's exit status is unknown, when it is.
    pub wait_error: Option<WaitError>,
    /// What was kept of stdout.
    pub stdout: Capture,
    /// What was kept of stderr.
    pub stderr: Capture,
    /// Wall-clock time from spawn to the end of the run.
    pub duration: Duration,
    /// When the direct child's exit was seen, from the start of the run.
    pub exited_after: Option<Duration>,
}

/// Runs `spec` to completion within its bounds. Never fails: see the fields of `RunOutput`.
///
/// Dropping the future kills the child's process group.
pub async fn run(spec: &RunSpec<'_>) -> RunOutput {
    let started = Instant::now();
    let mut out = RunOutput {
        spawn_error: None,
        pgid: None,
        exit_code: None,
        signal: None,
        timed_out: false,
        overflow: None,
        pipes_held_open: false,
        wait_error: None,
        stdout: Capture::new(spec.stdout),
        stderr: Capture::new(spec.stderr),
        duration: Duration::ZERO,
        exited_after: None,
    };
    let mut child = match start(spec).await {
        Ok(child) => child,
        Err(error) => {
            out.spawn_error = Some(error);
            out.duration = started.elapsed();
            return out;
        }
    };
    out.pgid = Some(child.id().cast_signed());
    let stdin = child.stdin.take();
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        unreachable!("stdout and stderr are piped");
    };

    // A child may exit without reading its input: the write then fails with EPIPE, which is fine.
    let write = async move {
        if let (Some(mut pipe), Stdin::Bytes(bytes)) = (stdin, spec.stdin) {
            let _ = pipe.write_all(bytes).await;
        }
    };
    tokio::pin!(write);

    let timeout_at = started + spec.timeout;
    let far = started + Duration::from_secs(86_400 * 365);
    let mut waited = false;
    let mut stdin_open = true;
    let mut out_open = true;
    let mut err_open = true;
    let mut killed = false;
    // When to stop reading the pipes: a grace after the child's exit, or a short drain after a kill.
    let mut pipes_cutoff: Option<Instant> = None;
    // After a kill: when to stop waiting for the child to be reaped.
    let mut reap_limit: Option<Instant> = None;
    let mut out_chunk = vec![0u8; CHUNK];
    let mut err_chunk = vec![0u8; CHUNK];

    loop {
        if waited && !out_open && !err_open {
            break;
        }
        let mut kill_now = false;
        // The exit first (an exit seen with the timeout is an exit), then the timers before the
        // pipes: a child that floods its output must not starve them.
        tokio::select! {
            biased;
            result = child.wait(), if !waited => {
                waited = true;
                out.exited_after = Some(started.elapsed());
                match result {
                    Ok(status) => {
                        out.exit_code = status.code();
                        out.signal = status.signal();
                    }
                    Err(error) => out.wait_error = Some(WaitError::Failed(error)),
                }
                if !killed && (out_open || err_open) {
                    let now = Instant::now();
                    pipes_cutoff = Some((now + spec.grace).min(timeout_at.max(now)));
                }
            },
            () = tokio::time::sleep_until(timeout_at), if !killed && !waited => {
                out.timed_out = true;
                kill_now = true;
            },
            () = tokio::time::sleep_until(pipes_cutoff.unwrap_or(far)), if pipes_cutoff.is_some() => {
                if killed {
                    // Something outside the group still holds a pipe: stop reading.
                    out_open = false;
                    err_open = false;
                    pipes_cutoff = None;
                } else {
                    out.pipes_held_open = true;
                    kill_now = true;
                }
            },
            () = tokio::time::sleep_until(reap_limit.unwrap_or(far)), if reap_limit.is_some() && !waited => {
                out.wait_error = Some(WaitError::NotReaped);
                break;
            },
            () = &mut write, if stdin_open => stdin_open = false,
            read = stdout.read(&mut out_chunk), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => if !keep(&mut out.stdout, &out_chunk[..n], spec.stdout) {
                    out.overflow.get_or_insert(Stream::Stdout);
                    out_open = false;
                    kill_now = true;
                },
            },
            read = stderr.read(&mut err_chunk), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => if !keep(&mut out.stderr, &err_chunk[..n], spec.stderr) {
                    out.overflow.get_or_insert(Stream::Stderr);
                    err_open = false;
                    kill_now = true;
                },
            },
        }
        if kill_now && !killed {
            child.kill_group();
            killed = true;
            let now = Instant::now();
            pipes_cutoff = (out_open || err_open).then_some(now + DRAIN_AFTER_KILL);
            reap_limit = Some(now + REAP_LIMIT);
        }
    }

    // After a kill the group is already swept; after a normal finish the spec decides.
    if spec.leftovers == Leftovers::Leave {
        child.leave_group_running();
        // What a sandboxed command leaves running is killed when its session ends, before the
        // sandbox's last look for what it left behind.
        if let Some(policy) = spec.sandbox.filter(|policy| policy.is_confined()) {
            policy.watch.note_left_running(child.group());
        }
    }
    drop(child);
    out.duration = started.elapsed();
    out
}

/// The child of `spec`: stdin piped only for bytes to write, stdout and stderr piped.
async fn start(spec: &RunSpec<'_>) -> io::Result<Child> {
    spawn(&SpawnSpec {
        program: spec.program,
        args: spec.args,
        cwd: spec.cwd,
        env: spec.env,
        stdin: match spec.stdin {
            Stdin::Null => Input::Null,
            Stdin::Bytes(_) => Input::Piped,
        },
        stdout: Output::Piped,
        stderr: Output::Piped,
        sandbox: spec.sandbox,
    })
    .await
}

#[cfg(test)]
mod tests {
    use nix::sys::signal::Signal;
    use nix::unistd::Pid;

    use super::*;

    const HALF_CAP: usize = 32 * 1024;

    /// The environment of the tests' shells: PATH only.
    static PATH_ONLY: std::sync::LazyLock<Vec<(OsString, OsString)>> =
        std::sync::LazyLock::new(|| vec![("PATH".into(), "/usr/bin:/bin".into())]);

    /// `/bin/sh -c script` with roomy bounds, for a test to narrow.
    fn sh<'a>(script: &'a [&'a OsStr; 2]) -> RunSpec<'a> {
        RunSpec {
            program: Path::new("/bin/sh"),
            args: script,
            cwd: Path::new("/"),
            env: &PATH_ONLY,
            stdin: Stdin::Null,
            stdout: CaptureMode::HeadTail(HALF_CAP, HALF_CAP),
            stderr: CaptureMode::HeadTail(HALF_CAP, HALF_CAP),
            timeout: Duration::from_secs(10),
            grace: EXIT_GRACE,
            leftovers: Leftovers::Leave,
            sandbox: None,
        }
    }

    /// "Ended promptly", for runs whose wrong ending (a 1000 s sleep, a 60 s grace) takes far
    /// longer: a margin for a loaded machine, not a speed claim.
    const PROMPT: Duration = Duration::from_secs(15);

    async fn within(spec: &RunSpec<'_>) -> RunOutput {
        tokio::time::timeout(Duration::from_secs(30), run(spec))
            .await
            .expect("the run finished within the test deadline")
    }

    /// Whether `pid` is running (a zombie is dead: PID 1 here may not reap).
    fn running(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(") ")
                    .map(|(_, rest)| !rest.starts_with(['Z', 'X']))
            })
            .unwrap_or(false)
    }

    #[tokio::test]
    async fn stdin_and_environment_are_exactly_what_the_spec_says() {
        let script = [OsStr::new("-c"), OsStr::new("cat; echo \"[$FOO][$HOME]\" >&2")];
        let env = [(OsString::from("FOO"), OsString::from("bar"))];
        let out = within(&RunSpec {
            env: &env,
            stdin: Stdin::Bytes(b"payload"),
            ..sh(&script)
        })
        .await;
        assert_eq!((out.exit_code, out.signal), (Some(0), None));
        assert_eq!(out.stdout.render(), "payload");
        assert_eq!(out.stderr.render(), "[bar][]\n");
        assert!(out.pgid.is_some() && out.exited_after.is_some());
    }

    #[tokio::test]
    async fn a_stream_past_its_cap_kills_the_group() {
        let script = [OsStr::new("-c"), OsStr::new("yes")];
        let out = within(&RunSpec {
            stdout: CaptureMode::KillPastCap(1000),
            ..sh(&script)
        })
        .await;
        assert_eq!(out.overflow, Some(Stream::Stdout));
        assert_eq!((out.exit_code, out.signal), (None, Some(9)));
        assert!(out.stdout.total() <= (1000 + CHUNK) as u64);
        assert_eq!(out.stdout.into_kept().len(), 1000);
    }

    #[tokio::test]
    async fn the_timeout_kills_the_group() {
        let script = [OsStr::new("-c"), OsStr::new("sleep 1000")];
        let out = within(&RunSpec {
            timeout: Duration::from_millis(100),
            ..sh(&script)
        })
        .await;
        assert!(out.timed_out && !out.pipes_held_open);
        assert_eq!(out.signal, Some(9));
        // Far below the sleep: the kill ended it. The margin is for a loaded machine.
        assert!(out.duration < PROMPT, "{:?}", out.duration);
    }

    #[tokio::test]
    async fn a_held_pipe_is_cut_after_the_grace_and_never_past_the_timeout() {
        let script = [OsStr::new("-c"), OsStr::new("sleep 1000 & echo started")];
        let out = within(&sh(&script)).await;
        assert_eq!(out.exit_code, Some(0));
        assert!(out.pipes_held_open && !out.timed_out);
        assert_eq!(out.stdout.render(), "started\n");
        assert!(out.duration < PROMPT, "{:?}", out.duration);

        let out = within(&RunSpec {
            timeout: Duration::from_millis(300),
            grace: Duration::from_secs(60),
            ..sh(&script)
        })
        .await;
        assert!(out.pipes_held_open && !out.timed_out);
        assert!(out.duration < PROMPT, "{:?}", out.duration);
    }

    #[tokio::test]
    async fn leftovers_that_let_go_of_the_pipes_are_left_or_killed_as_asked() {
        let script = [
            OsStr::new("-c"),
            OsStr::new("sleep 10 > /dev/null 2>&1 & echo $!"),
        ];
        for (leftovers, survives) in [(Leftovers::Leave, true), (Leftovers::Kill, false)] {
            let out = within(&RunSpec {
                leftovers,
                ..sh(&script)
            })
            .await;
            assert!(!out.pipes_held_open);
            let pid: i32 = out.stdout.render().trim().parse().unwrap();
            // A killed process may take a while to die on a loaded machine.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while running(pid) && !survives && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let alive = running(pid);
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            assert_eq!(alive, survives, "{leftovers:?}");
        }
    }

    /// Each child leads a session of its own (no controlling terminal, its own group) and starts
    /// with the signal state std gives a child: nothing blocked, SIGPIPE not ignored — even when
    /// the spawning thread blocks a signal and the process ignores SIGPIPE (as Rust does).
    #[tokio::test]
    async fn the_child_leads_its_own_session_with_a_clean_signal_state() {
        let mut usr1 = nix::sys::signal::SigSet::empty();
        usr1.add(Signal::SIGUSR1);
        nix::sys::signal::pthread_sigmask(nix::sys::signal::SigmaskHow::SIG_BLOCK, Some(&usr1), None)
            .unwrap();
        let script = [
            OsStr::new("-c"),
            OsStr::new(
                "read -r stat < /proc/self/stat; echo \"$stat\"; \
                 while read -r name value; do case $name in SigBlk:|SigIgn:) echo \"$name $value\";; esac; done < /proc/self/status",
            ),
        ];
        let out = within(&sh(&script)).await;
        assert_eq!(out.exit_code, Some(0), "{}", out.stderr.render());
        let text = out.stdout.render();
        let mut lines = text.lines();
        let stat = lines.next().unwrap();
        let pid: i32 = stat.split(' ').next().unwrap().parse().unwrap();
        let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
        // state ppid pgrp session tty_nr
        assert_eq!(fields[2].parse::<i32>().unwrap(), pid, "its own group: {stat}");
        assert_eq!(fields[3].parse::<i32>().unwrap(), pid, "its own session: {stat}");
        assert_eq!(fields[4], "0", "no controlling terminal: {stat}");
        assert_eq!(out.pgid, Some(pid));
        let mask = |name: &str| {
            let line = text.lines().find(|line| line.starts_with(name)).unwrap();
            u64::from_str_radix(line.split(' ').nth(1).unwrap(), 16).unwrap()
        };
        assert_eq!(mask("SigBlk:"), 0, "{text}");
        assert_eq!(
            mask("SigIgn:") & (1 << (libc::SIGPIPE - 1)),
            0,
            "SIGPIPE is not ignored: {text}"
        );
    }

    #[tokio::test]
    async fn a_spawn_error_is_returned_as_data() {
        let out = within(&RunSpec {
            program: Path::new("/nonexistent/program"),
            ..sh(&[OsStr::new("-c"), OsStr::new("true")])
        })
        .await;
        assert_eq!(
            out.spawn_error.map(|error| error.kind()),
            Some(io::ErrorKind::NotFound)
        );
        assert_eq!((out.pgid, out.exit_code), (None, None));
    }

    #[test]
    fn wait_errors_in_words() {
        assert_eq!(
            WaitError::NotReaped.describe("the hook"),
            "the hook could not be reaped after it was killed"
        );
        let failed = WaitError::Failed(io::Error::other("boom"));
        assert_eq!(
            failed.describe("the command"),
            "cannot wait for the command: boom"
        );
    }
}
