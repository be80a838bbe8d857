//! The seven native tools: one module per tool, plus the helpers they share (`paths` for
//! resolving and describing paths, `walk` for the bounded tree walk of `grep` and `find_path`,
//! `process` for the bounded shell child of `shell_exec`).
//!
//! Each tool is one struct and one `impl TypedTool`: its arguments are one type, whose schema the
//! model sees and which the harness parses once (see [`super::TypedTool`]). Every failure is an
//! error result, never a panic.

use std::sync::Arc;

use super::Tool;

mod beneath;
mod bounded;
mod edit_file;
mod find_path;
mod grep;
mod list_dir;
mod paths;
mod process;
mod read_file;
mod shell_exec;
mod walk;
mod write_file;

pub use beneath::HeldRoots;
pub(crate) use edit_file::EditFile;
pub(crate) use find_path::FindPath;
pub(crate) use grep::Grep;
pub(crate) use list_dir::ListDir;
pub use process::shell_environment;
pub(crate) use read_file::ReadFile;
pub(crate) use shell_exec::ShellExec;
pub(crate) use write_file::WriteFile;

/// The most text one tool result carries (shell_exec keeps this much per stream).
pub const OUTPUT_CAP: usize = 64 * 1024;

/// read_file, write_file, edit_file, list_dir, grep, find_path, shell_exec.
pub fn all() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadFile),
        Arc::new(WriteFile),
        Arc::new(EditFile),
        Arc::new(ListDir),
        Arc::new(Grep),
        Arc::new(FindPath),
        Arc::new(ShellExec),
    ]
}

/// The native tool called `name`, if there is one (for front ends that describe a call by name).
pub fn find(name: &str) -> Option<Arc<dyn Tool>> {
    static NATIVE: std::sync::OnceLock<Vec<Arc<dyn Tool>>> = std::sync::OnceLock::new();
    NATIVE
        .get_or_init(all)
        .iter()
        .find(|tool| tool.name() == name)
        .cloned()
}

/// Cuts `text` to at most `max` bytes on a character boundary; true when it cut.
fn truncate_at_boundary(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::ToolKind;

    #[test]
    fn each_native_tool_names_its_kind_and_titles_its_calls() {
        let inputs = [
            ("read_file", json!({"path": "src/a.rs"}), "Read src/a.rs"),
            ("write_file", json!({"path": "a", "content": ""}), "Write a"),
            (
                "edit_file",
                json!({"path": "a", "old_text": "x", "new_text": "y"}),
                "Edit a",
            ),
            ("list_dir", json!({}), "List ."),
            ("grep", json!({"pattern": "fn\nmain"}), "Search for fn…"),
            ("find_path", json!({"glob": "*.rs"}), "Find *.rs"),
            ("shell_exec", json!({"command": "ls"}), "Run `ls`"),
        ];
        for tool in all() {
            assert_ne!(tool.kind(), ToolKind::Other, "{}", tool.name());
            let (_, input, title) = inputs
                .iter()
                .find(|(name, _, _)| *name == tool.name())
                .expect("every tool has an example");
            assert_eq!(&tool.title(input), title);
            // Arguments that do not parse give the tool's name, not a guess.
            assert_eq!(tool.title(&json!({"nonsense": 1})), tool.name());
            assert_eq!(
                find(tool.name()).map(|found| found.name().to_string()),
                Some(tool.name().to_string())
            );
        }
        assert!(find("mcp_git__status").is_none());
    }

    #[test]
    fn a_parsed_call_carries_its_paths_and_change() {
        let write = find("write_file").unwrap();
        let call = write.parse(json!({"path": "a.txt", "content": "new"})).unwrap();
        assert_eq!(call.accesses(), [crate::tools::PathAccess::write("a.txt")]);
        assert_eq!(
            call.change(),
            Some(crate::tools::ProposedChange::Write {
                path: "a.txt".into(),
                content: "new".into(),
                overwrites: crate::tools::Overwrites::Unknown,
            })
        );
        let grep = find("grep").unwrap();
        let call = grep.parse(json!({"pattern": "x"})).unwrap();
        assert_eq!(call.accesses(), [crate::tools::PathAccess::read(".")]);
        assert_eq!(call.change(), None);
        let error = grep.parse(json!({"pattern": 3})).err().unwrap();
        assert!(error.starts_with("invalid arguments for grep:"), "{error}");
    }

    #[test]
    fn all_lists_the_seven_in_order() {
        let names: Vec<String> = all().iter().map(|tool| tool.name().to_string()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "write_file",
                "edit_file",
                "list_dir",
                "grep",
                "find_path",
                "shell_exec"
            ]
        );
    }

    #[test]
    fn every_schema_is_a_closed_2020_12_object() {
        for tool in all() {
            let schema = tool.input_schema();
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema",
                "{}",
                tool.name()
            );
            assert_eq!(schema["type"], "object", "{}", tool.name());
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name());
            let properties = schema["properties"].as_object().expect("properties");
            for required in schema["required"].as_array().expect("required") {
                assert!(
                    properties.contains_key(required.as_str().unwrap()),
                    "{}",
                    tool.name()
                );
            }
            for (name, property) in properties {
                let description = property["description"].as_str().unwrap_or_default();
                assert!(
                    description.len() > 10,
                    "{}.{name} needs a description",
                    tool.name()
                );
            }
            assert!(tool.description().len() > 40, "{}", tool.name());
        }
    }

    /// The catalog compiles native schemas lazily and trusts them to compile: this is the check.
    #[test]
    fn every_native_schema_compiles() {
        for tool in all() {
            if let Err(error) = crate::json_schema::Validator::new(&tool.input_schema()) {
                panic!("{}: {error}", tool.name());
            }
        }
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let mut text = "aé".to_string();
        assert!(truncate_at_boundary(&mut text, 2));
        assert_eq!(text, "a");
        let mut short = "abc".to_string();
        assert!(!truncate_at_boundary(&mut short, 3));
        assert_eq!(short, "abc");
    }
}
