//! MCP servers as tool providers (docs/mcp.md): servers from `CONFIG_DIR/mcp.json` and
//! `PROJECT_DIR/.elph/mcp.json` (only when the project is trusted: they are executables from the
//! repository, the same gate as project hooks), whose tools join the catalog as
//! `mcp_{server}__{tool}` with the server's input schema, so hooks match them like native tools.
//!
//! Life of a server, per session:
//! - **Start**: when the session's `Runtime` is built, every enabled, allowed server is started at
//!   once (concurrently), initialized and asked for its tools, each within 10 s
//!   ([`server::STARTUP_TIMEOUT`]). The catalog is fixed for a session and the model must see the
//!   tools in its first request, so "first use" is the session's start; a server that fails or
//!   does not answer is reported as a diagnostic, killed and skipped.
//! - **Calls**: each within the server's `timeoutMs` (default 60 s). A crash, a closed connection
//!   or a timeout gives the model an error result that names the server and the cause; the turn
//!   never waits on a dead or hung server. A cancelled call cancels the request.
//! - **Stop**: [`McpManager::stop`] (also on drop) closes each connection, gives a stdio server a
//!   moment to exit, then kills its whole process group.
//!
//! The servers, their connections and the calls run on a small tokio runtime of the manager's own,
//! so this works the same under every front end's runtime (and from synchronous code), and a
//! misbehaving server cannot starve the agent's runtime.

pub(crate) mod config;
pub(crate) mod expand;
pub mod file;
pub mod import;
pub mod inputs;
pub mod oauth;
pub(crate) mod process;
pub(crate) mod server;
pub(crate) mod tool;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elph_agent::tools::Tool;
use serde::Serialize;

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
}

/// What doctor shows without starting anything: the files, the configured servers (`configured`
/// or `disabled`; an untrusted project's file is `skippedUntrusted` and not read), diagnostics.
pub(crate) fn describe_servers(paths: &Paths, project_trusted: bool) -> McpOverview {
    // Nothing is asked here: a server that needs an input is shown as the session would start it.
    let config = McpConfig::load(paths, project_trusted, &inputs::McpInputs::placeholders());
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
    }
}

/// The session's MCP servers: owned by the `Runtime`, stopped with it.
pub struct McpManager {
    servers: Vec<Arc<McpServer>>,
    /// Disabled servers, listed for the status only.
    disabled: Vec<ServerDefinition>,
    files: Vec<McpFileStatus>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    stopped: AtomicBool,
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
        McpManager {
            servers: Vec::new(),
            disabled: Vec::new(),
            files: Vec::new(),
            runtime: Mutex::new(None),
            stopped: AtomicBool::new(false),
        }
    }

    /// Reads both mcp.json files (the project's only when `project_trusted`), starts every enabled
    /// server, and returns the manager, the tools to register, and the diagnostics (malformed
    /// files, untrusted project, servers that failed to start, tools that were skipped).
    ///
    /// Blocks the calling thread until every server has started or failed (at most the startup
    /// timeout); safe to call from synchronous code and from inside any tokio runtime.
    /// Nothing answers `${input:ID}` here: a server that needs an input without a default is
    /// skipped.
    pub fn start(paths: &Paths, project_trusted: bool) -> (McpManager, Vec<Arc<dyn Tool>>, Vec<Diagnostic>) {
        Self::start_with(
            paths,
            project_trusted,
            Vec::new(),
            &inputs::McpInputs::headless("this session"),
        )
    }

    /// [`McpManager::start`] with more servers after the files' (an editor's, over ACP), and the
    /// session's answers to the files' inputs. A name already taken by an mcp.json server is
    /// skipped with a diagnostic.
    pub fn start_with(
        paths: &Paths,
        project_trusted: bool,
        extra: Vec<ServerDefinition>,
        inputs: &inputs::McpInputs,
    ) -> (McpManager, Vec<Arc<dyn Tool>>, Vec<Diagnostic>) {
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
        let mut manager = McpManager {
            servers: Vec::new(),
            disabled,
            files: config.files,
            runtime: Mutex::new(None),
            stopped: AtomicBool::new(false),
        };
        if enabled.is_empty() {
            return (manager, Vec::new(), diagnostics);
        }
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("elph-mcp")
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => {
                diagnostics.push(Diagnostic::new(format!(
                    "MCP servers not started: cannot start their runtime: {error}"
                )));
                return (manager, Vec::new(), diagnostics);
            }
        };
        let handle = runtime.handle().clone();
        manager.servers = enabled
            .into_iter()
            .map(|definition| {
                let server = McpServer::new(definition, paths.project_dir.clone())
                    .with_credentials(oauth::CredentialsFile::new(&paths.config_dir));
                Arc::new(server)
            })
            .collect();
        *manager.runtime.lock().unwrap_or_else(|p| p.into_inner()) = Some(runtime);

        let servers = manager.servers.clone();
        let results = block_on(&handle, async move {
            let starts = servers.iter().map(|server| server.start());
            futures::future::join_all(starts).await
        })
        .unwrap_or_default();

        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut names = std::collections::HashSet::new();
        for (server, result) in manager.servers.iter().zip(results) {
            let specs = match result {
                Ok(specs) => specs,
                Err(reason) => {
                    diagnostics.push(
                        Diagnostic::new(format!("MCP server '{}' {reason}", server.name()))
                            .in_file(&server.definition.source),
                    );
                    continue;
                }
            };
            for spec in &specs {
                let tool = McpTool::new(server.clone(), spec, handle.clone());
                let name = tool.name().to_string();
                if name.len() > tool::MAX_TOOL_NAME {
                    diagnostics.push(
                        Diagnostic::new(format!(
                            "MCP server '{}': tool '{}' skipped: its name {name} is longer than {} characters",
                            server.name(),
                            spec.name,
                            tool::MAX_TOOL_NAME
                        ))
                        .in_file(&server.definition.source),
                    );
                } else if !names.insert(name.clone()) {
                    diagnostics.push(
                        Diagnostic::new(format!(
                            "MCP server '{}': tool '{}' skipped: another of its tools is also named {name}",
                            server.name(),
                            spec.name
                        ))
                        .in_file(&server.definition.source),
                    );
                } else {
                    tools.push(Arc::new(tool));
                }
            }
        }
        (manager, tools, diagnostics)
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

    /// The started servers and the runtime their connections live on, for mcpTool hooks.
    pub(crate) fn connections(&self) -> Option<crate::hooks::handler::mcp_tool::McpConnections> {
        let runtime = self.handle()?;
        Some(crate::hooks::handler::mcp_tool::McpConnections::new(
            self.servers.clone(),
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
        self.runtime
            .lock()
            .unwrap_or_else(|p| p.into_inner())
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

impl Drop for McpManager {
    fn drop(&mut self) {
        self.stop();
    }
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
