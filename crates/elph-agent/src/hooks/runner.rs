//! The seam between the agent and whatever runs configured hooks: the agent hands a payload to a
//! `HookRunner` and gets back a `Dispatch` — every run's record, the diagnostics, and the reduced
//! outcome. The command-hook host in `coding-agent` is one runner; a runner never fails.

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

/// The record of one hook run: what happened, never an error.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRun {
    pub hook_id: String,
    pub event: HookEvent,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub spawn_error: Option<String>,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub duration_ms: u64,
    /// The accepted outcome; `None` for empty stdout or a failed run.
    pub outcome: Option<HookOutcome>,
    /// Why the run failed or its outcome was rejected.
    pub cause: Option<String>,
    /// Fields that were ignored, and similar remarks that did not reject the outcome.
    pub notes: Vec<String>,
    /// Up to 1 KiB of the end of stderr.
    pub stderr_tail: String,
}

impl HookRun {
    /// A record for a hook that did not run.
    pub fn skipped(hook_id: &str, event: HookEvent, cause: impl Into<String>) -> Self {
        HookRun {
            hook_id: hook_id.to_string(),
            event,
            status: RunStatus::Skipped,
            exit_code: None,
            signal: None,
            timed_out: false,
            spawn_error: None,
            stdout_bytes: 0,
            stderr_bytes: 0,
            duration_ms: 0,
            outcome: None,
            cause: Some(cause.into()),
            notes: Vec::new(),
            stderr_tail: String::new(),
        }
    }
}

/// Something a person should know about a hook run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDiagnostic {
    pub hook_id: Option<String>,
    pub event: HookEvent,
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
    pub event: HookEvent,
    pub runs: Vec<HookRun>,
    pub diagnostics: Vec<HookDiagnostic>,
    pub reduced: Reduced,
}

impl Dispatch {
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

/// Runs the configured hooks of one event, serially, in configuration order.
///
/// Dropping the returned future cancels the dispatch and kills every running hook.
#[async_trait::async_trait]
pub trait HookRunner: Send + Sync {
    async fn dispatch(&self, payload: HookPayload) -> Dispatch;

    /// Whether any hook would run for `event` (and `tool_name`); lets callers skip building payloads.
    fn has_hooks(&self, event: HookEvent, tool_name: Option<&str>) -> bool;
}

/// A runner with no hooks.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

#[async_trait::async_trait]
impl HookRunner for NoHooks {
    async fn dispatch(&self, payload: HookPayload) -> Dispatch {
        Dispatch::empty(payload)
    }

    fn has_hooks(&self, _event: HookEvent, _tool_name: Option<&str>) -> bool {
        false
    }
}
