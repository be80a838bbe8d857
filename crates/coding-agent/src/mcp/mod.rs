//! MCP servers as tool providers (docs/mcp.md): servers from `CONFIG_DIR/mcp.json` and
//! `PROJECT_DIR/.elph/mcp.json` (only when the project is trusted: they are executables from the
//! repository, the same gate as project hooks), whose tools join the catalog as
//! `mcp_{server}__{tool}` with the server's input schema, so hooks match them like native tools.
//!
//! Life of a server, per session:
//! - **Start**: when the session's `Runtime` is built, every enabled, allowed server is started at
//!   once, in the background, each within its `startupTimeoutMs`: the session does not wait, so a
//!   server that never answers holds nothing up. A server's tools join the harness's catalog
//!   (through [`McpManager::tool_source`]) before the first model request after it answered; until
//!   then, and for good if it fails, the model is told about it in the system prompt. A server that
//!   fails or does not answer is reported as a notice, killed and skipped.
//! - **Calls**: each within the server's `timeoutMs` (default 60 s). A crash, a closed connection
//!   or a timeout gives the model an error result that names the server and the cause; the turn
//!   never waits on a dead or hung server. A cancelled call cancels the request.
//! - **Exit**: a stdio server whose process ends by itself, during a call or between calls, is
//!   down for the rest of the session: its tools, prompts and resources leave the session and a
//!   notice says so when it happens (`ended.rs`).
//! - **Stop**: [`McpManager::stop`] (also on drop) closes each connection, gives a stdio server a
//!   moment to exit, then kills its whole process group.
//!
//! The servers, their connections and the calls run on a small tokio runtime of the manager's own,
//! so this works the same under every front end's runtime (and from synchronous code), and a
//! misbehaving server cannot starve the agent's runtime.

pub(crate) mod catalog;
mod client;
pub(crate) mod config;
pub mod elicitation;
mod ended;
pub(crate) mod expand;
pub mod file;
pub mod import;
pub mod inputs;
pub mod oauth;
mod offers;
pub(crate) mod process;
pub(crate) mod prompts;
mod refresh;
pub(crate) mod resources;
mod revision;
pub(crate) mod server;
pub(crate) mod tool;
pub(crate) mod wait;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use catalog::McpTools;
use elph_agent::harness::AgentEvent;
use elph_agent::tools::Tool;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

use crate::diagnostics::Diagnostic;
use crate::paths::Paths;
pub use config::{McpConfig, McpFileState, McpFileStatus, McpScope, ServerDefinition, ServerTransport};
pub use server::{McpServer, ServerState};
pub use tool::McpTool;

/// How long `stop` waits for the servers to close before it kills what is left.
const STOP_LIMIT: Duration = Duration::from_secs(3);

/// A server and where it is, for doctor and the front ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    #[serde(flatten)]
    pub definition: ServerDefinition,
    #[serde(flatten)]
    pub state: ServerState,
}

/// The MCP part of doctor: the files, every server with its state, the diagnostics, and other
/// clients' MCP files that `elph mcp import` can bring.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpOverview {
    pub files: Vec<McpFileStatus>,
    pub servers: Vec<ServerStatus>,
    pub diagnostics: Vec<Diagnostic>,
    pub other_clients: Vec<import::OtherClientFile>,
    /// Each HTTP server's OAuth login as CONFIG_DIR/mcp-credentials.json holds it, in words, by
    /// server name.
    pub logins: std::collections::BTreeMap<String, String>,
}

