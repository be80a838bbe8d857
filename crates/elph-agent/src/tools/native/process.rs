//! Run one shell command as a bounded child process, for `shell_exec`.
//!
//! `/bin/sh -c COMMAND` runs in the project folder, in a process group of its own, with stdin
//! closed. stdout and stderr are read concurrently until they close; of each, the first and last
//! `HALF_CAP` bytes are kept and the middle is read and discarded, so memory stays bounded however
//! much a command prints. The group is killed with `killpg(SIGKILL)`:
//!
//! - when the timeout expires;
//! - when the direct child has exited but something it started in the background still holds
//!   stdout or stderr open `EXIT_GRACE` later (the call never waits for pipe EOF alone);
//! - when the future is dropped (a cancelled call), by the guard that owns the group.
//!
//! Background processes that let go of the pipes (`server > log 2>&1 &`) are left running when
//! the command finishes normally.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::time::Instant;

/// How long the pipes may stay open after the direct child exited before the group is killed.
pub const EXIT_GRACE: Duration = Duration::from_millis(100);
/// After a kill, how long to keep reading what is already in the pipes.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(50);
/// After a kill, how long to wait for the direct child to be reaped.
const REAP_LIMIT: Duration = Duration::from_secs(2);
/// The bytes kept from the start, and from the end, of each stream.
pub const HALF_CAP: usize = 32 * 1024;
/// The size of one read from a pipe.
const CHUNK: usize = 16 * 1024;

/// The first and last `HALF_CAP` bytes of a stream, and how long it was.
#[derive(Debug, Default)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    pub fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let into_head = chunk.len().min(HALF_CAP - self.head.len());
        self.head.extend_from_slice(&chunk[..into_head]);
        chunk = &chunk[into_head..];
        if chunk.len() >= HALF_CAP {
            self.tail.clear();
            chunk = &chunk[chunk.len() - HALF_CAP..];
        } else {
            let over = (self.tail.len() + chunk.len()).saturating_sub(HALF_CAP);
            self.tail.drain(..over);
        }
        self.tail.extend(chunk);
    }

    /// Bytes the stream carried in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes read and discarded between the head and the tail.
    pub fn omitted(&self) -> u64 {
        self.total - (self.head.len() + self.tail.len()) as u64
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

/// Everything that happened to one run.
#[derive(Debug, Default)]
pub struct RunResult {
    /// The command could not be started; the text says why.
    pub spawn_error: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Background processes still held the pipes open after the command exited, and were killed.
    pub leftovers_killed: bool,
    /// The direct child could not be reaped after the kill (should not happen).
    pub wait_error: Option<String>,
    pub stdout: Capture,
    pub stderr: Capture,
    pub duration: Duration,
}

/// Kills the process group it owns when asked, and when dropped unless disarmed.
struct GroupGuard {
    pgid: Option<Pid>,
    armed: bool,
}

impl GroupGuard {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (the group is already gone) is fine.
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

/// Runs `/bin/sh -c command` in `cwd` within `timeout`. Never fails: see the fields of the result.
/// Dropping the future kills the command's process group.
pub async fn run(command: &str, cwd: &Path, timeout: Duration) -> RunResult {
    let started = Instant::now();
    let mut result = RunResult::default();
    let spawned = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            result.spawn_error = Some(format!("cannot run /bin/sh in {}: {error}", cwd.display()));
            return result;
        }
    };
    let mut guard = GroupGuard {
        pgid: child.id().map(|pid| Pid::from_raw(pid as i32)),
        armed: true,
    };
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        unreachable!("stdout and stderr are piped");
    };

    let deadline = started + timeout;
    let far = started + Duration::from_secs(86_400 * 365);
    let mut out_open = true;
    let mut err_open = true;
    let mut waited = false;
    let mut killed = false;
    // When to stop reading the pipes: a grace after the child's exit, or a short drain after a kill.
    let mut pipes_cutoff: Option<Instant> = None;
    // After a kill: when to give up waiting for the child to be reaped.
    let mut reap_limit: Option<Instant> = None;
    let mut out_chunk = vec![0u8; CHUNK];
    let mut err_chunk = vec![0u8; CHUNK];

    loop {
        if waited && !out_open && !err_open {
            break;
        }
        let mut kill_now = false;
        // Timers first: a command that floods its output must not starve them.
        tokio::select! {
            biased;
            () = tokio::time::sleep_until(deadline), if !killed && !waited => {
                result.timed_out = true;
                kill_now = true;
            },
            () = tokio::time::sleep_until(pipes_cutoff.unwrap_or(far)), if pipes_cutoff.is_some() => {
                if killed {
                    // Something outside the group holds a pipe: stop reading.
                    out_open = false;
                    err_open = false;
                    pipes_cutoff = None;
                } else {
                    result.leftovers_killed = true;
                    kill_now = true;
                }
            },
            () = tokio::time::sleep_until(reap_limit.unwrap_or(far)), if reap_limit.is_some() && !waited => {
                result.wait_error = Some("the command could not be reaped after it was killed".into());
                break;
            },
            status = child.wait(), if !waited => {
                waited = true;
                match status {
                    Ok(status) => {
                        result.exit_code = status.code();
                        result.signal = status.signal();
                    }
                    Err(error) => result.wait_error = Some(format!("cannot wait for the command: {error}")),
                }
                if !killed && (out_open || err_open) {
                    pipes_cutoff = Some(Instant::now() + EXIT_GRACE);
                }
            },
            read = stdout.read(&mut out_chunk), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => result.stdout.push(&out_chunk[..n]),
            },
            read = stderr.read(&mut err_chunk), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => result.stderr.push(&err_chunk[..n]),
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

    // A normal finish leaves alone whatever let go of the pipes; a kill has already swept the group.
    guard.armed = false;
    result.duration = started.elapsed();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut capture = Capture::default();
        capture.push(b"hello ");
        capture.push(b"world");
        assert_eq!(capture.render(), "hello world");
        assert_eq!((capture.total(), capture.omitted()), (11, 0));
    }

    #[test]
    fn output_up_to_both_halves_is_kept_whole() {
        let mut capture = Capture::default();
        let data: Vec<u8> = (0..2 * HALF_CAP).map(|i| b'a' + (i % 26) as u8).collect();
        for piece in data.chunks(1000) {
            capture.push(piece);
        }
        assert_eq!(capture.omitted(), 0);
        assert_eq!(capture.render().as_bytes(), &data[..]);
    }

    #[test]
    fn the_middle_is_discarded_and_memory_stays_bounded() {
        let mut capture = Capture::default();
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
        let mut capture = Capture::default();
        let mut chunk = vec![b'a'; 3 * HALF_CAP];
        chunk.extend_from_slice(b"END");
        capture.push(&chunk);
        assert_eq!(capture.tail.len(), HALF_CAP);
        assert!(capture.render().ends_with("aEND"));
    }

    #[test]
    fn cuts_do_not_split_characters() {
        let mut capture = Capture::default();
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
}
