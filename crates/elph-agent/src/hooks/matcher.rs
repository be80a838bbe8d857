//! Which events a hook sees: tool-name patterns (exact, `prefix*`, `*suffix`, or `*`), conditions
//! on the tool's input (`"command": "git commit*"`), and for `sessionStart` how the session began.

use std::fmt;
use std::str::FromStr;

use globset::{GlobBuilder, GlobMatcher};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::session_start::SessionSource;
use super::payload::HookPayload;

/// One `toolNames` pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolPattern {
    /// `*`: every tool.
    Any,
    /// One tool, by its exact name.
    Exact(String),
    /// `prefix*`: every tool whose name starts so (e.g. `mcp__github__*`).
    Prefix(String),
    /// `*suffix`: every tool whose name ends so.
    Suffix(String),
}

/// A `toolNames` pattern that cannot be used; hooks.json reports it with the hook's id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// An empty string, which would match nothing.
    #[error("tool name pattern is empty")]
    Empty,
    /// A pattern with a `*` elsewhere than at one end.
    #[error("tool name pattern '{0}' is not supported: use an exact name, 'prefix*', '*suffix', or '*'")]
    Unsupported(String),
}

impl FromStr for ToolPattern {
    type Err = PatternError;

    fn from_str(pattern: &str) -> Result<Self, Self::Err> {
        if pattern.is_empty() {
            return Err(PatternError::Empty);
        }
        if pattern == "*" {
            return Ok(ToolPattern::Any);
        }
        let stars = pattern.matches('*').count();
        if stars == 0 {
            return Ok(ToolPattern::Exact(pattern.to_string()));
        }
        if stars == 1 {
            if let Some(prefix) = pattern.strip_suffix('*') {
                return Ok(ToolPattern::Prefix(prefix.to_string()));
            }
            if let Some(suffix) = pattern.strip_prefix('*') {
                return Ok(ToolPattern::Suffix(suffix.to_string()));
            }
        }
        Err(PatternError::Unsupported(pattern.to_string()))
    }
}

impl ToolPattern {
    /// Whether this pattern selects the tool named `tool_name`.
    pub fn matches(&self, tool_name: &str) -> bool {
        match self {
            ToolPattern::Any => true,
            ToolPattern::Exact(name) => tool_name == name,
            ToolPattern::Prefix(prefix) => tool_name.starts_with(prefix.as_str()),
            ToolPattern::Suffix(suffix) => tool_name.ends_with(suffix.as_str()),
        }
    }
}

impl fmt::Display for ToolPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolPattern::Any => f.write_str("*"),
            ToolPattern::Exact(name) => f.write_str(name),
            ToolPattern::Prefix(prefix) => write!(f, "{prefix}*"),
            ToolPattern::Suffix(suffix) => write!(f, "*{suffix}"),
        }
    }
}

/// The input fields that hold a file path: there `*` stays within one folder and `**` crosses
/// folders, and a path inside the project is matched relative to it.
const PATH_FIELDS: &[&str] = &["path"];

/// One condition on a tool's input: the string field `field` matches the glob `pattern`.
#[derive(Clone, Debug)]
pub struct InputCondition {
    field: String,
    pattern: String,
    glob: GlobMatcher,
}

impl PartialEq for InputCondition {
    fn eq(&self, other: &Self) -> bool {
        self.field == other.field && self.pattern == other.pattern
    }
}

impl Eq for InputCondition {}

/// An input condition whose pattern is not a glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("input condition '{field}': '{pattern}' is not a valid pattern: {reason}")]
pub struct InputPatternError {
    /// The input field the condition is on.
    pub field: String,
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: String,
}

impl InputCondition {
    /// `pattern` for the input field `field`. `*` matches any run of characters (within one folder
    /// in a path field, where `**` crosses folders), `?` one character, `[abc]` one of a set.
    pub fn new(field: &str, pattern: &str) -> Result<Self, InputPatternError> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(PATH_FIELDS.contains(&field))
            .backslash_escape(true)
            .build()
            .map_err(|err| InputPatternError {
                field: field.to_string(),
                pattern: pattern.to_string(),
                reason: err.kind().to_string(),
            })?;
        Ok(InputCondition {
            field: field.to_string(),
            pattern: pattern.to_string(),
            glob: glob.compile_matcher(),
        })
    }

    /// The field it reads.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether `input` (a tool's arguments) has the field as a string that matches. A missing
    /// field, or one that is not a string, does not match.
    fn matches(&self, input: &Value, project_dir: &std::path::Path) -> bool {
        let Some(text) = input.get(&self.field).and_then(Value::as_str) else {
            return false;
        };
        if PATH_FIELDS.contains(&self.field.as_str()) {
            let path = std::path::Path::new(text);
            let relative = path.strip_prefix(project_dir).unwrap_or(path);
            let relative = relative.strip_prefix(".").unwrap_or(relative);
            return self.glob.is_match(relative) || self.glob.is_match(path);
        }
        if self.field == COMMAND_FIELD {
            return self.glob.is_match(text) || simple_commands(text).any(|part| self.glob.is_match(part));
        }
        self.glob.is_match(text)
    }
}