/// What doctor shows without starting anything: the files, the configured servers (`configured`
/// or `disabled`; an untrusted project's file is `skippedUntrusted` and not read), diagnostics.
pub(crate) fn describe_servers(paths: &Paths, project_trusted: bool) -> McpOverview {
    // Nothing is asked here: a server that needs an input is shown as the session would start it.
    let config = McpConfig::load(paths, project_trusted, &inputs::McpInputs::placeholders());
    let credentials = oauth::store::CredentialsFile::new(&paths.config_dir);
    let logins = config
        .servers
        .iter()
        .filter_map(|server| match &server.transport {
            ServerTransport::Http { url, .. } => {
                Some((server.name.clone(), credentials.login_state(&server.name, url)))
            }
            ServerTransport::Stdio { .. } => None,
        })
        .collect();
    let servers = config
        .servers
        .into_iter()
        .map(|definition| ServerStatus {
            state: if definition.enabled {
                ServerState::Configured
            } else {
                ServerState::Disabled
            },
            definition,
        })
        .collect();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    McpOverview {
        files: config.files,
        servers,
        diagnostics: config.diagnostics,
        other_clients: import::other_client_files(paths, home.as_deref()),
        logins,
    }
}

/// The session's MCP servers: owned by the `Runtime`, stopped with it.
pub struct McpManager {
    servers: Vec<Arc<McpServer>>,
    /// Disabled servers, listed for the status only.
    disabled: Vec<ServerDefinition>,
    files: Vec<McpFileStatus>,
    /// The servers' tools as they join.
    tools: Arc<McpTools>,
    /// The servers' prompts and resources as they are listed.
    offers: Arc<offers::Offers>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    /// The servers' starts, until [`McpManager::wait_for_starts`] takes them.
    starts: Mutex<Vec<tokio::task::JoinHandle<Vec<Diagnostic>>>>,
    stopped: AtomicBool,
    /// Where the servers' questions to the user go.
    elicitations: Arc<elicitation::Elicitations>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field(
                "servers",
                &self.servers.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl McpManager {
    /// No servers.
    pub fn empty() -> Self {
        let tools = Arc::new(McpTools::starting([]));
        McpManager {
            servers: Vec::new(),
            disabled: Vec::new(),
            files: Vec::new(),
            offers: Arc::new(offers::Offers::new(tools.shared())),
            tools,
            runtime: Mutex::new(None),
            starts: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            elicitations: Arc::new(elicitation::Elicitations::new(None, elicitation::ANSWER_LIMIT)),
        }
    }

    /// Reads both mcp.json files (the project's only when `project_trusted`), starts every enabled
    /// server, waits until each has started or failed, and returns the manager, the tools, and
    /// the diagnostics (malformed files, untrusted project, servers that failed to start, tools
    /// that were skipped). For callers that need every tool at once; a session uses
    /// [`McpManager::launch`], which does not wait. Nothing answers `${input:ID}` here: a server
    /// that needs an input without a default is skipped.
    pub fn start(paths: &Paths, project_trusted: bool) -> (McpManager, Vec<Arc<dyn Tool>>, Vec<Diagnostic>) {
        let inputs = inputs::McpInputs::headless("this session");
        let (manager, mut diagnostics) = Self::launch(paths, project_trusted, Vec::new(), &inputs, None);
        diagnostics.extend(manager.wait_for_starts());
        let tools = elph_agent::tools::ToolSource::tools(manager.tools.as_ref());
        (manager, tools, diagnostics)
    }

    /// Reads both mcp.json files (the project's only when `project_trusted`), adds `extra` (an
    /// editor's servers, over ACP; a name already taken by an mcp.json server is skipped with a
    /// diagnostic), expands `${input:ID}` with the session's `inputs`, and starts every enabled
    /// server in the background, all at once. Returns at
    /// once, with the diagnostics of the files; each server's tools join
    /// [`McpManager::tool_source`] when it answers, and `events` hears of each server that is
    /// ready or failed.
    ///
    /// Safe to call from synchronous code and from inside any tokio runtime.
    pub fn launch(
        paths: &Paths,
        project_trusted: bool,
        extra: Vec<ServerDefinition>,
        inputs: &inputs::McpInputs,
        events: Option<UnboundedSender<AgentEvent>>,
    ) -> (McpManager, Vec<Diagnostic>) {
        let mut config = McpConfig::load(paths, project_trusted, inputs);
        for server in extra {
            if let Some(first) = config.servers.iter().find(|s| s.name == server.name) {
                config.diagnostics.push(Diagnostic::new(format!(
                    "the editor's MCP server '{}' is skipped: {} already defines a server of that name",
                    server.name,
                    first.source.display()
                )));
                continue;
            }
            config.servers.push(server);
        }
        let mut diagnostics = config.diagnostics;
        if project_trusted {
            // Checked again right before the spawn: a change since the session's decision is caught.
            let decision = crate::trust::TrustStore::new(&paths.config_dir).decide(&paths.project_dir);
            if let Some(changes) = decision.changes() {
                config.servers.retain(|server| {
                    if server.scope != McpScope::Project {
                        return true;
                    }
                    diagnostics.push(Diagnostic::new(format!(
                        "MCP server '{}' not started: the project changed since you trusted it ({}); \
                         review the change, then run `elph trust {}`",
                        server.name,
                        changes.summary(),
                        crate::diagnostics::shell_quote(&paths.project_dir)
                    )));
                    false
                });
            }
        }
        let (enabled, disabled): (Vec<_>, Vec<_>) = config.servers.into_iter().partition(|s| s.enabled);
        let tools = Arc::new(McpTools::starting(
            enabled.iter().map(|s| (s.name.clone(), s.startup_timeout)),
        ));
        let mut manager = McpManager {
            offers: Arc::new(offers::Offers::new(tools.shared())),
            tools,
            servers: Vec::new(),
            disabled,
            files: config.files,
            runtime: Mutex::new(None),
            starts: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            elicitations: Arc::new(elicitation::Elicitations::new(
                events.clone(),
                elicitation::ANSWER_LIMIT,
            )),
        };
        if enabled.is_empty() {
            return (manager, diagnostics);
        }
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("elph-mcp")
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => {
                let reason = format!("MCP servers not started: cannot start their runtime: {error}");
                for server in &enabled {
                    manager.tools.set_failed(&server.name, reason.clone());
                }
                diagnostics.push(Diagnostic::new(reason));
                return (manager, diagnostics);
            }
        };
        let handle = runtime.handle().clone();
        let roots = roots(paths);
        manager.servers = enabled
            .into_iter()
            .map(|definition| {
                let listener = client::Listener {
                    server: definition.name.clone(),
                    offers: manager.offers.clone(),
                    limit: definition.timeout,
                };
                let server = McpServer::new(definition, paths.project_dir.clone())
                    .with_credentials(oauth::CredentialsFile::new(&paths.config_dir))
                    .with_roots(roots.clone())
                    .with_elicitations(manager.elicitations.clone())
                    .with_listener(listener);
                Arc::new(server)
            })
            .collect();
        manager.tools.set_reader(Arc::new(resources::Reader {
            servers: manager.servers.clone(),
            offers: manager.offers.clone(),
            runtime: handle.clone(),
        }));
        *lock(&manager.runtime) = Some(runtime);
        let starts = manager
            .servers
            .iter()
            .map(|server| {
                handle.spawn(start_one(
                    server.clone(),
                    manager.tools.clone(),
                    manager.offers.clone(),
                    handle.clone(),
                    events.clone(),
                ))
            })
            .collect();
        *lock(&manager.starts) = starts;
        (manager, diagnostics)
    }

    /// Where the servers' questions to the user go: the session attaches its queue here.
    pub fn elicitations(&self) -> &elicitation::Elicitations {
        &self.elicitations
    }

    /// The servers' tools as they join, for the harness.
    pub fn tool_source(&self) -> Arc<dyn elph_agent::tools::ToolSource> {
        self.tools.clone()
    }

    /// Waits until every server has started or failed; the diagnostics of those that failed and
    /// of the tools that were skipped.
    pub fn wait_for_starts(&self) -> Vec<Diagnostic> {
        let starts = std::mem::take(&mut *lock(&self.starts));
        let Some(handle) = self.handle() else {
            return Vec::new();
        };
        block_on(&handle, async move {
            let mut diagnostics = Vec::new();
            for start in starts {
                diagnostics.extend(start.await.unwrap_or_default());
            }
            diagnostics
        })
        .unwrap_or_default()
    }

    /// Every configured server (disabled ones too) and its state now.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        let mut statuses: Vec<ServerStatus> = self
            .servers
            .iter()
            .map(|server| ServerStatus {
                definition: server.definition.clone(),
                state: server.state(),
            })
            .collect();
        statuses.extend(self.disabled.iter().map(|definition| ServerStatus {
            definition: definition.clone(),
            state: ServerState::Disabled,
        }));
        statuses
    }

