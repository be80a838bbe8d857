//! The seam between the agent and whatever runs configured hooks: the registry hands a
//! `HookRunner` the chain (a `Reducer`) and gets back every run's record and the diagnostics; the
//! registry returns them with the reduced outcome as a `Dispatch`. The command-hook host in
//! `coding-agent` is one runner; a runner never fails.

use serde::Serialize;

use super::HookEvent;
use super::outcome::HookOutcome;
use super::payload::HookPayload;
use super::reduce::{Reduced, Reducer};

/// How one hook run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStatus {
    /// Exit 0 and an accepted outcome (or empty stdout).
    Ok,
    /// The run failed open: see `cause`.
    Failed,
    /// The hook was not run (for example: its payload was over the input limit).
    Skipped,
}

/// The record of one hook run, native or command: what happened, never an error.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRun {
    /// The hook's id from its configuration (or the native handler's id).
    pub hook_id: String,
    /// The event it ran for.
    pub event: HookEvent,
    /// Whether it succeeded, failed or was skipped.
    pub status: RunStatus,
    /// How the hook's process ended; `None` for a native handler, which has no process.
    #[serde(flatten)]
    pub process: Option<ProcessExit>,
    /// Wall-clock time from start to end of the run.
    pub duration_ms: u64,
    /// The accepted outcome; `None` for empty stdout or a failed run.
    pub outcome: Option<HookOutcome>,
    /// Why the run failed or its outcome was rejected.
    pub cause: Option<String>,
    /// Fields that were ignored, and similar remarks that did not reject the outcome.
    pub notes: Vec<String>,
    /// What the outcome changed, in words, as the reduction applied it ("hook 'x' blocked the
    /// tool call"). Filled in by `Reducer::record`; front ends show these, never re-derive them.
    #[serde(skip)]
    pub effects: Vec<String>,
    /// The hook is a guard (`"failClosed": true`): when this run did not succeed, the operation
    /// it guards does not go on (see [`Dispatch::failed_closed`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_closed: bool,
}

/// How a command hook's process ended. Only a runner that starts processes fills this in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessExit {
    /// The process's exit code, if it exited rather than being killed.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if one did (including the kill after a timeout).
    pub signal: Option<i32>,
    /// Whether Elph killed it for running past its timeout.
    pub timed_out: bool,
    /// Why the process could not be started, if it could not.
    pub spawn_error: Option<String>,
    /// How much the hook printed on stdout, counted even past the read limit.
    pub stdout_bytes: u64,
    /// How much the hook printed on stderr, counted even past the read limit.
    pub stderr_bytes: u64,
    /// Up to 1 KiB of the end of stderr.
    pub stderr_tail: String,
    /// A persistent hook's answer was out of step with the events (another request's id, no id,
    /// not a JSON object, an extra line), so its process was stopped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protocol_error: bool,
}

impl HookRun {
    /// A record for a hook that did not run.
    pub fn skipped(hook_id: &str, event: HookEvent, cause: impl Into<String>) -> Self {
        HookRun {
            hook_id: hook_id.to_string(),
            event,
            status: RunStatus::Skipped,
            process: None,
            duration_ms: 0,
            outcome: None,
            cause: Some(cause.into()),
            notes: Vec::new(),
            effects: Vec::new(),
            fail_closed: false,
        }
    }

    /// A record for a native handler that ran and returned `outcome`.
    pub fn native(hook_id: &str, event: HookEvent, duration_ms: u64, outcome: Option<HookOutcome>) -> Self {
        HookRun {
            hook_id: hook_id.to_string(),
            event,
            status: RunStatus::Ok,
            process: None,
            duration_ms,
            outcome,
            cause: None,
            notes: Vec::new(),
            effects: Vec::new(),
            fail_closed: false,
        }
    }

    /// The end of stderr, for a command hook that wrote any.
    pub fn stderr_tail(&self) -> &str {
        self.process
            .as_ref()
            .map_or("", |process| process.stderr_tail.as_str())
    }

    /// How loudly a failure of this run must be reported: a fail-closed hook that failed stopped
    /// what it guards (`Error`); any other failure is a `Warning`, since the operation went on
    /// without the hook. A run that succeeded has only notes.
    pub fn severity(&self) -> Severity {
        match self.status {
            RunStatus::Ok => Severity::Note,
            RunStatus::Failed | RunStatus::Skipped if self.fail_closed => Severity::Error,
            RunStatus::Failed | RunStatus::Skipped => Severity::Warning,
        }
    }

