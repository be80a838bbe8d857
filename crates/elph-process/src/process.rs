//! Run a child as a bounded process: the one runner behind hooks (`coding-agent`) and
//! `shell_exec`.
//!
//! The program runs with its literal args (never through a shell), in a process group of its own.
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
//! - when the future is dropped (a cancelled call), by the guard that owns the group.
//!
//! A failure here is data: `run` never returns an error, it returns a `RunOutput` that says what
//! happened. Wording is the caller's: spawn errors come back as `io::Error`, wait errors as
//! `WaitError`.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::sandbox::{Confinement, SandboxPolicy};

/// The usual grace: how long the pipes may stay open after the direct child exited.
pub const EXIT_GRACE: Duration = Duration::from_millis(100);
/// The size of one read from a pipe: a `KillPastCap` stream reads at most this much past its cap.
pub const CHUNK: usize = 8 * 1024;
/// After a kill, how long to keep reading what is already in the pipes.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(50);
/// After a kill, how long to wait for the kernel to let the child be reaped.
const REAP_LIMIT: Duration = Duration::from_secs(2);
/// Attempts to spawn a file another thread still holds open for writing (ETXTBSY).
const SPAWN_ATTEMPTS: u32 = 6;

/// What the child reads on stdin.
#[derive(Clone, Copy, Debug)]
pub enum Stdin<'a> {
    /// Nothing: stdin is `/dev/null`, so a prompt fails instead of waiting.
    Null,
    /// These bytes, then EOF.
    Bytes(&'a [u8]),
}

/// The child's environment.
#[derive(Clone, Copy, Debug)]
pub enum Env<'a> {
    /// The agent's own.
    Inherit,
    /// Exactly these variables, nothing else.
    Exactly(&'a [(OsString, OsString)]),
}

/// How much of one output stream is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMode {
    /// Up to this many bytes; past them the stream is closed and the process group killed.
    KillPastCap(usize),
    /// The first and the last so many bytes; the middle is read and discarded.
    HeadTail(usize, usize),
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
    /// Its environment.
    pub env: Env<'a>,
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

/// The first `head` and last `tail` bytes of a stream, and how long it was.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    /// An empty capture that keeps what `mode` says.
    pub fn new(mode: CaptureMode) -> Self {
        let (head_cap, tail_cap) = match mode {
            CaptureMode::KillPastCap(cap) => (cap, 0),
            CaptureMode::HeadTail(head, tail) => (head, tail),
        };
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap,
            total: 0,
        }
    }

    /// Takes the next bytes read from the stream, keeping the head and tail `mode` allows.
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let into_head = chunk.len().min(self.head_cap - self.head.len());
        self.head.extend_from_slice(&chunk[..into_head]);
        chunk = &chunk[into_head..];
        if chunk.len() >= self.tail_cap {
            self.tail.clear();
            chunk = &chunk[chunk.len() - self.tail_cap..];
        } else {
            let over = (self.tail.len() + chunk.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..over);
        }
        self.tail.extend(chunk);
    }

    /// Bytes the stream carried in all (read, kept or not).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes read and discarded between the head and the tail.
    pub fn omitted(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
    }

    /// The kept bytes, head then tail: the whole stream when nothing was omitted.
    pub fn into_kept(self) -> Vec<u8> {
        let mut kept = self.head;
        kept.extend(self.tail);
        kept
    }

    /// The kept text; when the middle was discarded, a line says how much.
    pub fn render(&self) -> String {
        let (tail_front, tail_back) = self.tail.as_slices();
        if self.omitted() == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(tail_front);
            all.extend_from_slice(tail_back);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = &self.head[..complete_prefix(&self.head)];
        let mut tail: Vec<u8> = self.tail.iter().copied().collect();
        let skip = tail
            .iter()
            .take(3)
            .take_while(|&&byte| byte & 0xC0 == 0x80)
            .count();
        tail.drain(..skip);
        format!(
            "{}\n[… {} bytes omitted …]\n{}",
            String::from_utf8_lossy(head),
            self.omitted() + skip as u64 + (self.head.len() - head.len()) as u64,
            String::from_utf8_lossy(&tail)
        )
    }
}

