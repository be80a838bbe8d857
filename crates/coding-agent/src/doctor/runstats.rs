//! Recent runs of each hook, from the run log (`DATA_DIR/logs/hooks.jsonl`): count, failures,
//! timeouts and latency percentiles, and the two warnings doctor gives about them (slow, failing).
//!
//! The log is read tolerantly: a line that is not JSON, or lacks the fields a run needs, is skipped
//! and counted. Only the last [`WINDOW`] runs of each configured hook are kept, so memory does not
//! grow with the size of the log.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use elph_agent::hooks::{HookEvent, went_on_unchecked};
use serde::{Deserialize, Serialize};

/// Runs kept per hook: the most recent ones.
pub(crate) const WINDOW: usize = 1000;
/// "Keeps failing": at least [`FAILING_THRESHOLD`] of the last [`FAILING_WINDOW`] runs failed.
pub(crate) const FAILING_WINDOW: usize = 5;
pub(crate) const FAILING_THRESHOLD: usize = 3;
/// "Slow": a p95 over this, whatever the timeout (hooks are awaited serially).
pub(crate) const SLOW_MS: u64 = 2000;

/// How a logged run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Ok,
    Failed,
    Skipped,
}

/// One run as doctor needs it.
#[derive(Clone, Debug)]
struct Run {
    time: Option<String>,
    duration_ms: u64,
    status: Status,
    timed_out: bool,
    cause: Option<String>,
    /// A failure of this run let what the hook guards go on without its check.
    failed_open_guard: bool,
    /// A persistent hook's answer was out of step, and its process was stopped.
    protocol_error: bool,
}

/// One line of the log. Only `hookId`, `durationMs` and `status` are required.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    hook_id: String,
    duration_ms: u64,
    status: String,
    #[serde(default)]
    time: Option<String>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    cause: Option<String>,
    /// Absent in old lines, or for an event name this version does not know.
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    fail_closed: bool,
    #[serde(default)]
    protocol_error: bool,
}

impl Line {
    fn into_run(self) -> Option<(String, Run)> {
        let status = match self.status.as_str() {
            "ok" => Status::Ok,
            "failed" => Status::Failed,
            "skipped" => Status::Skipped,
            _ => return None,
        };
        let guards = self
            .event
            .as_deref()
            .and_then(|name| name.parse::<HookEvent>().ok())
            .is_some_and(|event| went_on_unchecked(event).is_some());
        let failed = status != Status::Ok || self.timed_out;
        Some((
            self.hook_id,
            Run {
                time: self.time,
                duration_ms: self.duration_ms,
                status,
                // A timed-out run failed, whatever its status field says.
                timed_out: self.timed_out,
                cause: self.cause,
                failed_open_guard: failed && guards && !self.fail_closed,
                protocol_error: self.protocol_error,
            },
        ))
    }
}

/// What was read from the log.
#[derive(Debug, Default)]
pub(crate) struct LogRead {
    pub exists: bool,
    /// Why the log could not be read, when it exists but cannot be opened.
    pub error: Option<String>,
    /// Lines that held a run (of any hook).
    pub runs: usize,
    /// Lines skipped: not JSON, or missing what a run needs.
    pub(crate) bad_lines: usize,
    /// Runs of hooks that are not configured now.
    pub(crate) unknown_hook_runs: usize,
    runs_by_hook: HashMap<String, VecDeque<Run>>,
}

