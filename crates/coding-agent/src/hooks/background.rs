//! Async hooks (`"async": true`, docs/hooks.md "Async hooks"): runs the session does not wait for.
//!
//! Each async hook has a queue of its own, bounded at [`QUEUE_LIMIT`] runs, and one worker that
//! takes them in order: a hook's runs never overlap and keep the order of their events, while
//! different hooks run side by side. A run is an ordinary bounded hook run (its timeout, caps and
//! process-group kill); its outcome is ignored, and its record goes to the run log like any other,
//! so `elph doctor` counts it. A run that finds its hook's queue full is not run, and says so.
//!
//! [`Background::settle`] closes the queues and waits for what is in them, each run within its
//! timeout (and, after a signal, no longer than the shutdown's deadline): the session calls it at
//! sessionEnd, so every queued run ends before Elph exits. A run still going at that bound is
//! stopped (its process group killed) and recorded as cut off, as is one that never started:
//! nothing queued ends without a record.
//!
//! Each run's end is also told, as an [`AsyncRun`] with its real start and end, to whoever asked
//! with [`Background::report_to`] (the session's telemetry exports it as a span).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use elph_agent::hooks::{HookEvent, HookRun, RunStatus};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::runlog::RunLog;
use crate::telemetry::otlp::now_ns;

/// The most runs one async hook may have waiting; a run past it is skipped.
pub(crate) const QUEUE_LIMIT: usize = 64;
/// Added to the sum of the timeouts when settling: the grace of the last kill and its reaping.
const SETTLE_SLACK: Duration = Duration::from_secs(2);

/// One queued run: everything it needs is owned by the future, which gives the run's record.
pub(crate) type Job = Pin<Box<dyn Future<Output = HookRun> + Send>>;

/// The event an async run was queued for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    pub(crate) event: HookEvent,
    /// The tool call the event was about, for the tool events.
    pub(crate) tool_call_id: Option<String>,
}

/// How one async run went: told once, when it ended or was cut off.
#[derive(Clone, Debug)]
pub(crate) struct AsyncRun {
    pub(crate) run: HookRun,
    pub(crate) origin: Origin,
    /// When it was queued, when it started (`None`: it never did) and when it ended, in
    /// nanoseconds since the Unix epoch.
    pub(crate) queued_ns: u64,
    pub(crate) started_ns: Option<u64>,
    pub(crate) ended_ns: u64,
    /// The session ended first: the run was stopped, or never started, at the end's bound.
    pub(crate) cut_off: bool,
}

/// Where the reports of ended runs go.
type Sink = mpsc::UnboundedSender<AsyncRun>;

/// Why a run was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotQueued {
    /// The hook's queue already holds [`QUEUE_LIMIT`] runs.
    Full,
}

struct Queue {
    sender: mpsc::Sender<(Tracked, Job)>,
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
    reports: Mutex<Option<Sink>>,
}

/// One run on its way through a queue: on drop it makes sure the run has a record — the one the
/// run gave, or, when it was dropped before it ended (cut off at the end of the session), one
/// that says so.
struct Tracked {
    hook_id: String,
    origin: Origin,
    queued_ns: u64,
    started_ns: Option<u64>,
    log: Option<RunLog>,
    reports: Option<Sink>,
    ended: bool,
}

