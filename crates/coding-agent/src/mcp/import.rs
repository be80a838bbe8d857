//! Other clients' MCP files turned into Elph's mcp.json (`elph mcp import`): every field is
//! translated or reported on a line of its own, never dropped silently.
//!
//! | client | file | servers under |
//! | --- | --- | --- |
//! | VS Code | `.vscode/mcp.json`, the user `mcp.json` | `servers` (with `inputs`); a settings.json's `mcp.servers` |
//! | Cursor | `.cursor/mcp.json`, `~/.cursor/mcp.json` | `mcpServers` |
//! | Claude Desktop, Claude Code | `claude_desktop_config.json`, `.mcp.json` | `mcpServers` |
//! | Codex | `~/.codex/config.toml`, `.codex/config.toml` | `[mcp_servers.NAME]` |
//! | Gemini CLI | `~/.gemini/settings.json`, `.gemini/settings.json` | `mcpServers` (its own fields: `httpUrl`, `timeout`, `trust`, …) |
//!
//! VS Code's and Cursor's variables (`${workspaceFolder}`, `${env:NAME}`, `${input:ID}`) are Elph's
//! too, so they are kept as written.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};

mod gemini;

use super::inputs::{InputKind, parse_specs};
use crate::paths::Paths;

/// Another client's MCP file that doctor found, and how to bring it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OtherClientFile {
    pub path: PathBuf,
    pub client: &'static str,
    /// The command that imports it.
    pub import: String,
}

/// The other clients' MCP files that exist: the project's (`.vscode/mcp.json`, `.cursor/mcp.json`,
/// `.codex/config.toml` with servers, `.gemini/settings.json` with `mcpServers`) and the home
/// folder's (Cursor, Codex, Gemini CLI, Claude Desktop, VS Code's user file). `.mcp.json` is not
/// among them: Elph reads it.
pub(crate) fn other_client_files(paths: &Paths, home: Option<&Path>) -> Vec<OtherClientFile> {
    let project = &paths.project_dir;
    let mut candidates: Vec<(PathBuf, &'static str)> = vec![
        (project.join(".vscode/mcp.json"), "VS Code"),
        (project.join(".cursor/mcp.json"), "Cursor"),
        (project.join(".codex/config.toml"), "Codex"),
        (project.join(".gemini/settings.json"), "Gemini CLI"),
    ];
    if let Some(home) = home {
        candidates.extend([
            (home.join(".cursor/mcp.json"), "Cursor"),
            (home.join(".codex/config.toml"), "Codex"),
            (home.join(".gemini/settings.json"), "Gemini CLI"),
            (
                home.join(".config/Claude/claude_desktop_config.json"),
                "Claude Desktop",
            ),
            (
                home.join("Library/Application Support/Claude/claude_desktop_config.json"),
                "Claude Desktop",
            ),
            (home.join(".config/Code/User/mcp.json"), "VS Code"),
            (
                home.join("Library/Application Support/Code/User/mcp.json"),
                "VS Code",
            ),
        ]);
    }
    candidates
        .into_iter()
        .filter(|(path, _)| has_servers(path))
        .map(|(path, client)| OtherClientFile {
            import: format!(
                "elph mcp import {} --write",
                crate::diagnostics::shell_quote(&path)
            ),
            path,
            client,
        })
        .collect()
}

/// Whether `path` is a file that names MCP servers (a config.toml without [mcp_servers] is not).
fn has_servers(path: &Path) -> bool {
    let Ok(Some(bytes)) = elph_config::read_config(path) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes);
    import(&path.to_string_lossy(), &text).is_ok_and(|imported| !imported.servers.is_empty())
}

/// What a file gave: servers in Elph's form (by name), VS Code inputs, and one line for each
/// thing that was not carried over as it was.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Imported {
    /// The client the file is from, in words.
    pub client: &'static str,
    pub servers: Map<String, Value>,
    pub inputs: Vec<Value>,
    pub notes: Vec<String>,
}

