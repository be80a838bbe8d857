//! The hook host (docs/hooks.md, "The protocol" and "Limits"): runs the configured command hooks of
//! one event, serially, in configuration order, each as a bounded child process, and hands each
//! run to the chain's `Reducer`.
//!
//! The host decides nothing about what an outcome means: it parses stdout with
//! `elph_agent::hooks::parse_stdout` and gives the run to `Reducer::record`, which applies it. Every failure is fail-open
//! and leaves a diagnostic naming the hook and the cause; `dispatch` never fails. Every run is also
//! appended to `DATA_DIR/logs/hooks.jsonl` (see `runlog`).
//!
//! The host runs only what is in the `HookSet` it holds: discovery already left out the hooks of an
//! untrusted project. `/reload` builds a new set and swaps it in with `replace_set`, in one step; a
//! dispatch that is already running keeps the set it started with.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use elph_agent::hooks::{
    BeforeAgentOutcome, ChainFlow, Dispatch, HookEvent, HookOutcome, HookPayload, HookRun, HookRunner, Ran,
    Reducer, RunStatus,
};

use elph_process::sandbox::SandboxPolicy;

use super::background::Background;
use super::claude_code;
use super::config::Protocol;
use super::discovery::{HookDefinition, HookSet};
use super::handler::runner::Handlers;
use super::persistent::PersistentHooks;
use super::runlog::RunLog;

mod one_run;
mod run_record;

pub use run_record::record;
pub(crate) use run_record::{base_record, diagnostics_of, failure_cause, failure_text};

/// Where a hook's allowlisted variables come from.
#[derive(Clone, Debug)]
enum ParentEnv {
    /// This process's environment, read at each run.
    Process,
    /// A fixed environment (tests, embedding).
    Fixed(HashMap<String, OsString>),
}

impl ParentEnv {
    fn get(&self, name: &str) -> Option<OsString> {
        match self {
            ParentEnv::Process => std::env::var_os(name),
            ParentEnv::Fixed(vars) => vars.get(name).cloned(),
        }
    }
}

/// Runs command hooks. Cheap to share behind an `Arc`; `dispatch` takes `&self`.
#[derive(Debug)]
pub struct HookHost {
    set: RwLock<Arc<HookSet>>,
    project_dir: PathBuf,
    /// DATA_DIR: the session store a Claude Code hook's transcript is written from.
    data_dir: PathBuf,
    log: Option<RunLog>,
    parent_env: ParentEnv,
    /// Context that Claude Code hooks added on sessionStart or userPromptSubmit (hook id, text),
    /// applied at the next beforeAgent as `additionalContext`: it reaches the next request.
    pending_context: Mutex<Vec<(String, String)>>,
    /// The writable roots and read-only paths a sandboxed hook gets, in the hook's own mode.
    sandbox_base: SandboxPolicy,
    /// The processes of persistent hooks; they end with the host.
    persistent: PersistentHooks,
    /// Where the project's pin is checked again right before each run of a project hook, so that
    /// a change during the session (a hook's script rewritten) is caught before it runs. The
    /// full check runs again whenever anything it read changed (see `trust::watch`).
    pin_check: Option<crate::trust::watch::PinWatch>,
    /// The queues of async hooks (`"async": true`), which the session does not wait for.
    background: Background,
    /// Run async hooks in the chain, their outcome ignored, instead of in the background (`elph
    /// hooks test`, which shows every run).
    async_inline: bool,
    /// Where every chain is recorded, payload and decision (`--record-hooks`).
    recorder: Option<Arc<super::record::Recorder>>,
    /// What url, prompt and mcpTool hooks run with.
    handlers: Arc<Handlers>,
}

impl HookHost {
    /// A host for `set` whose hooks run in `project_dir` and log to `data_dir/logs/hooks.jsonl`.
    pub fn new(set: impl Into<Arc<HookSet>>, project_dir: impl Into<PathBuf>, data_dir: &Path) -> Self {
        let project_dir = project_dir.into();
        let mut sandbox_base = SandboxPolicy::workspace(&project_dir);
        sandbox_base.add_read_only_path(data_dir);
        HookHost {
            set: RwLock::new(set.into()),
            project_dir,
            data_dir: data_dir.to_path_buf(),
            log: Some(RunLog::new(data_dir)),
            parent_env: ParentEnv::Process,
            pending_context: Mutex::new(Vec::new()),
            sandbox_base,
            persistent: PersistentHooks::new(),
            pin_check: None,
            background: Background::default(),
            async_inline: false,
            recorder: None,
            handlers: Arc::default(),
        }
    }

