//! The hooks.json model, its published JSON Schema, and loading one file with validation.
//!
//! The committed `schemas/hooks-schema.json` is generated from these types (a test keeps them equal),
//! and every file is checked against that schema before serde reads it, so the schema is the one
//! place where the rules live.

use std::path::Path;
use std::sync::OnceLock;

use elph_agent::hooks::HookEvent;
use elph_agent::hooks::limits::{
    DEFAULT_TIMEOUT_MS, MAX_CONFIGURABLE_BYTES, MAX_TIMEOUT_MS, MIN_CONFIGURABLE_BYTES, MIN_TIMEOUT_MS,
};
use elph_agent::json_schema::{Rule, Validator, Violation};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::diagnostics::Diagnostic;

pub(crate) const SCHEMA_ID: &str = "https://elph.space/hooks-schema.json";

/// A whole hooks.json file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "Elph lifecycle hooks",
    description = "Hook commands that Elph runs at lifecycle events. See docs/hooks.md.",
    extend("$id" = SCHEMA_ID)
)]
pub struct HooksFile {
    /// The schema this file follows; editors use it for completion.
    // `null` is not a way to leave a field out: `with` keeps it out of the schema.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub schema: Option<String>,
    /// Hooks, run in this order for each event.
    pub hooks: Vec<HookConfig>,
}

/// One hook as written in hooks.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = hook_rules)]
pub struct HookConfig {
    /// Unique across the home and project files.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"))]
    pub id: String,
    /// The lifecycle event that runs this hook.
    pub event: HookEvent,
    /// Which tools (and tool inputs) a tool event applies to, on preToolUse, permissionRequest,
    /// postToolUse and postToolUseFailure; which sessions (`source`) on sessionStart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "MatcherConfig")]
    pub matcher: Option<MatcherConfig>,
    /// The executable, run directly (never through a shell). A relative path with a separator resolves
    /// against the folder of this file; a bare name is looked up on PATH. A hook has exactly one of
    /// command, url, prompt and mcpTool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pub command: Option<String>,
    /// POST the payload as JSON to this URL; the response body is the outcome. A project hook needs
    /// https unless the host is loopback, and a URL that hooks.allowedUrls of settings.json allows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s]+$"))]
    pub url: Option<String>,
    /// Headers of a url hook's request. A value may take a variable of allowedEnvVars as `${NAME}`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(extend("propertyNames" = {"pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"}))]
    pub headers: std::collections::BTreeMap<String, String>,
    /// The variables of Elph's environment that a url hook's headers may take (`${NAME}`); any
    /// other is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = "^[A-Za-z_][A-Za-z0-9_]*$")))]
    pub allowed_env_vars: Vec<String>,
    /// A model judges the payload: this prompt and the payload go to `model`, whose answer must
    /// be an outcome (a JSON object; `{}` for no change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pub prompt: Option<String>,
    /// The model of a prompt hook as `PROVIDER/MODEL`; absent: the session's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^[^/\s]+/\S+$"))]
    pub model: Option<String>,
    /// Call a tool of a connected MCP server (mcp.json) with the payload as its arguments; the
    /// tool's text answer is the outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "McpToolConfig")]
    pub mcp_tool: Option<McpToolConfig>,
    /// Arguments, passed literally.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// How long the hook may run, in milliseconds.
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = MIN_TIMEOUT_MS, max = MAX_TIMEOUT_MS))]
    pub timeout_ms: u64,
    /// How long a run should take, in milliseconds: a run over it is a warning (in the session and
    /// in `elph doctor`), never a failure; the hook still runs to its timeoutMs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = MIN_TIMEOUT_MS, max = MAX_TIMEOUT_MS))]
    pub budget_ms: Option<u64>,
    /// A disabled hook is listed but never run.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
    /// What the hook reads and prints: Elph's protocol, or Claude Code's (`claude-code`), so a
    /// hook written for Claude Code runs unchanged. See docs/claude-code.md.
    #[serde(default, skip_serializing_if = "Protocol::is_elph")]
    pub protocol: Protocol,
    /// Run the hook confined by the kernel: read-only (write nowhere) or workspace-write (write
    /// only in the project, whose .elph/ and .git/hooks/ stay read-only). Absent: unconfined, or
    /// projectHooks.sandbox of settings.json for a project hook. See docs/security.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<HookSandbox>,
    /// Keep one process for the session instead of one per event: started at the hook's first
    /// matching event, it reads one JSON payload per line on stdin and answers each with one JSON
    /// outcome per line on stdout that echoes the payload's requestId ({"requestId": N}: no
    /// change). See docs/hooks.md, "The line protocol".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// Run in the background: the session does not wait for the hook, and its outcome is ignored
    /// (a hook that only observes: a log, a notification). Runs of one async hook keep their order;
    /// Elph waits for them, each within its timeoutMs, at sessionEnd. Not with failClosed or
    /// persistent. See docs/hooks.md, "Async hooks".
    #[serde(rename = "async", default, skip_serializing_if = "std::ops::Not::not")]
    pub run_async: bool,
    /// A guard: when this hook fails for any reason (it cannot start, exits non-zero, times out,
    /// passes a limit, or prints an outcome that does not validate), what it guards does not go on.
    /// Not on observation-only events (sessionStart, postCompact, stop, notification, sessionEnd).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fail_closed: bool,
    /// Variables set for this hook, on top of the ones every hook gets (docs/hooks.md, "The
    /// environment of a hook"). A value may take Elph's own variables as `${NAME}` or
    /// `${NAME:-default}`; ELPH_HOOK_ID, ELPH_SESSION_ID and ELPH_PROJECT_DIR cannot be replaced.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    #[schemars(extend("propertyNames" = {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}))]
    pub env: std::collections::BTreeMap<String, String>,
    /// The largest payload sent to this hook, in bytes (default 131072); a larger one is not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = MIN_CONFIGURABLE_BYTES, max = MAX_CONFIGURABLE_BYTES))]
    pub max_input_bytes: Option<u64>,
    /// The most stdout this hook may print, in bytes (default 65536); past it, it is killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = MIN_CONFIGURABLE_BYTES, max = MAX_CONFIGURABLE_BYTES))]
    pub max_output_bytes: Option<u64>,
}