    /// For a guard that failed open (it failed, it is not fail-closed, and its event guards
    /// something): what went on without its check.
    pub fn failed_open_guard(&self) -> Option<&'static str> {
        (self.severity() == Severity::Warning)
            .then(|| went_on_unchecked(self.event))
            .flatten()
    }
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Severity {
    /// A remark that changed nothing (an ignored field, a pipe held open).
    Note,
    /// A hook failed open: the operation went on as if it had printed nothing.
    Warning,
    /// A fail-closed hook failed: the operation it guards was stopped.
    Error,
}

impl Severity {
    /// The word used in JSON and in printed diagnostics.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// What goes on without a hook of `event` that fails open; `None` for observation-only events,
/// whose hooks run after the fact and guard nothing (so they cannot be fail-closed either).
pub fn went_on_unchecked(event: HookEvent) -> Option<&'static str> {
    event.unchecked()
}

/// Something a person should know about a hook run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDiagnostic {
    /// The hook it is about; `None` for a remark about the whole chain.
    pub hook_id: Option<String>,
    /// The event whose chain it came from.
    pub event: HookEvent,
    /// How loudly to report it.
    pub severity: Severity,
    /// What happened, in words for a person.
    pub message: String,
}

impl std::fmt::Display for HookDiagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.hook_id {
            Some(id) => write!(f, "hook '{id}' ({}): {}", self.event, self.message),
            None => write!(f, "{}: {}", self.event, self.message),
        }
    }
}

/// The result of running one event's chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dispatch {
    /// The event dispatched.
    pub event: HookEvent,
    /// One record per hook that was considered, in chain order.
    pub runs: Vec<HookRun>,
    /// What a person should be told about the runs.
    pub diagnostics: Vec<HookDiagnostic>,
    /// The combined effect of the outcomes, which the caller applies.
    pub reduced: Reduced,
}

/// A fail-closed hook that could not decide: the operation it guards must not go on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedClosed {
    /// The guard that failed.
    pub hook_id: String,
    /// Why its run did not succeed: the timeout, the exit status, the rejected outcome, …
    pub cause: String,
}

impl FailedClosed {
    /// What a session does when a fail-closed hook of `event` cannot decide.
    pub fn consequence(event: HookEvent) -> &'static str {
        event.fail_closed()
    }

    /// The reason given to the model and the user: which hook, what went wrong, and why that
    /// stopped the operation.
    pub fn reason(&self) -> String {
        format!(
            "fail-closed hook '{}' could not decide ({}), so it stopped what it guards",
            self.hook_id, self.cause
        )
    }
}

impl Dispatch {
    /// The first fail-closed hook whose run did not succeed (it failed, was skipped, or printed an
    /// outcome that was rejected), if any.
    pub fn failed_closed(&self) -> Option<FailedClosed> {
        self.runs
            .iter()
            .find(|run| run.fail_closed && run.status != RunStatus::Ok)
            .map(|run| FailedClosed {
                hook_id: run.hook_id.clone(),
                cause: run.cause.clone().unwrap_or_else(|| "it did not finish".into()),
            })
    }

    /// A dispatch in which no hook ran.
    pub fn empty(payload: HookPayload) -> Self {
        let event = payload.event();
        Dispatch {
            event,
            runs: Vec::new(),
            diagnostics: Vec::new(),
            reduced: Reducer::new(payload).finish(),
        }
    }
}

/// What a runner did with its part of a chain.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ran {
    /// One record per hook the runner considered, in order.
    pub runs: Vec<HookRun>,
    /// What a person should be told about those runs.
    pub diagnostics: Vec<HookDiagnostic>,
}

/// Runs the configured hooks of one event, serially, in configuration order.
///
/// A runner decides which hooks run and how; it does not decide what their outcomes mean. Each
/// hook reads `chain.payload()` as the hooks before it left it, and each run goes back into the
/// chain with `Reducer::record`, which applies its outcome; the runner stops when that says
/// `ChainFlow::Stop`. Dropping the returned future cancels the dispatch and kills every running
/// hook.
#[async_trait::async_trait]
pub trait HookRunner: Send + Sync {
    /// Runs the hooks of `chain`'s event in order, recording each run into `chain`.
    async fn run(&self, chain: &mut Reducer) -> Ran;

    /// Whether any hook would run for `event` (and `tool_name`); lets callers skip building payloads.
    fn has_hooks(&self, event: HookEvent, tool_name: Option<&str>) -> bool;

    /// Waits for the runs the runner started in the background (async hooks), each within its
    /// own bound. The session calls it at its end, so none is left behind at exit.
    async fn settle(&self) {}
}

/// A runner with no hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

#[async_trait::async_trait]
impl HookRunner for NoHooks {
    async fn run(&self, _chain: &mut Reducer) -> Ran {
        Ran::default()
    }

    fn has_hooks(&self, _event: HookEvent, _tool_name: Option<&str>) -> bool {
        false
    }
}
