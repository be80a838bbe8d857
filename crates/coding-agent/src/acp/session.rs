//! The sessions of one connection. Each is a [`Session`] (built for the client's `cwd`: its own
//! trust decision, hooks and hook working directory) with a task that turns its events into the
//! client's notifications and prompt responses ([`super::forward`]). The connection's handlers
//! only submit operations: a prompt, or a slash command from the session's table; `session/cancel`
//! cancels the session's current cancellation token, which every prompt accepted so far holds.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, ConfigOptionUpdate, LoadSessionRequest, LoadSessionResponse,
    McpServer, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, ResumeSessionRequest,
    ResumeSessionResponse, SessionConfigOption, SessionId, SessionMode, SessionModeState,
    SessionNotification, SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use elph_agent::harness::AgentMode;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::AcpConfig;
use super::commands;
use super::config::{Change, ConfigState};
use super::forward::Forwarder;
use crate::diagnostics::Diagnostic;
use crate::session::FrontEnd;
use crate::session::route::{Known, Route, route};
use crate::session::{
    Approvals, Op, OpId, Session, SessionChoice, SessionEvents, SessionHandle, SessionOptions,
};

/// Prompts waiting for their operation to finish, by the operation's id.
pub(super) type Waiting = Arc<Mutex<HashMap<OpId, Responder<PromptResponse>>>>;

/// How a live session is reached from the connection's handlers.
struct Handle {
    session: SessionHandle,
    /// Where the project's trust is decided again before each turn (a fail-closed project that
    /// changed since it was trusted starts none).
    trust: (crate::trust::TrustStore, PathBuf),
    /// Held by every prompt accepted so far; `session/cancel` cancels it and puts a fresh one here.
    cancel: Arc<Mutex<CancellationToken>>,
    waiting: Waiting,
    /// Its mode and model as config options.
    config: ConfigState,
    /// Cancelled once the session has ended and its task is done (`session/close` waits for it).
    ended: CancellationToken,
    /// The client, for the `config_option_update` that a `set_mode` sends.
    cx: ConnectionTo<Client>,
}

#[derive(Default)]
struct Live {
    sessions: HashMap<String, Handle>,
    /// Sessions a `session/load` of this connection is opening now.
    loading: HashSet<String>,
    /// The client has gone: sessions that finish opening end at once.
    closing: bool,
}

/// The request that opens a session, with its responder.
pub(crate) enum Opening {
    New(Responder<NewSessionResponse>),
    /// `session/load`: the conversation is replayed before the answer.
    Load(Responder<LoadSessionResponse>),
    /// `session/resume`: the same without the replay.
    Resume(Responder<ResumeSessionResponse>),
}

impl Opening {
    fn fail(self, error: Error) {
        let _ = match self {
            Opening::New(responder) => responder.respond_with_error(error),
            Opening::Load(responder) => responder.respond_with_error(error),
            Opening::Resume(responder) => responder.respond_with_error(error),
        };
    }

    /// Whether the client wants the stored conversation sent again before the answer.
    pub(super) fn replays(&self) -> bool {
        matches!(self, Opening::Load(_))
    }

    /// Answers with the session's modes (`mode` the current one) and config options.
    pub(super) fn succeed(self, session_id: &SessionId, mode: AgentMode, options: Vec<SessionConfigOption>) {
        let modes = mode_state(mode);
        let _ = match self {
            Opening::New(responder) => responder.respond(
                NewSessionResponse::new(session_id.clone())
                    .modes(modes)
                    .config_options(options),
            ),
            Opening::Load(responder) => {
                responder.respond(LoadSessionResponse::new().modes(modes).config_options(options))
            }
            Opening::Resume(responder) => {
                responder.respond(ResumeSessionResponse::new().modes(modes).config_options(options))
            }
        };
    }
}

/// A `session/load` of a session this connection has open, or is opening already.
fn open_here(id: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_PARAMS,
        format!(
            "session {id} is already open on this connection; send its prompts with this sessionId, \
             or load it on another connection once this one has closed"
        ),
    )
    .data(serde_json::json!({ "sessionId": id }))
}

/// Holds a session id in [`Live::loading`] while its `session/load` runs.
struct LoadingGuard {
    sessions: Arc<Sessions>,
    id: String,
}

impl Drop for LoadingGuard {
    fn drop(&mut self) {
        lock(&self.sessions.live).loading.remove(&self.id);
    }
}

