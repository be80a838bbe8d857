//! One MCP server for one session: connecting (stdio child or streamable HTTP), listing its tools,
//! calling them under a deadline, and stopping. Everything here runs on the MCP runtime
//! (see `mcp/mod.rs`).
//!
//! A call never hangs the turn: it ends with the server's answer, with the call's timeout (the
//! request is then cancelled with `notifications/cancelled`, and the server keeps running), or
//! with the server's death (the stdio child exited, or the connection closed), whichever comes
//! first. A server that died stays down for the rest of the session; a stdio server's exit is
//! noticed when it happens, between calls too (see `ended.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, GetPromptRequestParams, GetPromptResult, JsonObject,
    ReadResourceRequestParams, ReadResourceResult, Tool as McpToolSpec,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::async_rw::AsyncRwTransport;
use serde::Serialize;
use tokio::sync::watch;

use super::client::{ElphClient, Listener, ToolRefresh};
use super::config::{ServerDefinition, ServerTransport};
use super::process::{GroupKiller, ServerProcess, StderrTail, exited, server_environment};
use super::revision;

/// After the connection is closed at shutdown, how long a stdio server has to exit by itself
/// before its group is killed.
const EXIT_GRACE: Duration = Duration::from_millis(300);

/// Where a server is in its life, for doctor and the front ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ServerState {
    /// Configured and allowed, not started (doctor does not start servers).
    Configured,
    /// `"enabled": false`.
    Disabled,
    Running {
        tools: Vec<String>,
    },
    /// It could not start, or it stopped unexpectedly; the reason says which and why.
    Failed {
        reason: String,
    },
    /// Stopped at the end of the session, or when the project stopped being trusted.
    Stopped {
        reason: String,
    },
}

/// A live connection.
struct Connection {
    peer: Peer<RoleClient>,
    /// Kept so that the connection stays open; dropping the last one closes the transport. Calls
    /// go through it (not only the peer): on MCP 2026-07-28 it answers a server's
    /// "input required" results (roots, questions to the user) through [`ElphClient`] and asks
    /// again.
    service: Option<Arc<RunningService<RoleClient, ElphClient>>>,
    /// Stdio servers only: the group, killed when the connection is dropped.
    _group: Option<GroupKiller>,
    exit: Option<watch::Receiver<Option<String>>>,
    stderr: StderrTail,
}

/// One configured server and its connection.
pub struct McpServer {
    pub definition: ServerDefinition,
    project_dir: PathBuf,
    connection: tokio::sync::Mutex<Option<Connection>>,
    state: Mutex<ServerState>,
    /// The process group of a started stdio server, for the synchronous kill at shutdown.
    pgid: Mutex<Option<i32>>,
    /// The stderr of the last started stdio server, for messages about a failed start.
    stderr: Mutex<StderrTail>,
    /// Where an HTTP server's OAuth tokens are (none: no token is sent).
    credentials: Option<super::oauth::CredentialsFile>,
    /// What `roots/list` answers: the project and the writable roots.
    roots: Vec<PathBuf>,
    /// The server's announcements that its tools changed, and how far they have been followed.
    tool_refresh: Arc<ToolRefresh>,
    /// Where the server's questions to the user go (none: they are declined).
    elicitations: Arc<super::elicitation::Elicitations>,
    /// Its calls in flight and its open questions.
    desk: Arc<super::elicitation::ServerDesk>,
    /// Where the server's prompt and resource list changes go.
    listener: Option<Listener>,
    /// Whether something follows the process's exit ([`Self::ended`]), and whether it has told
    /// the session that the server is gone ([`Self::told_gone`]): a call the server died in
    /// returns after that, so the model's next request no longer offers its tools.
    followed: AtomicBool,
    told: watch::Sender<bool>,
}

/// `message`, followed by the last lines the server wrote to stderr, if any.
fn with_stderr(message: String, stderr: &StderrTail) -> String {
    let tail = stderr.text();
    if tail.is_empty() {
        return message;
    }
    let lines: Vec<&str> = tail.lines().collect();
    let last = lines[lines.len().saturating_sub(5)..].join(" | ");
    format!("{message}; its stderr ends with: {last}")
}

/// [`with_stderr`], once the server's stderr is closed (or after a moment): a server that just
/// died has its last words read first. The moment is 1 s because the reader of a server that has
/// exited may be scheduled late on a loaded machine (200 ms could lose them); it ends as soon as stderr
/// closes, so only a server whose stderr stays open (still running, or a child holding it) waits.
async fn explain(message: String, stderr: &StderrTail) -> String {
    stderr.settle(Duration::from_secs(1)).await;
    with_stderr(message, stderr)
}

