//! What a `write_file` or `edit_file` call would change, as a unified diff for its approval
//! question: the front end shows the lines instead of a one-line summary of the arguments. The diff
//! is bounded (the first [`MAX_LINES`] lines and how many more there are), and the current file is
//! read only when it is a regular file of at most [`MAX_FILE_BYTES`].

use std::path::Path;

use elph_agent::tools::{Overwrites, ProposedChange};
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

/// The preview of a proposed change (a call's [`ProposedChange`], parsed by its tool), in the
/// project `project_dir`.
pub(crate) fn preview(project_dir: &Path, change: &ProposedChange) -> ChangePreview {
    match change {
        ProposedChange::Write {
            path,
            content,
            overwrites,
        } => match overwrites {
            Overwrites::Text(old) => diff(old, content),
            Overwrites::Nothing => diff("", content),
            Overwrites::Unknown => {
                let old = current_text(&project_dir.join(path)).unwrap_or_default();
                diff(&old, content)
            }
        },
        ProposedChange::Edit {
            old_text, new_text, ..
        } => diff(old_text, new_text),
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
    use super::*;

    fn write(path: &str, content: &str) -> ProposedChange {
        ProposedChange::Write {
            path: path.into(),
            content: content.into(),
            overwrites: Overwrites::Unknown,
        }
    }

    fn kinds(preview: &ChangePreview) -> Vec<(DiffKind, &str)> {
        preview.lines.iter().map(|l| (l.kind, l.text.as_str())).collect()
    }

    #[test]
    fn an_edit_is_its_old_and_new_text() {
        let dir = tempfile::tempdir().unwrap();
        let change = ProposedChange::Edit {
            path: "a.rs".into(),
            old_text: "let x = 1;\n".into(),
            new_text: "let x = 2;\n".into(),
        };
        let preview = preview(dir.path(), &change);
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
        let changed = preview(dir.path(), &write("notes.txt", "one\nTWO\nthree\n"));
        assert!(kinds(&changed).contains(&(DiffKind::Removed, "two")));
        assert!(kinds(&changed).contains(&(DiffKind::Added, "TWO")));
        assert!(kinds(&changed).contains(&(DiffKind::Context, "one")));

        let long: String = (0..100).map(|n| format!("line {n}\n")).collect();
        let preview = preview(dir.path(), &write("new.txt", &long));
        assert_eq!(preview.lines.len(), MAX_LINES);
        // The hunk header and 100 added lines, of which MAX_LINES - 1 are shown.
        assert_eq!(preview.more, 101 - MAX_LINES);
    }

    #[test]
    fn a_reviewed_write_is_compared_with_what_the_review_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("notes.txt"),
            "on disk
",
        )
        .unwrap();
        let change = ProposedChange::Write {
            path: "notes.txt".into(),
            content: "saved
"
            .into(),
            overwrites: Overwrites::Text(
                "in the buffer
"
                .into(),
            ),
        };
        assert_eq!(
            kinds(&preview(dir.path(), &change)),
            [
                (DiffKind::Hunk, "@@ -1 +1 @@"),
                (DiffKind::Removed, "in the buffer"),
                (DiffKind::Added, "saved")
            ]
        );
    }
}
