//! A Claude Code settings file's `permissions` as Elph permission rules (docs/claude-code.md,
//! "Importing permissions"): `Bash(git status:*)` becomes `shell_exec(git status*)`,
//! `Read(./secrets/**)` the same path pattern on each of Elph's read tools, `Edit(…)` on
//! `edit_file` and `write_file`, `mcp__server__tool` the MCP tool's Elph name. What has no Elph
//! counterpart (`WebFetch`, `defaultMode`, …) is reported, one line each, never dropped silently.
//!
//! A project's file may give Elph only `deny` and `ask` rules: its `allow` rules are reported with
//! the translation a user can copy to their own settings.json.

use elph_agent::harness::permissions::RuleKind;
use serde_json::Value;

use super::plain::Target;

/// The rules of one settings file, by list, and what could not be translated.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ImportedRules {
    pub rules: Vec<(RuleKind, String)>,
    pub skipped: Vec<String>,
}

/// Elph's read tools, which one Claude Code `Read` rule stands for.
const READ_TOOLS: [&str; 4] = ["read_file", "grep", "find_path", "list_dir"];

/// Translates `settings.permissions` for the settings file of `target`.
pub(crate) fn import(settings: &Value, target: Target) -> Result<ImportedRules, String> {
    let mut out = ImportedRules::default();
    let Some(permissions) = settings.get("permissions") else {
        return Ok(out);
    };
    let Value::Object(permissions) = permissions else {
        return Err("\"permissions\" is not an object".into());
    };
    for (key, value) in permissions {
        let kind = match key.as_str() {
            "allow" => RuleKind::Allow,
            "ask" => RuleKind::Ask,
            "deny" => RuleKind::Deny,
            other => {
                out.skipped.push(format!(
                    "permissions.{other}: Elph has no such setting (its approval default is the \
                     --approval flag); left out"
                ));
                continue;
            }
        };
        let Value::Array(list) = value else {
            return Err(format!("permissions.{key} is not a list"));
        };
        for (index, rule) in list.iter().enumerate() {
            let place = format!("permissions.{key}[{index}]");
            let Some(rule) = rule.as_str() else {
                return Err(format!("{place} is not a string"));
            };
            match translate(rule, target) {
                Ok(translated) if kind == RuleKind::Allow && target == Target::Project => {
                    out.skipped.push(format!(
                        "{place} {rule:?}: a project's settings may add only deny and ask rules, so it \
                         is not imported; to allow it yourself, add {} to permissions.allow of your \
                         own settings.json",
                        translated
                            .iter()
                            .map(|rule| format!("{rule:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                Ok(translated) => {
                    for rule in translated {
                        if !out.rules.contains(&(kind, rule.clone())) {
                            out.rules.push((kind, rule));
                        }
                    }
                }
                Err(why) => out.skipped.push(format!("{place} {rule:?}: {why}; left out")),
            }
        }
    }
    Ok(out)
}

/// One Claude Code rule as Elph rules.
fn translate(rule: &str, target: Target) -> Result<Vec<String>, String> {
    let rule = rule.trim();
    let (tool, pattern) = match rule.split_once('(') {
        Some((tool, rest)) => {
            let pattern = rest.strip_suffix(')').ok_or("the pattern is not closed by ')'")?;
            (tool, Some(pattern))
        }
        None => (rule, None),
    };
    let with = |tools: &[&str], pattern: Option<String>| -> Vec<String> {
        tools
            .iter()
            .map(|tool| match &pattern {
                Some(pattern) => format!("{tool}({pattern})"),
                None => tool.to_string(),
            })
            .collect()
    };
    let path = |pattern: Option<&str>| pattern.map(|p| path_pattern(p, target)).transpose();
    if let Some(rest) = tool.strip_prefix("mcp__") {
        if pattern.is_some() {
            return Err("an MCP tool takes no pattern in Elph".into());
        }
        return Ok(vec![match rest.split_once("__") {
            Some((server, "*")) => format!("mcp_{server}__*"),
            Some((server, tool)) => format!("mcp_{server}__{tool}"),
            None => format!("mcp_{rest}__*"),
        }]);
    }
    match tool {
        "Bash" => Ok(with(&["shell_exec"], pattern.map(command_pattern))),
        "Read" => Ok(with(&READ_TOOLS, path(pattern)?)),
        "Edit" => Ok(with(&["edit_file", "write_file"], path(pattern)?)),
        "Write" => Ok(with(&["write_file"], path(pattern)?)),
        "Grep" => Ok(with(&["grep"], path(pattern)?)),
        "Glob" => Ok(with(&["find_path"], path(pattern)?)),
        "LS" => Ok(with(&["list_dir"], path(pattern)?)),
        other => Err(format!("Elph has no tool like Claude Code's {other}")),
    }
}

/// `git status:*` (Claude Code's prefix form) as `git status*`; other patterns as written.
fn command_pattern(pattern: &str) -> String {
    match pattern.strip_suffix(":*") {
        Some(prefix) => format!("{prefix}*"),
        None => pattern.to_string(),
    }
}

/// Claude Code's path forms as Elph's: `//abs` is absolute (`/abs`), `~/x` stays, `./x` and `x`
/// are relative to the project; `/x` is relative to the settings file's project, which Elph
/// writes as `x` (a home file has no project, so it is refused there).
fn path_pattern(pattern: &str, target: Target) -> Result<String, String> {
    if let Some(absolute) = pattern.strip_prefix("//") {
        return Ok(format!("/{absolute}"));
    }
    if pattern.starts_with("~/") || !pattern.starts_with('/') {
        return Ok(pattern.strip_prefix("./").unwrap_or(pattern).to_string());
    }
    match target {
        Target::Project => Ok(pattern.trim_start_matches('/').to_string()),
        Target::Home => Err(
            "a '/path' pattern is relative to the project in Claude Code, and this file is your own, \
             for every project; write it as a '//absolute' or '~/' path"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(imported: &ImportedRules, kind: RuleKind) -> Vec<&str> {
        imported
            .rules
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, rule)| rule.as_str())
            .collect()
    }

    #[test]
    fn claude_code_rules_become_elph_rules() {
        let settings = json!({"permissions": {
            "allow": ["Bash(git status:*)", "Bash(npm run test:*)", "Read", "mcp__github__get_issue", "WebFetch(domain:x.com)"],
            "ask": ["Bash(git push:*)", "mcp__linear"],
            "deny": ["Read(./secrets/**)", "Edit(//etc/**)", "Write(~/.ssh/*)", "Bash(curl:*)"],
            "defaultMode": "acceptEdits",
            "additionalDirectories": ["../docs"]
        }});
        let imported = import(&settings, Target::Home).unwrap();
        assert_eq!(
            rules(&imported, RuleKind::Allow),
            [
                "shell_exec(git status*)",
                "shell_exec(npm run test*)",
                "read_file",
                "grep",
                "find_path",
                "list_dir",
                "mcp_github__get_issue"
            ]
        );
        assert_eq!(
            rules(&imported, RuleKind::Ask),
            ["shell_exec(git push*)", "mcp_linear__*"]
        );
        assert_eq!(
            rules(&imported, RuleKind::Deny),
            [
                "read_file(secrets/**)",
                "grep(secrets/**)",
                "find_path(secrets/**)",
                "list_dir(secrets/**)",
                "edit_file(/etc/**)",
                "write_file(/etc/**)",
                "write_file(~/.ssh/*)",
                "shell_exec(curl*)"
            ]
        );
        let skipped = imported.skipped.join("\n");
        for expected in ["WebFetch", "defaultMode", "additionalDirectories"] {
            assert!(skipped.contains(expected), "{expected} in:\n{skipped}");
        }
    }

    #[test]
    fn a_project_file_gives_no_allow_and_says_so() {
        let settings = json!({"permissions": {"allow": ["Bash(make:*)"], "deny": ["Read(/.env)"]}});
        let imported = import(&settings, Target::Project).unwrap();
        assert_eq!(
            imported.rules,
            [
                (RuleKind::Deny, "read_file(.env)".to_string()),
                (RuleKind::Deny, "grep(.env)".to_string()),
                (RuleKind::Deny, "find_path(.env)".to_string()),
                (RuleKind::Deny, "list_dir(.env)".to_string())
            ]
        );
        assert!(
            imported.skipped[0].contains("\"shell_exec(make*)\""),
            "{:?}",
            imported.skipped
        );
        assert!(
            import(&json!({"permissions": {"deny": "x"}}), Target::Home)
                .unwrap_err()
                .contains("not a list")
        );
        let home = import(&json!({"permissions": {"deny": ["Read(/x)"]}}), Target::Home).unwrap();
        assert!(
            home.rules.is_empty() && home.skipped[0].contains("//absolute"),
            "{home:?}"
        );
    }
}
