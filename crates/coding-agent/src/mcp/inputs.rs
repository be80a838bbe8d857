//! VS Code's `inputs`: values an mcp.json asks the person for, named as `${input:ID}` in a server's
//! fields (a token the file should not hold).
//!
//! ```json
//! { "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
//!   "servers": {"search": {"command": "npx", "args": ["-y", "search-server"],
//!                          "env": {"API_KEY": "${input:api-key}"}}} }
//! ```
//!
//! The terminal UI asks each input that an enabled server names once, when it starts, before its
//! screen opens ([`needed`]); the answers live in the session's [`McpInputs`] and nowhere else. A
//! front end that cannot ask (`elph run`, `elph acp`) takes an input's `default`, and skips a server
//! whose input has none, with a message naming the input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::expand::{ExpandError, inputs_named};
use crate::paths::Paths;

/// One entry of `inputs`, as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct InputConfig {
    /// `promptString` (typed in), `pickString` (one of `options`), or `command` (VS Code runs one of
    /// its commands; Elph cannot, so a server that needs it is skipped).
    #[serde(rename = "type")]
    pub kind: InputKind,
    /// What `${input:ID}` names.
    #[schemars(length(min = 1))]
    pub id: String,
    /// The question shown.
    pub description: Option<String>,
    /// The answer when none is typed, and the value used where nobody can be asked.
    pub default: Option<String>,
    /// Whether the answer is hidden while typed.
    #[serde(default)]
    pub password: bool,
    /// The choices of a `pickString`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<PickOption>,
    /// The VS Code command of a `command` input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The arguments of that command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub args: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) enum InputKind {
    PromptString,
    PickString,
    Command,
}

/// A `pickString` choice: a value, or a value with a label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum PickOption {
    Value(String),
    Labelled {
        #[serde(default)]
        label: Option<String>,
        value: String,
    },
}

impl PickOption {
    pub(crate) fn value(&self) -> &str {
        match self {
            PickOption::Value(value) | PickOption::Labelled { value, .. } => value,
        }
    }

    pub(crate) fn label(&self) -> &str {
        match self {
            PickOption::Labelled {
                label: Some(label), ..
            } => label,
            other => other.value(),
        }
    }
}

impl InputConfig {
    /// The question in words: the description, else the id.
    pub(crate) fn question(&self) -> &str {
        self.description.as_deref().unwrap_or(&self.id)
    }
}

/// The answers of one session. Their values never reach a log or `Debug`: they are often tokens.
#[derive(Clone, Default)]
pub struct McpInputs {
    answers: BTreeMap<String, String>,
    /// The front end that cannot ask (`elph run`); `None` when the terminal UI asked.
    headless: Option<&'static str>,
    /// Every input stands for an empty text: for describing servers without starting them.
    placeholders: bool,
}

impl std::fmt::Debug for McpInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpInputs")
            .field("answered", &self.answers.keys().collect::<Vec<_>>())
            .field("headless", &self.headless)
            .finish()
    }
}

impl McpInputs {
    /// For a front end that cannot ask, named in the message of a server it skips.
    pub fn headless(front_end: &'static str) -> Self {
        McpInputs {
            headless: Some(front_end),
            ..McpInputs::default()
        }
    }

    /// The answers the terminal UI collected (an input left unanswered is missing).
    pub fn answered(answers: BTreeMap<String, String>) -> Self {
        McpInputs {
            answers,
            ..McpInputs::default()
        }
    }

    /// Every input answered with an empty text, for doctor and the trust question, which describe
    /// servers but never start one.
    pub(crate) fn placeholders() -> Self {
        McpInputs {
            placeholders: true,
            ..McpInputs::default()
        }
    }

    /// The value of `${input:ID}` in a file whose `inputs` are `specs`.
    pub(crate) fn resolve(&self, specs: &[InputConfig], id: &str) -> Result<String, ExpandError> {
        let Some(spec) = specs.iter().find(|spec| spec.id == id) else {
            return Err(ExpandError::Malformed(format!(
                "${{input:{id}}} names no entry of the file's \"inputs\" (add {{\"type\": \"promptString\", \"id\": \"{id}\"}})"
            )));
        };
        if spec.kind == InputKind::Command {
            return Err(ExpandError::Input(format!(
                "it needs input '{id}', which runs the VS Code command {}; Elph cannot run VS Code \
                 commands (give the value through ${{env:NAME}} instead)",
                spec.command.as_deref().unwrap_or("(none)")
            )));
        }
        if let Some(answer) = self.answers.get(id) {
            return Ok(answer.clone());
        }
        if self.placeholders {
            return Ok(String::new());
        }
        match (self.headless, &spec.default) {
            (Some(_), Some(default)) => Ok(default.clone()),
            (Some(front_end), None) => Err(ExpandError::Input(format!(
                "it needs input '{id}' ({}), which {front_end} cannot ask for: Elph asks for inputs \
                 only in the terminal UI. To start it here, put the value in an environment variable \
                 and write ${{env:NAME}} in place of ${{input:{id}}}",
                spec.question()
            ))),
            (None, _) => Err(ExpandError::Input(format!(
                "input '{id}' ({}) was not answered",
                spec.question()
            ))),
        }
    }
}

/// The MCP files a session reads, in order, with whether each is read: the home file, then (when
/// the project is trusted) the project's `.elph/mcp.json` and `.mcp.json`.
pub(crate) fn session_files(paths: &Paths, project_trusted: bool) -> Vec<PathBuf> {
    let mut files = vec![super::config::home_file(paths)];
    if project_trusted {
        files.extend(super::config::project_files(paths));
    }
    files
}

