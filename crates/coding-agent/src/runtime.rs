//! One agent session for a project, assembled the same way for every front end: trust decision,
//! hook set and host, provider, tools, stored transcript, and the harness around them.

use std::sync::Arc;

use anyhow::Context;
use elph_agent::harness::{
    AgentEvent, AgentHarness, ApprovalPolicy, Approver, CompactionSettings, HarnessConfig, Transcript,
};
use elph_agent::hooks::{HookRegistry, SessionSource};
use elph_agent::tools::ToolCatalog;
use elph_process::sandbox::SandboxMode;
use tokio::sync::mpsc::UnboundedSender;

use crate::hooks::HookSet;
use crate::hooks::handler::runner::Handlers;
use crate::hooks::host::HookHost;
use crate::hooks::reload::HookLoader;
use crate::mcp::McpManager;
use crate::paths::Paths;
use crate::session::route::{Known, Route, route};
use crate::settings::Settings;
use crate::store::{SessionSink, SessionStore, new_session_id};
use crate::trust::{TrustDecision, TrustStore};
use crate::workflows::{ExpandedPrompt, Workflows};

/// The variable that records every hook chain to a file, in every front end (`--record-hooks`
/// for `elph run`).
pub(crate) const RECORD_HOOKS_VAR: &str = "ELPH_RECORD_HOOKS";

/// Which session to run in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new stored session.
    New,
    /// The project's most recent session.
    Continue,
    /// A given stored session.
    Resume(String),
    /// A new session that stores nothing.
    Ephemeral,
}

#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    pub model: Option<String>,
    pub approval: ApprovalPolicy,
    pub max_turns: Option<u32>,
    pub session: SessionChoice,
    /// `--sandbox` and `--sandbox-network`; settings.json fills in what they leave out.
    pub sandbox: crate::sandbox::SandboxArgs,
    /// MCP servers an editor sent for this session (ACP), started after mcp.json's.
    pub editor_mcp_servers: Vec<crate::mcp::ServerDefinition>,
    /// The answers to the MCP files' `${input:ID}` (the terminal UI asks them at its start), or
    /// which front end cannot ask.
    pub mcp_inputs: crate::mcp::inputs::McpInputs,
    /// `--mode`: build or plan.
    pub mode: elph_agent::harness::AgentMode,
    /// The editor's file system (ACP, when the client offers it): the native file tools read and
    /// write through it.
    pub editor_files: Option<Arc<dyn elph_agent::tools::EditorFiles>>,
    /// `--record-hooks FILE`: where every hook chain is recorded (else `ELPH_RECORD_HOOKS`).
    pub record_hooks: Option<std::path::PathBuf>,
    /// The front end that drives the session: which built-in commands it carries out itself, so
    /// that a prompt naming another one is refused in words that fit (`route`).
    pub front_end: crate::session::FrontEnd,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        RuntimeOptions {
            model: None,
            approval: ApprovalPolicy::Auto,
            max_turns: None,
            session: SessionChoice::New,
            sandbox: crate::sandbox::SandboxArgs::default(),
            editor_mcp_servers: Vec::new(),
            mcp_inputs: crate::mcp::inputs::McpInputs::headless("this session"),
            mode: elph_agent::harness::AgentMode::Build,
            editor_files: None,
            record_hooks: None,
            front_end: crate::session::FrontEnd::Headless,
        }
    }
}

/// Everything one session needs, assembled. Only [`crate::session::Session`] holds one: front ends
/// drive a session, never the runtime's parts.
pub(crate) struct Runtime {
    paths: Paths,
    trust: TrustDecision,
    host: Arc<HookHost>,
    loader: HookLoader,
    store: Option<Arc<SessionStore>>,
    harness: AgentHarness,
    /// Whether the session is new or resumed (for sessionStart).
    source: SessionSource,
    model: String,
    /// The session's MCP servers. Dropping the runtime stops them (whole process groups).
    mcp: McpManager,
    /// The session's temp dir (TMPDIR of sandboxed commands), removed with the runtime.
    #[expect(dead_code, reason = "held, not read: dropping it removes the folder")]
    temp_dir: crate::session_temp::SessionTempDir,
    /// The network proxy of `sandbox.network: "allowlist"`, stopped with the runtime.
    #[expect(dead_code, reason = "held, not read: dropping it stops the proxy")]
    proxy: Option<crate::netproxy::NetProxy>,
    /// Skills and prompt templates, re-read on reload.
    workflows: Workflows,
    /// Where notices about reloaded workflows go.
    events: UnboundedSender<AgentEvent>,
    /// settings.json's `disableTemplateShell`.
    template_shell_disabled: bool,
    /// Whose prompts these are, for `route`.
    front_end: crate::session::FrontEnd,
}

