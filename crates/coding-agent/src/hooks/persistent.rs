//! Persistent hooks (`"persistent": true`): one process per hook for the session, fed one JSON
//! payload per line on stdin, answering one JSON outcome per line on stdout, each answer echoing its
//! payload's request id (`line_protocol`). A round trip is a pipe write and a pipe read, not a
//! spawn.
//!
//! Every rule of a one-shot hook holds per event, and a failure reads the same in the run record:
//!
//! - the process starts at the hook's first matching event, the way a one-shot hook starts (the
//!   same environment, cwd, session and process group, orphan watcher and sandbox, through
//!   `elph_process::process::spawn`); its environment and sandbox are worked out only then;
//! - the timeout bounds each round trip (the first one includes the start); a process that does not
//!   answer in time is killed (its whole group) and started again at the next event;
//! - an answer line longer than the stdout cap, or more than the stderr cap written during one
//!   event, kills the process the same way;
//! - an answer that breaks the line protocol (another request's id, no id, not a JSON object, a
//!   line left over from an earlier answer) kills the process the same way: it is out of step, and
//!   none of its answers can be trusted to be for the event at hand. The event fails (a
//!   `failClosed` hook blocks), and the next event starts a new process;
//! - an answer in step whose outcome is invalid (a field of the wrong type) is rejected like a
//!   one-shot hook's stdout, and the process is kept;
//! - a process that exits or closes stdout without answering is a crash: the event fails open with
//!   a diagnostic, and the next event starts a new process. After [`BACKOFF_AFTER`] failures in a
//!   row, the next start waits ([`backoff`]); events in between are skipped with a diagnostic;
//! - a round trip that is abandoned (a cancelled turn) kills the process: its answer would
//!   otherwise be read as the next event's.
//!
//! The processes end with the host (session end), and on `/reload` for every hook that was removed
//! or whose definition changed ([`PersistentHooks::retain`]).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elph_agent::hooks::limits::{MAX_DIAGNOSTIC_STDERR_BYTES, MAX_STDERR_BYTES, MAX_STDOUT_BYTES};
use elph_process::process::{self as bounded, Child, ChildStdin, ChildStdout, Input, Output, SpawnSpec};
use elph_process::sandbox::SandboxPolicy;
use futures::FutureExt;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::time::Instant;

use super::discovery::HookDefinition;
use super::line_protocol::{self, ProtocolError};
use super::process::{self, ProcessOutput, ProcessSpec, Stream};

/// Crashes in a row after which a restart waits.
pub(crate) const BACKOFF_AFTER: u32 = 3;
/// The longest wait before a restart.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// After a kill, how long to wait for the exit status.
const REAP_LIMIT: Duration = Duration::from_secs(2);

/// How long a restart waits after `crashes` crashes in a row: nothing before [`BACKOFF_AFTER`],
/// then 1 s, doubling, up to [`MAX_BACKOFF`].
pub(crate) fn backoff(crashes: u32) -> Duration {
    if crashes < BACKOFF_AFTER {
        return Duration::ZERO;
    }
    let doublings = (crashes - BACKOFF_AFTER).min(5);
    Duration::from_secs(1 << doublings).min(MAX_BACKOFF)
}

/// What one event's round trip came to.
#[derive(Debug)]
pub enum Exchange {
    /// The round trip failed (or, for a one-shot hook, ran): read it like a one-shot run. `notes`
    /// add what is particular to a persistent process (it was restarted, it will be).
    Ran {
        output: ProcessOutput,
        notes: Vec<String>,
    },
    /// The process answered this event's request: `answer` is the outcome object without its
    /// request id (empty: no change).
    Answered {
        output: ProcessOutput,
        answer: Map<String, Value>,
        notes: Vec<String>,
    },
    /// The process broke the line protocol; it was killed, and the event failed.
    OutOfStep {
        output: ProcessOutput,
        error: ProtocolError,
        notes: Vec<String>,
    },
    /// Not run: the process is waiting out its backoff.
    Skipped(String),
}

/// What starting a hook's process takes besides its definition, worked out only when a process
/// starts: an event answered by a running process needs none of it.
pub struct Launch<'a> {
    pub cwd: &'a Path,
    pub env: Vec<(OsString, OsString)>,
    pub sandbox: Option<SandboxPolicy>,
}

