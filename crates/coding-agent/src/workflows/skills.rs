//! Skills in the Agent Skills format: a folder holding a `SKILL.md` (frontmatter with `name` and
//! `description`, then the instructions) and any files beside it. See docs/skills.md.

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
    pub name: String,
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
            Ok(skill) => skills.push(skill),
            Err(message) => {
                diagnostics.push(Diagnostic::new(format!("skill skipped: {message}")).in_file(&file))
            }
        }
    }
    skills
}

fn load_one(folder: &Path, file: &Path, source: Source, confine: Option<&Path>) -> Result<Skill, String> {
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
    let name = doc
        .text("name")?
        .ok_or("frontmatter field 'name' is missing (it must equal the folder's name)")?;
    check_name(&name, &folder_name)?;
    let description = doc
        .text("description")?
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .ok_or("frontmatter field 'description' is missing or empty (say what the skill does and when to use it)")?;
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "its description has {chars} characters; the limit is {MAX_DESCRIPTION_CHARS}"
        ));
    }
    Ok(Skill {
        name,
        description,
        file: dir.join(SKILL_FILE),
        dir,
        source,
    })
}

/// The Agent Skills rules for a name.
pub(crate) fn check_name(name: &str, folder_name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("its name is empty".into());
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!(
            "its name has {chars} characters; the limit is {MAX_NAME_CHARS}"
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "its name '{name}' has {bad:?}; use lowercase letters, digits and hyphens only"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "its name '{name}' must not start or end with a hyphen or hold two in a row"
        ));
    }
    if name != folder_name {
        return Err(format!(
            "its name '{name}' differs from its folder's name '{folder_name}'; they must be equal"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_format() {
        assert!(check_name("pdf-tools", "pdf-tools").is_ok());
        assert!(check_name("a1", "a1").is_ok());
        assert_eq!(
            check_name("PDF", "PDF").unwrap_err(),
            "its name 'PDF' has 'P'; use lowercase letters, digits and hyphens only"
        );
        assert!(
            check_name("-x", "-x")
                .unwrap_err()
                .contains("must not start or end")
        );
        assert!(check_name("a--b", "a--b").unwrap_err().contains("two in a row"));
        assert_eq!(
            check_name("other", "pdf").unwrap_err(),
            "its name 'other' differs from its folder's name 'pdf'; they must be equal"
        );
        let long = "a".repeat(65);
        assert_eq!(
            check_name(&long, &long).unwrap_err(),
            "its name has 65 characters; the limit is 64"
        );
        assert!(check_name(&"a".repeat(64), &"a".repeat(64)).is_ok());
    }
}