/// The tool an mcpTool hook calls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpToolConfig {
    /// The server's name in mcp.json.
    #[schemars(length(min = 1))]
    pub server: String,
    /// The tool's name as the server lists it.
    #[schemars(length(min = 1))]
    pub tool: String,
}

/// The fields that say what a hook runs: exactly one per hook.
pub(crate) const HANDLER_FIELDS: [&str; 4] = ["command", "url", "prompt", "mcpTool"];

/// The payload and answer format a hook speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Elph's payload (camelCase fields) and outcome.
    #[default]
    Elph,
    /// Claude Code's payload (`tool_name`, `tool_input`, …) and answers (exit 2,
    /// `hookSpecificOutput`, …). Only on events Claude Code has.
    ClaudeCode,
    /// Gemini CLI's payload and answers: Claude Code's protocol under Gemini CLI's event and tool
    /// names (`BeforeTool`, `run_shell_command`, …). Only on events Gemini CLI has.
    GeminiCli,
}

impl HookConfig {
    /// Which of command, url, prompt and mcpTool the hook has (the schema made sure of exactly one).
    pub(crate) fn handler_field(&self) -> &'static str {
        if self.url.is_some() {
            "url"
        } else if self.prompt.is_some() {
            "prompt"
        } else if self.mcp_tool.is_some() {
            "mcpTool"
        } else {
            "command"
        }
    }
}

impl Protocol {
    pub(crate) fn is_elph(&self) -> bool {
        *self == Protocol::Elph
    }

    /// The other agent's names the hook speaks, for the two foreign protocols.
    pub(crate) fn dialect(self) -> Option<crate::hooks::claude_code::Dialect> {
        match self {
            Protocol::Elph => None,
            Protocol::ClaudeCode => Some(crate::hooks::claude_code::Dialect::Claude),
            Protocol::GeminiCli => Some(crate::hooks::claude_code::Dialect::Gemini),
        }
    }
}

/// The sandbox a hook may declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HookSandbox {
    ReadOnly,
    WorkspaceWrite,
}

impl From<HookSandbox> for elph_process::sandbox::SandboxMode {
    fn from(sandbox: HookSandbox) -> Self {
        match sandbox {
            HookSandbox::ReadOnly => elph_process::sandbox::SandboxMode::ReadOnly,
            HookSandbox::WorkspaceWrite => elph_process::sandbox::SandboxMode::WorkspaceWrite,
        }
    }
}

