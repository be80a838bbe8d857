//! The sessions of one connection. Each session is a task that owns its [`Runtime`] (built for the
//! client's `cwd`: its own trust decision, hooks and hook working directory) and runs its prompts one
//! after another. The connection's handlers only hand requests to it; `session/cancel` cancels the
//! session's current cancellation token, which every prompt accepted so far holds.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, SessionId, SessionNotification, SessionUpdate,
    StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use elph_agent::harness::{AgentEvent, CompactOutcome};
use elph_agent::hooks::{CompactTrigger, StopStatus};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::AcpConfig;
use super::approval::AcpApprover;
use super::commands;
use super::updates::{self, ELPH_MARK, Flusher, Forwarder, HOOK_PROBLEM_MARK};
use crate::hooks::HookSet;
use crate::mcp::ServerDefinition;
use crate::runtime::{Runtime, RuntimeOptions, SessionChoice};
use crate::session::commands::{SlashCommand, parse_for_editor};

/// The start of the hook-set diagnostic that an untrusted project's message replaces.
const SKIPPED_UNTRUSTED: &str = "project hooks skipped until";

/// A prompt waiting for its session.
struct QueuedPrompt {
    text: String,
    cancel: CancellationToken,
    responder: Responder<PromptResponse>,
}

enum Command {
    Prompt(Box<QueuedPrompt>),
    End { reason: String },
}

/// How a live session is reached from the connection's handlers.
struct Handle {
    commands: mpsc::UnboundedSender<Command>,
    /// Held by every prompt accepted so far; `session/cancel` cancels it and puts a fresh one here.
    cancel: Arc<Mutex<CancellationToken>>,
}

#[derive(Default)]
struct Live {
    sessions: HashMap<String, Handle>,
    /// The client has gone: sessions that finish opening end at once.
    closing: bool,
}

/// The request that opens a session, with its responder.
enum Opening {
    New(Responder<NewSessionResponse>),
    Load(Responder<LoadSessionResponse>),
}

impl Opening {
    fn fail(self, error: Error) {
        let _ = match self {
            Opening::New(responder) => responder.respond_with_error(error),
            Opening::Load(responder) => responder.respond_with_error(error),
        };
    }

