//! Tool names and arguments between Elph's catalog and Claude Code's.
//!
//! | Elph | Claude Code |
//! | --- | --- |
//! | `shell_exec` `command`, `timeout_ms` | `Bash` `command`, `timeout` |
//! | `write_file` `path`, `content` | `Write` `file_path`, `content` |
//! | `edit_file` `path`, `old_text`, `new_text`, `replace_all` | `Edit` `file_path`, `old_string`, `new_string`, `replace_all` |
//! | `read_file` `path`, `offset`, `limit` | `Read` `file_path`, `offset`, `limit` |
//! | `grep` `pattern`, `path`, `glob`, `case_insensitive`, `max_results` | `Grep` `pattern`, `path`, `glob`, `-i`, `head_limit` |
//! | `find_path` `glob`, `path` | `Glob` `pattern`, `path` |
//! | `list_dir` `path` | `LS` `path` |
//! | `mcp_{server}__{tool}` | `mcp__{server}__{tool}` |
//!
//! Claude Code's file paths are absolute, so a relative Elph path is sent joined to the project
//! folder. Fields that have no counterpart pass through under their own name.

use std::path::Path;

use serde_json::{Map, Value};

/// (Elph field, Claude Code field) pairs of one tool.
type Fields = &'static [(&'static str, &'static str)];

/// (Elph tool, Claude Code tool, its fields).
const TOOLS: &[(&str, &str, Fields)] = &[
    (
        "shell_exec",
        "Bash",
        &[("command", "command"), ("timeout_ms", "timeout")],
    ),
    (
        "write_file",
        "Write",
        &[("path", "file_path"), ("content", "content")],
    ),
    (
        "edit_file",
        "Edit",
        &[
            ("path", "file_path"),
            ("old_text", "old_string"),
            ("new_text", "new_string"),
            ("replace_all", "replace_all"),
        ],
    ),
    (
        "read_file",
        "Read",
        &[("path", "file_path"), ("offset", "offset"), ("limit", "limit")],
    ),
    (
        "grep",
        "Grep",
        &[
            ("pattern", "pattern"),
            ("path", "path"),
            ("glob", "glob"),
            ("case_insensitive", "-i"),
            ("max_results", "head_limit"),
        ],
    ),
    ("find_path", "Glob", &[("glob", "pattern"), ("path", "path")]),
    ("list_dir", "LS", &[("path", "path")]),
];

/// Fields that hold a file path, which Claude Code sends absolute.
const PATH_FIELDS: &[&str] = &["file_path", "path"];

/// Claude Code's name for an Elph tool.
pub(crate) fn claude_name(elph: &str) -> String {
    if let Some((_, claude, _)) = TOOLS.iter().find(|(name, _, _)| *name == elph) {
        return (*claude).to_string();
    }
    match elph.strip_prefix("mcp_") {
        Some(rest) => format!("mcp__{rest}"),
        None => elph.to_string(),
    }
}

/// Elph's name for a Claude Code tool, when Elph has it (`None` for `WebFetch`, `Task`, …).
pub(crate) fn elph_name(claude: &str) -> Option<String> {
    if let Some((elph, _, _)) = TOOLS.iter().find(|(_, name, _)| *name == claude) {
        return Some((*elph).to_string());
    }
    claude
        .strip_prefix("mcp__")
        .filter(|rest| rest.contains("__"))
        .map(|rest| format!("mcp_{rest}"))
}

fn fields(elph_tool: &str) -> &'static [(&'static str, &'static str)] {
    TOOLS
        .iter()
        .find(|(name, _, _)| *name == elph_tool)
        .map_or(&[], |(_, _, fields)| fields)
}

/// An Elph tool input in Claude Code's field names, with absolute paths.
pub(crate) fn claude_input(elph_tool: &str, input: &Value, project_dir: &Path) -> Value {
    let Value::Object(object) = input else {
        return input.clone();
    };
    let fields = fields(elph_tool);
    let mut out = Map::new();
    for (key, value) in object {
        let name = fields
            .iter()
            .find(|(elph, _)| elph == key)
            .map_or(key.as_str(), |(_, claude)| claude);
        let value = match value {
            Value::String(path) if !fields.is_empty() && PATH_FIELDS.contains(&name) => {
                Value::String(project_dir.join(path).display().to_string())
            }
            other => other.clone(),
        };
        out.insert(name.to_string(), value);
    }
    Value::Object(out)
}

/// Elph's name for one field of a Claude Code tool input. Paths stay as the hook wrote them (Elph's
/// tools take absolute paths as well as relative ones).
pub(crate) fn elph_field(elph_tool: &str, claude_field: &str) -> String {
    fields(elph_tool)
        .iter()
        .find(|(_, claude)| *claude == claude_field)
        .map_or(claude_field, |(elph, _)| elph)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_map_both_ways() {
        for (elph, claude) in [
            ("shell_exec", "Bash"),
            ("write_file", "Write"),
            ("edit_file", "Edit"),
            ("read_file", "Read"),
            ("grep", "Grep"),
            ("find_path", "Glob"),
            ("list_dir", "LS"),
            ("mcp_github__create_issue", "mcp__github__create_issue"),
        ] {
            assert_eq!(claude_name(elph), claude);
            assert_eq!(elph_name(claude).as_deref(), Some(elph));
        }
        assert_eq!(elph_name("WebFetch"), None);
        assert_eq!(elph_name("mcp__lonely"), None);
    }

    #[test]
    fn inputs_map_both_ways_with_absolute_paths() {
        let project = Path::new("/p");
        let input = json!({"path": "src/a.rs", "old_text": "a", "new_text": "b"});
        let claude = claude_input("edit_file", &input, project);
        assert_eq!(
            claude,
            json!({"file_path": "/p/src/a.rs", "old_string": "a", "new_string": "b"})
        );
        for (claude_field, elph) in [
            ("file_path", "path"),
            ("old_string", "old_text"),
            ("extra", "extra"),
        ] {
            assert_eq!(elph_field("edit_file", claude_field), elph);
        }
        assert_eq!(elph_field("grep", "-i"), "case_insensitive");
        assert_eq!(
            claude_input("shell_exec", &json!({"command": "ls", "timeout_ms": 5}), project),
            json!({"command": "ls", "timeout": 5})
        );
        assert_eq!(
            claude_input(
                "grep",
                &json!({"pattern": "x", "case_insensitive": true}),
                project
            ),
            json!({"pattern": "x", "-i": true})
        );
        // MCP inputs are the server's own: nothing is renamed, no path is touched.
        let mcp = json!({"path": "rel", "q": 1});
        assert_eq!(claude_input("mcp_fs__read", &mcp, project), mcp);
    }
}