impl LogRead {
    /// Reads `path`, keeping the last [`WINDOW`] runs of each hook in `hook_ids`.
    pub(super) fn read<'a>(path: &Path, hook_ids: impl IntoIterator<Item = &'a str>) -> Self {
        let mut read = LogRead {
            runs_by_hook: hook_ids
                .into_iter()
                .map(|id| (id.to_string(), VecDeque::new()))
                .collect(),
            ..LogRead::default()
        };
        // Lines this process handed over but has not written yet (a session's doctor) count too.
        crate::hooks::runlog::flush();
        // Rotated files first (oldest to newest), then the live log: runs stay in time order.
        let mut files = crate::logrotate::files_oldest_first(path);
        if files.is_empty() {
            files.push(path.to_path_buf());
        }
        for file in files {
            read.read_file(&file);
        }
        read
    }

    fn read_file(&mut self, path: &Path) {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
            Err(error) => {
                self.exists = true;
                self.error = Some(error.to_string());
                return;
            }
        };
        self.exists = true;
        let mut reader = BufReader::new(file);
        let mut line = Vec::new();
        loop {
            match read_capped_line(&mut reader, &mut line, MAX_LINE_BYTES) {
                Ok(CappedLine::End) => break,
                Ok(CappedLine::Whole) => self.add_line(&line),
                Ok(CappedLine::TooLong) => self.bad_lines += 1,
                Err(error) => {
                    self.error = Some(error.to_string());
                    break;
                }
            }
        }
    }

    fn add_line(&mut self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Some((hook_id, run)) = serde_json::from_slice::<Line>(line).ok().and_then(Line::into_run) else {
            self.bad_lines += 1;
            return;
        };
        self.runs += 1;
        match self.runs_by_hook.get_mut(&hook_id) {
            Some(runs) => {
                if runs.len() == WINDOW {
                    runs.pop_front();
                }
                runs.push_back(run);
            }
            None => self.unknown_hook_runs += 1,
        }
    }

    /// The statistics of one hook's recent runs; `None` when the log holds none.
    pub(super) fn stats(&self, hook_id: &str) -> Option<RunStats> {
        let runs = self.runs_by_hook.get(hook_id)?;
        if runs.is_empty() {
            return None;
        }
        Some(RunStats::of(runs.iter()))
    }
}

/// The longest run-log line read: a run's line is a few hundred bytes (the log never holds a
/// payload or output), so a longer one is damage, and is counted as a bad line without being held
/// in memory (a 300 MB file with no line break must not take 300 MB).
const MAX_LINE_BYTES: usize = 64 * 1024;

enum CappedLine {
    /// No more lines.
    End,
    /// `line` holds the whole line.
    Whole,
    /// The line was longer than the cap: skipped to its end, `line` holds only its start.
    TooLong,
}

/// Reads one line (up to and including `\n`) into `line`, keeping at most `cap` bytes of it.
fn read_capped_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<CappedLine> {
    line.clear();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let buffer = match reader.fill_buf() {
            Ok(buffer) => buffer,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if buffer.is_empty() {
            break;
        }
        read_any = true;
        let (chunk, found_end) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => (buffer.get(..=end).unwrap_or(buffer), true),
            None => (buffer, false),
        };
        let room = cap.saturating_sub(line.len());
        if chunk.len() > room {
            too_long = true;
        }
        line.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or(chunk));
        let used = chunk.len();
        reader.consume(used);
        if found_end {
            break;
        }
    }
    Ok(match (read_any, too_long) {
        (false, _) => CappedLine::End,
        (true, true) => CappedLine::TooLong,
        (true, false) => CappedLine::Whole,
    })
}

/// The most recent failure of a hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LastFailure {
    pub time: Option<String>,
    pub timed_out: bool,
    pub cause: Option<String>,
}

/// A hook's recent runs, summed up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunStats {
    /// Runs considered (at most [`WINDOW`], the most recent).
    pub count: usize,
    pub ok: usize,
    /// Failed runs, timeouts included.
    pub failures: usize,
    pub timeouts: usize,
    /// Not run (payload over the input limit); left out of the percentiles.
    pub skipped: usize,
    /// Median duration of the runs that ran (nearest rank).
    pub(crate) p50_ms: Option<u64>,
    pub(crate) p95_ms: Option<u64>,
    /// How many of the last runs that ran (at most [`FAILING_WINDOW`]) failed, and of how many.
    pub(crate) recent_failures: usize,
    pub(crate) recent_window: usize,
    pub(crate) last_run: Option<String>,
    pub(crate) last_failure: Option<LastFailure>,
    /// Runs that failed or were not run while what the hook guards went on without its check (a
    /// guard without `failClosed`).
    pub(crate) failed_open: usize,
    /// Runs in which a persistent hook broke the line protocol, and the cause of the last one.
    pub(crate) protocol_errors: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) last_protocol_error: Option<String>,
    /// The durations of the runs that ran, shortest first (for budgetMs).
    #[serde(skip)]
    ran_ms: Vec<u64>,
}