/// The length of `bytes` without a UTF-8 sequence cut off at its end.
fn complete_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        _ => bytes.len(),
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

/// The process groups of runs in progress, so that a process that must exit at once (a second
/// Ctrl+C) can still kill what it started: [`kill_running_groups`].
static RUNNING_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn running_groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    RUNNING_GROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Kills the process group of every run still in progress. For an exit that will not unwind (for
/// example `std::process::exit` on a second Ctrl+C), where the runs' own guards never get to.
pub fn kill_running_groups() {
    for pgid in running_groups().drain(..) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Kills the process group it owns when asked, and when dropped unless disarmed. While it lives,
/// the group is one of the [`kill_running_groups`] kills.
pub struct GroupGuard {
    pgid: Option<Pid>,
    armed: bool,
}

impl GroupGuard {
    /// Guards the group `pgid` (nothing for `None`) and counts it as running.
    pub fn new(pgid: Option<Pid>) -> Self {
        if let Some(pgid) = pgid {
            running_groups().push(pgid.as_raw());
        }
        GroupGuard { pgid, armed: true }
    }

    /// Kills the whole group now with SIGKILL; a group already gone is no error.
    pub fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (the group is already gone) is the normal case at the end of a run.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
        if let Some(pgid) = self.pgid {
            running_groups().retain(|running| *running != pgid.as_raw());
            // A group left running (`Leftovers::Leave`) stays with the orphan watcher, which kills
            // it when Elph dies; a killed or empty one is forgotten.
            if self.armed || killpg(pgid, None) == Err(Errno::ESRCH) {
                crate::orphans::forget(pgid.as_raw());
            }
        }
    }
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
    let mut child = match Started::start(spec).await {
        Ok(child) => child,
        Err(error) => {
            out.spawn_error = Some(error);
            out.duration = started.elapsed();
            return out;
        }
    };
    out.pgid = child.id().map(|pid| pid as i32);
    let mut guard = GroupGuard::new(out.pgid.map(Pid::from_raw));
    let (stdin, mut stdout, mut stderr) = child.take_pipes();

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
            guard.kill();
            killed = true;
            let now = Instant::now();
            pipes_cutoff = (out_open || err_open).then_some(now + DRAIN_AFTER_KILL);
            reap_limit = Some(now + REAP_LIMIT);
        }
    }

    // After a kill the group is already swept; after a normal finish the spec decides.
    guard.armed = spec.leftovers == Leftovers::Kill;
    drop(guard);
    out.duration = started.elapsed();
    out
}

type PipeIn = Box<dyn AsyncWrite + Send + Unpin>;
type PipeOut = Box<dyn AsyncRead + Send + Unpin>;

/// A child started by [`run`]: without copying Elph's address space (`vfork_spawn`) where the
/// kernel allows it, else through std's fork path ([`spawn`]). Same steps before exec either way.
enum Started {
    #[cfg(target_os = "linux")]
    Vfork(crate::vfork_spawn::Child),
    Forked(Child),
}

impl Started {
    async fn start(spec: &RunSpec<'_>) -> io::Result<Started> {
        #[cfg(target_os = "linux")]
        if crate::vfork_spawn::available() {
            return vfork(spec).await.map(Started::Vfork);
        }
        spawn(spec).await.map(Started::Forked)
    }

    fn id(&self) -> Option<u32> {
        match self {
            #[cfg(target_os = "linux")]
            Started::Vfork(child) => Some(child.id()),
            Started::Forked(child) => child.id(),
        }
    }

