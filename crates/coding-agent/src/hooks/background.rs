//! Async hooks (`"async": true`, docs/hooks.md "Async hooks"): runs the session does not wait for.
//!
//! Each async hook has a queue of its own, bounded at [`QUEUE_LIMIT`] runs, and one worker that
//! takes them in order: a hook's runs never overlap and keep the order of their events, while
//! different hooks run side by side. A run is an ordinary bounded hook run (its timeout, caps and
//! process-group kill); its outcome is ignored, and its record goes to the run log like any other,
//! so `elph doctor` counts it. A run that finds its hook's queue full is not run, and says so.
//!
//! [`Background::settle`] closes the queues and waits for what is in them, each run within its
//! timeout: the session calls it at sessionEnd, so every queued run ends before Elph exits.
//! Dropping the host drops the workers, and with them the running processes' groups.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The most runs one async hook may have waiting; a run past it is skipped.
pub(crate) const QUEUE_LIMIT: usize = 64;
/// Added to the sum of the timeouts when settling: the grace of the last kill and its reaping.
const SETTLE_SLACK: Duration = Duration::from_secs(2);

/// One queued run: everything it needs is owned by the future.
pub(crate) type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Why a run was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotQueued {
    /// The hook's queue already holds [`QUEUE_LIMIT`] runs.
    Full,
}

struct Queue {
    sender: mpsc::Sender<Job>,
    worker: JoinHandle<()>,
    /// Runs queued or running.
    pending: Arc<AtomicUsize>,
    /// The hook's timeout: each of its runs ends within it.
    timeout: Duration,
}

/// The queues of the async hooks of one host.
#[derive(Default)]
pub(crate) struct Background {
    queues: Mutex<HashMap<String, Queue>>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("hooks", &self.lock().keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Background {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Queue>> {
        self.queues
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `job` behind the earlier runs of hook `hook_id`, whose runs each end within
    /// `timeout`. Must be called inside the Tokio runtime (the worker is spawned on it).
    pub(crate) fn enqueue(&self, hook_id: &str, timeout: Duration, job: Job) -> Result<(), NotQueued> {
        let mut queues = self.lock();
        // A worker whose queue closed (a settle in between) is replaced.
        if queues.get(hook_id).is_some_and(|queue| queue.sender.is_closed()) {
            queues.remove(hook_id);
        }
        let queue = queues.entry(hook_id.to_string()).or_insert_with(|| {
            let (sender, mut receiver) = mpsc::channel::<Job>(QUEUE_LIMIT);
            let pending = Arc::new(AtomicUsize::new(0));
            let done = pending.clone();
            let worker = tokio::spawn(async move {
                while let Some(job) = receiver.recv().await {
                    job.await;
                    done.fetch_sub(1, Ordering::SeqCst);
                }
            });
            Queue {
                sender,
                worker,
                pending,
                timeout,
            }
        });
        queue.timeout = queue.timeout.max(timeout);
        queue.pending.fetch_add(1, Ordering::SeqCst);
        queue.sender.try_send(job).map_err(|_| {
            queue.pending.fetch_sub(1, Ordering::SeqCst);
            NotQueued::Full
        })
    }

    /// How many runs are queued or running, over every hook.
    pub(crate) fn pending(&self) -> usize {
        self.lock()
            .values()
            .map(|queue| queue.pending.load(Ordering::SeqCst))
            .sum()
    }

    /// Closes every queue and waits until the runs in them have ended: each within its hook's
    /// timeout, so the wait is bounded by the sum of them (per hook; hooks run side by side).
    /// What is still running at that bound is dropped, which kills its process group. Runs queued
    /// afterwards start new workers.
    pub(crate) async fn settle(&self) {
        let queues: Vec<Queue> = self.lock().drain().map(|(_, queue)| queue).collect();
        if queues.is_empty() {
            return;
        }
        let bound = queues
            .iter()
            .map(|queue| {
                let runs = u32::try_from(queue.pending.load(Ordering::SeqCst)).unwrap_or(u32::MAX);
                queue.timeout.saturating_mul(runs)
            })
            .max()
            .unwrap_or_default()
            + SETTLE_SLACK;
        let mut workers = Vec::with_capacity(queues.len());
        for queue in queues {
            // Dropping the sender lets the worker end once its queue is empty.
            drop(queue.sender);
            workers.push(queue.worker);
        }
        let aborts: Vec<_> = workers.iter().map(JoinHandle::abort_handle).collect();
        if tokio::time::timeout(bound, futures::future::join_all(workers))
            .await
            .is_err()
        {
            for abort in aborts {
                abort.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    #[tokio::test]
    async fn runs_of_one_hook_keep_their_order_and_settle_waits_for_all() {
        let background = Background::default();
        let seen = Arc::new(StdMutex::new(Vec::new()));
        for n in 0..5 {
            let seen = seen.clone();
            background
                .enqueue(
                    "a",
                    Duration::from_secs(5),
                    Box::pin(async move {
                        tokio::time::sleep(Duration::from_millis(5 * (5 - n))).await;
                        seen.lock().unwrap().push(n);
                    }),
                )
                .unwrap();
        }
        assert!(background.pending() > 0);
        background.settle().await;
        assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 3, 4]);
        assert_eq!(background.pending(), 0);
    }

    #[tokio::test]
    async fn a_full_queue_refuses_the_run() {
        let background = Background::default();
        let (release, gate) = tokio::sync::oneshot::channel::<()>();
        background
            .enqueue(
                "a",
                Duration::from_secs(5),
                Box::pin(async move {
                    let _ = gate.await;
                }),
            )
            .unwrap();
        // The first run may already be taken off the queue by the worker.
        let mut refused = false;
        for _ in 0..=QUEUE_LIMIT + 1 {
            if background
                .enqueue("a", Duration::from_secs(5), Box::pin(async {}))
                .is_err()
            {
                refused = true;
                break;
            }
        }
        assert!(refused, "a queue of {QUEUE_LIMIT} runs took more");
        let _ = release.send(());
        background.settle().await;
        assert_eq!(background.pending(), 0);
    }

    #[tokio::test]
    async fn settle_gives_up_at_the_bound_of_the_timeouts() {
        let background = Background::default();
        let ended = Arc::new(AtomicUsize::new(0));
        let flag = ended.clone();
        background
            .enqueue(
                "stuck",
                Duration::from_millis(10),
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    flag.fetch_add(1, Ordering::SeqCst);
                }),
            )
            .unwrap();
        background.settle().await;
        assert_eq!(
            ended.load(Ordering::SeqCst),
            0,
            "the stuck run was dropped, not awaited"
        );
    }
}
