//! The MCP servers an editor sends with `session/new` and `session/load`, as server definitions
//! like mcp.json's: the same naming (`mcp_{server}__{tool}`), process rules, hook matching and
//! timeouts. They are the editor's (the user's) configuration, so no project trust is needed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use agent_client_protocol::v1::schema::McpServer;

use crate::diagnostics::Diagnostic;
use crate::hooks::discovery::resolve_command;
use crate::mcp::config::{
    DEFAULT_CALL_TIMEOUT_MS, DEFAULT_STARTUP_TIMEOUT_MS, McpScope, ServerDefinition, ServerTransport,
};

/// What `mcpCapabilities` says: streamable HTTP yes; the legacy SSE transport no (the MCP client
/// Elph uses does not speak it).
pub(crate) const SUPPORTS_HTTP: bool = true;
pub(crate) const SUPPORTS_SSE: bool = false;

/// The editor's servers as definitions, and a diagnostic for each that cannot run.
pub(crate) fn editor_servers(servers: &[McpServer], cwd: &Path) -> (Vec<ServerDefinition>, Vec<Diagnostic>) {
    let path_var = std::env::var("PATH").unwrap_or_default();
    let mut definitions: Vec<ServerDefinition> = Vec::new();
    let mut diagnostics = Vec::new();
    for server in servers {
        let (written, transport) = match server {
            McpServer::Stdio(stdio) => {
                let command = stdio.command.display().to_string();
                let env: BTreeMap<String, String> = stdio
                    .env
                    .iter()
                    .map(|var| (var.name.clone(), var.value.clone()))
                    .collect();
                let transport = ServerTransport::Stdio {
                    command: resolve_command(&command, cwd, &path_var),
                    args: stdio.args.clone(),
                    env,
                };
                (stdio.name.clone(), transport)
            }
            McpServer::Http(http) => {
                if !(http.url.starts_with("http://") || http.url.starts_with("https://")) {
                    diagnostics.push(Diagnostic::new(format!(
                        "the editor's MCP server '{}' is skipped: url '{}' must start with http:// or https://",
                        http.name, http.url
                    )));
                    continue;
                }
                let headers = http
                    .headers
                    .iter()
                    .map(|header| (header.name.clone(), header.value.clone()))
                    .collect();
                let transport = ServerTransport::Http {
                    url: http.url.clone(),
                    headers,
                };
                (http.name.clone(), transport)
            }
            McpServer::Sse(sse) => {
                diagnostics.push(Diagnostic::new(format!(
                    "the editor's MCP server '{}' is skipped: it uses the legacy SSE transport, which Elph does not speak (mcpCapabilities says sse: false)",
                    sse.name
                )));
                continue;
            }
            other => {
                diagnostics.push(Diagnostic::new(format!(
                    "an MCP server the editor sent is skipped: its transport is not one Elph supports ({})",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                        .unwrap_or_else(|| "unknown".into())
                )));
                continue;
            }
        };
        let name = tool_safe_name(&written);
        if definitions.iter().any(|d| d.name == name) {
            diagnostics.push(Diagnostic::new(format!(
                "the editor sent two MCP servers named '{name}'; the second is skipped"
            )));
            continue;
        }
        definitions.push(ServerDefinition {
            pointer: format!("/mcpServers/{name}"),
            name,
            transport,
            timeout: Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS),
            startup_timeout: Duration::from_millis(DEFAULT_STARTUP_TIMEOUT_MS),
            enabled: true,
            source: Path::new("session/new").to_path_buf(),
            scope: McpScope::Editor,
        });
    }
    (definitions, diagnostics)
}

/// Editors name servers freely ("GitHub Tools"); tool names need 1 to 32 letters, digits, `-` or
/// `_`, starting with a letter or digit, without `__`.
fn tool_safe_name(name: &str) -> String {
    let mut safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while safe.contains("__") {
        safe = safe.replace("__", "_");
    }
    let safe = safe.trim_matches('_').chars().take(32).collect::<String>();
    if safe.is_empty() { "editor".into() } else { safe }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{EnvVariable, McpServerHttp, McpServerStdio};

    #[test]
    fn stdio_and_http_become_definitions_and_names_are_made_safe() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("GitHub Tools", "/usr/bin/gh-mcp")
                    .args(vec!["--stdio".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            ),
            McpServer::Http(McpServerHttp::new("docs", "http://127.0.0.1:9/mcp")),
            McpServer::Http(McpServerHttp::new("bad", "ftp://x")),
        ];
        let (definitions, diagnostics) = editor_servers(&servers, Path::new("/p"));
        assert_eq!(definitions.len(), 2);
        assert_eq!(definitions[0].name, "GitHub_Tools");
        assert_eq!(definitions[0].scope, McpScope::Editor);
        let ServerTransport::Stdio { args, env, .. } = &definitions[0].transport else {
            panic!("stdio");
        };
        assert_eq!((args[0].as_str(), env["TOKEN"].as_str()), ("--stdio", "t"));
        assert!(matches!(definitions[1].transport, ServerTransport::Http { .. }));
        assert_eq!(diagnostics.len(), 1);
        assert!(diagnostics[0].message.contains("ftp://x"));
        assert_eq!(tool_safe_name("a__b c"), "a_b_c");
        assert_eq!(tool_safe_name("???"), "editor");
    }
}