    /// stdin (when piped), stdout, stderr.
    fn take_pipes(&mut self) -> (Option<PipeIn>, PipeOut, PipeOut) {
        let (stdin, stdout, stderr): (Option<PipeIn>, Option<PipeOut>, Option<PipeOut>) = match self {
            #[cfg(target_os = "linux")]
            Started::Vfork(child) => (
                child.stdin.take().map(|pipe| Box::new(pipe) as PipeIn),
                child.stdout.take().map(|pipe| Box::new(pipe) as PipeOut),
                child.stderr.take().map(|pipe| Box::new(pipe) as PipeOut),
            ),
            Started::Forked(child) => (
                child.stdin.take().map(|pipe| Box::new(pipe) as PipeIn),
                child.stdout.take().map(|pipe| Box::new(pipe) as PipeOut),
                child.stderr.take().map(|pipe| Box::new(pipe) as PipeOut),
            ),
        };
        let (Some(stdout), Some(stderr)) = (stdout, stderr) else {
            unreachable!("stdout and stderr are piped");
        };
        (stdin, stdout, stderr)
    }

    /// Cancel-safe, as `select!` needs.
    async fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        match self {
            #[cfg(target_os = "linux")]
            Started::Vfork(child) => child.wait().await,
            Started::Forked(child) => child.wait().await,
        }
    }
}

/// [`spawn`]'s child through `vfork_spawn`: its own session, registered with the orphan watcher,
/// confined, as std's fork path does it.
#[cfg(target_os = "linux")]
async fn vfork(spec: &RunSpec<'_>) -> io::Result<crate::vfork_spawn::Child> {
    use crate::vfork_spawn::{self, Request, Step};
    let inherited: Vec<(OsString, OsString)>;
    let env = match spec.env {
        Env::Exactly(vars) => vars,
        Env::Inherit => {
            inherited = std::env::vars_os().collect();
            &inherited
        }
    };
    let mut attempt = 1;
    loop {
        // Prepared for each attempt: the child of a failed one may have used it.
        let confinement = confinement_for(spec)?;
        let confined = confinement.is_some();
        let result = vfork_spawn::spawn(Request {
            program: spec.program,
            args: spec.args,
            cwd: spec.cwd,
            env,
            stdin_piped: matches!(spec.stdin, Stdin::Bytes(_)),
            watcher: crate::orphans::registration_fd(),
            confinement,
        });
        match result {
            Ok(child) => return Ok(child),
            // See `spawn`: a file another thread still holds open for writing.
            Err(failed)
                if failed.error.raw_os_error() == Some(Errno::ETXTBSY as i32) && attempt < SPAWN_ATTEMPTS =>
            {
                tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                attempt += 1;
            }
            Err(failed) if confined && failed.step == Step::Confine => {
                return Err(io::Error::new(
                    failed.error.kind(),
                    format!("{} (while confining it in the sandbox)", failed.error),
                ));
            }
            Err(failed) => return Err(failed.error),
        }
    }
}

/// Adds `chunk` to `capture`; false when a `KillPastCap` stream passed its cap.
fn keep(capture: &mut Capture, chunk: &[u8], mode: CaptureMode) -> bool {
    capture.push(chunk);
    !matches!(mode, CaptureMode::KillPastCap(_)) || capture.omitted() == 0
}

/// Starts the child in a session of its own: a new process group whose id is its pid (so the
/// whole group can be killed), with no controlling terminal (so a hook or a command cannot read the
/// user's keys or draw on the screen the TUI owns).
fn new_session(command: &mut std::process::Command) {
    in_child_before_exec(command, || {
        nix::unistd::setsid().map(|_| ()).map_err(io::Error::from)
    });
}

/// The one place that runs code in a forked child before exec.
fn in_child_before_exec<F>(command: &mut std::process::Command, setup: F)
where
    F: FnMut() -> io::Result<()> + Send + Sync + 'static,
{
    use std::os::unix::process::CommandExt;
    // SAFETY: `setup` runs in the forked child of a multi-threaded process, where only
    // async-signal-safe work is allowed. Every closure passed here only makes system calls on data
    // prepared before the fork (setsid(2); `Confinement::apply_in_child`, which unshares, mounts,
    // writes prepared bytes, calls landlock_restrict_self(2) and seccomp(2)); none allocates or
    // takes a lock.
    unsafe {
        command.pre_exec(setup);
    }
}