/// The inputs that the enabled servers of the session's files name, each once (the first file's
/// entry for an id wins), in the order named. Files that do not load are left to the loader's
/// diagnostics.
pub(crate) fn needed(paths: &Paths, project_trusted: bool) -> Vec<InputConfig> {
    let mut needed: Vec<InputConfig> = Vec::new();
    for file in session_files(paths, project_trusted) {
        for spec in needed_in(&file) {
            if spec.kind != InputKind::Command && !needed.iter().any(|known| known.id == spec.id) {
                needed.push(spec);
            }
        }
    }
    needed
}

fn needed_in(file: &Path) -> Vec<InputConfig> {
    let Ok(Some(bytes)) = elph_config::read_config(file) else {
        return Vec::new();
    };
    let Ok(value) = super::file::parse_jsonc(&bytes) else {
        return Vec::new();
    };
    let Ok(specs) = parse_specs(value.get("inputs")) else {
        return Vec::new();
    };
    let servers = ["mcpServers", "servers"]
        .into_iter()
        .filter_map(|key| value.get(key).and_then(Value::as_object))
        .flat_map(|servers| servers.values())
        .filter(|server| server.get("enabled") != Some(&Value::Bool(false)));
    let mut ids: Vec<String> = Vec::new();
    for server in servers {
        for text in strings_of(server) {
            for id in inputs_named(text) {
                if !ids.iter().any(|known| known == id) {
                    ids.push(id.to_string());
                }
            }
        }
    }
    ids.iter()
        .filter_map(|id| specs.iter().find(|spec| &spec.id == id).cloned())
        .collect()
}

/// Every string inside `value`, depth first.
fn strings_of(value: &Value) -> Vec<&str> {
    match value {
        Value::String(text) => vec![text.as_str()],
        Value::Array(items) => items.iter().flat_map(strings_of).collect(),
        Value::Object(fields) => fields.values().flat_map(strings_of).collect(),
        _ => Vec::new(),
    }
}

/// The `inputs` of a file; the error is (JSON pointer, why).
pub(crate) fn parse_specs(value: Option<&Value>) -> Result<Vec<InputConfig>, (String, String)> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err((
            "/inputs".into(),
            "\"inputs\" is not an array of {\"type\", \"id\", …}".into(),
        ));
    };
    let mut specs: Vec<InputConfig> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let pointer = format!("/inputs/{index}");
        let spec: InputConfig =
            serde_json::from_value(item.clone()).map_err(|err| (pointer.clone(), err.to_string()))?;
        if spec.id.is_empty() {
            return Err((format!("{pointer}/id"), "an input's id is empty".into()));
        }
        if specs.iter().any(|known| known.id == spec.id) {
            return Err((
                format!("{pointer}/id"),
                format!("input '{}' is defined twice", spec.id),
            ));
        }
        if spec.kind == InputKind::PickString && spec.options.is_empty() {
            return Err((
                format!("{pointer}/options"),
                format!("pickString input '{}' has no options", spec.id),
            ));
        }
        specs.push(spec);
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn specs() -> Vec<InputConfig> {
        parse_specs(Some(&json!([
            {"type": "promptString", "id": "token", "description": "API token", "password": true},
            {"type": "promptString", "id": "url", "description": "API URL", "default": "https://h/api"},
            {"type": "pickString", "id": "tier", "options": ["a", {"label": "B", "value": "b"}]},
            {"type": "command", "id": "picked", "command": "extension.pick"}
        ])))
        .unwrap()
    }

    #[test]
    fn answers_defaults_and_refusals() {
        let specs = specs();
        let answered = McpInputs::answered([("token".to_string(), "t-1".to_string())].into());
        assert_eq!(answered.resolve(&specs, "token").unwrap(), "t-1");
        assert!(
            answered
                .resolve(&specs, "url")
                .unwrap_err()
                .to_string()
                .contains("'url' (API URL) was not answered")
        );

        let headless = McpInputs::headless("`elph run`");
        assert_eq!(headless.resolve(&specs, "url").unwrap(), "https://h/api");
        let refused = headless.resolve(&specs, "token").unwrap_err();
        assert!(matches!(refused, ExpandError::Input(_)));
        let text = refused.to_string();
        for expected in [
            "input 'token' (API token)",
            "`elph run` cannot ask",
            "${env:NAME}",
        ] {
            assert!(text.contains(expected), "{expected} in {text}");
        }
        assert!(matches!(
            headless.resolve(&specs, "nope"),
            Err(ExpandError::Malformed(_))
        ));
        assert!(
            headless
                .resolve(&specs, "picked")
                .unwrap_err()
                .to_string()
                .contains("extension.pick")
        );
        assert_eq!(specs[2].options[1].label(), "B");
        assert_eq!(specs[2].options[1].value(), "b");
        assert!(!format!("{answered:?}").contains("t-1"), "no answer in Debug");
    }

    #[test]
    fn bad_inputs_name_the_place() {
        let cases = [
            (json!({}), "/inputs", "not an array"),
            (
                json!([{"type": "promptString"}]),
                "/inputs/0",
                "missing field `id`",
            ),
            (
                json!([{"type": "secret", "id": "a"}]),
                "/inputs/0",
                "unknown variant",
            ),
            (
                json!([{"type": "promptString", "id": "a"}, {"type": "promptString", "id": "a"}]),
                "/inputs/1/id",
                "defined twice",
            ),
            (
                json!([{"type": "pickString", "id": "a"}]),
                "/inputs/0/options",
                "no options",
            ),
        ];
        for (value, pointer, reason) in cases {
            let (at, why) = parse_specs(Some(&value)).unwrap_err();
            assert_eq!(at, pointer, "{value}");
            assert!(why.contains(reason), "{value}: {why}");
        }
    }
}