/// Which events a hook runs for. Absent, or `{}`, means every one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MatcherConfig {
    /// Exact names, `prefix*`, `*suffix`, or `*`. Tool events only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        with = "Vec<String>",
        length(min = 1),
        inner(regex(pattern = r"^(\*|\*[^*]+|[^*]+\*?)$"))
    )]
    pub tool_names: Option<Vec<String>>,
    /// Conditions on the tool's input, all of which must hold: an input field and a pattern its
    /// value must match (`{"command": "git commit*"}`, `{"path": "src/**"}`). `*` is any run of
    /// characters (in `path`, within one folder; `**` crosses folders), `?` one character, `[abc]`
    /// one of a set, `\*` a literal star. A path inside the project matches relative to it. Tool
    /// events only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "std::collections::BTreeMap<String, String>", extend("minProperties" = 1))]
    pub input: Option<std::collections::BTreeMap<String, String>>,
    /// How the session began: `new`, `resume`. sessionStart only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<elph_agent::hooks::SessionSource>", length(min = 1))]
    pub source: Option<Vec<elph_agent::hooks::SessionSource>>,
}

impl MatcherConfig {
    /// The input conditions, compiled; the first bad pattern is the error.
    pub(crate) fn input_conditions(
        &self,
    ) -> Result<Vec<elph_agent::hooks::InputCondition>, elph_agent::hooks::InputPatternError> {
        self.input
            .iter()
            .flatten()
            .map(|(field, pattern)| elph_agent::hooks::InputCondition::new(field, pattern))
            .collect()
    }
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

fn default_enabled() -> bool {
    true
}

/// The rules between a hook's fields: which matcher on which event, failClosed only where a
/// failure has something to stop, and exactly one handler.
fn hook_rules(schema: &mut Schema) {
    let no_matcher: Vec<&str> = HookEvent::ALL
        .into_iter()
        .filter(|event| !event.is_tool_event() && *event != HookEvent::SessionStart)
        .map(HookEvent::as_str)
        .collect();
    let tool: Vec<&str> = HookEvent::ALL
        .into_iter()
        .filter(|event| event.is_tool_event())
        .map(HookEvent::as_str)
        .collect();
    let observing: Vec<&str> = HookEvent::ALL
        .into_iter()
        .filter(|event| !can_fail_closed(*event))
        .map(HookEvent::as_str)
        .collect();
    schema.insert(
        "allOf".into(),
        json!([
            {
                "if": { "properties": { "event": { "enum": no_matcher } }, "required": ["event"] },
                "then": { "properties": { "matcher": false } }
            },
            {
                "if": { "properties": { "event": { "const": HookEvent::SessionStart.as_str() } }, "required": ["event"] },
                "then": { "properties": { "matcher": { "properties": { "toolNames": false, "input": false } } } }
            },
            {
                "if": { "properties": { "event": { "enum": tool } }, "required": ["event"] },
                "then": { "properties": { "matcher": { "properties": { "source": false } } } }
            },
            {
                "if": { "properties": { "event": { "enum": observing } }, "required": ["event"] },
                "then": { "properties": { "failClosed": { "const": false } } }
            },
            { "oneOf": HANDLER_FIELDS.map(|field| json!({ "required": [field] })) }
        ]),
    );
}

/// Whether a failure of a hook of `event` has something to stop. Observation-only events run
/// after the fact, so a fail-closed hook there could only pretend to guard.
pub(crate) fn can_fail_closed(event: HookEvent) -> bool {
    elph_agent::hooks::went_on_unchecked(event).is_some()
}

fn fail_closed_events() -> String {
    HookEvent::ALL
        .into_iter()
        .filter(|event| can_fail_closed(*event))
        .map(HookEvent::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The schema as published, generated from the types.
#[expect(
    clippy::expect_used,
    reason = "the schema is plain data generated from our own types"
)]
pub fn generated_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(HooksFile)).expect("the schema serializes")
}

/// The published schema as pretty JSON with a trailing newline: the exact bytes of
/// `schemas/hooks-schema.json`.
#[expect(
    clippy::expect_used,
    reason = "the schema is plain data generated from our own types"
)]
pub fn generated_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&generated_schema()).expect("the schema serializes");
    text.push('\n');
    text
}

#[expect(
    clippy::expect_used,
    reason = "the schema generated from our own types compiles (tested)"
)]
fn validator() -> &'static Validator {
    static VALIDATOR: OnceLock<Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| Validator::new(&generated_schema()).expect("the hooks schema compiles"))
}

