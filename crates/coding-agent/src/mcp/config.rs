//! mcp.json: the MCP servers of the home folder (`CONFIG_DIR/mcp.json`) and of the project
//! (`PROJECT_DIR/.elph/mcp.json`), read, checked and merged into one list of server definitions.
//!
//! ```json
//! { "mcpServers": {
//!     "github": { "type": "http", "url": "https://api.example.com/mcp",
//!                 "headers": { "Authorization": "Bearer ${GITHUB_TOKEN}" } },
//!     "files":  { "command": "./servers/files", "args": ["--root", "."], "env": { "LOG": "1" },
//!                 "toolTimeoutMs": 30000, "startupTimeoutMs": 60000 }
//! } }
//! ```
//!
//! The servers sit under `mcpServers` (the common shape) or `servers` (Elph's first key). A server
//! has either `command` (stdio: `args`, `env`) or `url` (streamable HTTP: `headers`), an optional
//! `type` that must agree, plus `toolTimeoutMs` (each call, default 60 s; `timeoutMs` is its first
//! spelling), `startupTimeoutMs` (start, `initialize` and the tool list, default 30 s) and `enabled`. `${VAR}` and
//! `${VAR:-default}` expand in `command`, `args`, `env`, `url` and `headers` ([`super::expand`]).
//! Unknown fields make the file malformed; a malformed file is skipped as a unit with one
//! diagnostic that names it (the other file still loads), like hooks.json. Names are unique across
//! both files: the first definition wins. A `"type": "sse"` server is skipped with a diagnostic:
//! the MCP client Elph uses does not speak the legacy SSE transport.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::expand::{ExpandError, Variables, expand_with};
use super::file::{McpFile, ServerConfig, TransportType};
use super::inputs::{InputConfig, McpInputs, parse_specs};
use crate::diagnostics::Diagnostic;
use crate::hooks::discovery::{ResolvedCommand, resolve_command};
use crate::paths::Paths;

/// How long one tool call may take unless the server sets `timeoutMs`.
pub(crate) const DEFAULT_CALL_TIMEOUT_MS: u64 = 60_000;
/// The largest `toolTimeoutMs`.
pub(crate) const MAX_CALL_TIMEOUT_MS: u64 = 600_000;
/// How long a server has to start unless it sets `startupTimeoutMs`: `npx -y` on an empty cache
/// takes 13 to 18 s, and servers start in the background, so a generous limit costs nothing.
pub(crate) const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;
/// The largest `startupTimeoutMs`.
pub(crate) const MAX_STARTUP_TIMEOUT_MS: u64 = 600_000;

/// Which file a server came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum McpScope {
    Home,
    Project,
    /// Sent by the editor with `session/new` or `session/load` (ACP).
    Editor,
}

/// The project's mcp.json.
pub(crate) fn project_file(paths: &Paths) -> PathBuf {
    paths.project_dir.join(".elph").join("mcp.json")
}

/// The project's files of MCP servers: `.elph/mcp.json`, then `.mcp.json` at the project's root
/// (the file Claude Code and other clients keep there), read alike.
pub(crate) fn project_files(paths: &Paths) -> [PathBuf; 2] {
    [project_file(paths), paths.project_dir.join(".mcp.json")]
}

/// The home mcp.json.
pub(crate) fn home_file(paths: &Paths) -> PathBuf {
    paths.config_dir.join("mcp.json")
}

/// How Elph talks to a server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "transport", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ServerTransport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: ResolvedCommand,
        args: Vec<String>,
        /// The configured variables (added to the allowlisted environment). Names only when
        /// serialized: values may be secrets.
        #[serde(serialize_with = "keys_only")]
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        /// Header names only: values may be secrets.
        #[serde(serialize_with = "keys_only")]
        headers: BTreeMap<String, String>,
    },
}

fn keys_only<S: serde::Serializer>(map: &BTreeMap<String, String>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(map.keys())
}

/// One server, ready to start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerDefinition {
    pub name: String,
    /// Where it is defined in its file (`/mcpServers/NAME`).
    #[serde(skip)]
    pub pointer: String,
    #[serde(flatten)]
    pub transport: ServerTransport,
    /// Each tool call's limit.
    #[serde(rename = "timeoutMs", serialize_with = "as_millis")]
    pub timeout: Duration,
    /// How long it has to start, answer `initialize` and list its tools.
    #[serde(rename = "startupTimeoutMs", serialize_with = "as_millis")]
    pub startup_timeout: Duration,
    pub enabled: bool,
    pub source: PathBuf,
    pub scope: McpScope,
}