    /// Url, prompt and mcpTool hooks run with `handlers` (where project hooks may post, where
    /// provider files are).
    pub(crate) fn with_handlers(mut self, handlers: Handlers) -> Self {
        self.handlers = Arc::new(handlers);
        self
    }

    /// Where the session's model and MCP servers are given to prompt and mcpTool hooks.
    pub(crate) fn handlers(&self) -> &Handlers {
        &self.handlers
    }

    /// Checks the project's trust (and its pin) in `store` before each run of a project hook; a
    /// project that changed since it was trusted runs none of them.
    pub(crate) fn with_pin_check(mut self, store: crate::trust::TrustStore) -> Self {
        self.pin_check = Some(crate::trust::watch::PinWatch::new(store, &self.project_dir));
        self
    }

    /// Why a project hook must not run now: the project changed since it was trusted.
    fn changed_since_trusted(&self, hook: &HookDefinition) -> Option<String> {
        if hook.scope != super::HookScope::Project {
            return None;
        }
        let changes = self.pin_check.as_ref()?.changes()?;
        Some(format!(
            "not run: the project changed since you trusted it ({}); review the change, then run \
             `elph trust {}`",
            changes.summary(),
            crate::diagnostics::shell_quote(&self.project_dir)
        ))
    }

    /// Sandboxed hooks get the roots and read-only paths of `policy` (the session's), in their own
    /// mode.
    pub(crate) fn with_sandbox_base(mut self, policy: SandboxPolicy) -> Self {
        self.sandbox_base = policy;
        self
    }

    /// Runs async hooks in the chain (their outcome still ignored), so that every run is in the
    /// dispatch: for `elph hooks test`.
    pub fn with_async_inline(mut self) -> Self {
        self.async_inline = true;
        self
    }

    /// Records every chain (its payload, runs and decision) with `recorder`.
    pub fn with_recorder(mut self, recorder: super::record::Recorder) -> Self {
        self.recorder = Some(Arc::new(recorder));
        self
    }

    /// How many runs of async hooks are queued or running.
    pub fn async_pending(&self) -> usize {
        self.background.pending()
    }

    /// Tells `reports` of each async run queued from now on when it ends (or is cut off).
    pub(crate) fn report_async_runs(
        &self,
        reports: tokio::sync::mpsc::UnboundedSender<super::background::AsyncRun>,
    ) {
        self.background.report_to(reports);
    }

    /// Does not write the run log (for `elph hooks test`, whose runs are synthetic).
    pub fn without_run_log(mut self) -> Self {
        self.log = None;
        self
    }