/// Why a file could not be loaded: enough for one diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    /// The JSON pointer of the first error, when the file parsed as JSON.
    pub pointer: Option<String>,
    pub message: String,
}

impl LoadError {
    fn new(pointer: Option<String>, message: impl Into<String>) -> Self {
        LoadError {
            pointer,
            message: message.into(),
        }
    }

    pub(crate) fn into_diagnostic(self, path: &Path) -> Diagnostic {
        let diagnostic = Diagnostic::new(self.message).in_file(path);
        match self.pointer {
            Some(pointer) => diagnostic.at(pointer),
            None => diagnostic,
        }
    }
}

/// Reads one hooks.json. `Ok(None)` when the file does not exist (not an error).
///
/// The read is bounded and non-blocking ([`elph_config::read_config`]): a FIFO, a device or a file
/// over 4 MiB is an error, never a hang.
pub fn read_file(path: &Path) -> Result<Option<HooksFile>, LoadError> {
    let bytes = match elph_config::read_config(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(err) => return Err(LoadError::new(None, format!("{}; ignored", err.reason()))),
    };
    parse(&bytes).map(Some)
}

/// Reads one hooks.json and finds every problem in it (see [`check`]). `Ok(None)` when the file
/// does not exist.
pub fn check_file(path: &Path) -> Result<Option<HooksFile>, Vec<LoadError>> {
    let bytes = match elph_config::read_config(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(err) => return Err(vec![LoadError::new(None, format!("{}; ignored", err.reason()))]),
    };
    check(&bytes).map(Some)
}

/// Parses and validates the contents of a hooks.json; the first problem is enough to ignore the
/// file (see [`check`] for every problem).
pub fn parse(bytes: &[u8]) -> Result<HooksFile, LoadError> {
    check(bytes).map_err(|problems| {
        problems
            .into_iter()
            .next()
            .unwrap_or_else(|| LoadError::new(None, "is not valid; file ignored"))
    })
}