/// The persistent processes of one host, by hook id.
#[derive(Default)]
pub struct PersistentHooks {
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Slot>>>>,
    /// The last request id sent, to any process of this host: ids are never reused, so an answer
    /// left over from an earlier process or event can never match.
    last_request: AtomicU64,
}

impl std::fmt::Debug for PersistentHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentHooks")
            .field("running", &self.running())
            .finish()
    }
}

/// One hook's process and its crash history.
#[derive(Default)]
struct Slot {
    /// The definition the process was started from: a changed one is a new process.
    definition: Option<HookDefinition>,
    process: Option<Running>,
    /// Crashes (and timeouts, and bounds hit) in a row; an answered event resets it.
    crashes: u32,
    /// No start before this instant.
    not_before: Option<Instant>,
    /// The process of this slot ended badly and the next event starts a new one.
    restart_pending: bool,
}

/// A live process. Dropping it kills its process group.
struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<StderrTail>>,
    drain: tokio::task::JoinHandle<()>,
    pgid: Option<i32>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.child.kill_group();
        self.drain.abort();
    }
}

/// What the process wrote on stderr: a count and the last bytes, read as it comes.
#[derive(Default)]
struct StderrTail {
    total: u64,
    tail: std::collections::VecDeque<u8>,
}

impl StderrTail {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.tail.extend(chunk);
        let over = self.tail.len().saturating_sub(MAX_DIAGNOSTIC_STDERR_BYTES);
        self.tail.drain(..over);
    }
}

/// How a round trip failed, before it becomes a `ProcessOutput`.
enum Failure {
    TimedOut,
    Overflow(Stream),
    /// The process ended (stdout closed, or stdin refused the payload) without answering.
    Ended,
    /// The process answered out of step.
    OutOfStep(ProtocolError),
}

impl PersistentHooks {
    pub fn new() -> Self {
        PersistentHooks::default()
    }

