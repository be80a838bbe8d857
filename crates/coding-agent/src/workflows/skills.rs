//! Skills in the Agent Skills format: a folder holding a `SKILL.md` (frontmatter with `name` and
//! `description`, then the instructions) and any files beside it. See docs/skills.md.
//!
//! The folder's name is the skill's id (`/skill:ID`); a `name` in another style (`Agent
//! Development`, as Claude Code's own plugins write it) is kept as the display name, and a
//! description over the format's limit is cut with a note, so skills that load in Claude Code load
//! here too.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Source;
use super::files::{read_bounded, sorted_entries};
use super::frontmatter::Document;
use crate::diagnostics::Diagnostic;

/// The longest name the format allows.
pub(crate) const MAX_NAME_CHARS: usize = 64;
/// The longest description the format allows.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The file every skill folder holds.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// One skill that loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    /// The id: the folder's name.
    pub name: String,
    /// The frontmatter's `name`, when it differs from the id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    pub description: String,
    /// The skill's folder, symlinks resolved: reads inside it need no approval.
    pub dir: PathBuf,
    /// Its `SKILL.md`, as the system prompt names it.
    pub file: PathBuf,
    pub source: Source,
}

impl Skill {
    /// The instructions (the body after the frontmatter), read now so an edit shows at once.
    pub fn body(&self) -> Result<String, String> {
        let text = read_bounded(&self.file)?;
        Ok(Document::parse(&text)?.body.trim().to_string())
    }
}

/// Reads every skill folder in `root` (a missing folder holds none). `confine` is the folder a
/// skill must stay inside once symlinks are resolved (a project's skills must not point out of it).
pub(crate) fn load_dir(
    root: &Path,
    source: Source,
    confine: Option<&Path>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Skill> {
    let entries = match sorted_entries(root) {
        Ok(entries) => entries,
        Err(error) => {
            diagnostics.push(Diagnostic::new(error).in_file(root));
            return Vec::new();
        }
    };
    let mut skills = Vec::new();
    for folder in entries {
        let file = folder.join(SKILL_FILE);
        if !folder.is_dir() || !file.exists() {
            continue;
        }
        match load_one(&folder, &file, source, confine) {
            Ok((skill, notes)) => {
                for note in notes {
                    diagnostics
                        .push(Diagnostic::new(format!("skill '{}': {note}", skill.name)).in_file(&file));
                }
                skills.push(skill);
            }
            Err(message) => {
                diagnostics.push(Diagnostic::new(format!("skill skipped: {message}")).in_file(&file))
            }
        }
    }
    skills
}

/// One skill and the notes on what was adjusted to load it.
fn load_one(
    folder: &Path,
    file: &Path,
    source: Source,
    confine: Option<&Path>,
) -> Result<(Skill, Vec<String>), String> {
    let dir = folder
        .canonicalize()
        .map_err(|error| format!("its folder could not be resolved ({error})"))?;
    if let Some(confine) = confine {
        let confine = confine.canonicalize().unwrap_or_else(|_| confine.to_path_buf());
        if !dir.starts_with(&confine) {
            return Err(format!(
                "its folder leads out of the project (to {}); a project's skills must live inside it",
                dir.display()
            ));
        }
    }
    let text = read_bounded(file)?;
    let doc = Document::parse(&text)?;
    if !doc.has_frontmatter {
        return Err("SKILL.md must open with frontmatter: a `---` line, `name:` and `description:`, and a closing `---`".into());
    }
    let folder_name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_id(&folder_name)?;
    let display_name = doc
        .text("name")?
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty() && *name != folder_name);
    let description = doc
        .text("description")?
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or("frontmatter field 'description' is missing or empty (say what the skill does and when to use it)")?;
    let mut notes = Vec::new();
    let chars = description.chars().count();
    let description = if chars > MAX_DESCRIPTION_CHARS {
        notes.push(format!(
            "its description has {chars} characters, over the format's {MAX_DESCRIPTION_CHARS}; the model is offered the first {MAX_DESCRIPTION_CHARS}"
        ));
        let mut cut: String = description.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        description
    };
    let skill = Skill {
        name: folder_name,
        display_name,
        description,
        file: dir.join(SKILL_FILE),
        dir,
        source,
    };
    Ok((skill, notes))
}

/// A skill's id, its folder's name, is what `/skill:ID` is typed with: letters, digits, `-`, `_`
/// and `.`, at most [`MAX_NAME_CHARS`].
pub(crate) fn check_id(folder_name: &str) -> Result<(), String> {
    if folder_name.is_empty() {
        return Err("its folder has no name".into());
    }
    let chars = folder_name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "its folder's name has {chars} characters; the limit is {MAX_NAME_CHARS}"
        ));
    }
    if let Some(bad) = folder_name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.".contains(*c)))
    {
        return Err(format!(
            "its folder's name '{folder_name}' has {bad:?}; the folder's name is the skill's id \
             (/skill:ID), so use letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_name_is_a_typable_id() {
        for ok in ["pdf-tools", "a1", "Agent_Dev", "v1.2"] {
            assert!(check_id(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check_id("agent development").unwrap_err(),
            "its folder's name 'agent development' has ' '; the folder's name is the skill's id (/skill:ID), so use letters, digits, '-', '_' and '.'"
        );
        assert_eq!(
            check_id(&"a".repeat(65)).unwrap_err(),
            "its folder's name has 65 characters; the limit is 64"
        );
    }
}