impl Runtime {
    pub(crate) fn build(
        paths: Paths,
        options: &RuntimeOptions,
        approver: Arc<dyn Approver>,
        events: UnboundedSender<AgentEvent>,
    ) -> anyhow::Result<Runtime> {
        let settings = Settings::load(&paths.config_dir)?;
        // What this system gives the sandbox is probed beside the rest of the start; the answer
        // is awaited below, before anything can run (`weaker_sandbox`).
        if crate::sandbox::session_mode(&settings, &options.sandbox) != SandboxMode::FullAccess {
            elph_process::sandbox::start_probes();
        }
        let provider: Arc<dyn elph_ai::Provider> = Arc::from(crate::model_choice::resolve_provider(
            &paths,
            options.model.as_deref(),
            &settings,
        )?);
        let model = format!("{}/{}", provider.provider_name(), provider.model_id());

        let loader = HookLoader::new(paths.clone());
        let (trust, set) = loader.load();

        // The session store opens beside the rest of the start, on a thread of its own: the
        // file's recovery and the new session's first commit are most of a millisecond that the
        // sandbox's policy and the hook host need not wait for. Joined before any server starts.
        let opening = OpeningSession::start(&paths, &options.session, &model)?;
        // Its id is the store's, set once the store has opened (below).
        let mut config = HarnessConfig::new(String::new(), paths.project_dir.clone());
        config.approval = options.approval;
        crate::session_temp::remove_left_overs();
        let temp_dir = crate::session_temp::SessionTempDir::create("elph-session-")
            .context("cannot create the session's temp dir")?;
        config.sandbox =
            crate::sandbox::resolve_policy(&paths, &settings, &options.sandbox, Some(temp_dir.path()))?;
        crate::sandbox::make_missing_roots(&config.sandbox)?;
        config.sandbox.resolver_view = crate::sandbox::resolver_view(&paths);
        let proxy = match crate::sandbox::proxy_domains(&settings, &config.sandbox)? {
            Some(domains) => {
                let proxy = crate::netproxy::NetProxy::start(domains, Some(events.clone()))
                    .context("cannot start the sandbox's network proxy")?;
                config.sandbox.proxy = Some(proxy.route());
                Some(proxy)
            }
            None => None,
        };
        // Before anything sandboxed runs: what a command makes later is compared with this.
        config.sandbox.start_session();
        config.shell_env = crate::sandbox::shell_env_policy(&paths, &settings);
        let (permissions, permission_notices) = crate::permissions::session_rules(&paths, &settings);
        config.permissions = permissions;
        for message in permission_notices {
            tracing::warn!(%message, "permissions");
            let _ = events.send(AgentEvent::Notice { message });
        }
        let mut host = HookHost::new(set, paths.project_dir.clone(), &paths.data_dir)
            .with_sandbox_base(config.sandbox.clone())
            .with_pin_check(TrustStore::new(&paths.config_dir))
            .with_handlers(Handlers::new(
                settings.hooks.allowed_urls.clone(),
                paths.config_dir.clone(),
            ));
        let record = options
            .record_hooks
            .clone()
            .or_else(|| std::env::var_os(RECORD_HOOKS_VAR).map(std::path::PathBuf::from))
            .filter(|path| !path.as_os_str().is_empty());
        if let Some(path) = record {
            let recorder = crate::hooks::record::Recorder::create(&path)
                .with_context(|| format!("cannot record hooks to {}", path.display()))?;
            host = host.with_recorder(recorder);
        }
        let host = Arc::new(host);
        host.handlers().set_model(provider.clone());
        if let Some(max_turns) = options.max_turns {
            config.max_turns = max_turns;
        }
        let workflows = Workflows::for_project(&paths, trust.trusted);
        config.policy = Arc::new(file_policy(&paths, &config.sandbox, &workflows));
        config.read_deadline = settings.read_tools.deadline();
        if let Some(bytes) = settings.hooks.max_added_context_bytes {
            config.max_added_context_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(count) = settings.hooks.max_stop_continuations {
            config.max_stop_continuations = count;
        }
        if let Some(ms) = settings.hooks.notify_turn_after_ms {
            config.notify_turn_after = std::time::Duration::from_millis(ms);
        }
        config.mode = options.mode;
        config.editor_files = options.editor_files.clone();
        config.compaction = CompactionSettings {
            threshold: settings
                .compaction_threshold
                .unwrap_or(CompactionSettings::default().threshold),
            ..CompactionSettings::default()
        };
        config.system_prompt.push_str(&workflows.system_prompt_section());
        send_workflow_notices(&events, &workflows);
        send_provider_notices(&events, &paths);
        // Refused here, before any server or hook starts; said before the turn.
        for line in crate::sandbox::weaker_sandbox(&config.sandbox, &settings, &options.sandbox)? {
            tracing::warn!(%line, "sandbox");
            let _ = events.send(AgentEvent::Notice { message: line });
        }
        let (store, session_id, transcript, source, repaired) = opening.join()?;
        config.session_id = session_id;
        // MCP servers start here, in the background: their tools join the catalog as they answer.
        let (mcp, mcp_diagnostics) = McpManager::launch(
            &paths,
            trust.trusted,
            options.editor_mcp_servers.clone(),
            &options.mcp_inputs,
            Some(events.clone()),
        );
        // A live view: an mcpTool hook reaches a server that answers after this point.
        host.handlers().set_mcp(mcp.connections());
        let tools = ToolCatalog::native();
        for notice in repaired {
            let _ = events.send(AgentEvent::Notice { message: notice });
        }
        for diagnostic in mcp_diagnostics {
            tracing::warn!(%diagnostic, "mcp");
            let _ = events.send(AgentEvent::Notice {
                message: diagnostic.to_string(),
            });
        }
        let harness = AgentHarness::new(provider, Arc::new(tools), HookRegistry::new(host.clone()), config)
            .with_approver(approver)
            .with_events(events.clone())
            .with_transcript(transcript)
            .with_tool_source(mcp.tool_source());
        let template_shell_disabled = settings.disable_template_shell == Some(true);
        Ok(Runtime {
            template_shell_disabled,
            front_end: options.front_end,
            paths,
            trust,
            host,
            loader,
            store,
            harness,
            source,
            model,
            mcp,
            temp_dir,
            proxy,
            workflows,
            events,
        })
    }

    /// A prompt with a `/skill:NAME` or `/TEMPLATE` command carried out; other prompts unchanged.
    pub(crate) fn expand_prompt(&self, prompt: &str) -> Result<ExpandedPrompt, String> {
        self.expand_routed(prompt, self.route(prompt))
    }

    /// How `prompt` is taken (`session::route`) with the session's commands as they are now:
    /// its templates and skills, the MCP prompts listed so far, and its MCP servers.
    pub(crate) fn route<'a>(&self, prompt: &'a str) -> Route<'a> {
        let workflows = self.workflow_commands();
        let servers = self.mcp_server_names();
        route(
            prompt,
            &Known {
                front_end: self.front_end,
                workflows: &workflows,
                servers: &servers,
            },
        )
    }

    /// `prompt` as `route` took it: text as it is sent, a template or skill carried out (an MCP
    /// prompt is the session's, see `session::mcp_turn`), or the refusal's message.
    pub(crate) fn expand_routed(&self, prompt: &str, route: Route<'_>) -> Result<ExpandedPrompt, String> {
        let plain = |text: &str| ExpandedPrompt {
            text: text.to_string(),
            parts: Vec::new(),
            allowed_tools: None,
            template: None,
            skill: None,
        };
        match route {
            Route::Text(text) => Ok(plain(text)),
            Route::Workflow => Ok(self.workflows.expand(prompt)?.unwrap_or_else(|| plain(prompt))),
            Route::Refused(message) => Err(message),
            // The front end carries out its own built-ins and sends none of them as a prompt.
            Route::Builtin(command, _) => Err(format!(
                "/{} is a command of the front end, not a prompt; nothing was sent",
                command.name()
            )),
        }
    }

    /// Every MCP server of the session, disabled ones too.
    pub(crate) fn mcp_server_names(&self) -> Vec<String> {
        self.mcp
            .statuses()
            .into_iter()
            .map(|status| status.definition.name)
            .collect()
    }

    /// Why a template's `` !`command` `` may not run now, if it may not: the project is not
    /// trusted, or settings.json turns template commands off.
    pub(crate) fn template_shell_refusal(&self) -> Option<&'static str> {
        if self.template_shell_disabled {
            Some("settings.json has \"disableTemplateShell\": true")
        } else if !self.trust.trusted {
            Some("the project is not trusted")
        } else {
            None
        }
    }

    /// The session's MCP servers.
    pub(crate) fn mcp(&self) -> &McpManager {
        &self.mcp
    }

    /// The host that runs the session's hooks.
    pub(crate) fn hook_host(&self) -> &HookHost {
        &self.host
    }

    /// A line for the user in every front end.
    pub(crate) fn notice(&self, message: String) {
        let _ = self.events.send(AgentEvent::Notice { message });
    }

    /// The commands the loaded templates and skills stand for, then the MCP servers' prompts.
    pub(crate) fn workflow_commands(&self) -> Vec<crate::workflows::WorkflowCommand> {
        let mut commands = self.workflows.commands();
        commands.extend(self.mcp.prompt_commands());
        commands
    }

    /// Re-reads skills and templates for the current trust state; one that loaded before and now
    /// fails keeps its previous version. The system prompt's skill list follows.
    fn reload_workflows(&mut self) {
        let mut next = Workflows::for_project(&self.paths, self.trust.trusted);
        next.keep_last_good(&self.workflows);
        let old = self.workflows.system_prompt_section();
        let config = self.harness.config_mut();
        if let Some(base) = config.system_prompt.strip_suffix(&old) {
            config.system_prompt = format!("{base}{}", next.system_prompt_section());
        }
        config.policy = Arc::new(file_policy(&self.paths, &config.sandbox, &next));
        send_workflow_notices(&self.events, &next);
        self.workflows = next;
    }

    pub(crate) fn session_id(&self) -> &str {
        self.harness.session_id()
    }

    pub(crate) fn paths(&self) -> &Paths {
        &self.paths
    }

    pub(crate) fn trust(&self) -> &TrustDecision {
        &self.trust
    }

    /// The hook set in use now.
    pub(crate) fn hook_set(&self) -> Arc<HookSet> {
        self.host.set()
    }

    pub(crate) fn store(&self) -> Option<&Arc<SessionStore>> {
        self.store.as_ref()
    }

    /// Ends the session's sandbox (see `SandboxPolicy::end_session`): what its commands left
    /// running is killed and what they left behind refused; one line each for what was refused.
    pub(crate) fn end_sandbox(&self) -> Vec<String> {
        self.harness.config().sandbox.end_session()
    }

    pub(crate) fn harness(&self) -> &AgentHarness {
        &self.harness
    }

    pub(crate) fn harness_mut(&mut self) -> &mut AgentHarness {
        &mut self.harness
    }

    /// Whether the session is new or resumed (for sessionStart).
    pub(crate) fn source(&self) -> SessionSource {
        self.source
    }

    /// `provider/model`.
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// `/model PROVIDER/MODEL`: the next requests go to that model, the conversation stays. A
    /// name that is not a model Elph can use (no provider of that name, no API key) changes nothing.
    pub(crate) fn set_model(&mut self, spec: &str) -> Result<(), elph_ai::ProviderError> {
        let origin = elph_ai::ModelOrigin::Command;
        let selection = elph_ai::ModelSelection::parse(spec, &origin)?;
        let provider = elph_ai::build_provider(&selection, &origin, &self.paths.config_dir, &|name| {
            std::env::var(name).ok()
        })?;
        self.model = format!("{}/{}", provider.provider_name(), provider.model_id());
        let provider: Arc<dyn elph_ai::Provider> = Arc::from(provider);
        self.host.handlers().set_model(provider.clone());
        self.harness.set_provider(provider);
        // The stored session says which model it continues with (`elph sessions`); failing to
        // record that does not undo the switch.
        if let Some(store) = &self.store
            && let Err(error) = store.set_model(self.harness.session_id(), &self.model)
        {
            tracing::warn!(%error, "cannot record the session's new model");
        }
        Ok(())
    }

    /// `/reload`: re-reads trust and both hook files and swaps the new set in one step. Returns the
    /// new set, whose diagnostics the front end shows.
    pub(crate) fn reload(&mut self) -> Arc<HookSet> {
        let (trust, set) = self.loader.reload(&self.host);
        self.trust = trust;
        self.reload_workflows();
        set
    }

    /// `/trust` or `/untrust`: records the decision, then reloads the hook set at once.
    pub(crate) fn set_trust(&mut self, trusted: bool) -> Result<Arc<HookSet>, crate::trust::TrustError> {
        let store = TrustStore::new(&self.paths.config_dir);
        if trusted {
            store.trust(&self.paths.project_dir)?;
        } else {
            store.untrust(&self.paths.project_dir)?;
            // Project MCP servers are executables from the repository: they stop with the trust.
            // (Trusting starts no server mid-session: the next session gets them.)
            self.mcp.stop_project_servers();
        }
        Ok(self.reload())
    }
}