impl Tracked {
    fn end(&mut self, run: HookRun, cut_off: bool) {
        self.ended = true;
        if let Some(log) = &self.log {
            log.append(&run);
        }
        if let Some(reports) = &self.reports {
            let _ = reports.send(AsyncRun {
                run,
                origin: self.origin.clone(),
                queued_ns: self.queued_ns,
                started_ns: self.started_ns,
                ended_ns: now_ns(),
                cut_off,
            });
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let event = self.origin.event;
        let run = match self.started_ns {
            None => HookRun::skipped(
                &self.hook_id,
                event,
                "not run: the session ended before this async run's turn came",
            ),
            Some(started) => {
                let ran_ms = now_ns().saturating_sub(started) / 1_000_000;
                let mut run = HookRun::skipped(
                    &self.hook_id,
                    event,
                    format!(
                        "cut off: the session ended while this async run was going ({ran_ms} ms in); \
                         its process group was killed"
                    ),
                );
                run.status = RunStatus::Failed;
                run.duration_ms = ran_ms;
                run
            }
        };
        self.end(run, true);
    }
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

    /// Tells every run queued from now on, when it ends, to `reports`.
    pub(crate) fn report_to(&self, reports: Sink) {
        *self
            .reports
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(reports);
    }

    /// Queues `job`, a run of hook `hook_id` for `origin`, behind the hook's earlier runs; each
    /// of them ends within `timeout`. Its record goes to `log` when it ends. Must be called inside
    /// the Tokio runtime (the worker is spawned on it).
    pub(crate) fn enqueue(
        &self,
        hook_id: &str,
        timeout: Duration,
        origin: Origin,
        log: Option<RunLog>,
        job: Job,
    ) -> Result<(), NotQueued> {
        let tracked = Tracked {
            hook_id: hook_id.to_string(),
            origin,
            queued_ns: now_ns(),
            started_ns: None,
            log,
            reports: self
                .reports
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone(),
            ended: false,
        };
        let mut queues = self.lock();
        // A worker whose queue closed (a settle in between) is replaced.
        if queues.get(hook_id).is_some_and(|queue| queue.sender.is_closed()) {
            queues.remove(hook_id);
        }
        let queue = queues.entry(hook_id.to_string()).or_insert_with(|| {
            let (sender, mut receiver) = mpsc::channel::<(Tracked, Job)>(QUEUE_LIMIT);
            let pending = Arc::new(AtomicUsize::new(0));
            let done = pending.clone();
            // Dropped mid-run (cut off at settle's bound), the worker drops the run's `Tracked`,
            // which records it as cut off; the runs still in the queue, as never started.
            let worker = tokio::spawn(async move {
                while let Some((mut tracked, job)) = receiver.recv().await {
                    tracked.started_ns = Some(now_ns());
                    let run = job.await;
                    tracked.end(run, false);
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
        queue.sender.try_send((tracked, job)).map_err(|refused| {
            queue.pending.fetch_sub(1, Ordering::SeqCst);
            // Not queued is not cut off: the caller records the refusal in the chain.
            let (mut tracked, _job) = refused.into_inner();
            tracked.ended = true;
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
    /// timeout, so the wait is bounded by the sum of them (per hook; hooks run side by side), and
    /// after a signal by the shutdown's deadline. What is still running at that bound is dropped,
    /// which kills its process group, and recorded as cut off. Runs queued afterwards start new
    /// workers.
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
        let ended = tokio::select! {
            ended = tokio::time::timeout(bound, futures::future::join_all(workers.iter_mut())) => ended.is_ok(),
            () = crate::shutdown::hook_deadline_passed() => false,
        };
        if !ended {
            workers.retain(|worker| !worker.is_finished());
            for worker in &workers {
                worker.abort();
            }
            // An aborted worker is dropped at its next poll, and with it the run it holds, which
            // records itself as cut off: awaited, so every record is made before settle returns.
            let _ = tokio::time::timeout(SETTLE_SLACK, futures::future::join_all(workers)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    fn origin() -> Origin {
        Origin {
            event: HookEvent::PostToolUse,
            tool_call_id: Some("call_7".into()),
        }
    }

    fn ran(hook_id: &str) -> HookRun {
        HookRun::native(hook_id, HookEvent::PostToolUse, 1, None)
    }

    #[tokio::test]
    async fn runs_of_one_hook_keep_their_order_and_settle_waits_for_all() {
        let background = Background::default();
        let (reports, mut told) = mpsc::unbounded_channel();
        background.report_to(reports);
        let seen = Arc::new(StdMutex::new(Vec::new()));
        for n in 0..5 {
            let seen = seen.clone();
            background
                .enqueue(
                    "a",
                    Duration::from_secs(5),
                    origin(),
                    None,
                    Box::pin(async move {
                        tokio::time::sleep(Duration::from_millis(5 * (5 - n))).await;
                        seen.lock().unwrap().push(n);
                        ran("a")
                    }),
                )
                .unwrap();
        }
        assert!(background.pending() > 0);
        background.settle().await;
        assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 3, 4]);
        assert_eq!(background.pending(), 0);
        let mut ends = Vec::new();
        while let Ok(report) = told.try_recv() {
            assert!(!report.cut_off);
            assert_eq!(report.origin, origin());
            let started = report.started_ns.unwrap();
            assert!(
                report.queued_ns <= started && started <= report.ended_ns,
                "{report:?}"
            );
            ends.push((started, report.ended_ns));
        }
        assert_eq!(ends.len(), 5, "each run is told once");
        assert!(
            ends.windows(2).all(|pair| pair[0].1 <= pair[1].0),
            "one after another: {ends:?}"
        );
    }

    #[tokio::test]
    async fn a_full_queue_refuses_the_run() {
        let background = Background::default();
        let (reports, mut told) = mpsc::unbounded_channel();
        background.report_to(reports);
        let (release, gate) = tokio::sync::oneshot::channel::<()>();
        background
            .enqueue(
                "a",
                Duration::from_secs(5),
                origin(),
                None,
                Box::pin(async move {
                    let _ = gate.await;
                    ran("a")
                }),
            )
            .unwrap();
        // The first run may already be taken off the queue by the worker.
        let mut accepted = 1;
        let mut refused = false;
        for _ in 0..=QUEUE_LIMIT + 1 {
            if background
                .enqueue(
                    "a",
                    Duration::from_secs(5),
                    origin(),
                    None,
                    Box::pin(async { ran("a") }),
                )
                .is_err()
            {
                refused = true;
                break;
            }
            accepted += 1;
        }
        assert!(refused, "a queue of {QUEUE_LIMIT} runs took more");
        let _ = release.send(());
        background.settle().await;
        assert_eq!(background.pending(), 0);
        let mut count = 0;
        while let Ok(report) = told.try_recv() {
            assert!(!report.cut_off, "a refused run is not one cut off: {report:?}");
            count += 1;
        }
        assert_eq!(count, accepted, "the refused run is told by its chain, not here");
    }

    #[tokio::test]
    async fn settle_gives_up_at_the_bound_and_records_what_it_cut_off() {
        let background = Background::default();
        let (reports, mut told) = mpsc::unbounded_channel();
        background.report_to(reports);
        let data = tempfile::tempdir().unwrap();
        let log = RunLog::new(data.path());
        let ended = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let flag = ended.clone();
            background
                .enqueue(
                    "stuck",
                    Duration::from_millis(10),
                    origin(),
                    Some(log.clone()),
                    Box::pin(async move {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        flag.fetch_add(1, Ordering::SeqCst);
                        ran("stuck")
                    }),
                )
                .unwrap();
        }
        background.settle().await;
        assert_eq!(
            ended.load(Ordering::SeqCst),
            0,
            "the stuck run was dropped, not awaited"
        );
        let first = told.try_recv().expect("the run that was going is told");
        assert!(first.cut_off);
        assert!(first.started_ns.is_some());
        assert_eq!(first.run.status, RunStatus::Failed);
        assert!(
            first.run.cause.as_deref().unwrap().starts_with("cut off"),
            "{first:?}"
        );
        let second = told.try_recv().expect("the run that never started is told");
        assert!(second.cut_off);
        assert_eq!(second.started_ns, None);
        assert_eq!(second.run.status, RunStatus::Skipped);
        assert!(told.try_recv().is_err());
        let logged = log.read();
        assert_eq!(logged.len(), 2, "both are in the run log: {logged:?}");
        assert_eq!(logged[0].status, "failed");
    }
}
