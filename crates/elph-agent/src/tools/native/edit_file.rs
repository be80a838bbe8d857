//! `edit_file`: replace an exact piece of text in a file, once or everywhere.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::beneath::{self, OpenError, Place};
use super::paths;
use crate::tools::{PathAccess, ProposedChange, ToolContext, ToolKind, ToolOutput, TypedTool};

pub struct EditFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to edit: relative to the project folder, or absolute.
    #[schemars(length(min = 1))]
    path: String,
    /// The exact text to find, copied from the file (not empty).
    #[schemars(length(min = 1))]
    old_text: String,
    /// The text to put in its place (may be empty to delete).
    new_text: String,
    /// Replace every occurrence instead of requiring exactly one. Default: false.
    #[serde(default)]
    replace_all: bool,
}

#[async_trait::async_trait]
impl TypedTool for EditFile {
    type Args = Args;

    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> &str {
        "Replace an exact piece of text in an existing file. `old_text` must match the file \
         byte for byte, including whitespace and indentation, and must occur exactly once unless \
         `replace_all` is true; include a few surrounding lines to make it unique. Read the file \
         first so the text matches what is really there."
    }

    fn mutates(&self) -> bool {
        true
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn title(&self, args: &Args) -> String {
        format!("Edit {}", args.path)
    }

    fn accesses(&self, args: &Args) -> Vec<PathAccess> {
        vec![PathAccess::write(&args.path)]
    }

    fn change(&self, args: &Args) -> Option<ProposedChange> {
        Some(ProposedChange::Edit {
            path: args.path.clone(),
            old_text: args.old_text.clone(),
            new_text: args.new_text.clone(),
        })
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> ToolOutput {
        let path = &args.path;
        if args.old_text.is_empty() {
            return ToolOutput::error(
                "old_text must not be empty; use write_file to create or rewrite a file",
            );
        }
        if args.old_text == args.new_text {
            return ToolOutput::error("old_text and new_text are the same; there is nothing to change");
        }
        let place = match paths::place_for_write(ctx, self.name(), path) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
        let editor = ctx.editor.as_ref();
        let text = match editor.filter(|editor| editor.reads()) {
            Some(editor) => match editor.read_text(place.real()).await {
                Ok(text) => text,
                Err(error) => {
                    return ToolOutput::error(format!("cannot edit {path}: the editor says: {error}"));
                }
            },
            None => {
                let reading = place.clone();
                let bytes = match tokio::task::spawn_blocking(move || read_all(&reading)).await {
                    Ok(Ok(bytes)) => bytes,
                    Ok(Err(error)) => return ToolOutput::error(paths::describe_io("edit", path, &error)),
                    Err(error) => return ToolOutput::error(format!("reading {path} failed: {error}")),
                };
                let Ok(text) = String::from_utf8(bytes) else {
                    return ToolOutput::error(format!("cannot edit {path}: it is not UTF-8 text"));
                };
                text
            }
        };
        let (edited, replacements) = match replace(&text, &args.old_text, &args.new_text, args.replace_all) {
            Ok(done) => done,
            Err(Mismatch::NotFound) => return ToolOutput::error(not_found(path, &text, &args.old_text)),
            Err(Mismatch::Ambiguous(count)) => {
                return ToolOutput::error(format!(
                    "old_text occurs {count} times in {path}; include more surrounding lines to make \
                     it unique, or set replace_all to true to replace all {count}"
                ));
            }
        };
        if let Some(editor) = editor.filter(|editor| editor.writes()) {
            if let Err(error) = editor.write_text(place.real(), &edited).await {
                return ToolOutput::error(format!("cannot edit {path}: the editor says: {error}"));
            }
        } else {
            let written =
                tokio::task::spawn_blocking(move || beneath::replace_file(&place, edited.as_bytes(), false))
                    .await;
            match written {
                Ok(Ok(_)) => {}
                Ok(Err(error)) => return ToolOutput::error(paths::describe_io("write", path, &error)),
                Err(error) => return ToolOutput::error(format!("writing {path} failed: {error}")),
            }
        }
        let noun = if replacements == 1 {
            "replacement"
        } else {
            "replacements"
        };
        ToolOutput::text(format!("Edited {path}: {replacements} {noun}"))
            .with_details(json!({ "path": path, "replacements": replacements }))
    }
}

/// The whole file at `place`, if it is a regular file.
pub(super) fn read_all(place: &Place) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut file = match beneath::open_regular(place) {
        Ok(file) => file,
        Err(OpenError::Io(error)) => return Err(error),
        Err(OpenError::Directory) => return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory)),
        Err(OpenError::Special) => {
            return Err(std::io::Error::other(
                "it is a special file (a FIFO, socket or device)",
            ));
        }
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[derive(Debug, PartialEq)]
enum Mismatch {
    NotFound,
    Ambiguous(usize),
}

/// The text with `old` replaced, and how many times it was.
fn replace(text: &str, old: &str, new: &str, all: bool) -> Result<(String, usize), Mismatch> {
    let count = text.matches(old).count();
    match count {
        0 => Err(Mismatch::NotFound),
        1 => Ok((text.replacen(old, new, 1), 1)),
        _ if all => Ok((text.replace(old, new), count)),
        _ => Err(Mismatch::Ambiguous(count)),
    }
}

/// Why `old` was not found, with a hint when a likely cause is visible.
fn not_found(path: &str, text: &str, old: &str) -> String {
    let mut message = format!("old_text was not found in {path}");
    if text.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        message.push_str("; the file uses CRLF (\\r\\n) line endings, so old_text must too");
    } else if text.contains(old.trim()) && old.trim() != old {
        message.push_str("; it does occur with different leading or trailing whitespace");
    } else {
        message.push_str("; read the file again and copy the text exactly, including indentation");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_a_unique_match() {
        assert_eq!(replace("a b c", "b", "x", false), Ok(("a x c".into(), 1)));
    }

    #[test]
    fn refuses_several_matches_unless_all() {
        assert_eq!(replace("b b b", "b", "x", false), Err(Mismatch::Ambiguous(3)));
        assert_eq!(replace("b b b", "b", "x", true), Ok(("x x x".into(), 3)));
        assert_eq!(replace("abc", "z", "x", true), Err(Mismatch::NotFound));
    }

    #[test]
    fn counts_non_overlapping_matches() {
        assert_eq!(replace("aaaa", "aa", "b", true), Ok(("bb".into(), 2)));
    }

    #[test]
    fn not_found_hints() {
        assert!(not_found("f", "a\r\nb\r\n", "a\nb").contains("CRLF"));
        assert!(not_found("f", "    let x = 1;\n", "let x = 1;\n  ").contains("whitespace"));
        assert!(not_found("f", "abc", "zzz").contains("copy the text exactly"));
    }
}