/// Every agent mode, with `current` the session's.
fn mode_state(current: AgentMode) -> SessionModeState {
    let available = AgentMode::ALL
        .into_iter()
        .map(|mode| {
            SessionMode::new(mode.as_str(), super::config::mode_name(mode))
                .description(mode.description().to_string())
        })
        .collect();
    SessionModeState::new(current.as_str(), available)
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every session of one connection.
pub(super) struct Sessions {
    config: AcpConfig,
    /// The client's file system, as its `initialize` offered it.
    pub(super) files: super::files::Offered,
    /// The elicitation modes the client declared, for MCP servers' questions.
    pub(super) elicitation: super::elicitation::Offered,
    /// Whether the client declared `session.notices`: it shows `notice` updates.
    pub(super) notices: std::sync::atomic::AtomicBool,
    live: Mutex<Live>,
    tasks: TaskTracker,
}

impl Sessions {
    pub(super) fn new(config: AcpConfig) -> Self {
        Sessions {
            config,
            files: super::files::Offered::default(),
            elicitation: super::elicitation::Offered::default(),
            notices: std::sync::atomic::AtomicBool::new(false),
            live: Mutex::new(Live::default()),
            tasks: TaskTracker::new(),
        }
    }

    /// `session/new`: builds the session in a task of its own; it answers when sessionStart has run.
    pub(crate) fn open_new(
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
    pub(crate) fn open_load(
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

    /// `session/resume`: as `session/load`, without sending the conversation again.
    pub(crate) fn open_resume(
        self: &Arc<Self>,
        request: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let opening = Opening::Resume(responder);
        let choice = SessionChoice::Resume(request.session_id.0.to_string());
        self.tasks.spawn(
            self.clone()
                .open(opening, request.cwd, request.mcp_servers, choice, cx),
        );
    }

    /// `session/close`: ends one session as a closed connection would end it (its running prompt
    /// cancelled, sessionEnd with reason `closed`) and answers once it has ended. Its id may then
    /// be loaded or resumed again.
    pub(super) fn close(
        self: &Arc<Self>,
        request: CloseSessionRequest,
        responder: Responder<CloseSessionResponse>,
    ) {
        let Some(handle) = lock(&self.live).sessions.remove(&*request.session_id.0) else {
            let error = agent_client_protocol::v1::schema::Error::session_not_found(request.session_id);
            let _ = responder.respond_with_error(error.into());
            return;
        };
        lock(&handle.cancel).cancel();
        handle.session.submit(Op::End {
            reason: "closed".to_string(),
        });
        self.tasks.spawn(async move {
            handle.ended.cancelled().await;
            let _ = responder.respond(CloseSessionResponse::new());
        });
    }

    /// Whether this connection has session `id` open (or is opening it).
    pub(super) fn is_open(&self, id: &str) -> bool {
        let live = lock(&self.live);
        live.sessions.contains_key(id) || live.loading.contains(id)
    }

    /// `session/set_config_option`: `mode` as `set_mode`, `model` as `/model`; queued like them and
    /// answered at once with both options as they will be. A model the session then cannot use is
    /// said as a notice and followed by a `config_option_update` with the model still in use.
    pub(super) fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
    ) {
        let live = lock(&self.live);
        let Some(handle) = live.sessions.get(&*request.session_id.0) else {
            let error = agent_client_protocol::v1::schema::Error::session_not_found(request.session_id);
            let _ = responder.respond_with_error(error.into());
            return;
        };
        match handle.config.parse(&request.config_id.0, &request.value) {
            Ok(Change::Mode(mode)) => {
                handle.config.set_mode(mode);
                handle
                    .config
                    .submit_quietly(&handle.session, Op::SetMode(Some(mode.as_str().to_string())));
            }
            Ok(Change::Model(model)) => {
                handle.config.set_model(&model);
                handle
                    .config
                    .submit_quietly(&handle.session, Op::Model(Some(model)));
            }
            Err(error) => {
                let _ = responder.respond_with_error(error);
                return;
            }
        }
        let _ = responder.respond(SetSessionConfigOptionResponse::new(handle.config.options()));
    }

    /// `session/prompt`: a slash command offered to editors becomes its operation, anything else a
    /// turn; either holds the session's current cancel token.
    pub(super) fn prompt(&self, request: PromptRequest, responder: Responder<PromptResponse>) {
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
        let cancel = lock(&handle.cancel).clone();
        // The editor's built-ins are carried out here; every other line is the session's, which
        // routes it with what it knows (its templates, skills and MCP prompts) and refuses an
        // unknown command with a message that ends the turn.
        let builtin = match route(&text, &Known::builtins_of(FrontEnd::Editor)) {
            Route::Builtin(command, argument) => command.op(argument, cancel.clone()),
            Route::Text(_) | Route::Workflow | Route::Refused(_) => None,
        };
        let op = builtin.unwrap_or(Op::Prompt { text, cancel });
        if matches!(op, Op::Prompt { .. }) {
            let (store, project) = &handle.trust;
            if let Some(refusal) = store.decide(project).unguarded_refusal() {
                let message = format!("refusing to start the turn: {refusal} (or send /trust)");
                let _ = responder.respond_with_error(Error::new(ErrorCode::INVALID_REQUEST, message));
                return;
            }
        }
        // Held while submitting, so the answer cannot come before the responder waits for it. A
        // session that has ended drops the responder, which answers with an error.
        let mut waiting = lock(&handle.waiting);
        let id = handle.session.submit(op);
        waiting.insert(id, responder);
    }

    /// `session/set_mode`: an unknown mode id is refused; a known one is queued as an operation and
    /// answered at once. Operations run in order, so every prompt sent after the answer runs in the
    /// new mode (one running now finishes in the old one).
    pub(super) fn set_mode(
        &self,
        request: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    ) {
        let live = lock(&self.live);
        let Some(handle) = live.sessions.get(&*request.session_id.0) else {
            let error = agent_client_protocol::v1::schema::Error::session_not_found(request.session_id);
            let _ = responder.respond_with_error(error.into());
            return;
        };
        let mode = match request.mode_id.0.parse::<AgentMode>() {
            Ok(mode) => mode,
            Err(refusal) => {
                let _ = responder.respond_with_error(Error::new(ErrorCode::INVALID_PARAMS, refusal));
                return;
            }
        };
        handle.config.set_mode(mode);
        handle
            .session
            .submit(Op::SetMode(Some(mode.as_str().to_string())));
        let _ = responder.respond(SetSessionModeResponse::new());
        // A client that shows config options hears the change there too.
        let update = ConfigOptionUpdate::new(handle.config.options());
        let _ = handle.cx.send_notification(SessionNotification::new(
            request.session_id,
            SessionUpdate::ConfigOptionUpdate(update),
        ));
    }

    /// `session/cancel`: ends the running prompt (and any queued one) of the session.
    pub(super) fn cancel(&self, session_id: &str) {
        let live = lock(&self.live);
        if let Some(handle) = live.sessions.get(session_id) {
            let mut token = lock(&handle.cancel);
            token.cancel();
            *token = CancellationToken::new();
        }
    }

    /// Marks session `id` as being loaded by this connection until the guard goes; an error when
    /// this connection already has it open or is loading it.
    fn claim_loading(self: &Arc<Self>, id: &str) -> Result<LoadingGuard, Error> {
        let mut live = lock(&self.live);
        if live.sessions.contains_key(id) || !live.loading.insert(id.to_string()) {
            return Err(open_here(id));
        }
        Ok(LoadingGuard {
            sessions: self.clone(),
            id: id.to_string(),
        })
    }

    /// The client has gone: cancels what runs, fires sessionEnd for every session, and waits for
    /// all of them.
    pub(crate) async fn close_all(&self, reason: &str) {
        let handles: Vec<Handle> = {
            let mut live = lock(&self.live);
            live.closing = true;
            live.sessions.drain().map(|(_, handle)| handle).collect()
        };
        for handle in handles {
            lock(&handle.cancel).cancel();
            handle.session.submit(Op::End {
                reason: reason.to_string(),
            });
        }
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// The session for `cwd`, with the editor's MCP servers, and what is wrong with those of them
    /// that cannot run.
    async fn build(
        &self,
        cwd: PathBuf,
        mcp_servers: Vec<McpServer>,
        choice: SessionChoice,
        editor_files: Option<Arc<super::files::ClientFiles>>,
    ) -> Result<(Session, SessionEvents, Vec<Diagnostic>), Error> {
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
        let (editor_mcp_servers, diagnostics) = super::mcp::editor_servers(&mcp_servers, &paths.project_dir);
        let options = SessionOptions {
            model: self.config.model.clone(),
            approval: self.config.approval,
            max_turns: None,
            session: choice,
            sandbox: self.config.sandbox.clone(),
            editor_mcp_servers,
            editor_files: editor_files.map(|files| files as Arc<dyn elph_agent::tools::EditorFiles>),
            mcp_inputs: crate::mcp::inputs::McpInputs::headless("`elph acp`"),
            mode: self.config.mode,
            record_hooks: None,
            front_end: crate::session::FrontEnd::Editor,
        };
        let built = tokio::task::spawn_blocking(move || Session::open(paths, options, Approvals::Asked))
            .await
            .map_err(|err| {
                Error::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("cannot open the session: {err}"),
                )
            })?;
        let (session, events) = built.map_err(|err| {
            // An unknown id is a resource not found (the schema's -32002, with the id in `data`);
            // another project's session or one in use is the request's mistake; the rest is ours.
            let message = format!("{err:#}");
            if let Some(unknown) = err.downcast_ref::<crate::runtime::UnknownSession>() {
                return Error::new(ErrorCode::RESOURCE_NOT_FOUND, message)
                    .data(serde_json::json!({ "sessionId": unknown.id }));
            }
            match err.downcast_ref::<crate::store::StoreError>() {
                Some(crate::store::StoreError::NoSuchSession { id, .. }) => {
                    Error::new(ErrorCode::RESOURCE_NOT_FOUND, message)
                        .data(serde_json::json!({ "sessionId": id }))
                }
                Some(store) if store.is_about_the_request() => Error::new(ErrorCode::INVALID_PARAMS, message),
                _ => Error::new(ErrorCode::INTERNAL_ERROR, message),
            }
        })?;
        Ok((session, events, diagnostics))
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
        // A session this connection has open (or is opening) is not loaded a second time: its
        // lease is this process's own, and "in use by <this pid>" would send the client off to
        // wait for itself.
        let loading = match &choice {
            SessionChoice::Resume(id) => match self.claim_loading(id) {
                Ok(guard) => Some(guard),
                Err(error) => return opening.fail(error),
            },
            _ => None,
        };
        let editor_files = self.files.for_session(&cx);
        let (session, events, diagnostics) =
            match self.build(cwd, mcp_servers, choice, editor_files.clone()).await {
                Ok(built) => built,
                Err(error) => {
                    tracing::warn!(message = %error.message, "a session could not be opened");
                    return opening.fail(error);
                }
            };
        let id = session.session_id().to_string();
        if let Some(files) = &editor_files {
            files.opened(&id);
        }
        let project_dir = session.project_dir().to_path_buf();
        let trust = (
            crate::trust::TrustStore::new(&self.config.paths.config_dir),
            project_dir.clone(),
        );
        tracing::info!(
            session = %id,
            project = %project_dir.display(),
            trusted = session.trusted(),
            model = %session.model(),
            resume,
            "session opened"
        );
        let waiting = Waiting::default();
        let config = ConfigState::new(self.config.mode, session.model(), &self.config.paths.config_dir);
        let ended = CancellationToken::new();
        let task = {
            let mut live = lock(&self.live);
            if live.sessions.contains_key(&id) {
                drop(live);
                return opening.fail(open_here(&id));
            }
            let (handle, task) = session.spawn();
            if live.closing {
                handle.submit(Op::End {
                    reason: "closed".into(),
                });
            }
            let handle = Handle {
                session: handle,
                trust: trust.clone(),
                cancel: Arc::new(Mutex::new(CancellationToken::new())),
                waiting: waiting.clone(),
                config: config.clone(),
                ended: ended.clone(),
                cx: cx.clone(),
            };
            live.sessions.insert(id.clone(), handle);
            task
        };
        // From here the live session itself stands for it.
        drop(loading);
        let session_id = SessionId::new(id);
        Forwarder::new(cx, session_id.clone(), project_dir, opening, waiting, config)
            .with_notices(diagnostics.iter().map(ToString::to_string))
            .with_elicitation(self.elicitation.modes())
            .with_live_notices(self.notices.load(std::sync::atomic::Ordering::Relaxed))
            .run(events)
            .await;
        // The session's MCP servers stop when its task ends.
        let _ = task.await;
        ended.cancel();
        tracing::info!(session = %session_id.0, "session ended");
    }
}