/// Where the native tools may write: where the sandbox lets commands write, with Elph's own
/// folders and the project's `.elph/` and `.git/hooks/` protected (they matter when they lie
/// inside a writable root, for example with the home folder as the project).
/// Skills' folders are read freely: the model reads a skill's instructions when it applies one.
fn file_policy(
    paths: &Paths,
    sandbox: &elph_process::sandbox::SandboxPolicy,
    workflows: &Workflows,
) -> elph_agent::policy::FilePolicy {
    let policy = elph_agent::policy::FilePolicy::from_sandbox(&paths.project_dir, sandbox)
        .protect(&paths.config_dir, "CONFIG_DIR (Elph's trust, hooks and settings)")
        .protect(&paths.data_dir, "DATA_DIR (Elph's sessions and logs)");
    workflows
        .skills
        .iter()
        .fold(policy, |policy, skill| policy.free_reads_in(&skill.dir))
}

/// A provider file that is skipped is said in every front end (the TUI's transcript, `elph run`'s
/// stderr, the editor), not only when that provider is asked for: its user may not know it broke.
fn send_provider_notices(events: &UnboundedSender<AgentEvent>, paths: &Paths) {
    for problem in elph_ai::Catalog::load(&paths.config_dir).problems() {
        tracing::warn!(file = %problem.path.display(), problem = %problem.message, "provider file skipped");
        let _ = events.send(AgentEvent::Notice {
            message: format!(
                "provider file {} skipped: {} (`elph doctor` lists the providers)",
                problem.path.display(),
                problem.message
            ),
        });
    }
}

