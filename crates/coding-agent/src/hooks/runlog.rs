//! The hook run log: one JSON line per hook run in `DATA_DIR/logs/hooks.jsonl`.
//!
//! Every run is logged, successful ones too, so `elph doctor` can count runs, failures and timeouts
//! and compute latency percentiles from it. A line holds the time, the hook id, the event, the
//! duration, how the run ended and the cause of a failure — never the payload or the hook's output,
//! which may hold user data. Writing the log never fails a hook run: errors are swallowed. The log
//! rotates by size (see `logrotate`).
//!
//! The host hands one event's lines over together ([`RunLog::batch`]), and a thread writes them
//! shortly after, one `write` per event (`writer`): a write to the file cost more than the rest of
//! a persistent hook event's bookkeeping. Every exit path and every reader of the log calls
//! [`flush`] first, so nothing handed over is missing when the log is read.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use elph_agent::hooks::{HookEvent, HookRun, RunStatus};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

mod writer;

pub use writer::flush;

/// The file name under `DATA_DIR/logs/`.
pub(crate) const FILE_NAME: &str = "hooks.jsonl";

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunLogEntry {
    /// RFC 3339, UTC.
    pub time: String,
    pub hook_id: String,
    pub event: HookEvent,
    pub duration_ms: u64,
    pub exit: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// `ok`, `failed` or `skipped`.
    pub status: String,
    pub cause: Option<String>,
    /// The hook is fail-closed: a failure stopped what it guards instead of letting it go on.
    /// (Absent in lines written before the field existed: those hooks failed open.)
    #[serde(default)]
    pub fail_closed: bool,
    /// A persistent hook broke the line protocol, and its process was stopped (absent when not,
    /// and in lines written before the field existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protocol_error: bool,
}

impl RunLogEntry {
    /// The entry of `run`, its time left empty (filled in when the line is written).
    fn untimed(run: &HookRun) -> Self {
        let process = run.process.as_ref();
        RunLogEntry {
            time: String::new(),
            hook_id: run.hook_id.clone(),
            event: run.event,
            duration_ms: run.duration_ms,
            exit: process.and_then(|process| process.exit_code),
            signal: process.and_then(|process| process.signal),
            timed_out: process.is_some_and(|process| process.timed_out),
            status: match run.status {
                RunStatus::Ok => "ok",
                RunStatus::Failed => "failed",
                RunStatus::Skipped => "skipped",
            }
            .into(),
            cause: run.cause.clone(),
            fail_closed: run.fail_closed,
            protocol_error: process.is_some_and(|process| process.protocol_error),
        }
    }
}

/// Appends run records to `DATA_DIR/logs/hooks.jsonl`, creating the folder when first needed.
/// The `RunLog`s of one file in a process share one open file and one queue of lines.
#[derive(Clone)]
pub struct RunLog {
    path: PathBuf,
    /// The lines waiting to be written and the open file, shared by the `RunLog`s of this file.
    sink: Arc<writer::Sink>,
}

impl std::fmt::Debug for RunLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLog").field("path", &self.path).finish()
    }
}

impl RunLog {
    pub fn new(data_dir: &Path) -> Self {
        let path = data_dir.join("logs").join(FILE_NAME);
        RunLog {
            sink: writer::sink(&path),
            path,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line for `run`. Errors are swallowed: the log never fails a hook run.
    pub fn append(&self, run: &HookRun) {
        let mut batch = self.batch();
        batch.push(run);
    }

    /// A batch of lines that is handed over to be written in one `write` when it is dropped: at
    /// the end of an event's chain, or half-way when the chain is abandoned (a cancelled turn), so
    /// the runs that finished are logged either way.
    pub fn batch(&self) -> LogBatch<'_> {
        LogBatch {
            log: self,
            lines: Vec::new(),
        }
    }

    /// Writes the lines handed over so far to the file now.
    pub fn flush(&self) {
        self.sink.write_pending();
    }
}

impl Drop for RunLog {
    /// A log that is let go of is written out at once: the folder it is in may go next (a test's,
    /// a session's end), and the writer must not create it again.
    fn drop(&mut self) {
        self.flush();
    }
}

/// Lines for the log, handed over together when dropped (see [`RunLog::batch`]). Each line holds
/// the moment its run was pushed; it is formatted and serialized by the writer, off the event's
/// path.
pub struct LogBatch<'a> {
    log: &'a RunLog,
    lines: Vec<Line>,
}

/// One line before it is written: the run's entry, and when it was pushed.
pub(crate) struct Line {
    at: OffsetDateTime,
    entry: RunLogEntry,
}

impl Line {
    /// Appends the line's JSON and its newline to `bytes` (nothing when it cannot be serialized).
    fn encode(mut self, bytes: &mut Vec<u8>) {
        self.entry.time = self.at.format(&Rfc3339).unwrap_or_default();
        let start = bytes.len();
        match serde_json::to_writer(&mut *bytes, &self.entry) {
            Ok(()) => bytes.push(b'\n'),
            Err(_) => bytes.truncate(start),
        }
    }
}

