//! Tool-name matchers: exact, `prefix*`, `*suffix`, or `*`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

/// Which tool calls a hook sees. No patterns (an absent matcher, or `{}`) means every tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matcher {
    patterns: Vec<ToolPattern>,
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
        Ok(Matcher { patterns })
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
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.patterns.is_empty() {
            return f.write_str("*");
        }
        let names: Vec<String> = self.patterns.iter().map(ToString::to_string).collect();
        f.write_str(&names.join(", "))
    }
}

impl Serialize for Matcher {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let names: Vec<String> = self.patterns.iter().map(ToString::to_string).collect();
        names.serialize(serializer)
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

    #[test]
    fn display_round_trips() {
        for name in ["*", "exact", "pre*", "*suf"] {
            assert_eq!(name.parse::<ToolPattern>().unwrap().to_string(), name);
        }
    }
}