    fn succeed(self, session_id: &SessionId) {
        let _ = match self {
            Opening::New(responder) => responder.respond(NewSessionResponse::new(session_id.clone())),
            Opening::Load(responder) => responder.respond(LoadSessionResponse::new()),
        };
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every session of one connection.
pub struct Sessions {
    config: AcpConfig,
    live: Mutex<Live>,
    tasks: TaskTracker,
}

impl Sessions {
    pub fn new(config: AcpConfig) -> Self {
        Sessions {
            config,
            live: Mutex::new(Live::default()),
            tasks: TaskTracker::new(),
        }
    }

    /// `session/new`: builds the session in a task of its own; it answers when sessionStart has run.
    pub fn open_new(
        self: &Arc<Self>,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let opening = Opening::New(responder);
        self.tasks.spawn(self.clone().open(
            opening,
            request.cwd,
            request.mcp_servers,
            SessionChoice::New,
            cx,
        ));
    }

    /// `session/load`: resumes a stored session, replays it, then runs sessionStart (`resume`).
    pub fn open_load(
        self: &Arc<Self>,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let opening = Opening::Load(responder);
        let choice = SessionChoice::Resume(request.session_id.0.to_string());
        self.tasks.spawn(
            self.clone()
                .open(opening, request.cwd, request.mcp_servers, choice, cx),
        );
    }

    /// `session/prompt`: queues the prompt on its session with the session's current cancel token.
    pub fn prompt(&self, request: PromptRequest, responder: Responder<PromptResponse>) {
        let live = lock(&self.live);
        let Some(handle) = live.sessions.get(&*request.session_id.0) else {
            let error = agent_client_protocol::v1::schema::Error::session_not_found(request.session_id);
            let _ = responder.respond_with_error(error.into());
            return;
        };
        let text = match commands::prompt_text(&request.prompt) {
            Ok(text) => text,
            Err(refusal) => {
                let _ = responder.respond_with_error(Error::new(ErrorCode::INVALID_PARAMS, refusal));
                return;
            }
        };
        let command = Command::Prompt(Box::new(QueuedPrompt {
            text,
            cancel: lock(&handle.cancel).clone(),
            responder,
        }));
        // A session that has ended drops the responder, which answers with an error.
        let _ = handle.commands.send(command);
    }

    /// `session/cancel`: ends the running prompt (and any queued one) of the session.
    pub fn cancel(&self, session_id: &str) {
        let live = lock(&self.live);
        if let Some(handle) = live.sessions.get(session_id) {
            let mut token = lock(&handle.cancel);
            token.cancel();
            *token = CancellationToken::new();
        }
    }

    /// The client has gone: cancels what runs, fires sessionEnd for every session, and waits for
    /// all of them.
    pub async fn close_all(&self, reason: &str) {
        let handles: Vec<Handle> = {
            let mut live = lock(&self.live);
            live.closing = true;
            live.sessions.drain().map(|(_, handle)| handle).collect()
        };
        for handle in handles {
            lock(&handle.cancel).cancel();
            let _ = handle.commands.send(Command::End {
                reason: reason.to_string(),
            });
        }
        self.tasks.close();
        self.tasks.wait().await;
    }

    fn options(&self, session: SessionChoice, editor_mcp_servers: Vec<ServerDefinition>) -> RuntimeOptions {
        RuntimeOptions {
            model: self.config.model.clone(),
            approval: self.config.approval,
            max_turns: None,
            session,
            sandbox: self.config.sandbox.clone(),
            editor_mcp_servers,
        }
    }

    async fn build(
        &self,
        cwd: PathBuf,
        mcp_servers: Vec<McpServer>,
        choice: SessionChoice,
    ) -> Result<(Runtime, Arc<AcpApprover>, mpsc::UnboundedReceiver<AgentEvent>), Error> {
        // The protocol requires an absolute path; a relative one would resolve against wherever
        // `elph acp` happened to be started.
        if !cwd.is_absolute() {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("cwd must be an absolute path, not {}", cwd.display()),
            ));
        }
        let paths = self.config.paths.with_project(&cwd).map_err(|err| {
            Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("cwd cannot be the project folder: {err}"),
            )
        })?;
        let (editor_servers, diagnostics) = super::mcp::editor_servers(&mcp_servers, &paths.project_dir);
        let options = self.options(choice, editor_servers);
        let approver = Arc::new(AcpApprover::default());
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        for diagnostic in diagnostics {
            let _ = events_tx.send(AgentEvent::Notice {
                message: diagnostic.to_string(),
            });
        }
        let for_runtime = approver.clone();
        let built =
            tokio::task::spawn_blocking(move || Runtime::build(paths, &options, for_runtime, events_tx))
                .await
                .map_err(|err| {
                    Error::new(
                        ErrorCode::INTERNAL_ERROR,
                        format!("cannot open the session: {err}"),
                    )
                })?;
        let runtime = built.map_err(|err| {
            // Another project's session, one in use, an unknown id: the request's mistake.
            let code = match err.downcast_ref::<crate::store::StoreError>() {
                Some(store) if store.is_about_the_request() => ErrorCode::INVALID_PARAMS,
                _ => ErrorCode::INTERNAL_ERROR,
            };
            Error::new(code, format!("{err:#}"))
        })?;
        Ok((runtime, approver, events_rx))
    }

    async fn open(
        self: Arc<Self>,
        opening: Opening,
        cwd: PathBuf,
        mcp_servers: Vec<McpServer>,
        choice: SessionChoice,
        cx: ConnectionTo<Client>,
    ) {
        let resume = matches!(choice, SessionChoice::Resume(_));
        let (mut runtime, approver, events) = match self.build(cwd, mcp_servers, choice).await {
            Ok(built) => built,
            Err(error) => {
                tracing::warn!(message = %error.message, "a session could not be opened");
                return opening.fail(error);
            }
        };
        let session_id = SessionId::new(runtime.session_id());
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        {
            let mut live = lock(&self.live);
            if live.sessions.contains_key(runtime.session_id()) {
                let message = format!(
                    "session {} is already open on this connection",
                    runtime.session_id()
                );
                drop(live);
                return opening.fail(Error::new(ErrorCode::INVALID_PARAMS, message));
            }
            if live.closing {
                let _ = commands_tx.send(Command::End {
                    reason: "closed".into(),
                });
            }
            live.sessions.insert(
                runtime.session_id().to_string(),
                Handle {
                    commands: commands_tx,
                    cancel: Arc::new(Mutex::new(CancellationToken::new())),
                },
            );
        }
        if resume {
            let project = &runtime.paths.project_dir;
            for update in updates::history(&session_id, runtime.harness.transcript().entries(), project) {
                let _ = cx.send_notification(update);
            }
        }
        tracing::info!(
            session = %session_id.0,
            project = %runtime.paths.project_dir.display(),
            trusted = runtime.trust.trusted,
            model = %runtime.model,
            resume,
            "session opened"
        );
        let source = runtime.source;
        runtime.harness.start_session(source).await;
        opening.succeed(&session_id);

        // After the response, so the client knows the session: its commands and what it should know
        // about the project's hooks; then the hook notices of sessionStart.
        let flusher = Forwarder::spawn(
            cx.clone(),
            session_id.clone(),
            runtime.paths.project_dir.clone(),
            events,
        );
        approver.link(cx.clone(), session_id.clone(), flusher.clone());
        let actor = Actor {
            runtime,
            cx,
            session_id,
            flusher,
        };
        actor.advertise_commands();
        let set = actor.runtime.host.set();
        for (mark, line) in actor.hook_set_notices(&set) {
            let _ = actor
                .cx
                .send_notification(updates::notice(&actor.session_id, mark, &line));
        }
        actor.run(commands_rx).await;
    }
}