/// Runs `program` confined by `policy`, with the terminal's stdin, stdout and stderr and in its
/// process group (so Ctrl+C reaches it), and waits for it: `elph sandbox -- CMD`.
pub fn run_in_foreground(
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    env: &[(OsString, OsString)],
    policy: &SandboxPolicy,
) -> io::Result<std::process::ExitStatus> {
    let mut command = std::process::Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(mut confinement) = Confinement::prepare(policy, cwd).map_err(io::Error::other)? {
        in_child_before_exec(&mut command, move || confinement.apply_in_child());
    }
    command.status()
}

/// The confinement a spawn applies in its child: `None` without a sandbox, or when the policy is
/// full access.
fn confinement_for(spec: &RunSpec<'_>) -> io::Result<Option<Confinement>> {
    spec.sandbox
        .map(|policy| Confinement::prepare(policy, spec.cwd))
        .transpose()
        .map(Option::flatten)
        .map_err(io::Error::other)
}

/// Starts `/bin/sh -c 'read _'` (it waits on a pipe that stays open) with `setup` applied in the
/// child before exec: the holder of a namespace the caller then opens through /proc.
pub(crate) fn spawn_holder<F>(setup: F) -> io::Result<std::process::Child>
where
    F: FnMut() -> io::Result<()> + Send + Sync + 'static,
{
    let mut command = std::process::Command::new("/bin/sh");
    command
        .args(["-c", "read _"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    in_child_before_exec(&mut command, setup);
    command.spawn()
}

/// Runs `/bin/sh -c :` with `setup` applied in the child before exec; true if it exits 0. For
/// probing what the kernel lets a child do (a mount namespace) without trying it in this
/// multi-threaded process.
pub(crate) fn probe_in_child<F>(setup: F) -> bool
where
    F: FnMut() -> io::Result<()> + Send + Sync + 'static,
{
    let mut command = std::process::Command::new("/bin/sh");
    command
        .args(["-c", ":"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    in_child_before_exec(&mut command, setup);
    command.status().is_ok_and(|status| status.success())
}

/// Starts `spec`'s program the way [`run`] does — in a session and process group of its own, in
/// `cwd`, with `env`, stdin piped for `Stdin::Bytes` (nothing is written), stdout and stderr piped —
/// and returns at once. For children that outlive one exchange (persistent hooks); the caller owns
/// the bounds, and should hold a [`GroupGuard`] for the group (its pid).
pub async fn spawn(spec: &RunSpec<'_>) -> io::Result<Child> {
    let mut command = Command::new(spec.program);
    command
        .args(spec.args)
        .current_dir(spec.cwd)
        .stdin(match spec.stdin {
            Stdin::Null => Stdio::null(),
            Stdin::Bytes(_) => Stdio::piped(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let confinement = confinement_for(spec)?;
    let confined = confinement.is_some();
    // In this order in the child: its own session, then registered with the orphan watcher, then
    // confined (last, so nothing after it needs what the confinement takes away).
    new_session(command.as_std_mut());
    crate::orphans::die_with_elph(&mut command);
    if let Some(mut confinement) = confinement {
        in_child_before_exec(command.as_std_mut(), move || confinement.apply_in_child());
    }
    if let Env::Exactly(vars) = spec.env {
        command.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
    }
    let mut attempt = 1;
    loop {
        match command.spawn() {
            // A file that another thread of this process still has open for writing (a script that
            // was just written, while another thread forked) cannot be executed for a moment.
            Err(error) if error.raw_os_error() == Some(Errno::ETXTBSY as i32) && attempt < SPAWN_ATTEMPTS => {
                tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                attempt += 1;
            }
            Err(error) if confined => {
                return Err(io::Error::new(
                    error.kind(),
                    format!("{error} (while confining it in the sandbox)"),
                ));
            }
            result => return result,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF_CAP: usize = 32 * 1024;

    fn head_tail() -> Capture {
        Capture::new(CaptureMode::HeadTail(HALF_CAP, HALF_CAP))
    }

    #[test]
    fn kill_past_cap_keeps_up_to_the_cap() {
        let mode = CaptureMode::KillPastCap(4);
        let mut capture = Capture::new(mode);
        assert!(keep(&mut capture, b"abc", mode));
        assert!(keep(&mut capture, b"d", mode));
        assert!(!keep(&mut capture, b"ef", mode));
        assert_eq!(capture.total(), 6);
        assert_eq!(capture.into_kept(), b"abcd");
    }

    #[test]
    fn head_tail_never_asks_for_a_kill() {
        let mode = CaptureMode::HeadTail(2, 2);
        let mut capture = Capture::new(mode);
        assert!(keep(&mut capture, b"abcdef", mode));
        assert_eq!(capture.omitted(), 2);
        assert_eq!(capture.into_kept(), b"abef");
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut capture = head_tail();
        capture.push(b"hello ");
        capture.push(b"world");
        assert_eq!(capture.render(), "hello world");
        assert_eq!((capture.total(), capture.omitted()), (11, 0));
    }

    #[test]
    fn output_up_to_both_halves_is_kept_whole() {
        let mut capture = head_tail();
        let data: Vec<u8> = (0..2 * HALF_CAP).map(|i| b'a' + (i % 26) as u8).collect();
        for piece in data.chunks(1000) {
            capture.push(piece);
        }
        assert_eq!(capture.omitted(), 0);
        assert_eq!(capture.render().as_bytes(), &data[..]);
    }

    #[test]
    fn the_middle_is_discarded_and_memory_stays_bounded() {
        let mut capture = head_tail();
        capture.push(b"START");
        for _ in 0..1000 {
            capture.push(&[b'x'; 10_000]);
        }
        capture.push(b"END");
        assert_eq!(capture.total(), 10_000_008);
        assert!(capture.head.len() <= HALF_CAP && capture.tail.len() <= HALF_CAP);
        assert!(capture.tail.capacity() < 4 * HALF_CAP);
        let text = capture.render();
        assert!(text.starts_with("START"));
        assert!(text.ends_with("END"));
        assert!(text.contains(&format!("[… {} bytes omitted …]", 10_000_008 - 2 * HALF_CAP)));
    }

    #[test]
    fn a_huge_single_chunk_keeps_its_end() {
        let mut capture = head_tail();
        let mut chunk = vec![b'a'; 3 * HALF_CAP];
        chunk.extend_from_slice(b"END");
        capture.push(&chunk);
        assert_eq!(capture.tail.len(), HALF_CAP);
        assert!(capture.render().ends_with("aEND"));
    }

    #[test]
    fn cuts_do_not_split_characters() {
        let mut capture = head_tail();
        let text = "é".repeat(3 * HALF_CAP);
        capture.push(text.as_bytes());
        let rendered = capture.render();
        assert!(!rendered.contains('\u{FFFD}'), "no replacement characters");
        let omitted: u64 = rendered
            .split("[… ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let kept = rendered.replace(&format!("\n[… {omitted} bytes omitted …]\n"), "");
        assert_eq!(kept.len() as u64 + omitted, capture.total());
    }

    /// `/bin/sh -c script` with roomy bounds, for a test to narrow.
    fn sh<'a>(script: &'a [&'a OsStr; 2]) -> RunSpec<'a> {
        RunSpec {
            program: Path::new("/bin/sh"),
            args: script,
            cwd: Path::new("/"),
            env: Env::Inherit,
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
            env: Env::Exactly(&env),
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
