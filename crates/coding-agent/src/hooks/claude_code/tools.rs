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
//!
//! Gemini CLI's hooks speak the same protocol with their own names ([`Dialect::Gemini`]):
//!
//! | Elph | Gemini CLI |
//! | --- | --- |
//! | `shell_exec` `command` | `run_shell_command` `command` |
//! | `write_file` `path`, `content` | `write_file` `file_path`, `content` |
//! | `edit_file` `path`, `old_text`, `new_text`, `replace_all` | `replace` `file_path`, `old_string`, `new_string`, `allow_multiple` |
//! | `read_file` `path`, `offset`, `limit` | `read_file` `file_path`, `offset`, `limit` |
//! | `grep` `pattern`, `path`, `glob` | `grep_search` (`search_file_content`) `pattern`, `path`, `include` |
//! | `find_path` `glob`, `path` | `glob` `pattern`, `path` |
//! | `list_dir` `path` | `list_directory` `dir_path` |

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

/// The same for Gemini CLI.
const GEMINI_TOOLS: &[(&str, &str, Fields)] = &[
    ("shell_exec", "run_shell_command", &[("command", "command")]),
    (
        "write_file",
        "write_file",
        &[("path", "file_path"), ("content", "content")],
    ),
    (
        "edit_file",
        "replace",
        &[
            ("path", "file_path"),
            ("old_text", "old_string"),
            ("new_text", "new_string"),
            ("replace_all", "allow_multiple"),
        ],
    ),
    (
        "read_file",
        "read_file",
        &[("path", "file_path"), ("offset", "offset"), ("limit", "limit")],
    ),
    (
        "grep",
        "grep_search",
        &[("pattern", "pattern"), ("path", "path"), ("glob", "include")],
    ),
    ("find_path", "glob", &[("glob", "pattern"), ("path", "path")]),
    ("list_dir", "list_directory", &[("path", "dir_path")]),
];

/// Gemini CLI's tool names that Elph has a counterpart of.
pub(crate) const GEMINI_TOOL_NAMES: &[&str] = &[
    "run_shell_command",
    "write_file",
    "replace",
    "read_file",
    "grep_search",
    "search_file_content",
    "glob",
    "list_directory",
];

/// Gemini CLI's older names for its tools.
const GEMINI_ALIASES: &[(&str, &str)] = &[("search_file_content", "grep")];

/// Whose names a hook speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Claude,
    Gemini,
}

impl Dialect {
    fn tools(self) -> &'static [(&'static str, &'static str, Fields)] {
        match self {
            Dialect::Claude => TOOLS,
            Dialect::Gemini => GEMINI_TOOLS,
        }
    }
}

/// Fields that hold a file path, which Claude Code sends absolute.
const PATH_FIELDS: &[&str] = &["file_path", "path", "dir_path"];

/// Claude Code's name for an Elph tool.
pub(crate) fn claude_name(elph: &str) -> String {
    name_in(Dialect::Claude, elph)
}

/// The dialect's name for an Elph tool.
pub(crate) fn name_in(dialect: Dialect, elph: &str) -> String {
    if let Some((_, name, _)) = dialect.tools().iter().find(|(tool, _, _)| *tool == elph) {
        return (*name).to_string();
    }
    match (dialect, elph.strip_prefix("mcp_")) {
        (Dialect::Claude, Some(rest)) => format!("mcp__{rest}"),
        // Gemini CLI names an MCP tool mcp_SERVER_TOOL.
        (Dialect::Gemini, Some(rest)) => format!("mcp_{}", rest.replacen("__", "_", 1)),
        (_, None) => elph.to_string(),
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

/// Elph's name for a Gemini CLI tool, when Elph has it.
pub(crate) fn elph_name_of_gemini(gemini: &str) -> Option<String> {
    if let Some((_, elph)) = GEMINI_ALIASES.iter().find(|(name, _)| *name == gemini) {
        return Some((*elph).to_string());
    }
    GEMINI_TOOLS
        .iter()
        .find(|(_, name, _)| *name == gemini)
        .map(|(elph, _, _)| (*elph).to_string())
}

fn fields(dialect: Dialect, elph_tool: &str) -> &'static [(&'static str, &'static str)] {
    dialect
        .tools()
        .iter()
        .find(|(name, _, _)| *name == elph_tool)
        .map_or(&[], |(_, _, fields)| fields)
}

/// An Elph tool input in Claude Code's field names, with absolute paths.
#[cfg(test)]
pub(crate) fn claude_input(elph_tool: &str, input: &Value, project_dir: &Path) -> Value {
    input_in(Dialect::Claude, elph_tool, input, project_dir)
}

/// An Elph tool input in the dialect's field names, with absolute paths.
pub(crate) fn input_in(dialect: Dialect, elph_tool: &str, input: &Value, project_dir: &Path) -> Value {
    let Value::Object(object) = input else {
        return input.clone();
    };
    let fields = fields(dialect, elph_tool);
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
#[cfg(test)]
pub(crate) fn elph_field(elph_tool: &str, claude_field: &str) -> String {
    elph_field_in(Dialect::Claude, elph_tool, claude_field)
}

/// Elph's name for one field of a tool input in the dialect's names.
pub(crate) fn elph_field_in(dialect: Dialect, elph_tool: &str, field: &str) -> String {
    fields(dialect, elph_tool)
        .iter()
        .find(|(_, name)| *name == field)
        .map_or(field, |(elph, _)| elph)
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
        assert_eq!(
            input_in(
                Dialect::Gemini,
                "edit_file",
                &json!({"path": "a", "old_text": "x"}),
                project
            ),
            json!({"file_path": "/p/a", "old_string": "x"})
        );
        assert_eq!(name_in(Dialect::Gemini, "shell_exec"), "run_shell_command");
        assert_eq!(name_in(Dialect::Gemini, "mcp_gh__issue"), "mcp_gh_issue");
        assert_eq!(elph_name_of_gemini("replace").as_deref(), Some("edit_file"));
        assert_eq!(
            elph_name_of_gemini("search_file_content").as_deref(),
            Some("grep")
        );
        assert_eq!(elph_field_in(Dialect::Gemini, "list_dir", "dir_path"), "path");
        // MCP inputs are the server's own: nothing is renamed, no path is touched.
        let mcp = json!({"path": "rel", "q": 1});
        assert_eq!(claude_input("mcp_fs__read", &mcp, project), mcp);
    }
}