/// One session's task.
struct Actor {
    runtime: Runtime,
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    flusher: Flusher,
}

impl Actor {
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let mut reason = "closed".to_string();
        while let Some(command) = commands.recv().await {
            match command {
                Command::Prompt(queued) => {
                    let QueuedPrompt {
                        text,
                        cancel,
                        responder,
                    } = *queued;
                    let result = self.prompt(&text, &cancel).await;
                    let _ = responder.respond_with_result(result);
                }
                Command::End { reason: why } => {
                    reason = why;
                    break;
                }
            }
        }
        self.runtime.harness.end_session(&reason).await;
        self.flusher.flush().await;
        tracing::info!(session = %self.session_id.0, %reason, "session ended");
    }

    fn notify(&self, update: SessionUpdate) {
        let _ = self
            .cx
            .send_notification(SessionNotification::new(self.session_id.clone(), update));
    }

    /// A message from Elph to the user, as part of the agent's message.
    fn say(&self, text: impl Into<String>) {
        let _ = self
            .cx
            .send_notification(updates::agent_text(&self.session_id, text));
    }

    /// `/reload`, exactly one of `/trust` and `/untrust`, and `/compact`.
    fn advertise_commands(&self) {
        let available = commands::available(&self.runtime.trust);
        self.notify(SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate::new(available),
        ));
    }

    /// What the user should know about the hook set, one marked line each: that an untrusted
    /// project's hooks are off and how to trust it, and every other diagnostic.
    fn hook_set_notices(&self, set: &HookSet) -> Vec<(&'static str, String)> {
        let trusted = self.runtime.trust.trusted;
        let mut lines = Vec::new();
        if !trusted {
            let message = commands::untrusted_message(&self.runtime.paths.project_dir);
            lines.push((ELPH_MARK, message));
        }
        for diagnostic in &set.diagnostics {
            if !trusted && diagnostic.message.starts_with(SKIPPED_UNTRUSTED) {
                continue;
            }
            lines.push((HOOK_PROBLEM_MARK, diagnostic.to_string()));
        }
        lines
    }

    async fn prompt(&mut self, text: &str, cancel: &CancellationToken) -> Result<PromptResponse, Error> {
        if let Some((command, args)) = parse_for_editor(text) {
            return Ok(PromptResponse::new(self.command(command, args, cancel).await));
        }
        let result = self.runtime.harness.run_turn(text, cancel).await;
        self.flusher.flush().await;
        match result.status {
            StopStatus::Completed => Ok(PromptResponse::new(StopReason::EndTurn)),
            StopStatus::Cancelled => Ok(PromptResponse::new(StopReason::Cancelled)),
            StopStatus::Failed => {
                tracing::warn!(session = %self.session_id.0, error = ?result.error, "the turn failed");
                Err(Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    result.error.unwrap_or_else(|| "the turn failed".into()),
                ))
            }
        }
    }

    /// A slash command, answered with a message; the model is not involved.
    async fn command(
        &mut self,
        command: SlashCommand,
        instructions: Option<String>,
        cancel: &CancellationToken,
    ) -> StopReason {
        let project = self.runtime.paths.project_dir.clone();
        let dir = project.display().to_string();
        let reply = match command {
            SlashCommand::Reload => {
                let set = self.runtime.reload();
                let mut lines = vec![format!(
                    "Reloaded hooks: {} active hook(s).",
                    set.active().count()
                )];
                lines.extend(
                    self.hook_set_notices(&set)
                        .into_iter()
                        .map(|(mark, line)| format!("{mark} {line}")),
                );
                self.advertise_commands();
                lines.join("\n\n")
            }
            SlashCommand::Trust if self.runtime.trust.trusted => {
                format!("{dir} is already trusted ({}).", self.runtime.trust.explanation())
            }
            SlashCommand::Trust => match self.runtime.set_trust(true) {
                Ok(set) => {
                    self.advertise_commands();
                    let mut lines = vec![format!(
                        "Trusted {dir}: its project hooks are on ({} active hook(s) in all).",
                        set.active().count()
                    )];
                    lines.extend(
                        self.hook_set_notices(&set)
                            .into_iter()
                            .map(|(mark, line)| format!("{mark} {line}")),
                    );
                    lines.join("\n\n")
                }
                Err(err) => format!("Could not trust {dir}: {err}"),
            },
            SlashCommand::Untrust if !self.runtime.trust.trusted => {
                format!("{dir} is not trusted, so there is nothing to untrust.")
            }
            SlashCommand::Untrust => match self.runtime.set_trust(false) {
                Ok(_) => {
                    self.advertise_commands();
                    format!(
                        "{dir} is no longer trusted: its project hooks are off. Trust it again with /trust."
                    )
                }
                Err(err) => format!("Could not untrust {dir}: {err}"),
            },
            SlashCommand::Compact => {
                let outcome = self
                    .runtime
                    .harness
                    .compact(CompactTrigger::Manual, instructions, cancel)
                    .await;
                self.flusher.flush().await;
                match outcome {
                    // The harness's Compacted event already said so.
                    CompactOutcome::Compacted { .. } => return StopReason::EndTurn,
                    CompactOutcome::Interrupted => return StopReason::Cancelled,
                    CompactOutcome::CancelledByHook { hook_id } => {
                        format!("Compaction was cancelled by hook '{hook_id}'.")
                    }
                    CompactOutcome::NothingToCompact => "Nothing to compact yet.".to_string(),
                    CompactOutcome::Failed(error) => format!("Compaction failed: {error}"),
                }
            }
            SlashCommand::Help
            | SlashCommand::New
            | SlashCommand::Resume
            | SlashCommand::Hooks
            | SlashCommand::Quit => {
                format!("/{} is not available in editors.", command.name())
            }
        };
        self.say(reply);
        StopReason::EndTurn
    }
}
