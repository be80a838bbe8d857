//! A server's tools after it said they changed (`notifications/tools/list_changed`): listed again,
//! they replace the server's tools in the session's catalog, so the model's next request offers
//! the new list. A listing that fails keeps the last good list, and the user is told.

use std::sync::Arc;

use elph_agent::harness::AgentEvent;
use tokio::sync::mpsc::UnboundedSender;

use super::catalog::{self, McpTools};
use super::server::McpServer;

/// Follows `server`'s announcements for as long as the session's MCP runtime runs.
pub(crate) async fn follow_tool_changes(
    server: Arc<McpServer>,
    tools: Arc<McpTools>,
    runtime: tokio::runtime::Handle,
    events: Option<UnboundedSender<AgentEvent>>,
) {
    let refresh = server.tool_refresh();
    let mut seen = refresh.subscribe();
    // A change announced while the server was starting is followed too.
    let mut count = *seen.borrow_and_update();
    loop {
        if count > 0 {
            relist(&server, &tools, &runtime, events.as_ref()).await;
            refresh.done(count);
        }
        match refresh.next_request(&mut seen).await {
            Some(next) => count = next,
            None => return,
        }
    }
}

async fn relist(
    server: &Arc<McpServer>,
    tools: &McpTools,
    runtime: &tokio::runtime::Handle,
    events: Option<&UnboundedSender<AgentEvent>>,
) {
    let mut notices = Vec::new();
    match server.list_tools().await {
        Ok(specs) => {
            let (server_tools, diagnostics) = catalog::server_tools(server, &specs, runtime);
            let names: Vec<String> = server_tools.iter().map(|tool| tool.name().to_string()).collect();
            tools.set_ready(server.name(), server_tools);
            notices.extend(diagnostics.iter().map(ToString::to_string));
            notices.push(format!(
                "MCP server '{}' changed its tools: {}",
                server.name(),
                if names.is_empty() {
                    "none now".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
        Err(reason) => notices.push(format!(
            "MCP server '{}' said its tools changed, but listing them again failed ({reason}); \
             its last list stays",
            server.name()
        )),
    }
    for message in notices {
        tracing::warn!(%message, "mcp");
        if let Some(events) = events {
            let _ = events.send(AgentEvent::Notice { message });
        }
    }
}
