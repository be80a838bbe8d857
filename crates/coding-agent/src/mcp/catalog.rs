//! The session's MCP tools as their servers answer, or never do: the [`ToolSource`] the harness
//! reads before each model request. Servers start in the background, so a server's tools join
//! whenever it answers (before the first model request or later in the session), a changed tool
//! list replaces the old one, and the model is told which servers are still starting and which
//! will not come.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use elph_agent::tools::{Tool, ToolSource};
use rmcp::model::Tool as McpToolSpec;

use super::server::McpServer;
use super::tool::{self, McpTool};
use super::wait::{WAIT_TOOL, WaitTool};
use crate::diagnostics::Diagnostic;

/// Where one server is, as far as its tools go.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Status {
    Starting,
    Ready,
    /// It did not start; the reason is the whole diagnostic line.
    Failed(String),
}

pub(crate) struct ServerTools {
    pub(crate) name: String,
    pub(crate) status: Status,
    /// Its `startupTimeoutMs`: how long a wait for it can last.
    pub(crate) startup_timeout: Duration,
    tools: Vec<Arc<dyn Tool>>,
}

impl ServerTools {
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|tool| tool.name().to_string()).collect()
    }
}

/// Every enabled server's tools and status, in the order of the configuration, and a generation
/// that every change bumps (a watch, so [`super::wait::WaitTool`] can wait for changes).
pub(crate) struct Shared {
    pub(crate) servers: Mutex<Vec<ServerTools>>,
    pub(crate) generation: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn servers(&self) -> std::sync::MutexGuard<'_, Vec<ServerTools>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `server`'s status once it is no longer starting, or `Starting` when `limit` ran out first;
    /// `None` when the session has no such server.
    pub(crate) async fn settled(&self, server: &str, limit: Duration) -> Option<Status> {
        // Subscribed before the first look, so no change between the look and the wait is missed.
        let mut changes = self.generation.subscribe();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let status = self
                .servers()
                .iter()
                .find(|entry| entry.name == server)
                .map(|entry| entry.status.clone())?;
            if status != Status::Starting {
                return Some(status);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return Some(Status::Starting),
            }
        }
    }
}

/// The session's MCP tools, for the harness.
pub(crate) struct McpTools {
    shared: Arc<Shared>,
    /// Reads the servers' resources (set once the servers are made).
    reader: std::sync::OnceLock<Arc<super::resources::Reader>>,
}

impl McpTools {
    /// Every server (name and startup limit) is starting, none has tools.
    pub(crate) fn starting(servers: impl IntoIterator<Item = (String, Duration)>) -> McpTools {
        McpTools {
            shared: Arc::new(Shared {
                servers: Mutex::new(
                    servers
                        .into_iter()
                        .map(|(name, startup_timeout)| ServerTools {
                            name,
                            status: Status::Starting,
                            startup_timeout,
                            tools: Vec::new(),
                        })
                        .collect(),
                ),
                generation: tokio::sync::watch::channel(0).0,
            }),
            reader: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn set_reader(&self, reader: Arc<super::resources::Reader>) {
        let _ = self.reader.set(reader);
    }

    /// The live statuses, for mcpTool hooks that call a server which may still be starting.
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
    }

    fn update(&self, server: &str, change: impl FnOnce(&mut ServerTools)) {
        let mut servers = self.shared.servers();
        if let Some(entry) = servers.iter_mut().find(|entry| entry.name == server) {
            change(entry);
        }
        // Bumped while the lock is held, so a reader that sees the new generation sees the change.
        self.shared.generation.send_modify(|generation| *generation += 1);
    }

    /// The server answered: these are its tools now (at its start, or after it said they changed).
    pub(crate) fn set_ready(&self, server: &str, tools: Vec<Arc<dyn Tool>>) {
        self.update(server, |entry| {
            entry.status = Status::Ready;
            entry.tools = tools;
        });
    }

    /// The server did not start; `reason` is what the model is told.
    pub(crate) fn set_failed(&self, server: &str, reason: String) {
        self.update(server, |entry| {
            entry.status = Status::Failed(reason);
            entry.tools.clear();
        });
    }
}

impl ToolSource for McpTools {
    fn generation(&self) -> u64 {
        *self.shared.generation.borrow()
    }