    /// The servers, their live statuses and the runtime their connections live on, for mcpTool
    /// hooks: taken at the session's start, it reaches each server once it answers.
    pub(crate) fn connections(&self) -> Option<crate::hooks::handler::mcp_tool::McpConnections> {
        let runtime = self.handle()?;
        Some(crate::hooks::handler::mcp_tool::McpConnections::new(
            self.servers.clone(),
            self.tools.shared(),
            runtime,
        ))
    }

    /// The mcp.json files and what became of them.
    pub fn files(&self) -> &[McpFileStatus] {
        &self.files
    }

    /// Stops the project's servers (the project is no longer trusted). Their tools stay in the
    /// session's catalog and answer with an error that says why.
    pub fn stop_project_servers(&self) {
        let Some(handle) = self.handle() else {
            return;
        };
        let servers: Vec<Arc<McpServer>> = self
            .servers
            .iter()
            .filter(|server| server.definition.scope == McpScope::Project)
            .cloned()
            .collect();
        block_on(&handle, async move {
            for server in servers {
                server
                    .stop("stopped because the project is no longer trusted")
                    .await;
            }
        });
    }

    fn handle(&self) -> Option<tokio::runtime::Handle> {
        lock(&self.runtime)
            .as_ref()
            .map(|runtime| runtime.handle().clone())
    }

