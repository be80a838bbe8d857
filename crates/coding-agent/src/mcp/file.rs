//! The mcp.json model as written, and its published JSON Schema (`schemas/mcp-schema.json`, kept
//! equal to these types by a test).
//!
//! Both the common shape (`mcpServers`, as Claude Desktop, Claude Code and Cursor write it) and
//! Elph's first key (`servers`) are read; a server may say its `type` (`stdio`, `http`, `sse`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::{MAX_CALL_TIMEOUT_MS, MAX_STARTUP_TIMEOUT_MS};

pub(crate) const SCHEMA_ID: &str = "https://elph.space/mcp-schema.json";

/// A whole mcp.json.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Elph MCP servers",
    description = "MCP servers whose tools Elph offers the model. See docs/mcp.md.",
    extend("$id" = SCHEMA_ID)
)]
pub(crate) struct McpFile {
    /// The schema this file follows; editors use it for completion.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    #[allow(dead_code, reason = "read by serde and the schema, never by code")]
    pub schema: Option<String>,
    /// Servers by name (the shape Claude Desktop, Claude Code and Cursor use).
    #[serde(rename = "mcpServers", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "BTreeMap<String, ServerConfig>")]
    pub mcp_servers: Option<serde_json::Map<String, Value>>,
    /// Servers by name (VS Code's key, and Elph's first spelling; give this or `mcpServers`, not
    /// both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "BTreeMap<String, ServerConfig>")]
    pub servers: Option<serde_json::Map<String, Value>>,
    /// Values asked of the person when the terminal UI starts, named as `${input:ID}` (VS Code's
    /// `inputs`). Where nobody can be asked (`elph run`, `elph acp`), an input's `default` is
    /// used, and a server whose input has none is skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[allow(
        dead_code,
        reason = "read by serde and the schema; the loader reads them with pointers"
    )]
    pub inputs: Option<Vec<super::inputs::InputConfig>>,
}

/// How Elph talks to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TransportType {
    /// A child process speaking JSON-RPC on stdin/stdout (`command`).
    Stdio,
    /// Streamable HTTP (`url`).
    Http,
    /// The legacy HTTP+SSE transport (`url`). Elph's MCP client does not speak it: such a server
    /// is skipped with a diagnostic.
    Sse,
}

/// One server as written. `${VAR}`, `${VAR:-default}`, `${env:VAR}`, `${workspaceFolder}`,
/// `${userHome}` and `${input:ID}` expand in `command`, `args`, `env`, `url` and `headers`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ServerConfig {
    /// `stdio` (needs `command`), `http` or `sse` (need `url`); inferred when left out.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<TransportType>,
    /// The program of a stdio server. A relative path with a separator resolves against the folder
    /// of this file; a bare name is looked up on PATH.
    #[schemars(length(min = 1))]
    pub command: Option<String>,
    /// Arguments of a stdio server.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to a stdio server's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The endpoint of an HTTP server.
    #[schemars(regex(pattern = r"^(https?://|\$\{)"))]
    pub url: Option<String>,
    /// Headers sent to an HTTP server.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Each tool call's limit, in milliseconds (default 60000).
    #[schemars(range(min = 1, max = MAX_CALL_TIMEOUT_MS))]
    pub tool_timeout_ms: Option<u64>,
    /// The first spelling of `toolTimeoutMs` (give one of them, not both).
    #[schemars(range(min = 1, max = MAX_CALL_TIMEOUT_MS))]
    pub timeout_ms: Option<u64>,
    /// How long the server has to start, answer `initialize` and list its tools, in
    /// milliseconds (default 30000). Servers start in the background, so a long limit delays
    /// nothing but the server's own tools.
    #[schemars(range(min = 1, max = MAX_STARTUP_TIMEOUT_MS))]
    pub startup_timeout_ms: Option<u64>,
    /// A disabled server is listed but not started.
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
}

fn enabled_by_default() -> bool {
    true
}

/// `text` as plain JSON: the comments (`//`, `/* */`) and trailing commas VS Code accepts in its
/// `mcp.json` become spaces, so every line and column stays where it was and an error still points
/// at its line. `None` when a `/` outside a string starts no comment.
pub(crate) fn without_comments(text: &str) -> Option<String> {
    let mut plain = text.as_bytes().to_vec();
    json_strip_comments::strip_slice(&mut plain).ok()?;
    // The crate blanks a block comment's line breaks too; put them back so lines stay lines.
    for (out, original) in plain.iter_mut().zip(text.as_bytes()) {
        if *original == b'\n' {
            *out = b'\n';
        }
    }
    String::from_utf8(plain).ok()
}

/// Parses an MCP file (`mcp.json`, `.mcp.json`, or another client's) as VS Code does: JSON with
/// comments and trailing commas, then Elph's strict rules (no duplicate keys).
pub(crate) fn parse_jsonc(bytes: &[u8]) -> Result<Value, elph_config::JsonError> {
    let plain = std::str::from_utf8(bytes).ok().and_then(without_comments);
    match plain {
        Some(text) => elph_config::parse_json(text.as_bytes()),
        // Not UTF-8, or a stray `/`: the strict parse names the byte, or the `/`'s line.
        None => elph_config::parse_json(bytes),
    }
}

/// The published schema, generated from the types.
#[expect(
    clippy::expect_used,
    reason = "the schema is plain data generated from our own types"
)]
pub fn generated_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(McpFile)).expect("the schema serializes")
}

/// The exact bytes of `schemas/mcp-schema.json`.
#[expect(
    clippy::expect_used,
    reason = "the schema is plain data generated from our own types"
)]
pub fn generated_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&generated_schema()).expect("the schema serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_and_lines_stay() {
        let text = "{\n  // a\n  \"a\": \"// not a comment\", /* b\n c */\n  \"b\": [1, 2,],\n}\n";
        let plain = without_comments(text).unwrap();
        assert_eq!(plain.lines().count(), text.lines().count());
        assert_eq!(
            parse_jsonc(text.as_bytes()).unwrap(),
            serde_json::json!({"a": "// not a comment", "b": [1, 2]})
        );
        let error = parse_jsonc(b"{\n /* x\n */\n \"a\": 1 \"b\": 2}").unwrap_err();
        assert!(error.message.contains("line 4"), "{error:?}");
        let error = parse_jsonc(b"{\n\n / \n}").unwrap_err();
        assert!(error.message.contains("line 3"), "{error:?}");
    }
}
