//! Diagnostics as data: what went wrong, in which file, for which hook.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_id: Option<String>,
    /// The JSON pointer of the offending value, when the problem is in a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    pub message: String,
}

impl Diagnostic {
    pub fn new(message: impl Into<String>) -> Self {
        Diagnostic {
            file: None,
            hook_id: None,
            pointer: None,
            message: message.into(),
        }
    }

    pub(crate) fn in_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.file = Some(file.into());
        self
    }

    pub(crate) fn for_hook(mut self, hook_id: impl Into<String>) -> Self {
        self.hook_id = Some(hook_id.into());
        self
    }

    pub fn at(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(pointer.into());
        self
    }
}

/// The form shown to people: every part a project controls (paths, pointers holding field names, hook
/// ids, messages quoting values) passes through [`crate::terminal_text`]. `--json` outputs serialize
/// the struct instead, exactly.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::terminal_text::{escape, escape_lines, escape_path};
        if let Some(file) = &self.file {
            f.write_str(&escape_path(file))?;
            if let Some(pointer) = &self.pointer {
                let pointer = if pointer.is_empty() { "(root)" } else { pointer };
                write!(f, " at {}", escape(pointer))?;
            }
            f.write_str(": ")?;
        }
        if let Some(hook_id) = &self.hook_id {
            write!(f, "hook '{}': ", escape(hook_id))?;
        }
        f.write_str(&escape_lines(&self.message))
    }
}

/// `path` as one shell word, for the commands that messages tell people to run: as it is when that
/// is safe, single-quoted otherwise.
pub(crate) fn shell_quote(path: &Path) -> String {
    let text = path.display().to_string();
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if safe {
        text
    } else if crate::terminal_text::escape(&text) != text {
        // Control characters inside '…' would still reach the terminal: ANSI-C quoting ($'…', as in
        // bash and zsh) keeps the word exact and the escapes visible.
        let inner = text.replace('\\', "\\\\").replace('\'', "\\'");
        format!("$'{}'", crate::terminal_text::escape(&inner))
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_safe_paths_and_quotes_the_rest() {
        assert_eq!(shell_quote(Path::new("/a/b-c.sh")), "/a/b-c.sh");
        assert_eq!(shell_quote(Path::new("/a b/it's")), "'/a b/it'\\''s'");
    }

    #[test]
    fn display_names_file_pointer_and_hook() {
        let d = Diagnostic::new("bad")
            .in_file("/c/hooks.json")
            .at("/hooks/0/event");
        assert_eq!(d.to_string(), "/c/hooks.json at /hooks/0/event: bad");
        let d = Diagnostic::new("timed out").for_hook("audit");
        assert_eq!(d.to_string(), "hook 'audit': timed out");
        let d = Diagnostic::new("not JSON").in_file("/h.json").at("");
        assert_eq!(d.to_string(), "/h.json at (root): not JSON");
    }
}