    /// Stops every server: closes its connection, gives a stdio server a moment to exit on its
    /// own, then kills its whole process group. Idempotent; blocks for at most a few seconds.
    pub fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let runtime = self.runtime.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(runtime) = runtime else {
            return;
        };
        let servers = self.servers.clone();
        let handle = runtime.handle().clone();
        let _ = block_on_within(&handle, STOP_LIMIT, async move {
            let stops = servers
                .iter()
                .map(|server| server.stop("stopped at the end of the session"));
            futures::future::join_all(stops).await;
        });
        for server in &self.servers {
            server.kill_now();
        }
        runtime.shutdown_background();
    }
}

/// What servers get for `roots/list`: the project and the sandbox's writable roots of
/// settings.json (`sandbox.writableRoots`, `writableCaches`), the folders Elph works in.
fn roots(paths: &Paths) -> Vec<std::path::PathBuf> {
    let mut roots = vec![paths.project_dir.clone()];
    // A settings.json that does not load stops the session before this, with its own message.
    if let Ok(settings) = crate::settings::Settings::load(&paths.config_dir)
        && let Ok(writable) = crate::sandbox::user_writable_roots(paths, &settings)
    {
        for root in writable {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
    }
    roots
}

/// Starts one server; its tools join `tools` when it answers. Returns the diagnostics (a failed
/// start, tools skipped), which also go to `events` as notices, with a line when it is ready.
async fn start_one(
    server: Arc<McpServer>,
    tools: Arc<McpTools>,
    offers: Arc<offers::Offers>,
    runtime: tokio::runtime::Handle,
    events: Option<UnboundedSender<AgentEvent>>,
) -> Vec<Diagnostic> {
    let notice = |message: String| {
        if let Some(events) = &events {
            let _ = events.send(AgentEvent::Notice { message });
        }
    };
    match server.start().await {
        Ok(specs) => {
            let (server_tools, mut diagnostics) = catalog::server_tools(&server, &specs, &runtime);
            // Before its tools join: when the server counts as ready, its prompts are commands.
            if let Ok(peer) = server.peer().await {
                let problems = offers
                    .on_ready(server.name(), &peer, server.definition.timeout)
                    .await;
                diagnostics.extend(
                    problems
                        .into_iter()
                        .map(|problem| Diagnostic::new(problem).in_file(&server.definition.source)),
                );
            }
            let count = server_tools.len();
            // Told before its tools join: whoever waits for the server (`wait_for_mcp_servers`)
            // finds the notices queued already.
            for diagnostic in &diagnostics {
                tracing::warn!(%diagnostic, "mcp");
                notice(diagnostic.to_string());
            }
            notice(format!(
                "MCP server '{}' is ready: {count} tool{}",
                server.name(),
                if count == 1 { "" } else { "s" }
            ));
            tools.set_ready(server.name(), server_tools);
            runtime.spawn(refresh::follow_tool_changes(
                server.clone(),
                tools.clone(),
                runtime.clone(),
                events.clone(),
            ));
            runtime.spawn(ended::follow_exit(
                server.clone(),
                tools.clone(),
                offers.clone(),
                events.clone(),
            ));
            diagnostics
        }
        Err(reason) => {
            let diagnostic = Diagnostic::new(format!("MCP server '{}' {reason}", server.name()))
                .in_file(&server.definition.source);
            tools.set_failed(server.name(), reason);
            tracing::warn!(%diagnostic, "mcp");
            notice(diagnostic.to_string());
            vec![diagnostic]
        }
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `future` on `handle`'s runtime and waits for it on this thread (a plain channel wait, so
/// it works inside another runtime's task as well as outside any runtime).
fn block_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    future: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv().ok()
}

fn block_on_within<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    limit: Duration,
    future: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv_timeout(limit).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn describe_servers_lists_files_servers_and_states_without_starting_anything() {
        let root = tempfile::tempdir().unwrap();
        let paths = Paths {
            config_dir: root.path().join("config"),
            data_dir: root.path().join("data"),
            project_dir: root.path().join("project"),
        };
        std::fs::create_dir_all(&paths.config_dir).unwrap();
        std::fs::create_dir_all(paths.project_dir.join(".elph")).unwrap();
        std::fs::write(
            config::home_file(&paths),
            r#"{"servers": {"gh": {"url": "https://example.com/mcp", "headers": {"Authorization": "secret"}},
                            "off": {"command": "/bin/true", "enabled": false}}}"#,
        )
        .unwrap();
        std::fs::write(
            config::project_file(&paths),
            r#"{"servers": {"p": {"command": "/bin/true"}}}"#,
        )
        .unwrap();

        let overview = describe_servers(&paths, false);
        let value = serde_json::to_value(&overview).unwrap();
        assert_eq!(value["servers"][0]["name"], "gh");
        assert_eq!(value["servers"][0]["transport"], "http");
        assert_eq!(
            value["servers"][0]["headers"],
            json!(["Authorization"]),
            "header values stay out"
        );
        assert_eq!(value["servers"][0]["state"], "configured");
        assert_eq!(value["servers"][0]["timeoutMs"], 60000);
        assert_eq!(value["servers"][1]["state"], "disabled");
        assert_eq!(value["servers"][1]["command"]["path"], "/bin/true");
        assert_eq!(value["files"][1]["state"], "skippedUntrusted");
        assert_eq!(
            overview.servers.len(),
            2,
            "the untrusted project's file is not read"
        );
        assert_eq!(overview.diagnostics.len(), 1);

        let trusted = describe_servers(&paths, true);
        assert_eq!(trusted.servers.len(), 3);
        assert_eq!(trusted.servers[2].definition.scope, McpScope::Project);
        assert!(!value.to_string().contains("secret"));
    }
}