/// Parses and validates the contents of a hooks.json, finding every problem, each with its JSON
/// pointer (what `elph hooks validate` reports). A file that is not JSON at all, or is shaped like
/// Claude Code's settings, has one problem: the rest would be noise.
pub fn check(bytes: &[u8]) -> Result<HooksFile, Vec<LoadError>> {
    let bare = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bare.iter().all(u8::is_ascii_whitespace) {
        return Err(vec![LoadError::new(
            None,
            "is empty; expected an object such as {\"hooks\": []}; ignored",
        )]);
    }
    let value = elph_config::parse_json(bytes)
        .map_err(|err| vec![LoadError::new(err.pointer, format!("{}; ignored", err.message))])?;
    if let Some(problem) = claude_code_shape(&value) {
        return Err(vec![problem]);
    }
    let mut problems = Vec::new();
    // Checked before the schema, which counts 1e3 as an integer: serde would not, and would then
    // report the whole file instead of the field.
    if let Some(hooks) = value.get("hooks").and_then(Value::as_array) {
        for (index, hook) in hooks.iter().enumerate() {
            if let Some(problem) = handler_count(index, hook) {
                problems.push(problem);
            }
            if let Err(err) = elph_config::json::whole_number_at(&value, &format!("/hooks/{index}/timeoutMs"))
            {
                problems.push(LoadError::new(
                    err.pointer,
                    format!(
                        "{} of milliseconds between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}; file ignored",
                        err.message
                    ),
                ));
            }
            if let Err(err) = elph_config::json::whole_number_at(&value, &format!("/hooks/{index}/budgetMs"))
            {
                problems.push(LoadError::new(
                    err.pointer,
                    format!(
                        "{} of milliseconds between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}; file ignored",
                        err.message
                    ),
                ));
            }
        }
    }
    for violation in validator().violations(&value) {
        for (pointer, message) in describe_schema_error(violation) {
            // One problem per place: a timeoutMs of 1.5 fails both checks.
            if problems.iter().any(|p| p.pointer.as_deref() == Some(&pointer)) {
                continue;
            }
            problems.push(LoadError::new(Some(pointer), format!("{message}; file ignored")));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let file: HooksFile = serde_json::from_value(value).map_err(|err| {
        vec![LoadError::new(
            Some(String::new()),
            format!("{err}; file ignored"),
        )]
    })?;
    for (index, hook) in file.hooks.iter().enumerate() {
        problems.extend(handler_field_problems(index, hook));
        if hook.protocol != Protocol::Elph && !claude_code_has(hook.event) {
            let (protocol, agent) = match hook.protocol {
                Protocol::GeminiCli => ("gemini-cli", "Gemini CLI"),
                _ => ("claude-code", "Claude Code"),
            };
            problems.push(LoadError::new(
                Some(format!("/hooks/{index}/protocol")),
                format!(
                    "hook '{}': protocol {protocol} is only for events {agent} has ({}), not {}; file ignored",
                    hook.id,
                    HookEvent::ALL
                        .into_iter()
                        .filter(|event| claude_code_has(*event))
                        .map(HookEvent::as_str)
                        .collect::<Vec<_>>()
                        .join(", "),
                    hook.event
                ),
            ));
        }
        if let Some(Err(error)) = hook.matcher.as_ref().map(MatcherConfig::input_conditions) {
            problems.push(LoadError::new(
                Some(format!(
                    "/hooks/{index}/matcher/input/{}",
                    escape_pointer(&error.field)
                )),
                format!("hook '{}': {error}; file ignored", hook.id),
            ));
        }
        if hook.run_async && hook.fail_closed {
            problems.push(LoadError::new(
                Some(format!("/hooks/{index}/async")),
                format!(
                    "hook '{}': an async hook runs in the background and its outcome is ignored, so it \
                     cannot be a fail-closed guard; remove \"async\" or \"failClosed\"; file ignored",
                    hook.id
                ),
            ));
        }
        if hook.run_async && hook.persistent {
            problems.push(LoadError::new(
                Some(format!("/hooks/{index}/async")),
                format!(
                    "hook '{}': an async hook is started once per event in the background, so it \
                     cannot be persistent; remove \"async\" or \"persistent\"; file ignored",
                    hook.id
                ),
            ));
        }
        if hook.protocol != Protocol::Elph && hook.persistent {
            problems.push(LoadError::new(
                Some(format!("/hooks/{index}/persistent")),
                format!(
                    "hook '{}': a claude-code or gemini-cli hook answers with its exit code, so it cannot be persistent \
                     (one process answering line by line); remove \"persistent\" or use Elph's protocol; \
                     file ignored",
                    hook.id
                ),
            ));
        }
    }
    if problems.is_empty() {
        Ok(file)
    } else {
        Err(problems)
    }
}

/// A hook with no handler, or more than one: said before the schema's `oneOf`, whose own words
/// ("not valid under any of the schemas") would not tell what to do.
fn handler_count(index: usize, hook: &Value) -> Option<LoadError> {
    let object = hook.as_object()?;
    let present: Vec<&str> = HANDLER_FIELDS
        .into_iter()
        .filter(|field| object.contains_key(*field))
        .collect();
    let message = match present.as_slice() {
        [_] => return None,
        [] => "missing what the hook runs: give exactly one of command (a program), url (an HTTP \
               endpoint), prompt (a model judges) or mcpTool (a tool of an MCP server); file ignored"
            .to_string(),
        [first, rest @ ..] => format!(
            "has {first} and {}: a hook runs exactly one of command, url, prompt or mcpTool; keep one; \
             file ignored",
            rest.join(" and ")
        ),
    };
    Some(LoadError::new(Some(format!("/hooks/{index}")), message))
}

/// Fields that only mean something with one kind of handler, given with another.
fn handler_field_problems(index: usize, hook: &HookConfig) -> Vec<LoadError> {
    let handler = hook.handler_field();
    let mut wrong: Vec<(&str, &str)> = Vec::new();
    if handler != "command" {
        if !hook.args.is_empty() {
            wrong.push(("args", "command"));
        }
        if hook.persistent {
            wrong.push(("persistent", "command"));
        }
        if hook.sandbox.is_some() {
            wrong.push(("sandbox", "command"));
        }
        if !hook.env.is_empty() {
            wrong.push(("env", "command"));
        }
    }
    if handler != "url" {
        if !hook.headers.is_empty() {
            wrong.push(("headers", "url"));
        }
        if !hook.allowed_env_vars.is_empty() {
            wrong.push(("allowedEnvVars", "url"));
        }
    }
    if handler != "prompt" && hook.model.is_some() {
        wrong.push(("model", "prompt"));
    }
    if handler == "prompt" && hook.protocol != Protocol::Elph {
        // The model is told Elph's outcome format; there is no Claude Code process to mimic.
        wrong.push(("protocol", "command, url or mcpTool"));
    }
    let mut problems: Vec<LoadError> = wrong
        .into_iter()
        .map(|(field, belongs)| {
            LoadError::new(
                Some(format!("/hooks/{index}/{field}")),
                format!(
                    "hook '{}': {field} is only for a {belongs} hook, and this one is a {handler} hook; \
                     remove it; file ignored",
                    hook.id
                ),
            )
        })
        .collect();
    for (name, value) in &hook.headers {
        if let Err(error) = super::handler::http::check_header_value(value, &hook.allowed_env_vars) {
            problems.push(LoadError::new(
                Some(format!("/hooks/{index}/headers/{}", escape_pointer(name))),
                format!("hook '{}': header {name}: {error}; file ignored", hook.id),
            ));
        }
    }
    problems
}

/// A file shaped like Claude Code's settings (`"hooks": {"PreToolUse": [...]}`): the first thing
/// people bring over. Pointing at the translator beats "is not of type array".
fn claude_code_shape(value: &Value) -> Option<LoadError> {
    let hooks = value.get("hooks")?.as_object()?;
    // Claude Code's `hooks` maps event names to lists of matcher groups.
    let (example, _) = hooks.iter().next()?;
    if !hooks.values().all(Value::is_array) {
        return None;
    }
    Some(LoadError::new(
        Some("/hooks".into()),
        format!(
            "this looks like Claude Code's hooks settings (\"hooks\": {{\"{example}\": [...]}}); Elph's \
             hooks.json holds a list, one object per hook (\"hooks\": [{{\"id\": ..., \"event\": ..., \
             \"command\": ...}}]). `elph hooks import FILE` translates a Claude Code settings file into Elph \
             hooks; see docs/claude-code.md; file ignored"
        ),
    ))
}

/// The field names allowed at `pointer` (the object that had an unknown field), from the schema.
fn fields_at(pointer: &str) -> Vec<&'static str> {
    static FIELDS: OnceLock<[Vec<String>; 4]> = OnceLock::new();
    let [top, hook, matcher, mcp_tool] = FIELDS.get_or_init(|| {
        let schema = generated_schema();
        let names = |at: &str| -> Vec<String> {
            schema
                .pointer(at)
                .and_then(Value::as_object)
                .map(|properties| properties.keys().cloned().collect())
                .unwrap_or_default()
        };
        [
            names("/properties"),
            names("/$defs/HookConfig/properties"),
            names("/$defs/MatcherConfig/properties"),
            names("/$defs/McpToolConfig/properties"),
        ]
    });
    let depth = pointer.split('/').count();
    let list = match depth {
        1 => top,
        3 => hook,
        _ if pointer.ends_with("/mcpTool") => mcp_tool,
        _ => matcher,
    };
    list.iter().map(String::as_str).collect()
}

/// Whether Claude Code has `event` (it has a name for it there).
fn claude_code_has(event: HookEvent) -> bool {
    crate::hooks::claude_code::payload::claude_event(event).is_some()
}

/// One schema error in words, with its pointer; an object with several unknown fields gives one
/// problem per field.
fn describe_schema_error(violation: Violation) -> Vec<(String, String)> {
    let Violation {
        pointer,
        instance,
        rule,
        message,
    } = violation;
    let event_names = HookEvent::ALL.map(HookEvent::as_str).join(", ");
    let message = match rule {
        Rule::AdditionalProperties { unexpected } => {
            let allowed = fields_at(&pointer);
            return unexpected
                .iter()
                .map(|name| {
                    (
                        format!("{pointer}/{}", escape_pointer(name)),
                        format!(
                            "unknown field '{name}'{}",
                            crate::suggest::did_you_mean(name, allowed.iter().copied())
                        ),
                    )
                })
                .collect();
        }
        // `handler_count` already said it in words.
        Rule::Required { property } if HANDLER_FIELDS.contains(&property.as_str()) => return Vec::new(),
        // Only the hook's own oneOf (its handler): an enum's oneOf deeper down is a real problem.
        Rule::Other if message.contains("'oneOf'") && pointer.split('/').count() == 3 => return Vec::new(),
        Rule::Required { property } => format!("missing required field {}", Value::from(property)),
        Rule::FalseSchema if pointer.ends_with("/matcher") => {
            format!(
                "a matcher is only allowed on the events about a tool call ({}) (and, with only \
                 \"source\", on sessionStart)",
                HookEvent::ALL
                    .into_iter()
                    .filter(|event| event.is_tool_event())
                    .map(HookEvent::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        Rule::FalseSchema if pointer.ends_with("/matcher/source") => {
            "matcher.source is only for sessionStart hooks".to_string()
        }
        Rule::FalseSchema
            if pointer.ends_with("/matcher/toolNames") || pointer.ends_with("/matcher/input") =>
        {
            "on sessionStart a matcher holds only \"source\" (toolNames and input are for tool events)"
                .to_string()
        }
        Rule::Const if pointer.ends_with("/failClosed") => format!(
            "failClosed is only for events whose hooks guard something ({}); this event is \
             observation-only: its hooks run after the fact, so a failure has nothing to stop",
            fail_closed_events()
        ),
        Rule::Minimum | Rule::Maximum
            if pointer.ends_with("/maxInputBytes") || pointer.ends_with("/maxOutputBytes") =>
        {
            format!(
                "{} is {}; it must be between {MIN_CONFIGURABLE_BYTES} and {MAX_CONFIGURABLE_BYTES} bytes",
                pointer.rsplit('/').next().unwrap_or_default(),
                instance
            )
        }
        Rule::Enum if pointer.ends_with("/event") => {
            match instance
                .as_str()
                .and_then(|name| crate::suggest::nearest(name, HookEvent::ALL.map(HookEvent::as_str)))
            {
                Some(event) => format!(
                    "unknown event {instance}; did you mean '{event}'? (event names are camelCase: {event_names})"
                ),
                None => format!("unknown event {instance}; expected one of: {event_names}"),
            }
        }
        Rule::Pattern if is_id(&pointer) => format!(
            "invalid id {instance}: an id starts with a letter or digit and holds only letters, digits, '.', '_' and '-'"
        ),
        Rule::Pattern if pointer.ends_with("/url") => {
            format!("invalid url {instance}: a url hook posts to an http:// or https:// URL")
        }
        Rule::Pattern if pointer.ends_with("/model") => {
            format!("invalid model {instance}: name it as PROVIDER/MODEL (for example openai/gpt-4.1-mini)")
        }
        Rule::Pattern if pointer.contains("/allowedEnvVars/") => {
            format!("invalid variable name {instance}: letters, digits and '_', not starting with a digit")
        }
        Rule::Pattern if pointer.contains("/headers") => {
            format!("invalid header name {instance}: letters, digits and !#$%&'*+.^_`|~-")
        }
        Rule::Pattern => {
            format!("invalid tool name pattern {instance}: use an exact name, 'prefix*', '*suffix', or '*'")
        }
        Rule::MinLength if pointer.ends_with("/id") => "id must not be empty".to_string(),
        Rule::MinLength if pointer.ends_with("/command") => "command must not be empty".to_string(),
        Rule::MinLength if pointer.ends_with("/prompt") => "prompt must not be empty".to_string(),
        Rule::Minimum | Rule::Maximum if pointer.ends_with("/budgetMs") => {
            format!("budgetMs is {instance}; it must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}")
        }
        Rule::MinLength => "must not be empty".to_string(),
        Rule::MinItems => {
            "toolNames must list at least one pattern (omit the matcher to match every tool)".to_string()
        }
        Rule::Minimum | Rule::Maximum if pointer.ends_with("/timeoutMs") => {
            format!("timeoutMs is {instance}; it must be between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}")
        }
        Rule::Type if pointer.ends_with("/timeoutMs") => format!(
            "timeoutMs is {instance}; it must be a whole number of milliseconds between {MIN_TIMEOUT_MS} and {MAX_TIMEOUT_MS}"
        ),
        _ => message,
    };
    vec![(pointer, message)]
}

fn is_id(pointer: &str) -> bool {
    pointer.ends_with("/id")
}

fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_document_example_is_valid() {
        let file = parse(
            br#"{
              "$schema": "https://elph.space/hooks-schema.json",
              "hooks": [{"id": "audit-session-starts", "event": "sessionStart", "command": "hooks/audit-session-starts.sh", "timeoutMs": 5000, "enabled": true}]
            }"#,
        )
        .unwrap();
        assert_eq!(file.hooks.len(), 1);
        assert_eq!(file.hooks[0].timeout_ms, 5000);
    }

    #[test]
    fn defaults_apply() {
        let file = parse(br#"{"hooks": [{"id": "a", "event": "stop", "command": "x"}]}"#).unwrap();
        let hook = &file.hooks[0];
        assert_eq!(
            (hook.timeout_ms, hook.enabled, hook.args.len()),
            (10_000, true, 0)
        );
    }

    fn problems(json: &str) -> Vec<(Option<String>, String)> {
        check(json.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|problem| (problem.pointer, problem.message))
            .collect()
    }

    #[test]
    fn a_hook_runs_exactly_one_handler_and_says_so() {
        let none = problems(r#"{"hooks": [{"id": "a", "event": "stop"}]}"#);
        assert_eq!(none.len(), 1, "{none:?}");
        assert_eq!(none[0].0.as_deref(), Some("/hooks/0"));
        assert!(none[0].1.contains("exactly one of command"), "{none:?}");
        let two =
            problems(r#"{"hooks": [{"id": "a", "event": "stop", "command": "x", "url": "https://h/"}]}"#);
        assert_eq!(two.len(), 1, "{two:?}");
        assert!(two[0].1.contains("has command and url"), "{two:?}");
        for (json, field) in [
            (
                r#"{"id": "a", "event": "stop", "url": "https://h/", "args": ["x"]}"#,
                "args",
            ),
            (
                r#"{"id": "a", "event": "stop", "prompt": "p", "persistent": true}"#,
                "persistent",
            ),
            (
                r#"{"id": "a", "event": "stop", "command": "x", "headers": {"A": "b"}}"#,
                "headers",
            ),
            (
                r#"{"id": "a", "event": "stop", "command": "x", "model": "openai/m"}"#,
                "model",
            ),
            (
                r#"{"id": "a", "event": "stop", "prompt": "p", "protocol": "claude-code"}"#,
                "protocol",
            ),
        ] {
            let found = problems(&format!(r#"{{"hooks": [{json}]}}"#));
            assert_eq!(
                found[0].0.as_deref(),
                Some(format!("/hooks/0/{field}").as_str()),
                "{found:?}"
            );
            assert!(found[0].1.contains("is only for a"), "{found:?}");
        }
    }

    #[test]
    fn handler_fields_are_checked_in_words() {
        let header = problems(
            r#"{"hooks": [{"id": "a", "event": "stop", "url": "https://h/", "headers": {"Authorization": "Bearer ${SECRET}"}}]}"#,
        );
        assert_eq!(header[0].0.as_deref(), Some("/hooks/0/headers/Authorization"));
        assert!(header[0].1.contains("allowedEnvVars"), "{header:?}");
        let url = problems(r#"{"hooks": [{"id": "a", "event": "stop", "url": "ftp://h/"}]}"#);
        assert!(url[0].1.contains("http:// or https://"), "{url:?}");
        let model = problems(r#"{"hooks": [{"id": "a", "event": "stop", "prompt": "p", "model": "gpt"}]}"#);
        assert!(model[0].1.contains("PROVIDER/MODEL"), "{model:?}");
        let tool =
            problems(r#"{"hooks": [{"id": "a", "event": "stop", "mcpTool": {"server": "s", "tol": "t"}}]}"#);
        assert!(
            tool.iter()
                .any(|(_, m)| m.contains("unknown field 'tol'") && m.contains("tool")),
            "{tool:?}"
        );
        let budget = problems(r#"{"hooks": [{"id": "a", "event": "stop", "command": "x", "budgetMs": 0}]}"#);
        assert!(budget[0].1.contains("budgetMs is 0"), "{budget:?}");
        let ok = parse(
            br#"{"hooks": [{"id": "a", "event": "preToolUse", "url": "https://h/", "headers": {"Authorization": "Bearer ${T}"},
                 "allowedEnvVars": ["T"], "budgetMs": 200, "failClosed": true}]}"#,
        )
        .unwrap();
        assert_eq!(
            (ok.hooks[0].budget_ms, ok.hooks[0].handler_field()),
            (Some(200), "url")
        );
    }

    #[test]
    fn schema_has_the_published_id() {
        assert_eq!(generated_schema()["$id"], SCHEMA_ID);
    }
}
