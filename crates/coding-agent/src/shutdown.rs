//! The signals that end Elph — SIGINT (Ctrl+C), SIGTERM (`kill`, `timeout(1)`, systemd, CI
//! cancellation), SIGHUP (a closed terminal) and SIGQUIT — take one path in every front end:
//!
//! 1. the first one cancels what runs (the running tool's and hooks' process groups are killed by
//!    the cancellation), and from then on every hook runs under one overall deadline of
//!    [`DEADLINE`] (2 s), so the `stop` and `sessionEnd` hooks run but cannot hold the exit;
//! 2. the front end stores what was shown, emits its final events and exits with 128 + the
//!    signal's number (130, 143, 129, 131);
//! 3. a second signal, or the deadline passing by [`GRACE`] with the front end still not done,
//!    exits at once, after killing every process group still running.
//!
//! Whatever happens, the orphan watcher (`elph_process::orphans`) kills what is left when the
//! process is gone.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long the `stop` and `sessionEnd` hooks (and any other) may run in all after a signal.
pub(crate) const DEADLINE: Duration = Duration::from_secs(2);
/// How long past the deadline the front end has to finish before the process exits anyway.
pub(crate) const GRACE: Duration = Duration::from_secs(1);

/// When every hook must be done by, once a signal came.
static HOOK_DEADLINE: Mutex<Option<Instant>> = Mutex::new(None);

/// Woken when a signal sets [`HOOK_DEADLINE`], for [`hook_deadline_passed`].
fn deadline_set() -> &'static tokio::sync::Notify {
    static SET: OnceLock<tokio::sync::Notify> = OnceLock::new();
    SET.get_or_init(tokio::sync::Notify::new)
}

/// Resolves once a signal came and its hook deadline has passed; never without a signal. For
/// waits that started before the signal and must not outlast its deadline (async hooks at the end
/// of a session).
pub(crate) async fn hook_deadline_passed() {
    loop {
        // Registered before the deadline is read, so a signal in between is not missed.
        let notified = deadline_set().notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let deadline = *HOOK_DEADLINE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(deadline) = deadline {
            tokio::time::sleep_until(deadline).await;
            return;
        }
        notified.await;
    }
}

/// What to do before an exit that does not unwind (the terminal UI restores the terminal).
static BEFORE_FORCED_EXIT: OnceLock<fn()> = OnceLock::new();

/// Registers `restore` to run before an exit that does not unwind (a second signal, the deadline).
pub(crate) fn before_forced_exit(restore: fn()) {
    let _ = BEFORE_FORCED_EXIT.set(restore);
}

fn forced_exit(signal: i32) -> ! {
    if let Some(restore) = BEFORE_FORCED_EXIT.get() {
        restore();
    }
    elph_process::process::kill_running_groups();
    // `exit` runs no destructors: the run log's last lines are written here.
    crate::hooks::runlog::flush();
    std::process::exit(i32::from(exit_code(signal)));
}

/// The timeout a hook starting now may have: `timeout`, or less once a signal set the deadline.
pub(crate) fn bound_hook_timeout(timeout: Duration) -> Duration {
    let deadline = *HOOK_DEADLINE.lock().unwrap_or_else(|p| p.into_inner());
    match deadline {
        Some(deadline) => timeout.min(deadline.saturating_duration_since(Instant::now())),
        None => timeout,
    }
    .max(Duration::from_millis(1))
}

/// The exit code for a signal: 128 + its number.
pub(crate) fn exit_code(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}

/// A front end's view of the signals: a token cancelled by the first, and which one it was.
#[derive(Clone, Debug)]
pub struct Shutdown {
    token: CancellationToken,
    signal: Arc<OnceLock<i32>>,
}

impl Shutdown {
    /// Installs the handlers; must run inside a tokio runtime. `quiet`: say nothing on stderr
    /// (a front end that owns the terminal says it its own way).
    pub fn install(quiet: bool) -> std::io::Result<Shutdown> {
        let kinds = [
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
            SignalKind::quit(),
        ];
        let mut streams = Vec::new();
        for kind in kinds {
            streams.push((kind.as_raw_value(), signal(kind)?));
        }
        let shutdown = Shutdown {
            token: CancellationToken::new(),
            signal: Arc::new(OnceLock::new()),
        };
        let handler = shutdown.clone();
        tokio::spawn(async move {
            let first = next_signal(&mut streams).await;
            handler.begin(first, quiet);
            let _second = next_signal(&mut streams).await;
            if !quiet {
                eprintln!("elph: {} again; exiting without waiting for hooks", name(first));
            }
            forced_exit(first);
        });
        Ok(shutdown)
    }

    fn begin(&self, signal: i32, quiet: bool) {
        let _ = self.signal.set(signal);
        *HOOK_DEADLINE.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + DEADLINE);
        deadline_set().notify_waiters();
        tracing::info!(signal = name(signal), "stopping on a signal");
        self.token.cancel();
        tokio::spawn(async move {
            tokio::time::sleep(DEADLINE + GRACE).await;
            if !quiet {
                eprintln!(
                    "elph: still not done {} s after {}; exiting now",
                    (DEADLINE + GRACE).as_secs(),
                    name(signal)
                );
            }
            elph_process::process::kill_running_groups();
            crate::hooks::runlog::flush();
            std::process::exit(i32::from(exit_code(signal)));
        });
    }

    /// Cancelled by the first signal.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// Resolves when the first signal came.
    pub async fn requested(&self) {
        self.token.cancelled().await;
    }

    /// The first signal, if one came.
    pub fn signal(&self) -> Option<i32> {
        self.signal.get().copied()
    }

    /// 128 + the first signal's number, if one came.
    pub fn exit_code(&self) -> Option<u8> {
        self.signal().map(exit_code)
    }
}

async fn next_signal(streams: &mut [(i32, tokio::signal::unix::Signal)]) -> i32 {
    let waits = streams.iter_mut().map(|(number, stream)| {
        let number = *number;
        Box::pin(async move {
            stream.recv().await;
            number
        })
    });
    futures::future::select_all(waits).await.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
        assert_eq!(exit_code(libc::SIGHUP), 129);
        assert_eq!(exit_code(libc::SIGQUIT), 131);
    }
}