fn as_millis<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis() as u64)
}

/// What became of one mcp.json.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum McpFileState {
    Loaded {
        servers: usize,
    },
    Missing,
    /// The project is not trusted: its servers are executables from the repository.
    SkippedUntrusted,
    Malformed {
        pointer: Option<String>,
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpFileStatus {
    pub path: PathBuf,
    pub scope: McpScope,
    #[serde(flatten)]
    pub state: McpFileState,
}

/// Both files, merged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConfig {
    /// Home servers, then project servers, each file in name order; disabled ones too.
    pub servers: Vec<ServerDefinition>,
    pub files: Vec<McpFileStatus>,
    pub diagnostics: Vec<Diagnostic>,
}

impl McpConfig {
    /// Reads the home file and, when `project_trusted`, the project's files (`.elph/mcp.json`, then
    /// `.mcp.json`). An untrusted project's files are not read at all; when one exists, a diagnostic
    /// says how to trust the project. `inputs` answers `${input:ID}`.
    pub fn load(paths: &Paths, project_trusted: bool, inputs: &McpInputs) -> McpConfig {
        let path_var = std::env::var("PATH").unwrap_or_default();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let env = |name: &str| std::env::var(name).ok();
        let context = Context {
            env: &env,
            project_dir: &paths.project_dir,
            home: home.as_deref(),
            inputs,
            path_var: &path_var,
        };
        let mut config = McpConfig::default();
        config.read(&home_file(paths), McpScope::Home, &context);
        config.refuse_home_servers_in_project(paths);
        let [elph_file, root_file] = project_files(paths);
        for project in [elph_file, root_file] {
            // `.mcp.json` is listed only when it is there: most projects have none.
            let listed = project.ends_with(".elph/mcp.json");
            if project_trusted {
                if listed || project.exists() {
                    config.read(&project, McpScope::Project, &context);
                }
            } else if project.exists() {
                config.files.push(McpFileStatus {
                    path: project.clone(),
                    scope: McpScope::Project,
                    state: McpFileState::SkippedUntrusted,
                });
                config.diagnostics.push(
                    Diagnostic::new(format!(
                        "project MCP servers skipped until {} is trusted (run `elph trust` there, or /trust in the app)",
                        paths.project_dir.display()
                    ))
                    .in_file(&project),
                );
            } else if listed {
                config.files.push(McpFileStatus {
                    path: project,
                    scope: McpScope::Project,
                    state: McpFileState::Missing,
                });
            }
        }
        config
    }

    /// A home server is the user's own program; one whose command resolves to a file inside the
    /// current project (through PATH, a symlink, or a path written into it) would run the
    /// project's file with the user's trust, trusted project or not. It is taken out, with a
    /// diagnostic, as home hooks are. Files under CONFIG_DIR stay the user's own even when
    /// CONFIG_DIR lies inside the project (Elph started in the home folder).
    fn refuse_home_servers_in_project(&mut self, paths: &Paths) {
        let config_dir =
            std::fs::canonicalize(&paths.config_dir).unwrap_or_else(|_| paths.config_dir.clone());
        let mut refused = Vec::new();
        self.servers.retain(|server| {
            let ServerTransport::Stdio { command, .. } = &server.transport else {
                return true;
            };
            if server.scope != McpScope::Home || !command.path.is_absolute() {
                return true;
            }
            let resolved = std::fs::canonicalize(&command.path).unwrap_or_else(|_| command.path.clone());
            if !resolved.starts_with(&paths.project_dir) || resolved.starts_with(&config_dir) {
                return true;
            }
            refused.push(
                Diagnostic::new(format!(
                    "home MCP server '{}' refused: its command '{}' resolves to {}, inside the current \
                     project; a project's files never run as your own server. Give the command as an \
                     absolute path outside the project, or move the server to the project's \
                     .elph/mcp.json",
                    server.name,
                    command.written,
                    resolved.display()
                ))
                .in_file(&server.source)
                .at(server.pointer.clone()),
            );
            false
        });
        if refused.is_empty() {
            return;
        }
        let kept = self.servers.len();
        if let Some(McpFileStatus {
            state: McpFileState::Loaded { servers },
            ..
        }) = self.files.iter_mut().find(|file| file.scope == McpScope::Home)
        {
            *servers = kept;
        }
        self.diagnostics.extend(refused);
    }

