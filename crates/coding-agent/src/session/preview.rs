//! What a `write_file` or `edit_file` call would change, as a unified diff for its approval
//! question: the front end shows the lines instead of a one-line summary of the arguments. The diff
//! is bounded (the first [`MAX_LINES`] lines and how many more there are), and the current file is
//! read only when it is a regular file of at most [`MAX_FILE_BYTES`].

use std::path::Path;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

/// Most diff lines kept for the question.
pub const MAX_LINES: usize = 12;
/// Largest current file compared with a `write_file`'s new content.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 2;

/// What one diff line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffKind {
    /// `@@ -a,b +c,d @@`
    Hunk,
    Context,
    Added,
    Removed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffKind,
    /// The line as in the file (no line break), not yet escaped for a terminal.
    pub text: String,
}

/// The change a call would make: its first lines, and how many more were left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangePreview {
    pub lines: Vec<DiffLine>,
    pub more: usize,
}

/// The preview for a call of `tool` with `input`, in the project `project_dir`; `None` for other
/// tools and for arguments that are not a write or an edit.
pub(crate) fn preview(project_dir: &Path, tool: &str, input: &Value) -> Option<ChangePreview> {
    let path = input.get("path")?.as_str()?;
    match tool {
        "write_file" => {
            let new = input.get("content")?.as_str()?;
            let old = current_text(&project_dir.join(path)).unwrap_or_default();
            Some(diff(&old, new))
        }
        "edit_file" => {
            let old = input.get("old_text")?.as_str()?;
            let new = input.get("new_text")?.as_str()?;
            Some(diff(old, new))
        }
        _ => None,
    }
}

/// The file's text, when it is a regular file small enough to compare (a new file has none).
fn current_text(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The unified diff of `old` to `new`, bounded.
fn diff(old: &str, new: &str) -> ChangePreview {
    let diff = TextDiff::from_lines(old, new);
    let mut all = Vec::new();
    for hunk in diff.unified_diff().context_radius(CONTEXT).iter_hunks() {
        all.push(DiffLine {
            kind: DiffKind::Hunk,
            text: hunk.header().to_string(),
        });
        for change in hunk.iter_changes() {
            let kind = match change.tag() {
                ChangeTag::Equal => DiffKind::Context,
                ChangeTag::Insert => DiffKind::Added,
                ChangeTag::Delete => DiffKind::Removed,
            };
            let text = change.value().trim_end_matches(['\n', '\r']).to_string();
            all.push(DiffLine { kind, text });
        }
    }
    let more = all.len().saturating_sub(MAX_LINES);
    all.truncate(MAX_LINES);
    ChangePreview { lines: all, more }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kinds(preview: &ChangePreview) -> Vec<(DiffKind, &str)> {
        preview.lines.iter().map(|l| (l.kind, l.text.as_str())).collect()
    }

    #[test]
    fn an_edit_is_its_old_and_new_text() {
        let dir = tempfile::tempdir().unwrap();
        let input = json!({"path": "a.rs", "old_text": "let x = 1;\n", "new_text": "let x = 2;\n"});
        let preview = preview(dir.path(), "edit_file", &input).unwrap();
        assert_eq!(
            kinds(&preview),
            [
                (DiffKind::Hunk, "@@ -1 +1 @@"),
                (DiffKind::Removed, "let x = 1;"),
                (DiffKind::Added, "let x = 2;")
            ]
        );
        assert_eq!(preview.more, 0);
    }

    #[test]
    fn a_write_is_compared_with_the_current_file_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        let input = json!({"path": "notes.txt", "content": "one\nTWO\nthree\n"});
        let changed = preview(dir.path(), "write_file", &input).unwrap();
        assert!(kinds(&changed).contains(&(DiffKind::Removed, "two")));
        assert!(kinds(&changed).contains(&(DiffKind::Added, "TWO")));
        assert!(kinds(&changed).contains(&(DiffKind::Context, "one")));

        let long: String = (0..100).map(|n| format!("line {n}\n")).collect();
        let input = json!({"path": "new.txt", "content": long});
        let preview = preview(dir.path(), "write_file", &input).unwrap();
        assert_eq!(preview.lines.len(), MAX_LINES);
        // The hunk header and 100 added lines, of which MAX_LINES - 1 are shown.
        assert_eq!(preview.more, 101 - MAX_LINES);
    }

    #[test]
    fn other_tools_and_odd_arguments_have_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(preview(dir.path(), "shell_exec", &json!({"command": "ls"})), None);
        assert_eq!(preview(dir.path(), "write_file", &json!({"path": 3})), None);
    }
}