    /// Draws the allowlisted variables from `vars` instead of this process's environment.
    pub fn with_parent_env<K: Into<String>, V: Into<OsString>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.parent_env = ParentEnv::Fixed(vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect());
        self
    }

    /// The hook set in use now.
    pub fn set(&self) -> Arc<HookSet> {
        self.set
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Swaps in a new hook set in one step; the next dispatch uses it. Persistent processes of
    /// hooks that are gone or whose definition changed are killed.
    pub fn replace_set(&self, set: impl Into<Arc<HookSet>>) {
        let set = set.into();
        self.persistent.retain(&set.hooks);
        *self.set.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = set;
    }

    /// The processes of persistent hooks.
    pub fn persistent(&self) -> &PersistentHooks {
        &self.persistent
    }

    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// Runs the chain for `payload` on its own, as `elph hooks test` does: no native handlers,
    /// the one `Reducer`, the same runs as in a session.
    pub async fn run_chain(&self, payload: HookPayload) -> Dispatch {
        let event = payload.event();
        let mut chain = Reducer::new(payload);
        let ran = self.run_hooks(&mut chain).await;
        Dispatch {
            event,
            runs: ran.runs,
            diagnostics: ran.diagnostics,
            reduced: chain.finish(),
        }
    }

    /// Runs the configured hooks of the chain's event in order, each on the payload as the hooks
    /// before it left it, and hands every run to the chain, which applies its outcome. A recording
    /// gets the chain: the payload it started from, its runs and its decision.
    async fn run_hooks(&self, chain: &mut Reducer) -> Ran {
        let recording = self
            .recorder
            .as_ref()
            .map(|recorder| (recorder, chain.payload().clone()));
        let ran = self.run_configured(chain).await;
        if let Some((recorder, payload)) = recording {
            recorder.append(payload, &ran.runs, chain.reduced());
        }
        ran
    }

    async fn run_configured(&self, chain: &mut Reducer) -> Ran {
        let set = self.set();
        let event = chain.payload().event();
        let hooks = set.matching(chain.payload());
        let pending = if event == HookEvent::BeforeAgent {
            std::mem::take(&mut *self.pending())
        } else {
            Vec::new()
        };
        for (hook_id, context) in pending {
            let outcome = BeforeAgentOutcome {
                additional_context: Some(context),
                ..BeforeAgentOutcome::default()
            };
            chain.apply(&hook_id, &HookOutcome::BeforeAgent(outcome));
        }
        let session_id = chain.payload().base().session_id.clone();
        let mut ran = Ran {
            runs: Vec::with_capacity(hooks.len()),
            diagnostics: Vec::new(),
        };
        // Written when the chain ends, or is abandoned half-way: one write per event.
        let mut pass = Pass {
            log: self.log.as_ref().map(RunLog::batch),
            stdin: StdinBytes::default(),
        };
        // What each fail-closed guard let through, to run it again if a later hook changes that.
        let mut guarded = super::recheck::Guarded::default();
        for hook in &hooks {
            let Some(run) = self.run_one(hook, event, &session_id, chain, &mut pass).await else {
                continue;
            };
            if self.finish_run(run, chain, &mut ran, &mut pass) {
                return ran;
            }
            guarded.saw(hook, chain.payload());
        }
        // A rewrite may make a guard match that did not match the payload at first.
        self.recheck_guards(&set, guarded, &session_id, chain, &mut ran, &mut pass)
            .await;
        ran
    }

    /// Applies `run` to the chain, reports and logs it. `true` when the chain stops there: a
    /// hook blocked, or a guard that could not decide stopped the operation (the rest of the
    /// chain would run for nothing).
    pub(super) fn finish_run(
        &self,
        mut run: HookRun,
        chain: &mut Reducer,
        ran: &mut Ran,
        pass: &mut Pass<'_>,
    ) -> bool {
        if run.outcome.is_some() {
            pass.stdin.changed();
        }
        let flow = chain.record(&mut run);
        let stopped_by_guard = run.fail_closed && run.status != RunStatus::Ok;
        ran.diagnostics.extend(diagnostics_of(&run));
        if let Some(log) = &mut pass.log {
            log.push(&run);
        }
        ran.runs.push(run);
        flow == ChainFlow::Stop || stopped_by_guard
    }

    /// Reads Elph's environment as hooks see it, for url headers and a prompt model's key.
    fn lookup(&self) -> impl Fn(&str) -> Option<String> + Send + Sync + 'static {
        let parent_env = self.parent_env.clone();
        move |name: &str| {
            parent_env
                .get(name)
                .map(|value| value.to_string_lossy().into_owned())
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<(String, String)>> {
        self.pending_context
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What one pass over a chain keeps between its runs: the payload's bytes and the run log's batch.
pub(super) struct Pass<'a> {
    log: Option<super::runlog::LogBatch<'a>>,
    stdin: StdinBytes,
}

/// The payload as a hook reads it on stdin, in each protocol, made once and again only after a
/// hook's outcome may have changed it: a chain of hooks that change nothing serializes it once.
#[derive(Default)]
struct StdinBytes {
    elph: Option<Vec<u8>>,
    claude_code: Option<Vec<u8>>,
    gemini_cli: Option<Vec<u8>>,
}

impl StdinBytes {
    /// `transcript` writes the session's transcript for the foreign protocols' `transcript_path`
    /// (once per chain: it does not change while the chain runs).
    fn of(
        &mut self,
        protocol: Protocol,
        payload: &HookPayload,
        transcript: &dyn Fn() -> Option<std::path::PathBuf>,
    ) -> &[u8] {
        let slot = match protocol {
            Protocol::Elph => return self.elph.get_or_insert_with(|| payload.to_stdin_bytes()),
            Protocol::ClaudeCode => &mut self.claude_code,
            Protocol::GeminiCli => &mut self.gemini_cli,
        };
        let dialect = protocol.dialect().unwrap_or(claude_code::Dialect::Claude);
        slot.get_or_insert_with(|| claude_code::stdin_bytes(payload, transcript().as_deref(), dialect))
    }

    /// The payload may have changed: make the bytes again at the next hook.
    fn changed(&mut self) {
        *self = StdinBytes::default();
    }
}

#[async_trait::async_trait]
impl HookRunner for HookHost {
    async fn run(&self, chain: &mut Reducer) -> Ran {
        self.run_hooks(chain).await
    }

    async fn settle(&self) {
        self.background.settle().await;
    }

    fn has_hooks(&self, event: HookEvent, tool_name: Option<&str>) -> bool {
        (event == HookEvent::BeforeAgent && !self.pending().is_empty())
            || self
                .set()
                .hooks
                .iter()
                .any(|hook| hook.applies_to(event, tool_name))
    }
}