impl RunStats {
    fn of<'a>(mut runs: impl DoubleEndedIterator<Item = &'a Run> + Clone) -> Self {
        let mut durations = Vec::new();
        let (mut count, mut ok, mut failures, mut timeouts, mut skipped) = (0, 0, 0, 0, 0);
        for run in runs.clone() {
            count += 1;
            let failed = run.status == Status::Failed || run.timed_out;
            match run.status {
                Status::Skipped if !run.timed_out => skipped += 1,
                _ if failed => failures += 1,
                _ => ok += 1,
            }
            if run.timed_out {
                timeouts += 1;
            }
            if run.status != Status::Skipped {
                durations.push(run.duration_ms);
            }
        }
        durations.sort_unstable();
        let ran: Vec<&Run> = runs
            .clone()
            .rev()
            .filter(|run| run.status != Status::Skipped)
            .take(FAILING_WINDOW)
            .collect();
        let recent_failures = ran
            .iter()
            .filter(|run| run.status == Status::Failed || run.timed_out)
            .count();
        let last_failure = runs
            .clone()
            .rev()
            .find(|run| run.status == Status::Failed || run.timed_out)
            .map(|run| LastFailure {
                time: run.time.clone(),
                timed_out: run.timed_out,
                cause: run.cause.clone(),
            });
        // Counted before `last_run` below takes the last run off `runs`.
        let failed_open = runs.clone().filter(|run| run.failed_open_guard).count();
        let protocol_errors = runs.clone().filter(|run| run.protocol_error).count();
        let last_protocol_error = runs
            .clone()
            .rev()
            .find(|run| run.protocol_error)
            .and_then(|run| run.cause.clone());
        RunStats {
            count,
            ok,
            failures,
            timeouts,
            skipped,
            p50_ms: percentile(&durations, 50),
            p95_ms: percentile(&durations, 95),
            recent_failures,
            recent_window: ran.len(),
            last_run: runs.next_back().and_then(|run| run.time.clone()),
            last_failure,
            failed_open,
            protocol_errors,
            last_protocol_error,
            ran_ms: durations,
        }
    }

    /// How many runs that ran took longer than `budget_ms`.
    pub(crate) fn over_budget(&self, budget_ms: u64) -> usize {
        self.ran_ms.iter().filter(|ms| **ms > budget_ms).count()
    }

    /// How many runs ran (not skipped).
    pub(crate) fn ran(&self) -> usize {
        self.ran_ms.len()
    }

    /// The longest run that ran.
    pub(crate) fn slowest_ms(&self) -> Option<u64> {
        self.ran_ms.last().copied()
    }

    /// Why the hook counts as slow, if it does: its p95 is over half its timeout, or over 2 s.
    pub(crate) fn slow(&self, timeout: Duration) -> Option<Slowness> {
        let p95 = self.p95_ms?;
        let half = (timeout.as_millis() as u64) / 2;
        if p95 > half {
            Some(Slowness::NearTimeout {
                p95_ms: p95,
                timeout_ms: timeout.as_millis() as u64,
            })
        } else if p95 > SLOW_MS {
            Some(Slowness::OverLimit { p95_ms: p95 })
        } else {
            None
        }
    }

    /// Whether the hook keeps failing: at least 3 of its last 5 runs failed.
    pub(crate) fn failing(&self) -> bool {
        self.recent_failures >= FAILING_THRESHOLD
    }

    /// Whether every one of its last runs that ran (up to 5) failed: a hook that never works.
    pub(crate) fn always_failing(&self) -> bool {
        self.recent_window > 0 && self.recent_failures == self.recent_window
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slowness {
    NearTimeout { p95_ms: u64, timeout_ms: u64 },
    OverLimit { p95_ms: u64 },
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[u64], p: usize) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    Some(sorted[rank.min(sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, ms: u64, status: &str, timed_out: bool) -> String {
        serde_json::json!({
            "time": "2025-01-01T00:00:00Z", "hookId": id, "event": "stop", "durationMs": ms,
            "exit": null, "signal": null, "timedOut": timed_out, "status": status, "cause": null
        })
        .to_string()
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[1, 2, 3, 4], 50), Some(2));
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&hundred, 50), Some(50));
        assert_eq!(percentile(&hundred, 95), Some(95));
        let twenty: Vec<u64> = (1..=20).map(|n| n * 100).collect();
        assert_eq!(percentile(&twenty, 95), Some(1900));
    }

    #[test]
    fn bad_lines_are_skipped_and_the_window_keeps_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hooks.jsonl");
        let mut text = String::from("not json\n{\"hookId\": \"a\"}\n\n");
        for _ in 0..5 {
            text.push_str(&line("a", 10, "failed", false));
            text.push('\n');
        }
        for _ in 0..WINDOW {
            text.push_str(&line("a", 20, "ok", false));
            text.push('\n');
        }
        text.push_str(&line("gone", 1, "ok", false));
        text.push_str("\n{\"truncated");
        std::fs::write(&path, text).unwrap();
        let read = LogRead::read(&path, ["a", "never-ran"]);
        assert!(read.exists);
        assert_eq!(read.bad_lines, 3);
        assert_eq!(read.runs, WINDOW + 6);
        assert_eq!(read.unknown_hook_runs, 1);
        let stats = read.stats("a").unwrap();
        assert_eq!((stats.count, stats.ok, stats.failures), (WINDOW, WINDOW, 0));
        assert_eq!(stats.p50_ms, Some(20));
        assert!(read.stats("never-ran").is_none());
        assert!(read.stats("gone").is_none());
    }

    #[test]
    fn a_line_over_the_cap_is_one_bad_line_and_is_not_kept() {
        let long = "x".repeat(MAX_LINE_BYTES * 3);
        let text = format!(
            "{}\n{long}\n{}\n{long}",
            line("a", 5, "ok", false),
            line("a", 7, "ok", false)
        );
        let mut reader = std::io::BufReader::with_capacity(1000, text.as_bytes());
        let mut kept = Vec::new();
        let mut seen = Vec::new();
        loop {
            match read_capped_line(&mut reader, &mut kept, MAX_LINE_BYTES).unwrap() {
                CappedLine::End => break,
                CappedLine::Whole => seen.push(String::from_utf8(kept.clone()).unwrap()),
                CappedLine::TooLong => {
                    assert_eq!(kept.len(), MAX_LINE_BYTES);
                    seen.push("too long".into());
                }
            }
        }
        assert_eq!(
            seen,
            [
                format!("{}\n", line("a", 5, "ok", false)),
                "too long".into(),
                format!("{}\n", line("a", 7, "ok", false)),
                "too long".into(),
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hooks.jsonl");
        std::fs::write(&path, &text).unwrap();
        let read = LogRead::read(&path, ["a"]);
        assert_eq!((read.runs, read.bad_lines), (2, 2));
    }

    #[test]
    fn failing_and_slow() {
        let runs: Vec<Run> = [
            ("ok", false),
            ("failed", false),
            ("ok", true),
            ("skipped", false),
            ("failed", false),
        ]
        .iter()
        .enumerate()
        .map(|(i, (status, timed_out))| Run {
            time: Some(format!("t{i}")),
            duration_ms: 1000 * (i as u64 + 1),
            status: match *status {
                "ok" => Status::Ok,
                "failed" => Status::Failed,
                _ => Status::Skipped,
            },
            timed_out: *timed_out,
            cause: Some(format!("cause {i}")),
            failed_open_guard: *status == "failed",
            protocol_error: false,
        })
        .collect();
        let stats = RunStats::of(runs.iter());
        assert_eq!(
            (
                stats.count,
                stats.ok,
                stats.failures,
                stats.timeouts,
                stats.skipped
            ),
            (5, 1, 3, 1, 1)
        );
        assert_eq!((stats.recent_failures, stats.recent_window), (3, 4));
        assert_eq!(stats.failed_open, 2, "the last run counts too");
        assert!(stats.failing());
        assert_eq!(
            stats.last_failure.as_ref().unwrap().cause.as_deref(),
            Some("cause 4")
        );
        assert_eq!(stats.last_run.as_deref(), Some("t4"));
        // Durations that ran: 1000, 2000, 3000, 5000.
        assert_eq!((stats.p50_ms, stats.p95_ms), (Some(2000), Some(5000)));
        assert_eq!(
            stats.slow(Duration::from_secs(60)),
            Some(Slowness::OverLimit { p95_ms: 5000 })
        );
        assert_eq!(
            stats.slow(Duration::from_secs(8)),
            Some(Slowness::NearTimeout {
                p95_ms: 5000,
                timeout_ms: 8000
            })
        );
    }
}
