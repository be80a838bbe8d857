//! One hook's run on one event (docs/hooks.md, "The protocol"): the checks before it (input
//! limit, the project's pin), then an async queue, a url/prompt/mcpTool handler, a one-shot
//! process or a round trip to a persistent one, and the record of how it went.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use elph_agent::hooks::limits::MAX_TIMEOUT;
use elph_agent::hooks::{HookEvent, HookPayload, HookRun, ProcessExit, Reducer, RunStatus};
use elph_process::sandbox::SandboxPolicy;

use super::super::background::{Job, NotQueued, Origin, QUEUE_LIMIT};
use super::super::claude_code;
use super::super::config::Protocol;
use super::super::discovery::HookDefinition;
use super::super::persistent::{Exchange, Launch};
use super::super::process::{self, ProcessOutput, ProcessSpec};
use super::run_record::{base_record, record, record_answer};
use super::{HookHost, Pass};

impl HookHost {
    /// One hook's run on the chain's payload as the hooks before it left it. `None` when the run
    /// was queued in the background (an async hook).
    pub(in crate::hooks) async fn run_one(
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
            let (definition, owned, lookup) = (hook.clone(), payload.clone(), self.lookup());
            let job: Job = Box::pin(async move {
                let (mut run, _context) = handlers.run(&definition, event, &stdin, &owned, &lookup).await;
                ignore_async_outcome(&mut run);
                run
            });
            return self.enqueue(hook, event, payload, job);
        }
        let (prepared, env_file) = self.one_shot(hook, event, session_id, stdin);
        let confinement = self.confinement(hook);
        let definition = hook.clone();
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
            run
        });
        self.enqueue(hook, event, payload, job)
    }

    /// Queues `job`; its record goes to the run log (and the session's telemetry) when it ends.
    fn enqueue(
        &self,
        hook: &HookDefinition,
        event: HookEvent,
        payload: &HookPayload,
        job: Job,
    ) -> Option<HookRun> {
        let origin = Origin {
            event,
            tool_call_id: payload.tool_call_id().map(str::to_string),
        };
        match self
            .background
            .enqueue(&hook.id, hook.timeout, origin, self.log.clone(), job)
        {
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