/// Why a call did not produce a result.
#[derive(Debug, PartialEq, Eq)]
pub enum CallError {
    /// The server is not running (it failed to start, died earlier, or was stopped).
    Down(String),
    /// The server answered with a JSON-RPC error.
    Rejected(String),
    TimedOut(Duration),
    /// The server died, or its connection closed, during the call.
    Died(String),
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl McpServer {
    pub fn new(definition: ServerDefinition, project_dir: PathBuf) -> Self {
        McpServer {
            definition,
            project_dir,
            connection: tokio::sync::Mutex::new(None),
            state: Mutex::new(ServerState::Configured),
            pgid: Mutex::new(None),
            stderr: Mutex::new(StderrTail::default()),
            credentials: None,
            roots: Vec::new(),
            tool_refresh: Arc::default(),
            elicitations: Arc::new(super::elicitation::Elicitations::new(
                None,
                super::elicitation::ANSWER_LIMIT,
            )),
            desk: super::elicitation::ServerDesk::new(),
            listener: None,
            followed: AtomicBool::new(false),
            told: watch::channel(false).0,
        }
    }

    /// Tells `listener` of the server's prompt and resource list changes.
    pub(crate) fn with_listener(mut self, listener: Listener) -> Self {
        self.listener = Some(listener);
        self
    }

    /// The live connection's peer, for requests other than tool calls (prompts, resources).
    pub(crate) async fn peer(&self) -> Result<Peer<RoleClient>, CallError> {
        let slot = self.connection.lock().await;
        match (&*slot, self.state()) {
            (Some(connection), ServerState::Running { .. }) => Ok(connection.peer.clone()),
            (_, ServerState::Failed { reason } | ServerState::Stopped { reason }) => {
                Err(CallError::Down(reason))
            }
            _ => Err(CallError::Down("it is not running".into())),
        }
    }

    /// Sends the server's questions to the user through the session's `elicitations`.
    pub fn with_elicitations(mut self, elicitations: Arc<super::elicitation::Elicitations>) -> Self {
        self.elicitations = elicitations;
        self
    }

    /// Answers the server's `roots/list` with these folders.
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Self {
        self.roots = roots;
        self
    }

    fn client(&self) -> ElphClient {
        ElphClient::new(&self.roots, self.tool_refresh.clone())
            .with_elicitations(
                self.definition.name.clone(),
                self.elicitations.clone(),
                self.desk.clone(),
            )
            .with_listener(self.listener.clone())
    }

    pub(crate) fn tool_refresh(&self) -> &ToolRefresh {
        &self.tool_refresh
    }

    /// Lists the server's tools again, within its `timeoutMs` (it said they changed).
    pub(crate) async fn list_tools(&self) -> Result<Vec<McpToolSpec>, String> {
        let peer = {
            let slot = self.connection.lock().await;
            match &*slot {
                Some(connection) => connection.peer.clone(),
                None => return Err("it is not running".into()),
            }
        };
        let tools = match tokio::time::timeout(self.definition.timeout, peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => return Err(error.to_string()),
            Err(_) => {
                return Err(format!(
                    "no answer within {}",
                    human_duration(self.definition.timeout)
                ));
            }
        };
        if matches!(self.state(), ServerState::Running { .. }) {
            self.set_state(ServerState::Running {
                tools: tools.iter().map(|tool| tool.name.to_string()).collect(),
            });
        }
        Ok(tools)
    }

    /// Sends an HTTP server the OAuth token stored for it in `credentials` (`elph mcp login`).
    pub fn with_credentials(mut self, credentials: super::oauth::CredentialsFile) -> Self {
        self.credentials = Some(credentials);
        self
    }

    pub fn name(&self) -> &str {
        &self.definition.name
    }

    pub fn state(&self) -> ServerState {
        lock(&self.state).clone()
    }

    fn set_state(&self, state: ServerState) {
        *lock(&self.state) = state;
    }

    /// The process group of the running stdio server.
    pub fn pgid(&self) -> Option<i32> {
        *lock(&self.pgid)
    }

    /// Starts the server and lists its tools, all within the startup timeout. On failure the
    /// server is down (a started process is killed with its group) and the error says why.
    pub async fn start(&self) -> Result<Vec<McpToolSpec>, String> {
        let limit = self.definition.startup_timeout;
        let result = match tokio::time::timeout(limit, self.connect()).await {
            Ok(result) => result,
            Err(_) => {
                let stderr = lock(&self.stderr).clone();
                Err(explain(
                    format!(
                        "did not answer within {} of starting; skipped",
                        human_duration(limit)
                    ),
                    &stderr,
                )
                .await)
            }
        };
        match result {
            Ok(tools) => {
                self.set_state(ServerState::Running {
                    tools: tools.iter().map(|tool| tool.name.to_string()).collect(),
                });
                Ok(tools)
            }
            Err(reason) => {
                // The dropped connect future killed the group it started.
                lock(&self.pgid).take();
                self.set_state(ServerState::Failed {
                    reason: reason.clone(),
                });
                Err(reason)
            }
        }
    }

    async fn connect(&self) -> Result<Vec<McpToolSpec>, String> {
        let (service, group, exit, stderr) = match &self.definition.transport {
            ServerTransport::Stdio { command, args, env } => {
                let env = server_environment(&|name| std::env::var_os(name), &self.project_dir, env);
                let process = ServerProcess::spawn(&command.path, args, &self.project_dir, &env).await?;
                *lock(&self.pgid) = Some(process.group.pgid());
                *lock(&self.stderr) = process.stderr.clone();
                let (Some(stdout), Some(stdin)) = (process.stdout, process.stdin) else {
                    return Err("its stdin or stdout could not be piped".into());
                };
                let stderr = process.stderr;
                let service = tokio::select! {
                    biased;
                    service = self.open_stdio(AsyncRwTransport::new(stdout, stdin)) => match service {
                        Ok(service) => service,
                        Err(error) => {
                            // A server that closed its output has usually exited: its status says
                            // more than the closed pipe (2 s, as for a call, for a loaded machine).
                            let how = tokio::time::timeout(Duration::from_secs(2), exited(process.exit.clone()))
                                .await
                                .map(|how| format!("{how} during startup"))
                                .unwrap_or(error);
                            return Err(explain(how, &stderr).await);
                        }
                    },
                    how = exited(process.exit.clone()) => {
                        return Err(explain(format!("{how} during startup"), &stderr).await);
                    }
                };
                (service, Some(process.group), Some(process.exit), stderr)
            }
            ServerTransport::Http { url, headers } => {
                let name = &self.definition.name;
                let credentials = self.credentials.as_ref();
                let service =
                    super::oauth::connect_http(self.client(), name, url, headers, credentials).await?;
                (service, None, None, StderrTail::default())
            }
        };
        let peer = service.peer().clone();
        super::client::listen_for_changes(
            self.name(),
            &peer,
            self.tool_refresh.clone(),
            self.listener.clone(),
            self.definition.timeout,
        )
        .await;
        let tools = tokio::select! {
            biased;
            tools = peer.list_all_tools() => match tools {
                Ok(tools) => tools,
                Err(error) => return Err(explain(format!("failed to list its tools: {error}"), &stderr).await),
            },
            how = exit_or_never(exit.clone()) => {
                return Err(explain(format!("{how} while listing its tools"), &stderr).await);
            }
        };
        *self.connection.lock().await = Some(Connection {
            peer,
            service: Some(Arc::new(service)),
            _group: group,
            exit,
            stderr,
        });
        Ok(tools)
    }

    /// Opens a stdio server's connection in the revision it speaks (see [`super::revision`]).
    async fn open_stdio<R, W>(
        &self,
        transport: AsyncRwTransport<RoleClient, R, W>,
    ) -> Result<RunningService<RoleClient, ElphClient>, String>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        revision::open(self.client(), transport, self.name())
            .await
            .map_err(|error| error.to_string())
    }

