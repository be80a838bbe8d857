//! Prompt templates: Markdown files whose name is a slash command (`review.md` → `/review`), with
//! optional `description` and `argument-hint` frontmatter and `$ARGUMENTS`, `$1`…`$9` and `$@` in
//! the body. See docs/skills.md.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Source;
use super::files::{read_bounded, sorted_entries};
use super::frontmatter::Document;
use crate::diagnostics::Diagnostic;

/// One template that loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptTemplate {
    /// The command's name: the file name without `.md`.
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) argument_hint: Option<String>,
    pub file: PathBuf,
    pub source: Source,
    #[serde(skip)]
    pub body: String,
}

/// Reads every `*.md` in `root` (a missing folder holds none). `reserved` says whether a name
/// belongs to a built-in command.
pub(crate) fn load_dir(
    root: &Path,
    source: Source,
    reserved: &dyn Fn(&str) -> bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<PromptTemplate> {
    let entries = match sorted_entries(root) {
        Ok(entries) => entries,
        Err(error) => {
            diagnostics.push(Diagnostic::new(error).in_file(root));
            return Vec::new();
        }
    };
    let mut templates = Vec::new();
    for file in entries {
        if file.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        match load_one(&file, source, reserved) {
            Ok(template) => templates.push(template),
            Err(message) => {
                diagnostics.push(Diagnostic::new(format!("template skipped: {message}")).in_file(&file))
            }
        }
    }
    templates
}

fn load_one(file: &Path, source: Source, reserved: &dyn Fn(&str) -> bool) -> Result<PromptTemplate, String> {
    let name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    check_name(&name)?;
    if reserved(&name) {
        return Err(format!(
            "/{name} is a built-in command; rename the file to use it as a template"
        ));
    }
    let text = read_bounded(file)?;
    let doc = Document::parse(&text)?;
    let body = doc.body.trim().to_string();
    if body.is_empty() {
        return Err("it has no text after its frontmatter".into());
    }
    let description = doc
        .text("description")?
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| first_line(&body));
    Ok(PromptTemplate {
        name,
        description,
        argument_hint: doc.text("argument-hint")?.filter(|h| !h.trim().is_empty()),
        file: file.to_path_buf(),
        source,
        body,
    })
}

/// A template's name must be typable after `/` and unambiguous.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("its file name is empty before .md".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(format!(
            "its name '{name}' has {bad:?}; use letters, digits, hyphens and underscores"
        ));
    }
    Ok(())
}

fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    let mut out: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        out.push('…');
    }
    out
}

impl PromptTemplate {
    /// The body with its placeholders filled from `arguments`: `$ARGUMENTS` the whole text, `$@`
    /// every argument joined by spaces, `$1`…`$9` one argument each (quotes group words; a missing
    /// one is empty). A body with no placeholder gets non-empty arguments appended, so nothing typed
    /// is lost.
    pub(crate) fn expand(&self, arguments: &str) -> String {
        let arguments = arguments.trim();
        let words = split_arguments(arguments);
        let mut out = String::with_capacity(self.body.len() + arguments.len());
        let mut used = false;
        let mut rest = self.body.as_str();
        while let Some((before, after)) = rest.split_once('$') {
            out.push_str(before);
            if let Some(tail) = after.strip_prefix("ARGUMENTS") {
                out.push_str(arguments);
                rest = tail;
                used = true;
            } else if let Some(tail) = after.strip_prefix('@') {
                out.push_str(&words.join(" "));
                rest = tail;
                used = true;
            } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c))
                && let Some(tail) = after.strip_prefix(digit)
            {
                let index = digit as usize - '1' as usize;
                out.push_str(words.get(index).map(String::as_str).unwrap_or(""));
                rest = tail;
                used = true;
            } else {
                out.push('$');
                rest = after;
            }
        }
        out.push_str(rest);
        if !used && !arguments.is_empty() {
            out.push_str("\n\n");
            out.push_str(arguments);
        }
        out
    }
}

/// Splits like a shell would for words and quotes, without any expansion.
pub(crate) fn split_arguments(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(body: &str) -> PromptTemplate {
        PromptTemplate {
            name: "t".into(),
            description: String::new(),
            argument_hint: None,
            file: PathBuf::from("t.md"),
            source: Source::User,
            body: body.into(),
        }
    }

    #[test]
    fn fills_every_placeholder() {
        let t = template("Review $1 for $2. All: $ARGUMENTS. Words: $@. Missing: [$3]. Cost: $5 $x $");
        assert_eq!(
            t.expand(r#"src/lib.rs "memory safety""#),
            "Review src/lib.rs for memory safety. All: src/lib.rs \"memory safety\". Words: src/lib.rs memory safety. Missing: []. Cost:  $x $"
        );
    }

    #[test]
    fn arguments_are_never_expanded_twice() {
        assert_eq!(template("[$1]").expand("$2 x"), "[$2]");
        assert_eq!(template("$ARGUMENTS").expand("$1"), "$1");
    }

    #[test]
    fn a_body_without_placeholders_keeps_the_arguments() {
        assert_eq!(
            template("Summarize.").expand("the diff"),
            "Summarize.\n\nthe diff"
        );
        assert_eq!(template("Summarize.").expand("  "), "Summarize.");
    }

    #[test]
    fn splits_words_and_quotes() {
        assert_eq!(
            split_arguments(r#" a  "b c" 'd "e"' f"g"h "" "#),
            ["a", "b c", "d \"e\"", "fgh", ""]
        );
    }

    #[test]
    fn names_must_be_typable() {
        assert!(check_name("review_pr-2").is_ok());
        assert_eq!(
            check_name("my review").unwrap_err(),
            "its name 'my review' has ' '; use letters, digits, hyphens and underscores"
        );
        assert!(check_name("skill:x").is_err());
    }

    #[test]
    fn the_description_defaults_to_the_first_line() {
        assert_eq!(first_line("\n# Review the code\nmore"), "Review the code");
    }
}
