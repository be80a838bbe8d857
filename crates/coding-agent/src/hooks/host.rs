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

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use elph_agent::hooks::limits::MAX_TIMEOUT;
use elph_agent::hooks::runner::FailedClosed;
use elph_agent::hooks::{
    BeforeAgentOutcome, ChainFlow, Dispatch, HookDiagnostic, HookEvent, HookOutcome, HookPayload, HookRun,
    HookRunner, ProcessExit, Ran, Reducer, RunStatus, Severity, parse_outcome, parse_stdout,
};

use elph_process::sandbox::SandboxPolicy;

use super::background::{Background, Job, NotQueued, QUEUE_LIMIT};
use super::claude_code;
use super::config::Protocol;
use super::discovery::{HookDefinition, HookSet};
use super::handler::runner::Handlers;
use super::persistent::{Exchange, Launch, PersistentHooks};
use super::process::{self, Ending, ProcessOutput, ProcessSpec, Stream};
use super::runlog::RunLog;

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
    /// a change during the session (a hook's script rewritten) is caught before it runs.
    pin_check: Option<crate::trust::TrustStore>,
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
        self.pin_check = Some(store);
        self
    }

    /// Why a project hook must not run now: the project changed since it was trusted.
    fn changed_since_trusted(&self, hook: &HookDefinition) -> Option<String> {
        if hook.scope != super::HookScope::Project {
            return None;
        }
        let decision = self.pin_check.as_ref()?.decide(&self.project_dir);
        let changes = decision.changes()?;
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
        let guards: Vec<&HookDefinition> = set.active().collect();
        self.recheck_guards(&guards, guarded, &session_id, chain, &mut ran, &mut pass)
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

    /// One hook's run on the chain's payload as the hooks before it left it. `None` when the run
    /// was queued in the background (an async hook).
    pub(super) async fn run_one(
        &self,
        hook: &HookDefinition,
        event: HookEvent,
        session_id: &str,
        chain: &Reducer,
        pass: &mut Pass<'_>,
    ) -> Option<HookRun> {
        // Tool and context hooks see the payload as the previous hook left it.
        let transcript = || claude_code::transcript::write(&self.data_dir, session_id, &self.project_dir);
        let stdin = pass.stdin.of(hook.protocol, chain.payload(), &transcript);
        let mut run = if stdin.len() - 1 > hook.max_input_bytes {
            let mut run = HookRun::skipped(
                &hook.id,
                event,
                format!(
                    "not run: its payload is {} bytes, over its {}-byte input limit (maxInputBytes)",
                    stdin.len() - 1,
                    hook.max_input_bytes
                ),
            );
            run.process = Some(ProcessExit::default());
            run
        } else if let Some(cause) = self.changed_since_trusted(hook) {
            HookRun::skipped(&hook.id, event, cause)
        } else if hook.run_async && !self.async_inline {
            match self.queue_async(hook, event, session_id, stdin.to_vec(), chain.payload()) {
                None => return None,
                Some(run) => run,
            }
        } else if hook.command().is_none() {
            let lookup = self.lookup();
            let (run, context) = self
                .handlers
                .run(hook, event, stdin, chain.payload(), &lookup)
                .await;
            if let Some(context) = context {
                self.pending().push((hook.id.clone(), context));
            }
            run
        } else {
            // What a sandboxed hook leaves behind is refused as a command's is.
            let confined = self.confinement(hook).map(|policy| {
                let missing = policy.missing_now();
                (policy, missing)
            });
            let (exchange, env_file) = self.run_hook(hook, event, session_id, stdin).await;
            let refused = confined
                .map(|(policy, missing)| policy.refuse_appeared(&missing))
                .unwrap_or_default();
            let mut run = match exchange {
                Exchange::Ran { output, notes } => {
                    let mut run = match hook.protocol.dialect() {
                        None => record(hook, event, &output),
                        Some(dialect) => {
                            let (mut run, context) =
                                claude_code::record(hook, event, &output, chain.payload(), dialect);
                            if let Some(note) = env_file.as_ref().and_then(claude_code::env_file_note) {
                                run.notes.push(note);
                            }
                            if let Some(context) = context {
                                self.pending().push((hook.id.clone(), context));
                            }
                            run
                        }
                    };
                    run.notes.extend(notes);
                    run
                }
                Exchange::Answered {
                    output,
                    answer,
                    notes,
                } => {
                    let mut run = record_answer(hook, event, &output, answer);
                    run.notes.extend(notes);
                    run
                }
                Exchange::OutOfStep { output, error, notes } => {
                    let mut run = base_record(hook, event, &output);
                    run.cause = Some(format!(
                        "broke the line protocol: {error} (docs/hooks.md, \"The line protocol\")"
                    ));
                    if let Some(process) = &mut run.process {
                        process.protocol_error = true;
                    }
                    run.notes.extend(notes);
                    run
                }
                Exchange::Skipped(cause) => HookRun::skipped(&hook.id, event, cause),
            };
            run.notes.extend(refused);
            run
        };
        run.fail_closed = hook.fail_closed;
        run.notes.extend(over_budget(hook, &run));
        if hook.run_async {
            ignore_async_outcome(&mut run);
        }
        Some(run)
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

    /// Queues an async hook's run behind its earlier ones; the session goes on at once. `Some` is
    /// the record of a run that was not queued.
    fn queue_async(
        &self,
        hook: &HookDefinition,
        event: HookEvent,
        session_id: &str,
        stdin: Vec<u8>,
        payload: &HookPayload,
    ) -> Option<HookRun> {
        if hook.command().is_none() {
            let handlers = self.handlers.clone();
            let (definition, payload, log, lookup) =
                (hook.clone(), payload.clone(), self.log.clone(), self.lookup());
            let job: Job = Box::pin(async move {
                let (mut run, _context) = handlers.run(&definition, event, &stdin, &payload, &lookup).await;
                ignore_async_outcome(&mut run);
                if let Some(log) = log {
                    log.append(&run);
                }
            });
            return self.enqueue(hook, event, job);
        }
        let (prepared, env_file) = self.one_shot(hook, event, session_id, stdin);
        let confinement = self.confinement(hook);
        let definition = hook.clone();
        let log = self.log.clone();
        let foreign = hook.protocol.dialect().map(|dialect| (dialect, payload.clone()));
        let job: Job = Box::pin(async move {
            // Measured when the run starts, not when it was queued: earlier runs may make paths.
            let missing = confinement.as_ref().map(SandboxPolicy::missing_now);
            let output = prepared.await;
            let refused = confinement
                .zip(missing)
                .map(|(policy, missing)| policy.refuse_appeared(&missing))
                .unwrap_or_default();
            let mut run = match &foreign {
                Some((dialect, payload)) => {
                    let (mut run, _context) =
                        claude_code::record(&definition, event, &output, payload, *dialect);
                    if let Some(note) = env_file.as_ref().and_then(claude_code::env_file_note) {
                        run.notes.push(note);
                    }
                    run
                }
                None => record(&definition, event, &output),
            };
            run.notes.extend(refused);
            ignore_async_outcome(&mut run);
            if let Some(log) = log {
                log.append(&run);
            }
        });
        self.enqueue(hook, event, job)
    }

    fn enqueue(&self, hook: &HookDefinition, event: HookEvent, job: Job) -> Option<HookRun> {
        match self.background.enqueue(&hook.id, hook.timeout, job) {
            Ok(()) => None,
            Err(NotQueued::Full) => Some(HookRun::skipped(
                &hook.id,
                event,
                format!("not run: {QUEUE_LIMIT} runs of this async hook are already waiting"),
            )),
        }
    }

    /// A one-shot run of `hook`, prepared now and owning everything it needs, so that it can run
    /// later (an async hook); with the `CLAUDE_ENV_FILE` of a Claude Code sessionStart hook.
    fn one_shot(
        &self,
        hook: &HookDefinition,
        event: HookEvent,
        session_id: &str,
        stdin: Vec<u8>,
    ) -> (
        impl std::future::Future<Output = ProcessOutput> + Send + 'static,
        Option<tempfile::NamedTempFile>,
    ) {
        // An `env` that names an unset variable: the run fails as a hook that could not start.
        let (own_env, env_error) = match self.own_environment(hook) {
            Ok(env) => (env, None),
            Err(reason) => (BTreeMap::new(), Some(reason)),
        };
        let sandbox = self.sandbox_of(hook);
        let mut env = self.environment(hook, &own_env, session_id, sandbox.as_ref());
        let env_file = (hook.protocol == Protocol::ClaudeCode && event == HookEvent::SessionStart)
            .then(|| {
                // Where the hook may write, sandboxed or not.
                match sandbox.as_ref().and_then(|policy| policy.temp_dir.as_ref()) {
                    Some(dir) => tempfile::NamedTempFile::new_in(dir),
                    None => tempfile::NamedTempFile::new(),
                }
                .ok()
            })
            .flatten();
        if let Some(file) = &env_file {
            env.push((
                claude_code::ENV_FILE_VAR.into(),
                file.path().as_os_str().to_owned(),
            ));
        }
        let program = hook
            .command()
            .map(|command| command.path.clone())
            .unwrap_or_default();
        let args = hook.args.clone();
        let cwd = self.project_dir.clone();
        let stdout_cap = hook.max_output_bytes;
        let configured = hook.timeout;
        let run = async move {
            if let Some(reason) = env_error {
                return spawn_failure(reason);
            }
            // Worked out when the run starts: after a signal, it shares the shutdown's deadline.
            let timeout =
                crate::shutdown::bound_hook_timeout(configured.clamp(Duration::from_millis(1), MAX_TIMEOUT));
            let spec = ProcessSpec {
                program: &program,
                args: &args,
                cwd: &cwd,
                env: &env,
                stdin: &stdin,
                timeout,
                stdout_cap,
                sandbox: sandbox.as_ref(),
            };
            process::run(&spec).await
        };
        (run, env_file)
    }

    /// One hook's run for one event: a one-shot process, or a round trip to its persistent one.
    /// A Claude Code hook on sessionStart also gets a `CLAUDE_ENV_FILE` to write to, returned so
    /// its contents can be reported.
    async fn run_hook(
        &self,
        hook: &HookDefinition,
        event: HookEvent,
        session_id: &str,
        stdin: &[u8],
    ) -> (Exchange, Option<tempfile::NamedTempFile>) {
        // Discovery already checked the range; the host holds the bound on its own too.
        // After a signal, every hook shares the shutdown's short overall deadline.
        let timeout =
            crate::shutdown::bound_hook_timeout(hook.timeout.clamp(Duration::from_millis(1), MAX_TIMEOUT));
        if hook.persistent {
            let own_env = match self.own_environment(hook) {
                Ok(env) => env,
                Err(reason) => {
                    let exchange = Exchange::Ran {
                        output: spawn_failure(reason),
                        notes: Vec::new(),
                    };
                    return (exchange, None);
                }
            };
            // The environment and sandbox only matter when a process starts: most events go to
            // one that is running.
            let exchange = self
                .persistent
                .exchange(hook, stdin, timeout, || {
                    let sandbox = self.sandbox_of(hook);
                    Launch {
                        cwd: &self.project_dir,
                        env: self.environment(hook, &own_env, session_id, sandbox.as_ref()),
                        sandbox,
                    }
                })
                .await;
            return (exchange, None);
        }
        let (run, env_file) = self.one_shot(hook, event, session_id, stdin.to_vec());
        let output = run.await;
        (
            Exchange::Ran {
                output,
                notes: Vec::new(),
            },
            env_file,
        )
    }

    /// The hook's confinement: the session's roots and read-only paths in the hook's own mode.
    fn sandbox_of(&self, hook: &HookDefinition) -> Option<SandboxPolicy> {
        hook.sandbox.map(|mode| self.sandbox_base.with_mode(mode))
    }

    /// The sandbox of a confined hook, whose leftovers are refused as a command's are.
    fn confinement(&self, hook: &HookDefinition) -> Option<SandboxPolicy> {
        self.sandbox_of(hook).filter(SandboxPolicy::is_confined)
    }

    /// The hook's own `env`, each `${NAME}` taken from Elph's environment; why not, when a
    /// variable it names is unset (the run then fails as a hook that could not start).
    fn own_environment(&self, hook: &HookDefinition) -> Result<BTreeMap<String, String>, String> {
        let lookup = |name: &str| {
            self.parent_env
                .get(name)
                .map(|value| value.to_string_lossy().into_owned())
        };
        hook.env
            .iter()
            .map(|(name, value)| {
                crate::mcp::expand::expand(value, &lookup)
                    .map(|expanded| (name.clone(), expanded))
                    .map_err(|error| format!("cannot set env {name} of hook {}: {error}", hook.id))
            })
            .collect()
    }

    /// The hook's whole environment: the allowlist, its own `env` (`own_env`, expanded), Elph's
    /// variables, and for a sandboxed hook the one temp dir it may write as `TMPDIR`.
    fn environment(
        &self,
        hook: &HookDefinition,
        own_env: &BTreeMap<String, String>,
        session_id: &str,
        sandbox: Option<&SandboxPolicy>,
    ) -> Vec<(OsString, OsString)> {
        let mut env = process::hook_environment(
            &|name| self.parent_env.get(name),
            own_env,
            &hook.id,
            session_id,
            &self.project_dir,
        );
        if hook.protocol != Protocol::Elph {
            env.push((
                claude_code::PROJECT_DIR_VAR.into(),
                self.project_dir.as_os_str().to_owned(),
            ));
        }
        if hook.protocol == Protocol::GeminiCli {
            env.push((
                claude_code::GEMINI_PROJECT_DIR_VAR.into(),
                self.project_dir.as_os_str().to_owned(),
            ));
            env.push(("GEMINI_SESSION_ID".into(), session_id.into()));
            env.push(("GEMINI_CWD".into(), self.project_dir.as_os_str().to_owned()));
        }
        if let Some(dir) = sandbox.and_then(|policy| policy.temp_dir.as_ref()) {
            // The one temp dir a sandboxed hook may write.
            env.retain(|(name, _)| name != "TMPDIR");
            env.push(("TMPDIR".into(), dir.clone().into_os_string()));
        }
        env
    }
}

/// The output of a run whose process could not start, for `reason`.
fn spawn_failure(reason: String) -> ProcessOutput {
    let mut output = ProcessOutput::nothing(Duration::ZERO);
    output.spawn_error = Some(reason);
    output
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

/// An async hook's outcome is never applied: a run that printed one keeps a note saying so.
fn ignore_async_outcome(run: &mut HookRun) {
    let Some(outcome) = run.outcome.take() else {
        return;
    };
    let printed = serde_json::to_value(&outcome)
        .ok()
        .and_then(|value| {
            value
                .as_object()
                .map(|fields| fields.values().any(|field| !field.is_null()))
        })
        .unwrap_or(false);
    if printed {
        run.notes.push(
            "its outcome was not applied: an async hook runs in the background, after the session \
             went on (remove \"async\" for the outcome to count)"
                .into(),
        );
    }
}

/// The record of one run: how it ended and, after exit 0, its validated outcome.
pub fn record(hook: &HookDefinition, event: HookEvent, output: &ProcessOutput) -> HookRun {
    let mut run = base_record(hook, event, output);
    match output.ending() {
        Ending::Exited(0) => match parse_stdout(event, &output.stdout) {
            Ok(parsed) => {
                run.status = RunStatus::Ok;
                if let Some(parsed) = parsed {
                    run.notes.extend(parsed.ignored);
                    run.outcome = Some(parsed.outcome);
                }
            }
            Err(error) => run.cause = Some(format!("outcome rejected: {error}")),
        },
        ending => run.cause = Some(failure_cause(hook, ending)),
    }
    run
}

/// The record of a persistent hook's answer in step: its outcome object, validated for `event`
/// (empty: no change).
fn record_answer(
    hook: &HookDefinition,
    event: HookEvent,
    output: &ProcessOutput,
    answer: serde_json::Map<String, serde_json::Value>,
) -> HookRun {
    let mut run = base_record(hook, event, output);
    if answer.is_empty() {
        run.status = RunStatus::Ok;
        return run;
    }
    match parse_outcome(event, &serde_json::Value::Object(answer)) {
        Ok(parsed) => {
            run.status = RunStatus::Ok;
            run.notes.extend(parsed.ignored);
            run.outcome = Some(parsed.outcome);
        }
        Err(error) => run.cause = Some(format!("outcome rejected: {error}")),
    }
    run
}

/// A failed run's record with how the process ended, before its output is read.
pub(crate) fn base_record(hook: &HookDefinition, event: HookEvent, output: &ProcessOutput) -> HookRun {
    let mut run = HookRun {
        hook_id: hook.id.clone(),
        event,
        status: RunStatus::Failed,
        process: Some(ProcessExit {
            exit_code: output.exit_code,
            signal: output.signal,
            timed_out: output.timed_out,
            spawn_error: output.spawn_error.clone(),
            stdout_bytes: output.stdout_bytes,
            stderr_bytes: output.stderr_bytes,
            stderr_tail: output.stderr_tail(),
            protocol_error: false,
        }),
        duration_ms: u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX),
        outcome: None,
        cause: None,
        notes: Vec::new(),
        effects: Vec::new(),
        fail_closed: hook.fail_closed,
    };
    if output.pipes_held_open {
        run.notes.push(format!(
            "its stdout or stderr was still open {} ms after it exited (held by a process it left \
             running); that process group was killed",
            process::EXIT_GRACE.as_millis()
        ));
    }
    run
}

pub(crate) fn failure_cause(hook: &HookDefinition, ending: Ending) -> String {
    match ending {
        Ending::SpawnFailed(why) => format!("{why} (defined in {})", hook.source.display()),
        Ending::OutputLimit(Stream::Stdout) => {
            let limit = if hook.max_output_bytes.is_multiple_of(1024) {
                format!("{} KiB", hook.max_output_bytes / 1024)
            } else {
                format!("{} bytes", hook.max_output_bytes)
            };
            format!(
                "stdout passed {limit} (its maxOutputBytes); the hook's process group was killed and its output ignored"
            )
        }
        Ending::OutputLimit(stream) => format!(
            "{} passed {} KiB; the hook's process group was killed and its output ignored",
            stream.name(),
            stream.cap() / 1024
        ),
        Ending::TimedOut => format!(
            "timed out after {} ms; the hook's process group was killed (timeoutMs can be raised to 60000)",
            hook.timeout.as_millis()
        ),
        Ending::Signalled(signal) => format!("killed by {}", process::signal_name(signal)),
        Ending::Exited(code) => format!(
            "exited with code {code}. No exit code blocks in Elph: the hook failed open and changed \
             nothing. To block, print {{\"block\": true, \"reason\": \"…\"}} on stdout and exit 0"
        ),
        Ending::Unknown(why) => why,
    }
}

/// A note when `run` took longer than its hook's `budgetMs`, which every front end shows as a
/// problem: said, never a failure, so a guard over budget still guards.
fn over_budget(hook: &HookDefinition, run: &HookRun) -> Option<String> {
    let budget = u64::try_from(hook.budget?.as_millis()).unwrap_or(u64::MAX);
    (run.status != RunStatus::Skipped && run.duration_ms > budget).then(|| {
        format!(
            "took {} ms, over its budgetMs of {budget} ms (a warning: the run counted as usual)",
            run.duration_ms
        )
    })
}

/// The diagnostics one run leaves: its failure (see [`failure_text`]) and every note.
pub(crate) fn diagnostics_of(run: &HookRun) -> Vec<HookDiagnostic> {
    let diagnostic = |severity: Severity, message: String| HookDiagnostic {
        hook_id: Some(run.hook_id.clone()),
        event: run.event,
        severity,
        message,
    };
    let mut diagnostics: Vec<HookDiagnostic> = failure_text(run)
        .map(|message| diagnostic(run.severity(), message))
        .into_iter()
        .collect();
    diagnostics.extend(
        run.notes
            .iter()
            .cloned()
            .map(|note| diagnostic(Severity::Note, note)),
    );
    diagnostics
}

/// What a failed or skipped run did to the operation, in words, with its cause and up to 1 KiB of
/// its stderr: "failed open, so the tool call went ahead without its check: …" for a guard that
/// failed open, "failed closed, so the tool call is blocked: …" for a fail-closed hook, "failed: …"
/// on an observation-only event. `None` for a run that succeeded.
pub(crate) fn failure_text(run: &HookRun) -> Option<String> {
    if run.status == RunStatus::Ok {
        return None;
    }
    let cause = run.cause.as_deref().unwrap_or("it did not finish");
    let mut text = if let Some(went_on) = run.failed_open_guard() {
        format!("failed open, so {went_on}: {cause}")
    } else if run.fail_closed {
        format!(
            "failed closed, so {}: {cause}",
            FailedClosed::consequence(run.event)
        )
    } else {
        format!("failed: {cause}")
    };
    if !run.stderr_tail().is_empty() {
        text = format!("{text}; stderr: {}", run.stderr_tail());
    }
    Some(text)
}