    fn read(&mut self, path: &Path, scope: McpScope, context: &Context<'_>) {
        let state = match read_file(path, scope, context) {
            Ok(None) => McpFileState::Missing,
            Err(error) => {
                let diagnostic = Diagnostic::new(error.message.clone()).in_file(path);
                self.diagnostics.push(match &error.pointer {
                    Some(pointer) => diagnostic.at(pointer.clone()),
                    None => diagnostic,
                });
                McpFileState::Malformed {
                    pointer: error.pointer,
                    reason: error.message,
                }
            }
            Ok(Some(parsed)) => {
                for (pointer, message) in parsed.skipped {
                    self.diagnostics
                        .push(Diagnostic::new(message).in_file(path).at(pointer));
                }
                let mut loaded = 0;
                for server in parsed.servers {
                    if let Some(first) = self.servers.iter().find(|s| s.name == server.name) {
                        self.diagnostics.push(
                            Diagnostic::new(format!(
                                "duplicate MCP server '{}' in {} (first defined in {}); this one is ignored",
                                server.name,
                                path.display(),
                                first.source.display()
                            ))
                            .in_file(path)
                            .at(server.pointer.clone()),
                        );
                        continue;
                    }
                    self.servers.push(server);
                    loaded += 1;
                }
                McpFileState::Loaded { servers: loaded }
            }
        };
        self.files.push(McpFileStatus {
            path: path.to_path_buf(),
            scope,
            state,
        });
    }
}

/// Why a file could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct McpLoadError {
    pub pointer: Option<String>,
    pub message: String,
}

fn malformed(pointer: Option<String>, message: impl Into<String>) -> McpLoadError {
    McpLoadError {
        pointer,
        message: format!("{}; file ignored", message.into()),
    }
}

/// Looks up an environment variable for `${VAR}` expansion.
pub(crate) type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What a file's variables stand for, and where bare command names are looked up.
pub(crate) struct Context<'a> {
    pub env: EnvLookup<'a>,
    /// `${workspaceFolder}`.
    pub project_dir: &'a Path,
    /// `${userHome}`.
    pub home: Option<&'a Path>,
    /// `${input:ID}`.
    pub inputs: &'a McpInputs,
    pub path_var: &'a str,
}

/// The servers of one file, and the ones it skipped (JSON pointer, why).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ParsedFile {
    pub servers: Vec<ServerDefinition>,
    pub skipped: Vec<(String, String)>,
}

/// Reads one mcp.json. `Ok(None)` when it does not exist.
pub(crate) fn read_file(
    path: &Path,
    scope: McpScope,
    context: &Context<'_>,
) -> Result<Option<ParsedFile>, McpLoadError> {
    let bytes = match elph_config::read_config(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(err) => return Err(malformed(None, err.reason())),
    };
    let folder = path.parent().unwrap_or(Path::new("/"));
    parse(&bytes, path, folder, scope, context).map(Some)
}