/// Reads `text`, a file named `file_name`: TOML for Codex's config.toml, else JSON. The error says
/// why nothing can be imported.
pub(crate) fn import(file_name: &str, text: &str) -> Result<Imported, String> {
    if file_name.ends_with(".toml") {
        let table: toml::Table = toml::from_str(text).map_err(|err| format!("is not valid TOML: {err}"))?;
        let value = serde_json::to_value(table).map_err(|err| format!("cannot be read: {err}"))?;
        return codex(&value);
    }
    // VS Code and Cursor write JSONC: comments and trailing commas.
    let value = super::file::parse_jsonc(text.as_bytes()).map_err(|err| err.message)?;
    let Value::Object(fields) = &value else {
        return Err("is not a JSON object".into());
    };
    if is_gemini_settings(file_name) {
        return gemini::import(&value);
    }
    if let Some(Value::Object(mcp)) = fields.get("mcp")
        && mcp.contains_key("servers")
    {
        let mut out = json_file("VS Code (settings.json)", &Value::Object(mcp.clone()), "servers")?;
        for key in fields.keys().filter(|key| *key != "mcp") {
            out.notes.push(format!("{key}: not an MCP setting; left out"));
        }
        return Ok(out);
    }
    match (fields.contains_key("mcpServers"), fields.contains_key("servers")) {
        (true, false) => json_file(client_of(file_name), &value, "mcpServers"),
        (false, true) => json_file("VS Code", &value, "servers"),
        (true, true) => Err("has both \"mcpServers\" and \"servers\"; import one at a time".into()),
        (false, false) => Err(
            "holds no MCP servers (looked for \"mcpServers\", \"servers\", \"mcp\": {\"servers\"} and, in a .toml file, [mcp_servers])"
                .into(),
        ),
    }
}

fn client_of(file_name: &str) -> &'static str {
    if file_name.ends_with("claude_desktop_config.json") {
        "Claude Desktop"
    } else if file_name.ends_with(".cursor/mcp.json") {
        "Cursor"
    } else if file_name.ends_with(".mcp.json") {
        "Claude Code"
    } else {
        "mcpServers"
    }
}

/// A JSON file whose servers sit under `key`.
fn json_file(client: &'static str, value: &Value, key: &str) -> Result<Imported, String> {
    let mut out = Imported {
        client,
        ..Imported::default()
    };
    let Some(Value::Object(servers)) = value.get(key) else {
        return Err(format!("\"{key}\" is not an object of servers"));
    };
    if let Value::Object(fields) = value {
        for (field, _) in fields {
            match field.as_str() {
                "$schema" | "inputs" => {}
                other if other == key => {}
                other => out.notes.push(format!("{other}: not an MCP setting; left out")),
            }
        }
    }
    if let Some(inputs) = value.get("inputs") {
        let specs = parse_specs(Some(inputs)).map_err(|(pointer, why)| format!("{pointer}: {why}"))?;
        for spec in &specs {
            if spec.kind == InputKind::Command {
                out.notes.push(format!(
                    "inputs: '{}' runs a VS Code command, which Elph cannot; the servers that use it \
                     will be skipped until you give the value another way (${{env:NAME}})",
                    spec.id
                ));
            }
        }
        if let Value::Array(items) = inputs {
            out.inputs = items.clone();
        }
    }
    for (name, server) in servers {
        let Value::Object(fields) = server else {
            out.notes.push(format!("{name}: not an object; left out"));
            continue;
        };
        if let Some(server) = json_server(name, fields, &mut out.notes) {
            add(&mut out, name, server);
        }
    }
    Ok(out)
}

/// One server of a JSON file, in Elph's form.
fn json_server(name: &str, fields: &Map<String, Value>, notes: &mut Vec<String>) -> Option<Value> {
    let mut server = Map::new();
    for (field, value) in fields {
        let place = format!("{name}.{field}");
        match field.as_str() {
            "command" | "args" | "env" | "url" | "headers" | "enabled" | "timeoutMs" | "toolTimeoutMs"
            | "startupTimeoutMs" => {
                server.insert(field.clone(), value.clone());
            }
            "type" => match value.as_str() {
                Some(kind @ ("stdio" | "http" | "sse")) => {
                    server.insert("type".into(), json!(kind));
                }
                Some("streamable-http" | "streamableHttp" | "streamable_http") => {
                    server.insert("type".into(), json!("http"));
                }
                _ => {
                    notes.push(format!(
                        "{place}: {value} is not a transport Elph knows (stdio, http); the server is left out"
                    ));
                    return None;
                }
            },
            "httpUrl" => {
                server.insert("url".into(), value.clone());
                server.insert("type".into(), json!("http"));
            }
            "disabled" => {
                server.insert("enabled".into(), json!(value != &Value::Bool(true)));
            }
            "envFile" => notes.push(format!(
                "{place}: Elph reads no env files; put the variables of {value} in the server's \"env\" \
                 (as ${{env:NAME}} to keep them out of the file)"
            )),
            "cwd" => notes.push(format!(
                "{place}: Elph starts every server in the project folder; {value} is left out"
            )),
            "autoApprove" | "alwaysAllow" => notes.push(format!(
                "{place}: Elph asks about MCP tools by its approval policy; to allow them without a \
                 question add \"mcp_{name}__TOOL\" to permissions.allow in settings.json"
            )),
            "timeout" => notes.push(format!(
                "{place}: {value} is left out; Elph's per-server limits are toolTimeoutMs and startupTimeoutMs"
            )),
            _ => notes.push(format!("{place}: not a field Elph knows; left out")),
        }
    }
    Some(Value::Object(server))
}