    /// Calls `tool` with `arguments` under the server's timeout.
    pub async fn call(&self, tool: &str, arguments: JsonObject) -> Result<CallToolResult, CallError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let result = self
            .request(move |service| async move { service.call_tool(params).await })
            .await?;
        self.after_list_changes(self.definition.timeout).await;
        Ok(result)
    }

    /// Reads a resource, answering the server's questions first when it asks (MCP 2026-07-28's
    /// "input required": its roots, or the user's input), under the server's timeout.
    pub(crate) async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, CallError> {
        self.request(move |service| async move { service.read_resource(params).await })
            .await
    }

    /// Gets a prompt, answering the server's questions first when it asks, under the server's
    /// timeout.
    pub(crate) async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, CallError> {
        self.request(move |service| async move { service.get_prompt(params).await })
            .await
    }

    /// Sends one request through the live connection: within the server's `timeoutMs`, not
    /// counting the time the user takes to answer one of the server's questions, and ended by
    /// the server's death. It goes through the service, not the peer: on MCP 2026-07-28 the
    /// service answers the server's "input required" results through [`ElphClient`] and asks
    /// again.
    async fn request<T, F, Fut>(&self, send: F) -> Result<T, CallError>
    where
        F: FnOnce(Arc<RunningService<RoleClient, ElphClient>>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
    {
        let (service, exit, stderr) = {
            let slot = self.connection.lock().await;
            match (&*slot, self.state()) {
                (Some(connection), ServerState::Running { .. }) => (
                    connection.service.clone(),
                    connection.exit.clone(),
                    connection.stderr.clone(),
                ),
                (_, ServerState::Failed { reason } | ServerState::Stopped { reason }) => {
                    return Err(CallError::Down(reason));
                }
                _ => return Err(CallError::Down("it is not running".into())),
            }
        };
        let Some(service) = service else {
            return Err(CallError::Down("it is not running".into()));
        };
        let timeout = self.definition.timeout;
        // Dropping the request's future (on timeout, or when the turn is cancelled) makes rmcp
        // send `notifications/cancelled` for it. A question the server asks meanwhile belongs to
        // this request: it is withdrawn when the request ends.
        let _call = self.desk.call();
        let failure = tokio::select! {
            biased;
            result = self.desk.within(timeout, send(service)) => match result {
                Some(Ok(result)) => return Ok(result),
                Some(Err(ServiceError::McpError(error))) => {
                    return Err(CallError::Rejected(error.message.to_string()));
                }
                Some(Err(ServiceError::Timeout { timeout })) => return Err(CallError::TimedOut(timeout)),
                Some(Err(error)) => format!("closed the connection ({error})"),
                None => return Err(CallError::TimedOut(timeout)),
            },
            how = exit_or_never(exit.clone()) => how,
        };
        // The server is gone, or its connection is: say how (the exit status, when the process
        // ends within a moment), and keep it down. The moment ends as soon as the exit is known;
        // 2 s because a loaded machine may report a crashed server's exit late.
        let how = match exit {
            Some(exit) => tokio::time::timeout(Duration::from_secs(2), exited(exit))
                .await
                .unwrap_or(failure),
            None => failure,
        };
        let reason = explain(format!("it {how}"), &stderr).await;
        self.fail(format!("it stopped during a call ({reason})")).await;
        let failed = matches!(self.state(), ServerState::Failed { .. });
        if failed && self.followed.load(Ordering::SeqCst) {
            // 5 s: the follower reads the server's last words first (at most 1 s), and a loaded
            // machine may schedule it late.
            let mut told = self.told.subscribe();
            let _ = tokio::time::timeout(Duration::from_secs(5), told.wait_for(|told| *told)).await;
        }
        Err(CallError::Died(reason))
    }

    /// Waits until the stdio server's process ends, for the session to say so at once rather
    /// than at the server's next call. `None` when Elph stopped it (the session ended, the
    /// project stopped being trusted) or it has no process (an HTTP server). Otherwise the server
    /// is down from then on, and the answer says how it ended: the reason it is down (a call that
    /// noticed first has given the more exact one).
    pub(crate) async fn ended(&self) -> Option<String> {
        let (exit, stderr) = {
            let slot = self.connection.lock().await;
            let connection = slot.as_ref()?;
            (connection.exit.clone()?, connection.stderr.clone())
        };
        self.followed.store(true, Ordering::SeqCst);
        let how = exited(exit).await;
        if matches!(self.state(), ServerState::Stopped { .. }) {
            return None;
        }
        self.fail(explain(format!("it {how}"), &stderr).await).await;
        match self.state() {
            ServerState::Failed { reason } => Some(reason),
            // Stopped by Elph while its last words were read.
            _ => None,
        }
    }

    /// A tool that changes the server's tool list says so before it answers: its answer waits
    /// (at most `limit`) until the list has been read again, so the model's next request has it.
    /// The same for its prompts and resources, so the front end is told before the turn ends.
    async fn after_list_changes(&self, limit: Duration) {
        // The notification's handler runs in a task of its own that rmcp spawned before it handed
        // over this answer: one yield lets it count the change.
        tokio::task::yield_now().await;
        let _ = tokio::time::timeout(limit, self.tool_refresh.settled()).await;
    }

    /// The session has been told that the server is gone (after [`Self::ended`]).
    pub(crate) fn told_gone(&self) {
        self.told.send_replace(true);
    }

    /// Takes the server down for the rest of the session with `reason`, unless it is down
    /// already (then the first reason stays): the connection is dropped, which kills what is
    /// left of its group.
    async fn fail(&self, reason: String) {
        let connection = {
            let mut slot = self.connection.lock().await;
            if !matches!(self.state(), ServerState::Running { .. }) {
                return;
            }
            self.set_state(ServerState::Failed { reason });
            slot.take()
        };
        lock(&self.pgid).take();
        drop(connection);
    }

    /// Closes the connection, gives a stdio server a moment to exit on its own, then kills its
    /// whole group.
    pub async fn stop(&self, reason: &str) {
        let connection = self.connection.lock().await.take();
        if matches!(self.state(), ServerState::Running { .. }) {
            self.set_state(ServerState::Stopped {
                reason: reason.to_string(),
            });
        }
        let Some(mut connection) = connection else {
            return;
        };
        if let Some(service) = connection.service.take() {
            // Cancelling closes the transport: the server's stdin reaches EOF. A call still in
            // flight holds the service too; then it is told to stop without waiting for it.
            match Arc::try_unwrap(service) {
                Ok(service) => {
                    let _ = tokio::time::timeout(EXIT_GRACE, service.cancel()).await;
                }
                Err(service) => service.cancellation_token().cancel(),
            }
        }
        let exit = connection.exit.clone();
        if let Some(exit) = exit.clone() {
            let _ = tokio::time::timeout(EXIT_GRACE, exited(exit)).await;
        }
        lock(&self.pgid).take();
        // Dropping the connection kills the group: helpers the server left behind go too.
        drop(connection);
        if let Some(exit) = exit {
            // Let the watcher reap the killed server.
            let _ = tokio::time::timeout(EXIT_GRACE, exited(exit)).await;
        }
    }

    /// The synchronous last resort at shutdown: SIGKILL to the server's group, if it has one.
    pub fn kill_now(&self) {
        if let Some(pgid) = lock(&self.pgid).take() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// "10 s", or "1500 ms".
pub(crate) fn human_duration(duration: Duration) -> String {
    if duration.as_millis().is_multiple_of(1000) {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// Resolves when the process exits; never, for a server without a process.
async fn exit_or_never(exit: Option<watch::Receiver<Option<String>>>) -> String {
    match exit {
        Some(exit) => exited(exit).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
#[expect(
    clippy::string_slice,
    reason = "test code: a cut inside a character fails the test loudly"
)]
mod tests {
    use super::*;
    use crate::hooks::discovery::resolve_command;
    use crate::mcp::config::McpScope;

    fn script_server(dir: &std::path::Path, body: &str) -> McpServer {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("server.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let definition = ServerDefinition {
            pointer: String::new(),
            name: "s".into(),
            transport: ServerTransport::Stdio {
                command: resolve_command(path.to_str().unwrap(), dir, ""),
                args: Vec::new(),
                env: Default::default(),
            },
            timeout: Duration::from_secs(5),
            // Short enough to keep the hang test quick, long enough for a loaded machine to start
            // a shell, have it print, and exit within it (500 ms was not).
            startup_timeout: Duration::from_secs(3),
            enabled: true,
            source: dir.join("mcp.json"),
            scope: McpScope::Home,
        };
        McpServer::new(definition, dir.to_path_buf())
    }

    fn group_alive(pgid: i32) -> bool {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .any(|stat| {
                let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
                fields[2] == pgid.to_string() && fields[0] != "Z"
            })
    }

    #[tokio::test]
    async fn a_server_that_never_answers_is_killed_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let server = script_server(
            dir.path(),
            &format!(
                "echo $$ > '{}'; echo waiting >&2; sleep 300 & wait",
                pid_file.display()
            ),
        );
        let started = std::time::Instant::now();
        let error = server.start().await.unwrap_err();
        // Waiting for the server's 300 s sleep would take far longer than this margin.
        assert!(started.elapsed() < Duration::from_secs(60));
        assert_eq!(
            error,
            "did not answer within 3 s of starting; skipped; its stderr ends with: waiting"
        );
        assert!(matches!(server.state(), ServerState::Failed { .. }));
        let pgid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Killed processes may take a while to die on a loaded machine.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while group_alive(pgid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(!group_alive(pgid), "the server and its helper were killed");
        assert_eq!(
            server.call("x", Default::default()).await,
            Err(CallError::Down(error)),
            "its tools say why it is down"
        );
    }

    #[tokio::test]
    async fn a_server_that_exits_at_startup_says_how_and_what_it_printed() {
        let dir = tempfile::tempdir().unwrap();
        let server = script_server(dir.path(), "echo 'bad config: no token' >&2; exit 2");
        let error = server.start().await.unwrap_err();
        assert!(
            error.contains("exited with status 2") || error.contains("failed to initialize"),
            "{error}"
        );
        assert!(
            error.ends_with("its stderr ends with: bad config: no token"),
            "{error}"
        );
    }
}