/// Parses and checks the contents of an mcp.json found at `source`.
pub(crate) fn parse(
    bytes: &[u8],
    source: &Path,
    folder: &Path,
    scope: McpScope,
    context: &Context<'_>,
) -> Result<ParsedFile, McpLoadError> {
    let value = super::file::parse_jsonc(bytes).map_err(|err| {
        let message = if err.pointer.is_some() {
            err.message
        } else {
            format!(
                "{}; expected {{\"mcpServers\": {{\"NAME\": {{\"command\": \"…\"}}}}}}",
                err.message
            )
        };
        malformed(err.pointer, message)
    })?;
    for key in ["mcpServers", "servers"] {
        let Some(servers) = value.get(key).and_then(Value::as_object) else {
            continue;
        };
        for name in servers.keys() {
            for field in ["timeoutMs", "toolTimeoutMs", "startupTimeoutMs"] {
                let pointer = format!("/{key}/{}/{field}", elph_config::json::pointer_segment(name));
                elph_config::json::whole_number_at(&value, &pointer)
                    .map_err(|err| malformed(err.pointer, err.message))?;
            }
        }
    }
    let inputs =
        parse_specs(value.get("inputs")).map_err(|(pointer, reason)| malformed(Some(pointer), reason))?;
    let file: McpFile = serde_json::from_value(value).map_err(|err| {
        malformed(
            Some(String::new()),
            format!("{err}; expected {{\"mcpServers\": {{…}}}}"),
        )
    })?;
    let (key, entries) = match (file.mcp_servers, file.servers) {
        (Some(_), Some(_)) => {
            return Err(malformed(
                Some(String::new()),
                "has both \"mcpServers\" and \"servers\"; keep one (they mean the same)",
            ));
        }
        (Some(entries), None) => ("mcpServers", entries),
        (None, Some(entries)) => ("servers", entries),
        (None, None) => {
            return Err(malformed(
                Some(String::new()),
                "has no \"mcpServers\" object; expected {\"mcpServers\": {\"NAME\": {\"command\": \"…\"}}}",
            ));
        }
    };
    let mut parsed = ParsedFile::default();
    for (name, value) in entries {
        let pointer = format!("/{key}/{name}");
        check_name(&name).map_err(|reason| malformed(Some(pointer.clone()), reason))?;
        let config: ServerConfig =
            serde_json::from_value(value).map_err(|err| malformed(Some(pointer.clone()), err.to_string()))?;
        if config.kind == Some(TransportType::Sse) {
            parsed.skipped.push((
                pointer,
                format!(
                    "MCP server '{name}' uses the legacy SSE transport (\"type\": \"sse\"), which Elph's MCP client does not speak; it is skipped. Most servers also serve streamable HTTP: try \"type\": \"http\" with the server's streamable endpoint"
                ),
            ));
            continue;
        }
        let config = match expand_config(config, context, &inputs) {
            Ok(config) => config,
            // A server whose input this session cannot answer is skipped; the rest loads.
            Err((field, ExpandError::Input(reason))) => {
                parsed.skipped.push((
                    format!("{pointer}{field}"),
                    format!("MCP server '{name}' skipped: {reason}"),
                ));
                continue;
            }
            Err((field, error)) => {
                return Err(malformed(Some(format!("{pointer}{field}")), error.to_string()));
            }
        };
        let mut server = definition(name, config, source, folder, scope, context.path_var)
            .map_err(|(field, reason)| malformed(Some(format!("{pointer}{field}")), reason))?;
        server.pointer = pointer;
        parsed.servers.push(server);
    }
    Ok(parsed)
}

/// Expands the variables in every field where they are allowed; the error names the field. A
/// disabled server never starts, so its inputs are not asked for.
fn expand_config(
    mut config: ServerConfig,
    context: &Context<'_>,
    inputs: &[InputConfig],
) -> Result<ServerConfig, (String, ExpandError)> {
    let enabled = config.enabled;
    let input = |id: &str| {
        if enabled {
            context.inputs.resolve(inputs, id)
        } else {
            Ok(String::new())
        }
    };
    let vars = Variables {
        env: context.env,
        workspace: Some(context.project_dir),
        home: context.home,
        input: Some(&input),
    };
    let one = |field: String, text: &str| expand_with(text, &vars).map_err(|err| (field, err));
    if let Some(command) = &config.command {
        config.command = Some(one("/command".into(), command)?);
    }
    if let Some(url) = &config.url {
        config.url = Some(one("/url".into(), url)?);
    }
    for (index, arg) in config.args.iter_mut().enumerate() {
        *arg = one(format!("/args/{index}"), arg)?;
    }
    for (name, value) in config.env.iter_mut() {
        *value = one(format!("/env/{name}"), value)?;
    }
    for (name, value) in config.headers.iter_mut() {
        *value = one(format!("/headers/{name}"), value)?;
    }
    Ok(config)
}

/// Server names become part of tool names (`mcp_{server}__{tool}`), which providers restrict.
fn check_name(name: &str) -> Result<(), String> {
    let valid = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && !name.contains("__");
    if valid && name.len() <= 32 {
        Ok(())
    } else {
        Err(format!(
            "server name '{name}' is not allowed: use 1 to 32 letters, digits, '-' or '_', starting with a letter or digit, without '__'"
        ))
    }
}