/// Gemini CLI keeps its servers in its settings.json (`~/.gemini/`, or the project's `.gemini/`).
fn is_gemini_settings(file_name: &str) -> bool {
    Path::new(file_name).ends_with(".gemini/settings.json")
}

/// Codex's config.toml: `[mcp_servers.NAME]` tables.
fn codex(value: &Value) -> Result<Imported, String> {
    let mut out = Imported {
        client: "Codex",
        ..Imported::default()
    };
    let Some(Value::Object(servers)) = value.get("mcp_servers") else {
        return Err("holds no [mcp_servers.NAME] tables".into());
    };
    if let Value::Object(fields) = value {
        for key in fields.keys().filter(|key| *key != "mcp_servers") {
            out.notes.push(format!("{key}: not an MCP setting; left out"));
        }
    }
    for (name, server) in servers {
        let Value::Object(fields) = server else {
            out.notes
                .push(format!("mcp_servers.{name}: not a table; left out"));
            continue;
        };
        let server = codex_server(name, fields, &mut out.notes);
        add(&mut out, name, server);
    }
    Ok(out)
}

fn codex_server(name: &str, fields: &Map<String, Value>, notes: &mut Vec<String>) -> Value {
    let mut server = Map::new();
    let mut env = Map::new();
    let mut headers = Map::new();
    let mut env_headers = Map::new();
    for (field, value) in fields {
        let place = format!("mcp_servers.{name}.{field}");
        match field.as_str() {
            "command" | "args" | "url" | "enabled" => {
                server.insert(field.clone(), value.clone());
            }
            "env" => {
                if let Value::Object(vars) = value {
                    env.extend(vars.clone());
                }
            }
            // Names of Codex's environment passed through: Elph's servers get the same from its
            // environment through env.
            "env_vars" => {
                for var in value.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    env.insert(var.to_string(), json!(format!("${{env:{var}}}")));
                }
            }
            "startup_timeout_sec" | "tool_timeout_sec" => {
                let key = if field == "startup_timeout_sec" {
                    "startupTimeoutMs"
                } else {
                    "toolTimeoutMs"
                };
                match value.as_f64().filter(|s| *s > 0.0) {
                    Some(seconds) => {
                        server.insert(key.into(), json!((seconds * 1000.0).round() as u64));
                    }
                    None => notes.push(format!("{place}: {value} is not a number of seconds; left out")),
                }
            }
            "startup_timeout_ms" => {
                server.insert("startupTimeoutMs".into(), value.clone());
            }
            "bearer_token_env_var" => {
                if let Some(var) = value.as_str() {
                    headers.insert("Authorization".into(), json!(format!("Bearer ${{env:{var}}}")));
                }
            }
            "http_headers" => {
                if let Value::Object(given) = value {
                    headers.extend(given.clone());
                }
            }
            "env_http_headers" => {
                for (header, var) in value.as_object().into_iter().flatten() {
                    if let Some(var) = var.as_str() {
                        env_headers.insert(header.clone(), json!(format!("${{env:{var}}}")));
                    }
                }
            }
            "cwd" => notes.push(format!(
                "{place}: Elph starts every server in the project folder; {value} is left out"
            )),
            "enabled_tools" | "disabled_tools" => notes.push(format!(
                "{place}: Elph offers every tool of a server; to refuse some, add \"mcp_{name}__TOOL\" \
                 to permissions.deny in settings.json"
            )),
            _ => notes.push(format!("{place}: not a field Elph knows; left out")),
        }
    }
    if !env.is_empty() {
        server.insert("env".into(), Value::Object(env));
    }
    // A header given both ways: the environment's value, as Codex sends it when it is set.
    for (header, value) in env_headers {
        if headers.contains_key(&header) {
            notes.push(format!(
                "mcp_servers.{name}: header {header} is in http_headers and env_http_headers; the \
                 environment's is kept"
            ));
        }
        headers.insert(header, value);
    }
    if !headers.is_empty() {
        server.insert("headers".into(), Value::Object(headers));
    }
    Value::Object(server)
}