    /// The ids of the hooks whose process is running now.
    pub fn running(&self) -> Vec<String> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let mut ids: Vec<String> = slots
            .iter()
            .filter(|(_, slot)| slot.try_lock().map(|s| s.process.is_some()).unwrap_or(true))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// The process group of a hook's running process (for tests and `/proc` checks).
    pub fn pgid(&self, hook_id: &str) -> Option<i32> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = slots.get(hook_id)?.try_lock().ok()?;
        slot.process.as_ref().and_then(|running| running.pgid)
    }

    /// Keeps the processes of the hooks in `definitions` whose definition is unchanged, and kills
    /// the others (`/reload`).
    pub fn retain(&self, definitions: &[HookDefinition]) {
        let wanted: HashMap<&str, &HookDefinition> = definitions
            .iter()
            .filter(|hook| hook.persistent && hook.enabled)
            .map(|hook| (hook.id.as_str(), hook))
            .collect();
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        // A slot in use by a running dispatch is dropped from the map; its process dies with the
        // dispatch's hold on it (the definition check at its next use would catch it too).
        slots.retain(|id, slot| match (wanted.get(id.as_str()), slot.try_lock()) {
            (Some(definition), Ok(slot)) => slot.definition.as_ref() == Some(*definition),
            _ => false,
        });
    }

    /// Kills every process (session end).
    pub fn stop_all(&self) {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// One event for `hook`: starts its process when needed (from `launch`), writes `payload` (one
    /// JSON line) with a new request id, and reads the answer line back, all within `timeout`.
    pub async fn exchange<'a>(
        &self,
        hook: &HookDefinition,
        payload: &[u8],
        timeout: Duration,
        launch: impl FnOnce() -> Launch<'a>,
    ) -> Exchange {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            match slots.get(&hook.id) {
                Some(slot) => slot.clone(),
                None => slots.entry(hook.id.clone()).or_default().clone(),
            }
        };
        let mut slot = slot.lock().await;
        if slot.definition.as_ref() != Some(hook) {
            *slot = Slot {
                definition: Some(hook.clone()),
                ..Slot::default()
            };
        }
        let started = Instant::now();
        let deadline = started + timeout;
        let mut notes = Vec::new();
        // Taken out for the round trip: if this future is dropped half-way, the process dies with
        // it instead of answering the next event with this one's line.
        let mut running = match slot.process.take() {
            Some(running) => running,
            None => {
                if let Some(not_before) = slot.not_before
                    && Instant::now() < not_before
                {
                    return Exchange::Skipped(format!(
                        "not run: its persistent process failed {} times in a row; the next start \
                         is in {} ms",
                        slot.crashes,
                        (not_before - Instant::now()).as_millis()
                    ));
                }
                if slot.restart_pending {
                    notes.push("its persistent process was started again after it failed".into());
                }
                let Some(command) = hook.command() else {
                    return Exchange::Skipped("not a command hook, so it has no process".into());
                };
                let launch = launch();
                let spec = ProcessSpec {
                    program: &command.path,
                    args: &hook.args,
                    cwd: launch.cwd,
                    env: &launch.env,
                    stdin: &[],
                    timeout,
                    stdout_cap: hook.max_output_bytes,
                    sandbox: launch.sandbox.as_ref(),
                };
                match start(&spec).await {
                    Ok(running) => running,
                    Err(error) => {
                        slot.crashes += 1;
                        slot.not_before = Some(Instant::now() + backoff(slot.crashes));
                        slot.restart_pending = true;
                        let mut output = ProcessOutput::nothing(started.elapsed());
                        output.spawn_error = Some(process::describe_spawn_error(&command.path, &error));
                        return Exchange::Ran { output, notes };
                    }
                }
            }
        };
        slot.restart_pending = false;

        let request = self.last_request.fetch_add(1, Ordering::Relaxed) + 1;
        let line = line_protocol::request_line(payload, request);
        let stderr_before = running.stderr.lock().unwrap_or_else(|p| p.into_inner()).total;
        let result = tokio::time::timeout_at(deadline, round_trip(&mut running, &line, request)).await;
        let mut output = ProcessOutput::nothing(started.elapsed());
        output.pgid = running.pgid;
        {
            let stderr = running.stderr.lock().unwrap_or_else(|p| p.into_inner());
            output.stderr_bytes = stderr.total - stderr_before;
            // The tail as it is now, even with nothing new: stderr is read as it comes, so what an
            // earlier event wrote may only have been read since.
            output.stderr = stderr.tail.iter().copied().collect();
        }
        let failure = match result {
            Err(_) => Failure::TimedOut,
            Ok(Err(failure)) => failure,
            Ok(Ok(_)) if output.stderr_bytes > MAX_STDERR_BYTES as u64 => Failure::Overflow(Stream::Stderr),
            Ok(Ok((answer, bytes))) => {
                output.stdout_bytes = bytes;
                output.exit_code = Some(0);
                output.duration = started.elapsed();
                slot.crashes = 0;
                slot.not_before = None;
                slot.process = Some(running);
                return Exchange::Answered {
                    output,
                    answer,
                    notes,
                };
            }
        };
        output.duration = started.elapsed();
        slot.crashes += 1;
        slot.not_before = Some(Instant::now() + backoff(slot.crashes));
        slot.restart_pending = true;
        running.child.kill_group();
        notes.push(crash_note(slot.crashes));
        match failure {
            Failure::TimedOut => output.timed_out = true,
            Failure::Overflow(stream) => output.overflow = Some(stream),
            Failure::OutOfStep(error) => return Exchange::OutOfStep { output, error, notes },
            Failure::Ended => {
                // Said in the cause rather than as an exit code: an exit 0 without an answer
                // is a failure too, not a hook that had nothing to change.
                let status = tokio::time::timeout(REAP_LIMIT, running.child.wait()).await;
                let how = match status {
                    Ok(Ok(status)) => match (
                        status.code(),
                        std::os::unix::process::ExitStatusExt::signal(&status),
                    ) {
                        (Some(code), _) => format!("exited with code {code}"),
                        (None, Some(signal)) => format!("was killed by {}", process::signal_name(signal)),
                        _ => "ended".to_string(),
                    },
                    _ => "closed its stdout".to_string(),
                };
                output.wait_error = Some(format!(
                    "its persistent process {how} without answering; the event failed open"
                ));
            }
        }
        Exchange::Ran { output, notes }
    }
}

