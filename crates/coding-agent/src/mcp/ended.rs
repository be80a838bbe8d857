//! A stdio server that ends by itself while the session runs (it crashed, or exited between
//! calls): the session hears of it at once, not at the server's next call. Its tools leave the
//! catalog (the model is told, in the system prompt, that the server is not available and why),
//! its prompts stop being commands and its resources leave the read tool's list, and a notice
//! says so: the front ends show it when it happens (the terminal UI, an editor that declares
//! `session.notices`), or with their next answer. Elph does not restart the server in this
//! session; a new session (`/new` too: it builds a new runtime) starts it again.

use std::sync::Arc;

use elph_agent::harness::AgentEvent;
use tokio::sync::mpsc::UnboundedSender;

use super::catalog::McpTools;
use super::offers::Offers;
use super::server::McpServer;

/// Waits for `server`'s process to end; when Elph did not end it, takes what it offered out of
/// the session and tells `events`.
pub(crate) async fn follow_exit(
    server: Arc<McpServer>,
    tools: Arc<McpTools>,
    offers: Arc<Offers>,
    events: Option<UnboundedSender<AgentEvent>>,
) {
    let Some(reason) = server.ended().await else {
        server.told_gone();
        return;
    };
    tools.set_failed(server.name(), reason.clone());
    offers.forget(server.name());
    let message = notice(server.name(), &reason);
    tracing::warn!(%message, "mcp");
    if let Some(events) = events {
        let _ = events.send(AgentEvent::Notice { message });
    }
    server.told_gone();
}

/// What the user is told.
fn notice(server: &str, reason: &str) -> String {
    format!(
        "MCP server '{server}' stopped running: {reason}. Its tools, prompts and resources are no \
         longer offered in this session: Elph does not restart it (`/new` or a new session starts it \
         again)"
    )
}
