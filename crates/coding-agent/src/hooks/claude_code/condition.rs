//! A Claude Code hook's `"if"` (permission-rule syntax: `Bash(git commit:*)`, `Edit(src/**)`) as an
//! Elph matcher: the rule's tool as `toolNames`, its argument as an input condition
//! (`matcher.input`). Under Claude Code the hook runs only when the rule matches the call; the
//! translation keeps that.

use std::collections::BTreeMap;
use std::path::Path;

use super::tools::elph_name;

/// The translated rule: the one Elph tool it names, and the input condition (none for `Bash` or
/// `Bash(*)`, which match every call of the tool).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Condition {
    pub tool: String,
    pub input: Option<BTreeMap<String, String>>,
}

/// Translates `rule`; `Err` says why it cannot be expressed. `home` expands `~/` in path rules.
pub(crate) fn translate(rule: &str, home: Option<&Path>) -> Result<Condition, String> {
    let rule = rule.trim();
    let (tool, argument) = match rule.split_once('(') {
        Some((tool, rest)) => {
            let argument = rest
                .strip_suffix(')')
                .ok_or_else(|| format!("'{rule}' is not a permission rule (Tool or Tool(argument))"))?;
            (tool.trim(), Some(argument.trim()))
        }
        None => (rule, None),
    };
    let elph = elph_name(tool).ok_or_else(|| format!("Elph has no tool like Claude Code's '{tool}'"))?;
    let argument = argument.filter(|a| !a.is_empty() && *a != "*" && *a != "**");
    let Some(argument) = argument else {
        return Ok(Condition {
            tool: elph,
            input: None,
        });
    };
    let (field, pattern) = match elph.as_str() {
        // `git commit:*` is Claude Code's "starts with": a prefix glob here.
        "shell_exec" => (
            "command",
            match argument.strip_suffix(":*") {
                Some(prefix) => format!("{}*", escape(prefix)),
                None => argument.to_string(),
            },
        ),
        "read_file" | "write_file" | "edit_file" | "list_dir" => ("path", path_pattern(argument, home)?),
        other => return Err(format!("a condition on {other}'s input cannot be expressed")),
    };
    Ok(Condition {
        tool: elph,
        input: Some(BTreeMap::from([(field.to_string(), pattern)])),
    })
}

/// Claude Code's path rule as a pattern on Elph's `path`: `//abs` is absolute, `~/x` is in the home
/// folder, `/x` and `./x` are relative to the project (the settings' folder), anything else is a
/// gitignore-style pattern (a name without a folder matches at any depth).
fn path_pattern(rule: &str, home: Option<&Path>) -> Result<String, String> {
    if let Some(absolute) = rule.strip_prefix("//") {
        return Ok(format!("/{absolute}"));
    }
    if let Some(rest) = rule.strip_prefix("~/") {
        let home = home.ok_or("'~/' needs a home folder, and HOME is not set")?;
        return Ok(format!("{}/{rest}", home.display()));
    }
    let relative = rule
        .strip_prefix('/')
        .or_else(|| rule.strip_prefix("./"))
        .unwrap_or(rule);
    if relative.contains('/') || rule.starts_with('/') || rule.starts_with("./") {
        Ok(relative.to_string())
    } else {
        Ok(format!("**/{relative}"))
    }
}

/// `text` with glob syntax quoted, so a command prefix is taken literally.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "*?[]{}\\".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(rule: &str) -> Option<(String, String)> {
        translate(rule, Some(Path::new("/home/u")))
            .unwrap()
            .input
            .map(|map| map.into_iter().next().unwrap())
    }

    #[test]
    fn rules_become_tool_and_input_conditions() {
        let commit = translate("Bash(git commit:*)", None).unwrap();
        assert_eq!(commit.tool, "shell_exec");
        assert_eq!(
            input("Bash(git commit:*)"),
            Some(("command".into(), "git commit*".into()))
        );
        assert_eq!(input("Bash(git *)"), Some(("command".into(), "git *".into())));
        assert_eq!(
            input("Bash(npm [x]:*)"),
            Some(("command".into(), "npm \\[x\\]*".into()))
        );
        assert_eq!(input("Bash"), None);
        assert_eq!(input("Bash(*)"), None);
        assert_eq!(input("Edit(src/**)"), Some(("path".into(), "src/**".into())));
        assert_eq!(input("Read(.env)"), Some(("path".into(), "**/.env".into())));
        assert_eq!(input("Read(./.env)"), Some(("path".into(), ".env".into())));
        assert_eq!(
            input("Read(~/.ssh/**)"),
            Some(("path".into(), "/home/u/.ssh/**".into()))
        );
        assert_eq!(input("Write(//etc/*)"), Some(("path".into(), "/etc/*".into())));
        assert_eq!(translate("Write", None).unwrap().tool, "write_file");
    }

    #[test]
    fn what_cannot_be_expressed_says_why() {
        assert!(
            translate("WebFetch(domain:x.com)", None)
                .unwrap_err()
                .contains("WebFetch")
        );
        assert!(translate("Grep(foo)", None).unwrap_err().contains("grep"));
        assert!(
            translate("Bash(git", None)
                .unwrap_err()
                .contains("not a permission rule")
        );
    }
}