    /// The ready servers' tools, and the tool that waits for servers still starting. That one is
    /// there whenever the session has servers, not only while one starts: a model (or a script)
    /// that waits first gets the same answer whether its server was quick or not.
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let servers = self.shared.servers();
        let mut tools: Vec<Arc<dyn Tool>> = servers
            .iter()
            .flat_map(|entry| entry.tools.iter().cloned())
            .collect();
        if !servers.is_empty() {
            tools.push(Arc::new(WaitTool::new(self.shared.clone())));
        }
        tools.extend(self.reader.get().and_then(|reader| reader.tool()));
        tools
    }

    fn note(&self) -> String {
        let servers = self.shared.servers();
        let lines: Vec<String> = servers
            .iter()
            .filter_map(|entry| match &entry.status {
                Status::Starting => Some(format!(
                    "- '{}' is still starting; its tools (mcp_{}__*) join when it answers \
                     (call {WAIT_TOOL} if you need them now).",
                    entry.name, entry.name
                )),
                Status::Failed(reason) => Some(format!(
                    "- '{}' is not available in this session: {reason}",
                    entry.name
                )),
                Status::Ready => None,
            })
            .collect();
        if lines.is_empty() {
            return String::new();
        }
        format!("MCP servers whose tools are not offered:\n{}", lines.join("\n"))
    }
}

/// The catalog tools of `server`'s `specs`, and a diagnostic for each one left out (a name too
/// long for providers, or one that another of its tools also maps to).
pub(crate) fn server_tools(
    server: &Arc<McpServer>,
    specs: &[McpToolSpec],
    runtime: &tokio::runtime::Handle,
) -> (Vec<Arc<dyn Tool>>, Vec<Diagnostic>) {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    let mut diagnostics = Vec::new();
    let mut names = std::collections::HashSet::new();
    for spec in specs {
        let tool = McpTool::new(server.clone(), spec, runtime.clone());
        let name = elph_agent::tools::TypedTool::name(&tool).to_string();
        let problem = if name.len() > tool::MAX_TOOL_NAME {
            Some(format!(
                "its name {name} is longer than {} characters",
                tool::MAX_TOOL_NAME
            ))
        } else if !names.insert(name.clone()) {
            Some(format!("another of its tools is also named {name}"))
        } else {
            None
        };
        match problem {
            Some(problem) => diagnostics.push(
                Diagnostic::new(format!(
                    "MCP server '{}': tool '{}' skipped: {problem}",
                    server.name(),
                    spec.name
                ))
                .in_file(&server.definition.source),
            ),
            None => tools.push(Arc::new(tool)),
        }
    }
    (tools, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_servers_still_starting_and_those_that_failed() {
        let limit = Duration::from_secs(1);
        let tools = McpTools::starting([
            ("slow".to_string(), limit),
            ("bad".to_string(), limit),
            ("ok".to_string(), limit),
        ]);
        let first = tools.generation();
        tools.set_failed("bad", "it exited with status 2".into());
        tools.set_ready("ok", Vec::new());
        assert_ne!(tools.generation(), first, "a change shows in the generation");
        assert_eq!(
            tools.note(),
            "MCP servers whose tools are not offered:\n\
             - 'slow' is still starting; its tools (mcp_slow__*) join when it answers \
             (call wait_for_mcp_servers if you need them now).\n\
             - 'bad' is not available in this session: it exited with status 2"
        );
        let names: Vec<String> = tools.tools().iter().map(|t| t.name().to_string()).collect();
        assert_eq!(names, ["wait_for_mcp_servers"]);
        tools.set_ready("slow", Vec::new());
        tools.set_ready("bad", Vec::new());
        assert_eq!(tools.note(), "");
        assert!(
            McpTools::starting([]).tools().is_empty(),
            "no servers, no waiting"
        );
    }
}