/// The shell command field: a pattern there also matches each command of a list or pipeline
/// (`ls && git push`), without leading variable assignments (`FOO=bar git push`), as Claude Code's
/// rules do.
const COMMAND_FIELD: &str = "command";

/// The simple commands of a command line, split at `&&`, `||`, `;`, `|` and newlines (quotes are
/// not parsed: a separator inside quotes only adds a candidate), each without `NAME=value` words
/// in front.
fn simple_commands(line: &str) -> impl Iterator<Item = &str> {
    line.split(['&', '|', ';', '\n']).filter_map(|part| {
        let mut rest = part.trim();
        while let Some((word, tail)) = rest.split_once(char::is_whitespace) {
            let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            if !is_assignment {
                break;
            }
            rest = tail.trim_start();
        }
        (!rest.is_empty()).then_some(rest)
    })
}

/// Which events a hook sees. No patterns and no conditions (an absent matcher, or `{}`) means
/// every tool (every session start).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matcher {
    patterns: Vec<ToolPattern>,
    input: Vec<InputCondition>,
    sources: Vec<SessionSource>,
}

impl Matcher {
    /// The matcher of a hook without `toolNames`: every tool.
    pub fn any() -> Self {
        Matcher::default()
    }

    /// Parses `toolNames`; the first bad pattern is the error.
    pub fn parse<S: AsRef<str>>(tool_names: &[S]) -> Result<Self, PatternError> {
        let patterns = tool_names
            .iter()
            .map(|name| name.as_ref().parse())
            .collect::<Result<_, _>>()?;
        Ok(Matcher {
            patterns,
            ..Matcher::default()
        })
    }

    /// Adds conditions on the tool's input: every one must hold.
    pub fn with_input(mut self, input: Vec<InputCondition>) -> Self {
        self.input = input;
        self
    }

    /// Limits a `sessionStart` hook to sessions that began so (empty: any).
    pub fn with_sources(mut self, sources: Vec<SessionSource>) -> Self {
        self.sources = sources;
        self
    }

    /// The input conditions.
    pub fn input(&self) -> &[InputCondition] {
        &self.input
    }

    /// The session sources a `sessionStart` hook runs for; empty for all.
    pub fn sources(&self) -> &[SessionSource] {
        &self.sources
    }

    /// Whether a hook with this matcher runs for `payload`: its tool name, its tool input and (on
    /// `sessionStart`) the session's source all fit. [`matches`](Self::matches) is the cheaper
    /// question asked before a payload exists; this one decides.
    pub fn matches_payload(&self, payload: &HookPayload) -> bool {
        if let Some(tool_name) = payload.tool_name()
            && !self.matches(tool_name)
        {
            return false;
        }
        if !self.input.is_empty() {
            let input = match payload {
                HookPayload::PreToolUse(p) => Some(&p.tool_input),
                other => other.tool_result().map(|result| &result.tool_input),
            };
            let Some(input) = input else {
                return false;
            };
            let project_dir = &payload.base().project_dir;
            if !self.input.iter().all(|c| c.matches(input, project_dir)) {
                return false;
            }
        }
        match payload {
            HookPayload::SessionStart(p) if !self.sources.is_empty() => self.sources.contains(&p.source),
            _ => true,
        }
    }

    /// Whether a hook with this matcher sees calls of `tool_name`.
    pub fn matches(&self, tool_name: &str) -> bool {
        self.patterns.is_empty() || self.patterns.iter().any(|pattern| pattern.matches(tool_name))
    }

    /// The patterns as configured; empty for every tool.
    pub fn patterns(&self) -> &[ToolPattern] {
        &self.patterns
    }

    /// Whether every tool matches (no patterns), as `elph doctor` reports it.
    pub fn is_any(&self) -> bool {
        self.patterns.is_empty()
    }

    fn has_conditions(&self) -> bool {
        !self.input.is_empty() || !self.sources.is_empty()
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.patterns.is_empty() {
            f.write_str("*")?;
        } else {
            let names: Vec<String> = self.patterns.iter().map(ToString::to_string).collect();
            f.write_str(&names.join(", "))?;
        }
        for condition in &self.input {
            write!(f, " where {} is '{}'", condition.field, condition.pattern)?;
        }
        if !self.sources.is_empty() {
            let sources: Vec<&str> = self.sources.iter().map(|s| s.as_str()).collect();
            write!(f, " when the session is {}", sources.join(" or "))?;
        }
        Ok(())
    }
}

/// A matcher as `elph doctor --json` shows it: the list of tool patterns, or an object with the
/// conditions when it has any.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MatcherJson<'a> {
    tool_names: Vec<String>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    input: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    source: &'a [SessionSource],
}

