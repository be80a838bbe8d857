//! `wait_for_mcp_servers`: offered in sessions with MCP servers. Servers start in the
//! background so that none holds the first model request up; a model that needs a server's tools
//! now (a one-shot `elph run` has no later prompt) calls this, and the tools are there in its next
//! step. The wait ends when every server has answered or failed (each within its
//! `startupTimeoutMs`), or when the turn is cancelled.

use std::sync::Arc;
use std::time::Duration;

use elph_agent::tools::{ToolContext, ToolOutput, TypedTool};

use super::catalog::{Shared, Status};
use super::server::human_duration;

pub(crate) const WAIT_TOOL: &str = "wait_for_mcp_servers";

/// Past the longest startup limit, how long the wait goes on for a start that has not reported
/// (a server killed with the session's end never does).
const MARGIN: Duration = Duration::from_secs(5);

/// No arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaitArgs {}

pub(crate) struct WaitTool {
    shared: Arc<Shared>,
}

impl WaitTool {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        WaitTool { shared }
    }

    /// The longest startup limit of the servers still starting, if any is.
    fn still_starting(&self) -> Option<Duration> {
        self.shared
            .servers()
            .iter()
            .filter(|server| server.status == Status::Starting)
            .map(|server| server.startup_timeout)
            .max()
    }

    /// One line per server: its tools, or why it has none.
    fn summary(&self) -> String {
        self.shared
            .servers()
            .iter()
            .map(|server| match &server.status {
                Status::Ready => {
                    let names = server.tool_names();
                    format!(
                        "MCP server '{}' is ready; its tools from your next step on: {}",
                        server.name,
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )
                }
                Status::Failed(reason) => format!("MCP server '{}' is not available: {reason}", server.name),
                Status::Starting => format!(
                    "MCP server '{}' has still not answered (its startup limit is {})",
                    server.name,
                    human_duration(server.startup_timeout)
                ),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[async_trait::async_trait]
impl TypedTool for WaitTool {
    type Args = WaitArgs;

    fn name(&self) -> &str {
        WAIT_TOOL
    }

    fn description(&self) -> &str {
        "Waits until the MCP servers that are still starting have answered or failed (at once if none \
         is), then says which tools each offers. Call it only if you need the tools of a server the \
         system prompt says is still starting."
    }

    fn mutates(&self) -> bool {
        false
    }

    async fn run(&self, _args: WaitArgs, _ctx: &ToolContext) -> ToolOutput {
        // Subscribed before the first look, so no change between the look and the wait is missed.
        let mut changes = self.shared.generation.subscribe();
        if let Some(longest) = self.still_starting() {
            let deadline = tokio::time::Instant::now() + longest + MARGIN;
            while self.still_starting().is_some() {
                match tokio::time::timeout_at(deadline, changes.changed()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) | Err(_) => break,
                }
            }
        }
        ToolOutput::text(self.summary())
    }
}

#[cfg(test)]
mod tests {
    use elph_agent::tools::ToolSource;

    use super::super::catalog::McpTools;
    use super::*;

    #[tokio::test]
    async fn the_wait_ends_when_the_last_server_answers_and_says_what_came() {
        let tools = Arc::new(McpTools::starting([
            ("a".to_string(), Duration::from_secs(600)),
            ("b".to_string(), Duration::from_secs(600)),
        ]));
        let wait = tools
            .tools()
            .into_iter()
            .find(|tool| tool.name() == WAIT_TOOL)
            .expect("offered while servers start");
        let ctx = ToolContext::new("/");
        let call = tokio::spawn(async move { wait.execute(serde_json::json!({}), &ctx).await });
        tools.set_failed("a", "it exited with status 2".into());
        tokio::task::yield_now().await;
        assert!(!call.is_finished(), "'b' is still starting");
        tools.set_ready("b", Vec::new());
        let output = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("the wait ends with the last start")
            .unwrap();
        let ToolOutput {
            content, is_error, ..
        } = output;
        assert!(!is_error);
        assert_eq!(
            content,
            vec![elph_agent::messages::ContentBlock::text(
                "MCP server 'a' is not available: it exited with status 2\n\
                 MCP server 'b' is ready; its tools from your next step on: none"
            )]
        );
    }
}