fn send_workflow_notices(events: &UnboundedSender<AgentEvent>, workflows: &Workflows) {
    for diagnostic in &workflows.diagnostics {
        tracing::warn!(%diagnostic, "workflows");
        let _ = events.send(AgentEvent::Notice {
            message: diagnostic.to_string(),
        });
    }
}

/// A session id the store does not have (front ends tell it apart: ACP answers "resource not
/// found").
#[derive(Debug, thiserror::Error)]
#[error("no session '{id}'; `elph sessions` lists this project's sessions")]
pub(crate) struct UnknownSession {
    pub(crate) id: String,
}

/// The store, the session id, its transcript, whether it is new or resumed, and notices for the
/// user about what was repaired on load.
type OpenedSession = (
    Option<Arc<SessionStore>>,
    String,
    Transcript,
    SessionSource,
    Vec<String>,
);

/// [`open_session`] on a thread of its own. Dropped without [`OpeningSession::join`] (the start
/// failed meanwhile), it still waits for the thread: nothing is left half-written when the process
/// leaves.
struct OpeningSession {
    thread: Option<std::thread::JoinHandle<anyhow::Result<OpenedSession>>>,
}

impl OpeningSession {
    fn start(paths: &Paths, choice: &SessionChoice, model: &str) -> anyhow::Result<OpeningSession> {
        if *choice != SessionChoice::Ephemeral {
            // DATA_DIR is made here, before the sandbox's policy is worked out: what that policy
            // finds missing it treats as protected paths that must not appear, and the store
            // must not be what appears.
            SessionStore::create_data_dir(&paths.data_dir)?;
        }
        let (paths, choice, model) = (paths.clone(), choice.clone(), model.to_string());
        let thread = std::thread::Builder::new()
            .name("elph-store".into())
            .spawn(move || open_session(&paths, &choice, &model))
            .context("cannot start a thread to open the session store")?;
        Ok(OpeningSession { thread: Some(thread) })
    }

