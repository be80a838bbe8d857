//! Where the run log's lines wait to be written: a hook event hands its lines over in memory, and
//! one thread writes them to the file within [`LINGER`], so the event does not wait for a write
//! (with its size check for rotation, that was the largest part of what a persistent hook event
//! cost beyond its pipe round trip).
//!
//! Nothing handed over is lost on a way out: [`flush`] writes everything now, and every exit of the
//! `elph` binary calls it (the end of `main`, also when it unwinds, and the forced exits after a
//! signal); so does every reader of the log, and the last `RunLog` of a file when it is dropped. A
//! SIGKILL can lose the last [`LINGER`] of lines, as it loses whatever else was in flight.
//!
//! Each event's lines are still one `write` of their own, in the order the events ended, so lines
//! of several processes do not interleave and a log rotates at most one event's lines past its
//! size, as before. A write that fails drops its lines, as a synchronous one did.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use super::Line;
use crate::logrotate::RotatingFile;

/// How long the writer waits after the first line handed over before writing: the lines of the
/// events in between are written in the same wake-up, not one wake-up per event.
pub(crate) const LINGER: Duration = Duration::from_millis(5);

/// One log file: the lines handed over, not yet written, and the open file.
pub(super) struct Sink {
    path: PathBuf,
    /// One entry per event: each is one `write`.
    pending: Mutex<Vec<Vec<Line>>>,
    /// Opened at the first write and kept open; a failed write drops it, and the next write opens
    /// the file again. Held while a batch is taken and written, so writes keep the order of events.
    file: Mutex<Option<RotatingFile>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The sinks in use in this process, one per file: the `RunLog`s of one file share theirs.
static SINKS: Mutex<Vec<Weak<Sink>>> = Mutex::new(Vec::new());

/// The sink of the log at `path`.
pub(super) fn sink(path: &Path) -> Arc<Sink> {
    let mut sinks = lock(&SINKS);
    sinks.retain(|sink| sink.strong_count() > 0);
    if let Some(sink) = sinks
        .iter()
        .filter_map(Weak::upgrade)
        .find(|sink| sink.path == path)
    {
        return sink;
    }
    let sink = Arc::new(Sink {
        path: path.to_path_buf(),
        pending: Mutex::default(),
        file: Mutex::default(),
    });
    sinks.push(Arc::downgrade(&sink));
    sink
}

/// Writes every line handed over so far, in this process, before returning.
pub fn flush() {
    let sinks: Vec<Arc<Sink>> = lock(&SINKS).iter().filter_map(Weak::upgrade).collect();
    for sink in sinks {
        sink.write_pending();
    }
}

impl Sink {
    /// Hands over one event's lines; they are written within [`LINGER`].
    pub(super) fn push(self: &Arc<Self>, lines: Vec<Line>) {
        let first = {
            let mut pending = lock(&self.pending);
            pending.push(lines);
            pending.len() == 1
        };
        // The lines after the first ride on the wake-up already asked for.
        if first && !Writer::schedule(self) {
            self.write_pending();
        }
    }

    /// Writes what is pending now.
    pub(super) fn write_pending(&self) {
        let mut file = lock(&self.file);
        let batches = std::mem::take(&mut *lock(&self.pending));
        let mut bytes = Vec::new();
        for lines in batches {
            bytes.clear();
            for line in lines {
                line.encode(&mut bytes);
            }
            if bytes.is_empty() {
                continue;
            }
            let open = match file.take() {
                Some(open) => open,
                None => match RotatingFile::open(&self.path, crate::logrotate::max_bytes()) {
                    Ok(open) => open,
                    // Never fails a hook run: the lines are dropped, as a failed write's are.
                    Err(_) => continue,
                },
            };
            let open = file.insert(open);
            if std::io::Write::write_all(open, &bytes).is_err() {
                *file = None;
            }
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.write_pending();
    }
}

/// The one thread that writes the logs, started at the first line handed over.
struct Writer {
    due: Mutex<Vec<Arc<Sink>>>,
    wake: Condvar,
}

impl Writer {
    /// Asks the writer to write `sink` soon; `false` when there is no writer thread (it could not
    /// start), and the caller writes at once.
    fn schedule(sink: &Arc<Sink>) -> bool {
        static WRITER: OnceLock<Option<&'static Writer>> = OnceLock::new();
        let Some(writer) = *WRITER.get_or_init(Writer::start) else {
            return false;
        };
        lock(&writer.due).push(sink.clone());
        writer.wake.notify_one();
        true
    }

    fn start() -> Option<&'static Writer> {
        let writer: &'static Writer = Box::leak(Box::new(Writer {
            due: Mutex::default(),
            wake: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("elph-runlog".into())
            .spawn(move || writer.run())
            .ok()
            .map(|_| writer)
    }

    fn run(&self) {
        loop {
            {
                let mut due = lock(&self.due);
                while due.is_empty() {
                    due = self
                        .wake
                        .wait(due)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            }
            std::thread::sleep(LINGER);
            let due = std::mem::take(&mut *lock(&self.due));
            for sink in due {
                sink.write_pending();
            }
        }
    }
}