impl Serialize for Matcher {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let names: Vec<String> = self.patterns.iter().map(ToString::to_string).collect();
        if !self.has_conditions() {
            return names.serialize(serializer);
        }
        MatcherJson {
            tool_names: names,
            input: self
                .input
                .iter()
                .map(|c| (c.field.clone(), Value::String(c.pattern.clone())))
                .collect(),
            source: &self.sources,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Matcher {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        Matcher::parse(&names).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(names: &[&str]) -> Matcher {
        Matcher::parse(names).unwrap()
    }

    #[test]
    fn exact_matches_only_the_name() {
        let m = matcher(&["edit_file"]);
        assert!(m.matches("edit_file"));
        assert!(!m.matches("edit_file2"));
        assert!(!m.matches("write_file"));
    }

    #[test]
    fn prefix_and_suffix() {
        let m = matcher(&["mcp_github__*"]);
        assert!(m.matches("mcp_github__create_issue"));
        assert!(m.matches("mcp_github__"));
        assert!(!m.matches("mcp_gitlab__x"));
        let m = matcher(&["*_file"]);
        assert!(m.matches("read_file"));
        assert!(m.matches("write_file"));
        assert!(!m.matches("shell_exec"));
    }

    #[test]
    fn star_and_empty_match_everything() {
        assert!(matcher(&["*"]).matches("anything"));
        assert!(Matcher::any().matches("anything"));
    }

    #[test]
    fn any_of_several_patterns() {
        let m = matcher(&["shell_exec", "mcp_*"]);
        assert!(m.matches("shell_exec"));
        assert!(m.matches("mcp_x__y"));
        assert!(!m.matches("grep"));
    }

    #[test]
    fn unsupported_patterns_are_errors() {
        assert_eq!("".parse::<ToolPattern>(), Err(PatternError::Empty));
        for bad in ["a*b", "**", "*a*", "a**"] {
            assert_eq!(
                bad.parse::<ToolPattern>(),
                Err(PatternError::Unsupported(bad.into())),
                "{bad}"
            );
        }
    }

    fn pre_tool_use(tool: &str, input: Value) -> HookPayload {
        HookPayload::PreToolUse(crate::hooks::PreToolUsePayload {
            base: crate::hooks::PayloadBase::new("s", "/work/p"),
            tool_name: tool.into(),
            tool_call_id: "c".into(),
            tool_input: input,
        })
    }

    #[test]
    fn input_conditions_read_the_tool_input() {
        let commit =
            matcher(&["shell_exec"]).with_input(vec![InputCondition::new("command", "git commit*").unwrap()]);
        let yes = pre_tool_use(
            "shell_exec",
            serde_json::json!({"command": "git commit -m 'a/b'"}),
        );
        let no = pre_tool_use("shell_exec", serde_json::json!({"command": "git status"}));
        let missing = pre_tool_use("shell_exec", serde_json::json!({}));
        assert!(commit.matches_payload(&yes));
        assert!(!commit.matches_payload(&no));
        assert!(!commit.matches_payload(&missing));
        for line in [
            "cargo fmt && git commit -am x",
            "FOO=1 git commit",
            "true; git commit",
        ] {
            let payload = pre_tool_use("shell_exec", serde_json::json!({"command": line}));
            assert!(commit.matches_payload(&payload), "{line}");
        }
        let echo = pre_tool_use("shell_exec", serde_json::json!({"command": "echo git commit"}));
        assert!(!commit.matches_payload(&echo));
        assert!(!commit.matches_payload(&pre_tool_use(
            "grep",
            serde_json::json!({"command": "git commit"})
        )));

        let src = Matcher::any().with_input(vec![InputCondition::new("path", "src/**").unwrap()]);
        for (path, expected) in [
            ("src/a.rs", true),
            ("src/deep/b.rs", true),
            ("/work/p/src/a.rs", true),
            ("./src/a.rs", true),
            ("docs/a.md", false),
            ("/elsewhere/src/a.rs", false),
        ] {
            let payload = pre_tool_use("write_file", serde_json::json!({"path": path}));
            assert_eq!(src.matches_payload(&payload), expected, "{path}");
        }
        let one_level = Matcher::any().with_input(vec![InputCondition::new("path", "src/*.rs").unwrap()]);
        assert!(!one_level.matches_payload(&pre_tool_use(
            "write_file",
            serde_json::json!({"path": "src/x/a.rs"})
        )));
        assert!(InputCondition::new("command", "[unclosed").is_err());
    }

    #[test]
    fn sources_limit_session_start() {
        let resume = Matcher::any().with_sources(vec![SessionSource::Resume]);
        let start = |source| {
            HookPayload::SessionStart(crate::hooks::SessionStartPayload {
                base: crate::hooks::PayloadBase::new("s", "/p"),
                source,
            })
        };
        assert!(resume.matches_payload(&start(SessionSource::Resume)));
        assert!(!resume.matches_payload(&start(SessionSource::New)));
        assert!(Matcher::any().matches_payload(&start(SessionSource::New)));
        assert_eq!(
            serde_json::to_value(&resume).unwrap(),
            serde_json::json!({"toolNames": [], "source": ["resume"]})
        );
        assert_eq!(
            serde_json::to_value(matcher(&["a"])).unwrap(),
            serde_json::json!(["a"])
        );
    }

    #[test]
    fn display_round_trips() {
        for name in ["*", "exact", "pre*", "*suf"] {
            assert_eq!(name.parse::<ToolPattern>().unwrap().to_string(), name);
        }
    }
}