impl LogBatch<'_> {
    /// Adds the line for `run`.
    pub fn push(&mut self, run: &HookRun) {
        let at = OffsetDateTime::now_utc();
        self.lines.push(Line {
            at,
            entry: RunLogEntry::untimed(run),
        });
    }
}

impl Drop for LogBatch<'_> {
    fn drop(&mut self) {
        if !self.lines.is_empty() {
            self.log.sink.push(std::mem::take(&mut self.lines));
        }
    }
}

impl RunLog {
    /// Reads every well-formed line of the log and its rotated files, oldest first (for tests),
    /// after writing what this process handed over; a missing file is empty.
    pub fn read(&self) -> Vec<RunLogEntry> {
        self.flush();
        crate::logrotate::files_oldest_first(&self.path)
            .iter()
            .flat_map(|file| {
                std::fs::read_to_string(file)
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|line| serde_json::from_str(line).ok())
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_lines_and_creates_the_folder_lazily() {
        let data = tempfile::tempdir().unwrap();
        let log = RunLog::new(data.path());
        assert!(!data.path().join("logs").exists());
        let mut run = HookRun::skipped("audit", HookEvent::Stop, "payload too large");
        log.append(&run);
        run.status = RunStatus::Ok;
        run.cause = None;
        run.process = Some(elph_agent::hooks::ProcessExit {
            exit_code: Some(0),
            ..Default::default()
        });
        run.duration_ms = 12;
        log.append(&run);
        let entries = log.read();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].status, "skipped");
        assert_eq!(entries[0].cause.as_deref(), Some("payload too large"));
        assert_eq!(entries[1].status, "ok");
        assert_eq!(entries[1].exit, Some(0));
        assert_eq!(entries[1].duration_ms, 12);
        let time = &entries[1].time;
        assert!(
            time.len() >= 20 && time.as_bytes()[10] == b'T' && time.ends_with('Z'),
            "{time}"
        );
    }

    #[test]
    fn a_batch_writes_its_lines_together_when_dropped() {
        let data = tempfile::tempdir().unwrap();
        let log = RunLog::new(data.path());
        let mut batch = log.batch();
        for id in ["first", "second", "third"] {
            batch.push(&HookRun::skipped(id, HookEvent::PreToolUse, "x"));
        }
        assert!(log.read().is_empty(), "nothing is written before the event's end");
        drop(batch);
        let ids: Vec<String> = log.read().into_iter().map(|entry| entry.hook_id).collect();
        assert_eq!(ids, ["first", "second", "third"]);
        drop(log.batch());
        assert_eq!(log.read().len(), 3, "an empty batch writes nothing");
    }

    fn file_text(log: &RunLog) -> String {
        std::fs::read_to_string(log.path()).unwrap_or_default()
    }

    #[test]
    fn the_writer_writes_handed_over_lines_without_a_flush() {
        let data = tempfile::tempdir().unwrap();
        let log = RunLog::new(data.path());
        log.append(&HookRun::skipped("late", HookEvent::Stop, "x"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !file_text(&log).contains("\"late\"") {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer never wrote the line"
            );
            std::thread::sleep(writer::LINGER);
        }
    }

    #[test]
    fn flush_writes_every_log_of_the_process_and_dropping_a_log_writes_its_own() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (first, second) = (RunLog::new(one.path()), RunLog::new(two.path()));
        first.append(&HookRun::skipped("first", HookEvent::Stop, "x"));
        second.append(&HookRun::skipped("second", HookEvent::Stop, "x"));
        flush();
        assert!(file_text(&first).contains("\"first\""));
        assert!(file_text(&second).contains("\"second\""));

        let third = tempfile::tempdir().unwrap();
        let log = RunLog::new(third.path());
        log.append(&HookRun::skipped("third", HookEvent::Stop, "x"));
        let path = log.path().to_path_buf();
        drop(log);
        assert!(std::fs::read_to_string(path).unwrap().contains("\"third\""));
    }

    #[test]
    fn events_are_written_in_the_order_they_ended() {
        let data = tempfile::tempdir().unwrap();
        let log = RunLog::new(data.path());
        let clone = log.clone();
        for n in 0..300 {
            // Some written by the writer, some by a flush, by either clone.
            let log = if n % 2 == 0 { &log } else { &clone };
            log.append(&HookRun::skipped(&n.to_string(), HookEvent::Stop, "x"));
            if n % 7 == 0 {
                flush();
            }
        }
        let ids: Vec<String> = log.read().into_iter().map(|entry| entry.hook_id).collect();
        let expected: Vec<String> = (0..300).map(|n: i32| n.to_string()).collect();
        assert_eq!(ids, expected);
    }

    #[test]
    fn an_unwritable_log_is_swallowed() {
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("logs"), "a file, not a folder").unwrap();
        RunLog::new(data.path()).append(&HookRun::skipped("a", HookEvent::Stop, "x"));
    }
}
