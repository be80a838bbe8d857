//! The two hidden helpers of `elph hooks coverage`, both this very binary, so the coverage run
//! needs nothing on the machine but `elph` (no shell tools, no test binaries):
//!
//! - `elph hooks coverage-probe ROLE LOG`: a hook. It appends what it was sent (event, tool, call
//!   id, input and the event's few telling fields) as one JSON line to LOG, then answers as its
//!   role says: a `probe` only listens, the `guard` blocks a call whose input holds
//!   [`BLOCK_MARK`], the `rewriter` rewrites an input holding a rewrite mark.
//! - `elph hooks coverage-mcp-server`: a stdio MCP server (rmcp's server side) with one tool,
//!   `touch`, which makes a file in its folder: a side effect a blocked call must not have.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServiceExt};
use serde_json::{Map, Value, json};

use super::exit;

/// A call whose input holds this is blocked by the guard.
pub(super) const BLOCK_MARK: &str = "elph-coverage-block";
/// The rewriter turns this into [`REWRITTEN`] (a call that runs, changed).
pub(super) const REWRITE_MARK: &str = "elph-coverage-rewrite-me";
/// What [`REWRITE_MARK`] becomes.
pub(super) const REWRITTEN: &str = "elph-coverage-rewritten";
/// The rewriter turns this into [`BLOCK_MARK`]: a call the guard let through, which it must
/// block once it sees it rewritten.
pub(super) const REWRITE_TO_BLOCK_MARK: &str = "elph-coverage-rewrite-to-bl0ck";
/// The MCP server's one tool.
pub(super) const MCP_TOOL: &str = "touch";
/// The largest payload a probe reads (the hooks' own `maxInputBytes` ceiling).
const MAX_PAYLOAD: u64 = 16 * 1024 * 1024;

/// What a probe hook does besides writing down what it was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Role {
    /// Listens only.
    Probe,
    /// Blocks a call whose input holds the block mark.
    Guard,
    /// Rewrites an input holding a rewrite mark.
    Rewriter,
}

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    #[arg(value_enum)]
    role: Role,
    /// The file the probe appends its JSON line to.
    log: PathBuf,
}

/// `elph hooks coverage-probe`: one hook run.
pub(super) fn run_probe(args: ProbeArgs) -> anyhow::Result<u8> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_PAYLOAD)
        .read_to_string(&mut text)
        .context("cannot read the payload")?;
    let payload: Value = serde_json::from_str(&text).context("the payload is not JSON")?;
    let mut line = serde_json::to_vec(&record(args.role, &payload))?;
    line.push(b'\n');
    // One write of one line in append mode: the lines of hooks never interleave.
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.log)
        .and_then(|mut file| file.write_all(&line))
        .with_context(|| format!("cannot write {}", args.log.display()))?;
    if let Some(outcome) = answer(args.role, &payload) {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &outcome)?;
        writeln!(out)?;
    }
    Ok(exit::SUCCESS)
}

/// What a probe writes down: the payload's essentials, never its conversation or results.
pub(super) fn record(role: Role, payload: &Value) -> Value {
    let mut record = Map::new();
    record.insert("role".into(), json!(role));
    for field in [
        "event",
        "toolName",
        "toolCallId",
        "toolInput",
        "source",
        "reason",
        "kind",
        "status",
        "isError",
        "trigger",
    ] {
        if let Some(value) = payload.get(field) {
            record.insert(field.into(), value.clone());
        }
    }
    Value::Object(record)
}

/// The role's outcome for `payload`, if it has one.
fn answer(role: Role, payload: &Value) -> Option<Value> {
    if payload["event"] != "preToolUse" {
        return None;
    }
    let input = payload.get("toolInput")?;
    let text = input.to_string();
    match role {
        Role::Probe => None,
        Role::Guard => text.contains(BLOCK_MARK).then(|| {
            json!({"block": true, "reason": "elph hooks coverage: the guard blocks every call marked to be blocked"})
        }),
        Role::Rewriter => {
            let rewritten = text
                .replace(REWRITE_TO_BLOCK_MARK, BLOCK_MARK)
                .replace(REWRITE_MARK, REWRITTEN);
            if rewritten == text {
                return None;
            }
            let input: Value = serde_json::from_str(&rewritten).ok()?;
            Some(json!({"toolInput": input}))
        }
    }
}

/// The input the rewriter turns `input` into (what the guard must then see).
pub(super) fn rewritten(input: &Value) -> Value {
    let text = input
        .to_string()
        .replace(REWRITE_TO_BLOCK_MARK, BLOCK_MARK)
        .replace(REWRITE_MARK, REWRITTEN);
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// `elph hooks coverage-mcp-server`: serves [`CoverageServer`] on stdin and stdout until the client
/// closes them.
pub(super) fn run_mcp_server() -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let service = CoverageServer
            .serve(rmcp::transport::io::stdio_pipes())
            .await
            .context("the MCP client did not initialize")?;
        service.waiting().await.context("the MCP connection failed")?;
        anyhow::Ok(())
    })?;
    Ok(exit::SUCCESS)
}

struct CoverageServer;

impl ServerHandler for CoverageServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "A file name (no folders)."}},
            "required": ["name"],
            "additionalProperties": false,
        });
        let Value::Object(schema) = schema else {
            return Err(ErrorData::internal_error("the schema is an object", None));
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            MCP_TOOL,
            "Makes an empty file of this name in the project folder.",
            Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != MCP_TOOL {
            return Err(ErrorData::invalid_params(
                format!("no tool {}", request.name),
                None,
            ));
        }
        let name = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Only a plain name in its own folder (the project): the helper writes nowhere else.
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "not a plain file name: {name:?}"
            ))])
            .into());
        }
        let result = match std::fs::write(name, b"") {
            Ok(()) => CallToolResult::success(vec![ContentBlock::text(format!("made {name}"))]),
            Err(error) => {
                CallToolResult::error(vec![ContentBlock::text(format!("cannot make {name}: {error}"))])
            }
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_blocks_only_marked_calls_and_the_rewriter_rewrites_only_marked_ones() {
        let marked = json!({"event": "preToolUse", "toolInput": {"command": format!("touch {BLOCK_MARK}")}});
        let plain = json!({"event": "preToolUse", "toolInput": {"command": "touch x"}});
        assert_eq!(answer(Role::Guard, &marked).unwrap()["block"], true);
        assert_eq!(answer(Role::Guard, &plain), None);
        assert_eq!(answer(Role::Probe, &marked), None);
        let to_rewrite =
            json!({"event": "preToolUse", "toolInput": {"command": format!("echo {REWRITE_MARK}")}});
        assert_eq!(
            answer(Role::Rewriter, &to_rewrite).unwrap(),
            json!({"toolInput": {"command": format!("echo {REWRITTEN}")}})
        );
        assert_eq!(answer(Role::Rewriter, &plain), None);
        let to_block = json!({"command": format!("touch {REWRITE_TO_BLOCK_MARK}")});
        assert!(rewritten(&to_block).to_string().contains(BLOCK_MARK));
        assert!(
            !to_block.to_string().contains(BLOCK_MARK),
            "the guard lets the original through"
        );
    }

    #[test]
    fn a_record_keeps_the_essentials_and_leaves_the_conversation_out() {
        let payload =
            json!({"event": "context", "sessionId": "s", "projectDir": "/p", "messages": [{"role": "user"}]});
        assert_eq!(
            record(Role::Probe, &payload),
            json!({"role": "probe", "event": "context"})
        );
    }
}
