//! Recording hook chains (`elph run --record-hooks FILE`, `ELPH_RECORD_HOOKS`), and the line
//! format `elph hooks test --replay FILE` reads back (docs/hooks.md, "Record and replay").
//!
//! One JSON line per chain of configured hooks: the payload the chain started from, each run's
//! hook, status and outcome, and the decision — the combined outcome, and the fail-closed guard
//! that could not decide, if one did. Unlike the run log, a recording holds payloads (file
//! contents, prompts), so the file is created readable by its owner only.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use elph_agent::hooks::{HookOutcome, HookPayload, HookRun, Reduced, RunStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One recorded chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    /// The payload the chain started from, as its first hook read it.
    pub payload: HookPayload,
    /// Each hook that ran, in order.
    pub runs: Vec<RecordedRun>,
    /// What the chain decided.
    pub decision: Decision,
}

/// One run of a recorded chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRun {
    pub hook_id: String,
    /// `ok`, `failed` or `skipped`.
    pub status: String,
    /// The outcome it printed, as validated; `null` for none.
    pub outcome: Option<Value>,
}

/// What a chain decided: the combined outcome (`null` when a fail-closed guard could not decide,
/// since a session then applies none of them) and that guard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub reduced: Option<Value>,
    pub failed_closed: Option<String>,
}

impl Decision {
    /// The decision of a chain that ended with `reduced` after `runs`.
    pub fn of(reduced: &Reduced, runs: &[HookRun]) -> Self {
        let failed_closed = runs
            .iter()
            .find(|run| run.fail_closed && run.status != RunStatus::Ok)
            .map(|run| run.hook_id.clone());
        Decision {
            reduced: failed_closed
                .is_none()
                .then(|| serde_json::to_value(reduced).unwrap_or(Value::Null)),
            failed_closed,
        }
    }
}

impl RecordedRun {
    pub(crate) fn of(run: &HookRun) -> Self {
        RecordedRun {
            hook_id: run.hook_id.clone(),
            status: status_word(&run.status).into(),
            outcome: run.outcome.as_ref().map(outcome_value),
        }
    }
}

fn outcome_value(outcome: &HookOutcome) -> Value {
    serde_json::to_value(outcome).unwrap_or(Value::Null)
}

pub(crate) fn status_word(status: &RunStatus) -> &'static str {
    match status {
        RunStatus::Ok => "ok",
        RunStatus::Failed => "failed",
        RunStatus::Skipped => "skipped",
    }
}

/// Appends recorded chains to a file. Writing never fails a hook run: the first error is kept and
/// the recording stops.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    file: Mutex<Option<File>>,
}

impl Recorder {
    /// Creates (or appends to) `path`, readable by its owner only.
    pub fn create(path: &Path) -> std::io::Result<Recorder> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)?;
        Ok(Recorder {
            path: path.to_path_buf(),
            file: Mutex::new(Some(file)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one chain: the payload it started from, its runs and its decision.
    pub(crate) fn append(&self, payload: HookPayload, runs: &[HookRun], reduced: &Reduced) {
        if runs.is_empty() {
            return;
        }
        let recorded = Recorded {
            payload,
            runs: runs.iter().map(RecordedRun::of).collect(),
            decision: Decision::of(reduced, runs),
        };
        let Ok(mut line) = serde_json::to_vec(&recorded) else {
            return;
        };
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(open) = file.as_mut()
            && open.write_all(&line).is_err()
        {
            tracing::warn!(path = %self.path.display(), "cannot write the hook recording; it stops here");
            *file = None;
        }
    }
}
