//! The bounds every read tool runs under: a deadline, cancellation, and never blocking on a file
//! that is not a regular file.
//!
//! The work runs on a blocking thread and puts what it finds into shared state as it goes. It
//! checks its [`Budget`] between entries, lines and chunks and stops when the deadline passes or
//! the call is cancelled (its future dropped, as when the turn is cancelled). If a single system
//! call never returns (a hung network mount, a kernel file that blocks), the caller stops waiting
//! shortly after the deadline and returns what the shared state holds by then.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::walk::Cancel;

/// How long the caller waits past the deadline for the work to notice it.
const GRACE: Duration = Duration::from_secs(2);

/// What the work may spend: checked between steps.
#[derive(Clone, Debug)]
pub(crate) struct Budget {
    deadline: Instant,
    cancel: Cancel,
    hit_deadline: Arc<AtomicBool>,
}

impl Budget {
    pub fn new(deadline: Duration, cancel: Cancel) -> Self {
        Budget {
            deadline: Instant::now() + deadline,
            cancel,
            hit_deadline: Arc::default(),
        }
    }

    /// True once the work should stop: the deadline passed or the call was cancelled.
    pub(crate) fn exhausted(&self) -> bool {
        if self.cancel.is_set() {
            return true;
        }
        if Instant::now() >= self.deadline {
            self.hit_deadline.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }
}

/// How the work ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Finished,
    /// The deadline passed: the shared state holds what was found by then.
    Deadline,
}

/// Runs `work` on a blocking thread under `deadline`. `Err` is the work's own early error (the
/// path does not exist, …). Dropping the returned future cancels the work.
pub async fn run<F>(deadline: Duration, work: F) -> Result<Ended, String>
where
    F: FnOnce(&Budget) -> Result<(), String> + Send + 'static,
{
    let cancel = Cancel::default();
    let _stop_on_drop = cancel.on_drop();
    let budget = Budget::new(deadline, cancel.clone());
    let hit_deadline = budget.hit_deadline.clone();
    let handle = tokio::task::spawn_blocking(move || work(&budget));
    match tokio::time::timeout(deadline + GRACE, handle).await {
        Ok(Ok(Ok(()))) if hit_deadline.load(Ordering::Relaxed) => Ok(Ended::Deadline),
        Ok(Ok(Ok(()))) => Ok(Ended::Finished),
        Ok(Ok(Err(message))) => Err(message),
        Ok(Err(error)) => Err(format!("the search failed: {error}")),
        // Stuck in one system call: the thread is left to finish it, told to stop after.
        Err(_) => {
            cancel.set();
            Ok(Ended::Deadline)
        }
    }
}

/// Locks shared state even if a panicking thread poisoned it (the state is plain data).
pub fn lock<T>(state: &Mutex<T>) -> MutexGuard<'_, T> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The note a tool adds when its deadline passed.
pub(crate) fn deadline_note(deadline: Duration) -> String {
    format!(
        "[stopped at the {} deadline of the read tools: the results above are what was found by \
         then; narrow the path, pattern or glob]",
        describe(deadline)
    )
}

fn describe(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{:.1} s", duration.as_secs_f64())
    }
}

/// Marks a tool's details when its deadline passed (the key is absent otherwise).
pub(crate) fn mark_deadline(output: crate::tools::ToolOutput, reached: bool) -> crate::tools::ToolOutput {
    let mut output = output;
    if reached && let Some(details) = output.details.as_object_mut() {
        details.insert("deadlineReached".into(), serde_json::Value::Bool(true));
    }
    output
}

/// Pseudo file systems a walk enters only when the search starts inside them.
pub(crate) const PSEUDO_ROOTS: &[&str] = &["/proc", "/sys", "/dev"];

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_deadline_is_reported() {
        let ended = run(Duration::from_millis(50), |budget| {
            while !budget.exhausted() {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        })
        .await;
        assert_eq!(ended, Ok(Ended::Deadline));
        let quick = run(Duration::from_secs(30), |_| Ok(())).await;
        assert_eq!(quick, Ok(Ended::Finished));
        let failed = run(Duration::from_secs(30), |_| Err("nope".to_string())).await;
        assert_eq!(failed, Err("nope".to_string()));
    }

    #[tokio::test]
    async fn work_stuck_in_one_call_is_abandoned_after_the_grace() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let ended = run(Duration::from_millis(10), move |_| {
            // Blocks until the test ends: the caller must not wait for it.
            let _ = rx.recv_timeout(Duration::from_secs(60));
            Ok(())
        })
        .await;
        assert_eq!(ended, Ok(Ended::Deadline));
        drop(tx);
    }

    #[test]
    fn notes_name_the_deadline() {
        assert!(deadline_note(Duration::from_secs(60)).contains("60 s deadline"));
        assert!(deadline_note(Duration::from_millis(1500)).contains("1.5 s deadline"));
    }
}