fn definition(
    name: String,
    config: ServerConfig,
    source: &Path,
    folder: &Path,
    scope: McpScope,
    path_var: &str,
) -> Result<ServerDefinition, (String, String)> {
    let (field, timeout_ms) = match (config.tool_timeout_ms, config.timeout_ms) {
        (Some(_), Some(_)) => {
            return Err((
                "/timeoutMs".into(),
                "give toolTimeoutMs or its first spelling timeoutMs, not both".into(),
            ));
        }
        (Some(ms), None) => ("toolTimeoutMs", ms),
        (None, Some(ms)) => ("timeoutMs", ms),
        (None, None) => ("toolTimeoutMs", DEFAULT_CALL_TIMEOUT_MS),
    };
    if !(1..=MAX_CALL_TIMEOUT_MS).contains(&timeout_ms) {
        return Err((
            format!("/{field}"),
            format!("{field} is {timeout_ms}; expected 1 to {MAX_CALL_TIMEOUT_MS}"),
        ));
    }
    let startup_ms = config.startup_timeout_ms.unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS);
    if !(1..=MAX_STARTUP_TIMEOUT_MS).contains(&startup_ms) {
        return Err((
            "/startupTimeoutMs".into(),
            format!("startupTimeoutMs is {startup_ms}; expected 1 to {MAX_STARTUP_TIMEOUT_MS}"),
        ));
    }
    match (config.kind, &config.command, &config.url) {
        (Some(TransportType::Stdio), None, _) => {
            return Err(("".into(), "\"type\": \"stdio\" needs \"command\"".into()));
        }
        (Some(TransportType::Http), _, None) => {
            return Err(("".into(), "\"type\": \"http\" needs \"url\"".into()));
        }
        _ => {}
    }
    let transport = match (config.command, config.url) {
        (Some(_), Some(_)) => {
            return Err((
                "".into(),
                "give either \"command\" (a stdio server) or \"url\" (a streamable HTTP server), not both"
                    .into(),
            ));
        }
        (None, None) => {
            return Err((
                "".into(),
                "needs \"command\" (a stdio server) or \"url\" (a streamable HTTP server)".into(),
            ));
        }
        (Some(command), None) => {
            if command.is_empty() {
                return Err(("/command".into(), "command is empty".into()));
            }
            if !config.headers.is_empty() {
                return Err(("/headers".into(), "headers apply only to a \"url\" server".into()));
            }
            ServerTransport::Stdio {
                command: resolve_command(&command, folder, path_var),
                args: config.args,
                env: config.env,
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err((
                    "/url".into(),
                    format!("url '{url}' must start with http:// or https://"),
                ));
            }
            if !config.args.is_empty() {
                return Err(("/args".into(), "args apply only to a \"command\" server".into()));
            }
            if !config.env.is_empty() {
                return Err(("/env".into(), "env applies only to a \"command\" server".into()));
            }
            ServerTransport::Http {
                url,
                headers: config.headers,
            }
        }
    };
    Ok(ServerDefinition {
        pointer: format!("/mcpServers/{name}"),
        name,
        transport,
        timeout: Duration::from_millis(timeout_ms),
        startup_timeout: Duration::from_millis(startup_ms),
        enabled: config.enabled,
        source: source.to_path_buf(),
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<Vec<ServerDefinition>, McpLoadError> {
        parse_with_skips(text).map(|parsed| parsed.servers)
    }

    fn parse_with_skips(text: &str) -> Result<ParsedFile, McpLoadError> {
        parse_with_inputs(text, &McpInputs::headless("`elph run`"))
    }

    fn parse_with_inputs(text: &str, inputs: &McpInputs) -> Result<ParsedFile, McpLoadError> {
        let env = |name: &str| match name {
            "TOKEN" => Some("s3cret".to_string()),
            "HOST" => Some("127.0.0.1:7".to_string()),
            _ => None,
        };
        let context = Context {
            env: &env,
            project_dir: Path::new("/p"),
            home: Some(Path::new("/home/me")),
            inputs,
            path_var: "/usr/bin:/bin",
        };
        parse(
            text.as_bytes(),
            Path::new("/p/.elph/mcp.json"),
            Path::new("/p/.elph"),
            McpScope::Project,
            &context,
        )
    }

    /// The VS Code shape: `servers`, `inputs`, `${workspaceFolder}`, `${env:…}`, `${input:…}`.
    const VS_CODE_FILE: &str = r#"{
        "inputs": [
            {"type": "promptString", "id": "token", "description": "API token", "password": true},
            {"type": "promptString", "id": "url", "description": "API URL", "default": "https://h/api"}
        ],
        "servers": {
            "files": {"command": "npx", "args": ["-y", "files-server", "${workspaceFolder}"]},
            "api": {"type": "stdio", "command": "api-server",
                    "env": {"TOKEN": "${input:token}", "URL": "${input:url}", "HOME_TOKEN": "${env:TOKEN}"}},
            "off": {"command": "x", "env": {"T": "${input:token}"}, "enabled": false}
        }
    }"#;

    #[test]
    fn a_vs_code_file_with_inputs_loads_with_its_answers() {
        let answered = McpInputs::answered(
            [("token", "t-1"), ("url", "u")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
        );
        let parsed = parse_with_inputs(VS_CODE_FILE, &answered).unwrap();
        let names: Vec<&str> = parsed.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "api", "off"]);
        assert!(parsed.skipped.is_empty(), "{:?}", parsed.skipped);
        let ServerTransport::Stdio { env, .. } = &parsed.servers[1].transport else {
            panic!("stdio expected");
        };
        assert_eq!(env["TOKEN"], "t-1");
        assert_eq!(env["URL"], "u");
        assert_eq!(env["HOME_TOKEN"], "s3cret");
        let ServerTransport::Stdio { args, .. } = &parsed.servers[0].transport else {
            panic!("stdio expected");
        };
        assert_eq!(args, &["-y", "files-server", "/p"]);

        // The URL was not answered (Esc at its question): the server that needs it is skipped.
        let partly = McpInputs::answered([("token".to_string(), "t-1".to_string())].into());
        let parsed = parse_with_inputs(VS_CODE_FILE, &partly).unwrap();
        let names: Vec<&str> = parsed.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "off"]);
        assert!(
            parsed.skipped[0].1.contains("'url' (API URL) was not answered"),
            "{:?}",
            parsed.skipped
        );
    }

    #[test]
    fn headless_a_server_whose_input_has_no_default_is_skipped_and_named() {
        let parsed = parse_with_skips(VS_CODE_FILE).unwrap();
        let names: Vec<&str> = parsed.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files", "off"], "the disabled server asks nothing");
        assert_eq!(parsed.skipped.len(), 1, "{:?}", parsed.skipped);
        let (pointer, message) = &parsed.skipped[0];
        assert_eq!(pointer, "/servers/api/env/TOKEN");
        for expected in [
            "MCP server 'api' skipped",
            "input 'token' (API token)",
            "`elph run` cannot ask",
        ] {
            assert!(message.contains(expected), "{expected} in {message}");
        }
        let error =
            parse_text(r#"{"servers": {"a": {"command": "x", "args": ["${input:nope}"]}}}"#).unwrap_err();
        assert_eq!(error.pointer.as_deref(), Some("/servers/a/args/0"));
        assert!(
            error.message.contains("names no entry of the file's \"inputs\""),
            "{}",
            error.message
        );
    }

    #[test]
    fn the_common_shape_with_types_and_variables_parses() {
        let servers = parse_text(
            r#"{"mcpServers": {
                "local": {"type": "stdio", "command": "${BIN_DIR:-/opt/bin}/server", "args": ["--token=${TOKEN}"],
                          "env": {"API_KEY": "${TOKEN}", "MODE": "${MODE:-fast}"}},
                "remote": {"type": "http", "url": "http://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
            }}"#,
        )
        .unwrap();
        let ServerTransport::Stdio { command, args, env } = &servers[0].transport else {
            panic!("stdio expected");
        };
        assert_eq!(command.path, PathBuf::from("/opt/bin/server"));
        assert_eq!(args, &["--token=s3cret"]);
        assert_eq!(env["API_KEY"], "s3cret");
        assert_eq!(env["MODE"], "fast");
        assert_eq!(servers[0].pointer, "/mcpServers/local");
        let ServerTransport::Http { url, headers } = &servers[1].transport else {
            panic!("http expected");
        };
        assert_eq!(url, "http://127.0.0.1:7/mcp");
        assert_eq!(headers["Authorization"], "Bearer s3cret");
    }

    #[test]
    fn sse_servers_are_skipped_with_a_reason_and_the_rest_loads() {
        let parsed = parse_with_skips(
            r#"{"mcpServers": {"old": {"type": "sse", "url": "http://h/sse"}, "new": {"command": "x"}}}"#,
        )
        .unwrap();
        assert_eq!(parsed.servers.len(), 1);
        assert_eq!(parsed.skipped.len(), 1);
        assert_eq!(parsed.skipped[0].0, "/mcpServers/old");
        assert!(parsed.skipped[0].1.contains("legacy SSE"), "{:?}", parsed.skipped);
    }

    #[test]
    fn stdio_and_http_servers_parse_with_defaults() {
        let servers = parse_text(
            r#"{"servers": {
                "local": {"command": "servers/run", "args": ["-v"], "env": {"A": "1"}},
                "remote": {"url": "http://127.0.0.1:9/mcp", "timeoutMs": 5000, "enabled": false}
            }}"#,
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        let ServerTransport::Stdio { command, args, env } = &servers[0].transport else {
            panic!("stdio expected");
        };
        assert_eq!(
            command.path,
            PathBuf::from("/p/.elph/servers/run"),
            "relative to the file's folder"
        );
        assert_eq!(args, &["-v"]);
        assert_eq!(env["A"], "1");
        assert_eq!(servers[0].timeout, Duration::from_secs(60));
        assert_eq!(servers[0].startup_timeout, Duration::from_secs(30));
        assert!(servers[0].enabled);
        assert!(matches!(servers[1].transport, ServerTransport::Http { .. }));
        assert_eq!(servers[1].timeout, Duration::from_secs(5));
        assert!(!servers[1].enabled);
    }

    #[test]
    fn startup_and_tool_timeouts_are_per_server() {
        let servers = parse_text(
            r#"{"mcpServers": {"slow": {"command": "x", "startupTimeoutMs": 120000, "toolTimeoutMs": 900}}}"#,
        )
        .unwrap();
        assert_eq!(servers[0].startup_timeout, Duration::from_secs(120));
        assert_eq!(servers[0].timeout, Duration::from_millis(900));
    }

    #[test]
    fn mistakes_name_the_place() {
        let cases = [
            (
                r#"{"servers": {"a": {"command": "x", "bogus": 1}}}"#,
                "/servers/a",
                "unknown field `bogus`",
            ),
            (r#"{"servers": {"a": {}}}"#, "/servers/a", "needs \"command\""),
            (
                r#"{"servers": {"a": {"command": "x", "url": "http://h"}}}"#,
                "/servers/a",
                "not both",
            ),
            (
                r#"{"servers": {"a": {"url": "ftp://h"}}}"#,
                "/servers/a/url",
                "http://",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "timeoutMs": 0}}}"#,
                "/servers/a/timeoutMs",
                "expected 1",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "startupTimeoutMs": 600001}}}"#,
                "/servers/a/startupTimeoutMs",
                "expected 1 to 600000",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "startupTimeoutMs": 1.5}}}"#,
                "/servers/a/startupTimeoutMs",
                "whole number",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "toolTimeoutMs": 0}}}"#,
                "/servers/a/toolTimeoutMs",
                "expected 1",
            ),
            (
                r#"{"servers": {"a": {"command": "x", "toolTimeoutMs": 5, "timeoutMs": 5}}}"#,
                "/servers/a/timeoutMs",
                "not both",
            ),
            (
                r#"{"servers": {"a b": {"command": "x"}}}"#,
                "/servers/a b",
                "not allowed",
            ),
            (
                r#"{"servers": {"a__b": {"command": "x"}}}"#,
                "/servers/a__b",
                "without '__'",
            ),
            (r#"{"servers": {}, "extra": true}"#, "", "unknown field `extra`"),
            (r#"{"servers": {}, "mcpServers": {}}"#, "", "keep one"),
            (r#"{}"#, "", "no \"mcpServers\""),
            (
                r#"{"mcpServers": {"a": {"type": "stdio", "url": "http://h"}}}"#,
                "/mcpServers/a",
                "needs \"command\"",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "http", "command": "x"}}}"#,
                "/mcpServers/a",
                "needs \"url\"",
            ),
            (
                r#"{"mcpServers": {"a": {"type": "websocket", "command": "x"}}}"#,
                "/mcpServers/a",
                "unknown variant `websocket`",
            ),
            (
                r#"{"mcpServers": {"a": {"url": "http://h", "headers": {"X": "${NOPE}"}}}}"#,
                "/mcpServers/a/headers/X",
                "NOPE is not set",
            ),
            (
                r#"{"mcpServers": {"a": {"command": "x", "args": ["ok", "${BAD"]}}}"#,
                "/mcpServers/a/args/1",
                "without a closing",
            ),
        ];
        for (text, pointer, reason) in cases {
            let error = parse_text(text).unwrap_err();
            assert_eq!(error.pointer.as_deref(), Some(pointer), "{text}: {error:?}");
            assert!(error.message.contains(reason), "{text}: {}", error.message);
            assert!(error.message.ends_with("file ignored"), "{}", error.message);
        }
        let error = parse_text("{not json").unwrap_err();
        assert!(error.message.contains("not valid JSON"), "{}", error.message);
    }

    #[test]
    fn home_wins_duplicates_and_untrusted_project_is_not_read() {
        let root = tempfile::tempdir().unwrap();
        let config_dir = root.path().join("config");
        let project = root.path().join("project");
        std::fs::create_dir_all(project.join(".elph")).unwrap();
        std::fs::create_dir_all(&config_dir).unwrap();
        let paths = Paths {
            config_dir,
            data_dir: root.path().join("data"),
            project_dir: project,
        };
        std::fs::write(
            home_file(&paths),
            r#"{"servers": {"same": {"command": "/bin/true"}}}"#,
        )
        .unwrap();
        std::fs::write(
            project_file(&paths),
            r#"{"servers": {"same": {"command": "/bin/false"}, "other": {"command": "/bin/true"}}}"#,
        )
        .unwrap();

        let inputs = McpInputs::headless("`elph run`");
        let trusted = McpConfig::load(&paths, true, &inputs);
        let names: Vec<&str> = trusted.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["same", "other"]);
        assert_eq!(trusted.servers[0].scope, McpScope::Home);
        assert_eq!(trusted.diagnostics.len(), 1);
        assert!(
            trusted.diagnostics[0]
                .message
                .contains("duplicate MCP server 'same'")
        );

        let untrusted = McpConfig::load(&paths, false, &inputs);
        assert_eq!(untrusted.servers.len(), 1);
        assert_eq!(untrusted.files[1].state, McpFileState::SkippedUntrusted);
        assert!(
            untrusted.diagnostics[0]
                .to_string()
                .contains("project MCP servers skipped until"),
            "{:?}",
            untrusted.diagnostics
        );

        // `.mcp.json` at the root is read after .elph/mcp.json, behind the same trust.
        let root_file = paths.project_dir.join(".mcp.json");
        std::fs::write(
            &root_file,
            r#"{"mcpServers": {"other": {"command": "/bin/false"}, "root": {"command": "/bin/true"}}}"#,
        )
        .unwrap();
        let trusted = McpConfig::load(&paths, true, &inputs);
        let names: Vec<&str> = trusted.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["same", "other", "root"]);
        assert_eq!(trusted.servers[2].scope, McpScope::Project);
        assert_eq!(trusted.servers[2].source, root_file);
        assert!(
            trusted
                .diagnostics
                .iter()
                .any(|d| d.message.contains("duplicate MCP server 'other'")),
            "{:?}",
            trusted.diagnostics
        );
        let untrusted = McpConfig::load(&paths, false, &inputs);
        assert_eq!(untrusted.servers.len(), 1);
        assert_eq!(untrusted.files[2].path, root_file);
        assert_eq!(untrusted.files[2].state, McpFileState::SkippedUntrusted);
        std::fs::remove_file(&root_file).unwrap();

        std::fs::write(project_file(&paths), "[]").unwrap();
        let malformed = McpConfig::load(&paths, true, &inputs);
        assert_eq!(malformed.servers.len(), 1, "the home file still loads");
        assert!(matches!(malformed.files[1].state, McpFileState::Malformed { .. }));
    }
}
