//! An mcpTool hook: calls a tool of a connected MCP server (mcp.json) with the payload as its
//! arguments; the tool's answer is the outcome.
//!
//! The answer is the result's structured content when it has one, else its text. A result marked
//! as an error, a server that is down, or no such server fails the run with what went wrong.
//!
//! Servers start in the background, so a hook may run before its server has answered: it waits
//! for the server within its own timeout, and a server still starting when that runs out, or one
//! that failed to start, fails the run (a `failClosed` hook then blocks).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, ContentBlock};

use super::Answer;
use crate::hooks::config::McpToolConfig;
use crate::mcp::McpServer;
use crate::mcp::catalog::{Shared, Status};
use crate::mcp::tool::describe_error;

/// The session's MCP servers, whether each has answered yet, and the runtime their connections
/// live on.
#[derive(Clone)]
pub(crate) struct McpConnections {
    servers: Vec<Arc<McpServer>>,
    statuses: Arc<Shared>,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for McpConnections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.servers.iter().map(|server| server.name()))
            .finish()
    }
}

impl McpConnections {
    pub(crate) fn new(
        servers: Vec<Arc<McpServer>>,
        statuses: Arc<Shared>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        McpConnections {
            servers,
            statuses,
            runtime,
        }
    }
}

/// Calls the hook's tool with `payload` (a JSON object) within `timeout`.
pub(crate) async fn call(
    connections: Option<&McpConnections>,
    target: &McpToolConfig,
    payload: &[u8],
    timeout: Duration,
) -> Answer {
    let McpToolConfig { server, tool } = target;
    let Some(connections) = connections else {
        return Answer::refused(format!(
            "this session has no MCP servers, so there is no '{server}' to call (mcp.json)"
        ));
    };
    let Some(found) = connections.servers.iter().find(|s| s.name() == server) else {
        let names: Vec<&str> = connections.servers.iter().map(|s| s.name()).collect();
        return Answer::refused(format!(
            "no MCP server '{server}' is connected (connected: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ));
    };
    let Ok(serde_json::Value::Object(arguments)) = serde_json::from_slice::<serde_json::Value>(payload)
    else {
        return Answer::refused("its payload is not a JSON object");
    };
    let started = Instant::now();
    match connections.statuses.settled(server, timeout).await {
        Some(Status::Starting) => {
            return Answer::failed(
                format!(
                    "MCP server '{server}' was still starting when the hook's {} ms ran out (timeoutMs)",
                    timeout.as_millis()
                ),
                started.elapsed(),
            );
        }
        Some(Status::Failed(reason)) => {
            return Answer::failed(
                format!("MCP server '{server}' is not available: {reason}"),
                started.elapsed(),
            );
        }
        Some(Status::Ready) | None => {}
    }
    let remaining = timeout.saturating_sub(started.elapsed());
    let found = found.clone();
    let remote = tool.clone();
    // On the servers' runtime, where their connections live; dropping the join cancels nothing
    // there, so the call carries the hook's timeout itself.
    let call = connections
        .runtime
        .spawn(async move { tokio::time::timeout(remaining, found.call(&remote, arguments)).await });
    let result = match call.await {
        Err(error) => {
            return Answer::failed(
                format!("the call to MCP server '{server}' did not finish: {error}"),
                started.elapsed(),
            );
        }
        Ok(Err(_)) => {
            return Answer::failed(
                format!(
                    "MCP server '{server}' did not answer tool '{tool}' within {} ms (timeoutMs)",
                    timeout.as_millis()
                ),
                started.elapsed(),
            );
        }
        Ok(Ok(Err(error))) => return Answer::failed(describe_error(server, tool, &error), started.elapsed()),
        Ok(Ok(Ok(result))) => result,
    };
    answer_of(server, tool, result, started.elapsed())
}

/// The outcome bytes of a tool's result.
fn answer_of(server: &str, tool: &str, result: CallToolResult, duration: Duration) -> Answer {
    let text: String = result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("");
    if result.is_error.unwrap_or(false) {
        let text: String = text.chars().take(300).collect();
        return Answer::failed(
            format!(
                "MCP server '{server}' answered tool '{tool}' with an error: {}",
                text.trim()
            ),
            duration,
        );
    }
    match result.structured_content {
        Some(structured) => Answer::body(structured.to_string().into_bytes(), duration),
        None => Answer::body(text.into_bytes(), duration),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock as Content;

    fn body(answer: Answer) -> Result<String, super::super::Failure> {
        answer.result.map(|bytes| String::from_utf8(bytes).unwrap())
    }

    #[test]
    fn structured_content_wins_over_text_and_an_error_result_fails() {
        let mut result = CallToolResult::success(vec![Content::text("{\"block\": false}")]);
        assert_eq!(
            body(answer_of("s", "t", result.clone(), Duration::ZERO)).unwrap(),
            "{\"block\": false}"
        );
        result.structured_content = Some(serde_json::json!({"block": true}));
        assert_eq!(
            body(answer_of("s", "t", result, Duration::ZERO)).unwrap(),
            "{\"block\":true}"
        );
        let failed = CallToolResult::error(vec![Content::text("boom")]);
        let Err(super::super::Failure::Failed(cause)) = body(answer_of("s", "t", failed, Duration::ZERO))
        else {
            panic!("an error result fails the run");
        };
        assert!(cause.contains("with an error: boom"), "{cause}");
    }
}