/// Writes the request line and reads the answer line; returns the answer's outcome object and how
/// many bytes the answer took.
async fn round_trip(
    running: &mut Running,
    line: &[u8],
    request: u64,
) -> Result<(Map<String, Value>, u64), Failure> {
    // Whatever is on stdout before the request is sent is a line no request asked for. Most such
    // lines are found here; one that arrives later is read as the answer, and its id gives it away.
    let leftover = match running.stdout.fill_buf().now_or_never() {
        Some(Ok([])) | Some(Err(_)) => return Err(Failure::Ended),
        Some(Ok(left)) => Some(line_protocol::preview(left)),
        None => None,
    };
    if let Some(preview) = leftover {
        return Err(Failure::OutOfStep(ProtocolError::ExtraLine { request, preview }));
    }
    running.stdin.write_all(line).await.map_err(|_| Failure::Ended)?;
    running.stdin.flush().await.map_err(|_| Failure::Ended)?;
    let answer = read_line(&mut running.stdout).await?;
    let bytes = answer.len() as u64 + 1;
    line_protocol::read_answer(&answer, request)
        .map(|outcome| (outcome, bytes))
        .map_err(Failure::OutOfStep)
}

/// Reads one line (without its newline), within the stdout cap.
async fn read_line(stdout: &mut BufReader<ChildStdout>) -> Result<Vec<u8>, Failure> {
    let mut line = Vec::new();
    loop {
        let available = stdout.fill_buf().await.map_err(|_| Failure::Ended)?;
        if available.is_empty() {
            return Err(Failure::Ended);
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        if line.len() + chunk.len() > MAX_STDOUT_BYTES {
            return Err(Failure::Overflow(Stream::Stdout));
        }
        line.extend_from_slice(chunk);
        let consumed = done.unwrap_or(available.len());
        stdout.consume(consumed);
        if done.is_some() {
            return Ok(line);
        }
    }
}

/// Starts the process the way a one-shot run starts (same spawn: session, group, orphan watcher,
/// sandbox), with stdin left open.
async fn start(spec: &ProcessSpec<'_>) -> std::io::Result<Running> {
    let args: Vec<&OsStr> = spec.args.iter().map(OsStr::new).collect();
    let mut child = bounded::spawn(&SpawnSpec {
        program: spec.program,
        args: &args,
        cwd: spec.cwd,
        env: spec.env,
        stdin: Input::Piped,
        stdout: Output::Piped,
        stderr: Output::Piped,
        sandbox: spec.sandbox,
    })
    .await?;
    let pgid = Some(child.id().cast_signed());
    let (Some(stdin), Some(stdout), Some(mut stderr_pipe)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("stdin, stdout and stderr are piped");
    };
    let stderr = Arc::new(Mutex::new(StderrTail::default()));
    let sink = stderr.clone();
    let drain = tokio::spawn(async move {
        let mut chunk = vec![0u8; bounded::CHUNK];
        while let Ok(n) = stderr_pipe.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(&chunk[..n]);
        }
    });
    Ok(Running {
        child,
        stdin,
        stdout: BufReader::with_capacity(bounded::CHUNK, stdout),
        stderr,
        drain,
        pgid,
    })
}

fn crash_note(crashes: u32) -> String {
    let wait = backoff(crashes);
    if wait.is_zero() {
        "a new persistent process starts at the next event".into()
    } else {
        format!(
            "{crashes} failures in a row: a new persistent process starts at the first event after {} s",
            wait.as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_starts_after_three_crashes_and_is_capped() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(2), Duration::ZERO);
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(2));
        assert_eq!(backoff(8), Duration::from_secs(30));
        assert_eq!(backoff(100), Duration::from_secs(30));
    }

    #[test]
    fn stderr_tail_keeps_the_end_and_counts_everything() {
        let mut tail = StderrTail::default();
        tail.push(&[b'a'; 2000]);
        tail.push(b"end");
        assert_eq!(tail.total, 2003);
        assert_eq!(tail.tail.len(), MAX_DIAGNOSTIC_STDERR_BYTES);
        assert!(tail.tail.iter().rev().take(3).eq(b"dne".iter()));
    }
}