/// Adds `server` under a name Elph accepts, saying so when the name had to change.
fn add(out: &mut Imported, name: &str, server: Value) {
    let mut elph_name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while elph_name.contains("__") {
        elph_name = elph_name.replace("__", "_");
    }
    let mut elph_name: String = elph_name
        .trim_start_matches(['-', '_'])
        .chars()
        .take(32)
        .collect();
    if elph_name.is_empty() {
        elph_name = "server".into();
    }
    while out.servers.contains_key(&elph_name) {
        elph_name.push_str("-2");
    }
    if elph_name != name {
        out.notes.push(format!(
            "{name}: named '{elph_name}' (server names are letters, digits, '-' and '_', at most 32; \
             its tools are mcp_{elph_name}__TOOL)"
        ));
    }
    out.servers.insert(elph_name, server);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_tables_become_servers() {
        let imported = import(
            "config.toml",
            r#"
model = "o3"
[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
env = { "API_KEY" = "value" }
env_vars = ["HOME_TOKEN"]
startup_timeout_sec = 20
tool_timeout_sec = 1.5
cwd = "/tmp"
[mcp_servers.remote]
url = "https://h/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
enabled_tools = ["a"]
"#,
        )
        .unwrap();
        assert_eq!(imported.client, "Codex");
        assert_eq!(
            imported.servers["docs"],
            json!({"command": "npx", "args": ["-y", "docs-mcp"],
                   "env": {"API_KEY": "value", "HOME_TOKEN": "${env:HOME_TOKEN}"},
                   "startupTimeoutMs": 20000, "toolTimeoutMs": 1500})
        );
        assert_eq!(
            imported.servers["remote"],
            json!({"url": "https://h/mcp", "headers": {"Authorization": "Bearer ${env:REMOTE_TOKEN}"}})
        );
        let notes = imported.notes.join("\n");
        for expected in ["model: not an MCP setting", "docs.cwd", "remote.enabled_tools"] {
            assert!(notes.contains(expected), "{expected} in:\n{notes}");
        }
    }

    #[test]
    fn json_files_keep_their_variables_and_report_the_rest() {
        let imported = import(
            ".vscode/mcp.json",
            r#"{
                // VS Code writes JSONC
                "inputs": [{"type": "promptString", "id": "k", "password": true},],
                "servers": {"my server": {"type": "stdio", "command": "x", "args": ["${workspaceFolder}"],
                                          "env": {"K": "${input:k}"}, "envFile": "${workspaceFolder}/.env", "dev": {}}}}"#,
        )
        .unwrap();
        assert_eq!(imported.client, "VS Code");
        assert_eq!(
            imported.servers["my-server"],
            json!({"type": "stdio", "command": "x", "args": ["${workspaceFolder}"], "env": {"K": "${input:k}"}})
        );
        assert_eq!(imported.inputs.len(), 1);
        let notes = imported.notes.join("\n");
        for expected in [
            "named 'my-server'",
            "my server.envFile",
            "my server.dev: not a field",
        ] {
            assert!(notes.contains(expected), "{expected} in:\n{notes}");
        }

        let desktop = import(
            "claude_desktop_config.json",
            r#"{"mcpServers": {"a": {"command": "x", "disabled": true, "autoApprove": ["t"]}}, "globalShortcut": "x"}"#,
        )
        .unwrap();
        assert_eq!(desktop.client, "Claude Desktop");
        assert_eq!(desktop.servers["a"], json!({"command": "x", "enabled": false}));
        assert!(desktop.notes.iter().any(|n| n.contains("globalShortcut")));
        assert!(desktop.notes.iter().any(|n| n.contains("permissions.allow")));

        let settings = import(
            "settings.json",
            r#"{"mcp": {"servers": {"a": {"command": "x"}}}, "editor.fontSize": 12}"#,
        )
        .unwrap();
        assert_eq!(settings.servers["a"], json!({"command": "x"}));
        assert!(settings.notes.iter().any(|n| n.contains("editor.fontSize")));
    }

    #[test]
    fn files_without_servers_say_so() {
        for (name, text, why) in [
            ("a.json", "{}", "holds no MCP servers"),
            ("a.json", "[1]", "not a JSON object"),
            ("a.json", "{", "not valid JSON"),
            ("config.toml", "model = 1", "no [mcp_servers"),
            ("config.toml", "[x", "not valid TOML"),
            ("a.json", r#"{"servers": {}, "mcpServers": {}}"#, "both"),
        ] {
            let error = import(name, text).unwrap_err();
            assert!(error.contains(why), "{text}: {error}");
        }
    }
}