    fn join(mut self) -> anyhow::Result<OpenedSession> {
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(opened)) => opened,
            // A panic is a bug wherever it happens: it goes on as it would have on this thread.
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => anyhow::bail!("the session store was opened once already"),
        }
    }
}

impl Drop for OpeningSession {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Opens the session `choice` names, taken for this process (one writer per session), and
/// repaired if the process that wrote it last stopped in the middle of a tool call.
fn open_session(paths: &Paths, choice: &SessionChoice, model: &str) -> anyhow::Result<OpenedSession> {
    if *choice == SessionChoice::Ephemeral {
        return Ok((
            None,
            new_session_id(),
            Transcript::new(),
            SessionSource::New,
            Vec::new(),
        ));
    }
    let store = Arc::new(SessionStore::open(&paths.data_dir)?);
    let project = paths.project_dir.as_path();
    let resumed = match choice {
        SessionChoice::Continue => Some(
            store
                .take_latest_free(project)?
                .with_context(|| {
                    format!(
                        "no earlier session for {}; start one without -c",
                        project.display()
                    )
                })?
                .id,
        ),
        SessionChoice::Resume(id) => {
            if store.session(id)?.is_none() {
                return Err(UnknownSession { id: id.clone() }.into());
            }
            Some(store.take_of_project(id, project)?.id)
        }
        _ => None,
    };
    let sink = |id: &str| -> Arc<dyn elph_agent::harness::TranscriptSink> {
        Arc::new(SessionSink {
            store: store.clone(),
            session_id: id.to_string(),
        })
    };
    match resumed {
        Some(id) => {
            // An answer that was streaming when the last process died is part of the conversation:
            // the user saw it.
            if let Some(text) = store.draft(&id)? {
                let message = elph_agent::messages::Message::assistant(text, Vec::new());
                store.append(&id, &elph_agent::harness::Entry::Message { message })?;
            }
            let mut entries = store.load_entries(&id)?;
            let mut notices = Vec::new();
            for call in crate::store::unanswered_calls(&entries) {
                let entry = elph_agent::harness::Entry::Message {
                    message: crate::store::interrupted_result(&call),
                };
                store.append(&id, &entry)?;
                entries.push(entry);
                notices.push(format!(
                    "the last run of this session stopped during the tool call {} ({}); it is recorded as interrupted, so check its effects",
                    call.name, call.id
                ));
            }
            let transcript = Transcript::resume(entries, Some(sink(&id)));
            Ok((
                Some(store.clone()),
                id,
                transcript,
                SessionSource::Resume,
                notices,
            ))
        }
        None => {
            let id = new_session_id();
            // Taken before it exists, so that no `-c` of another process picks it up meanwhile.
            store.take(&id)?;
            store.create_session(&id, project, model)?;
            let transcript = Transcript::new().with_sink(sink(&id));
            Ok((
                Some(store.clone()),
                id,
                transcript,
                SessionSource::New,
                Vec::new(),
            ))
        }
    }
}
