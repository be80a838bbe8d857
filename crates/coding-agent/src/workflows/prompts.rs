//! Prompt templates: Markdown files whose name is a slash command (`review.md` → `/review`), with
//! optional `description`, `argument-hint` and `allowed-tools` frontmatter and `$ARGUMENTS`,
//! `$ARGUMENTS[N]`, `$1`…`$9` and `$@` in the body, which may also hold `` !`command` `` (its
//! output goes in its place) and `@path` (the file goes with the prompt), as Claude Code's commands
//! do. See docs/skills.md.

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
    /// Claude Code's `allowed-tools`, as written: reported, not used (calls are approved as usual).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) allowed_tools: Option<String>,
    pub file: PathBuf,
    pub source: Source,
    #[serde(skip)]
    pub body: String,
}

/// A piece of an expanded template: text, a command whose output takes its place, or a file
/// reference (`@path`) whose file goes with the prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    Text(String),
    /// `` !`command` ``, arguments filled in.
    Shell(String),
    /// `@path`, arguments filled in: the path as written.
    File(String),
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
    let allowed_tools = match doc.fields.get("allowed-tools") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(text)) => Some(text.clone()),
        Some(serde_json::Value::Array(items)) => Some(
            items
                .iter()
                .map(|item| item.as_str().map_or_else(|| item.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        Some(other) => Some(other.to_string()),
    };
    Ok(PromptTemplate {
        name,
        description,
        argument_hint: doc.text("argument-hint")?.filter(|h| !h.trim().is_empty()),
        allowed_tools,
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
    /// The body with its placeholders filled from `arguments` (see [`fill`]), as one text: a
    /// `` !`command` `` stays as written. A body with no placeholder gets non-empty arguments
    /// appended, so nothing typed is lost.
    #[cfg(test)]
    pub(crate) fn expand(&self, arguments: &str) -> String {
        self.expand_parts(arguments)
            .into_iter()
            .map(|part| match part {
                Part::Text(text) => text,
                Part::Shell(command) => format!("!`{command}`"),
                Part::File(path) => format!("@{path}"),
            })
            .collect()
    }

    /// The body in parts: text, `` !`command` `` and `@path`, each with its placeholders filled
    /// from `arguments`. The parts are found in the template before anything is filled in, so an
    /// argument never becomes a command or a file reference.
    pub(crate) fn expand_parts(&self, arguments: &str) -> Vec<Part> {
        let arguments = arguments.trim();
        let words = split_arguments(arguments);
        let mut used = false;
        let mut parts: Vec<Part> = split_parts(&self.body)
            .into_iter()
            .map(|part| match part {
                Part::Text(text) => Part::Text(fill(&text, arguments, &words, &mut used)),
                Part::Shell(command) => Part::Shell(fill(&command, arguments, &words, &mut used)),
                Part::File(path) => Part::File(fill(&path, arguments, &words, &mut used)),
            })
            .collect();
        if !used && !arguments.is_empty() {
            parts.push(Part::Text(format!("\n\n{arguments}")));
        }
        parts
    }
}

/// `text` with `$ARGUMENTS` (the whole text), `$ARGUMENTS[N]` (argument N, from 0), `$@` (every
/// argument joined by spaces) and `$1`…`$9` (one argument each; quotes group words; a missing one
/// is empty) filled in. `used` is set when any placeholder was there.
fn fill(text: &str, arguments: &str, words: &[String], used: &mut bool) -> String {
    let mut out = String::with_capacity(text.len() + arguments.len());
    let mut rest = text;
    while let Some((before, after)) = rest.split_once('$') {
        out.push_str(before);
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            if let Some((index, tail)) = indexed(tail) {
                out.push_str(words.get(index).map(String::as_str).unwrap_or(""));
                rest = tail;
            } else {
                out.push_str(arguments);
                rest = tail;
            }
            *used = true;
        } else if let Some(tail) = after.strip_prefix('@') {
            out.push_str(&words.join(" "));
            rest = tail;
            *used = true;
        } else if let Some(digit) = after.chars().next().filter(|c| ('1'..='9').contains(c))
            && let Some(tail) = after.strip_prefix(digit)
        {
            let index = digit as usize - '1' as usize;
            out.push_str(words.get(index).map(String::as_str).unwrap_or(""));
            rest = tail;
            *used = true;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `[N]` at the start of `text`: the index and what follows.
fn indexed(text: &str) -> Option<(usize, &str)> {
    let inner = text.strip_prefix('[')?;
    let (digits, tail) = inner.split_once(']')?;
    let index = digits.parse().ok()?;
    Some((index, tail))
}

/// The template's text, `` !`command` `` spans and `@path` words, in order. A `@` counts at the
/// start of a word and when a path follows (not `@` alone, not an e-mail address).
fn split_parts(body: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut rest = body;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("!`")
            && let Some((command, tail)) = after.split_once('`')
            && !command.contains('\n')
            && !command.trim().is_empty()
        {
            parts.push(Part::Text(std::mem::take(&mut text)));
            parts.push(Part::Shell(command.to_string()));
            rest = tail;
            continue;
        }
        let at_word_start = text.is_empty() || text.ends_with(|c: char| c.is_whitespace() || c == '(');
        if at_word_start && let Some(after) = rest.strip_prefix('@') {
            let end = after
                .find(|c: char| c.is_whitespace() || c == ')' || c == '`')
                .unwrap_or(after.len());
            // Sentence punctuation after a path is not part of it.
            let path = after
                .get(..end)
                .unwrap_or(after)
                .trim_end_matches(['.', ',', ';', ':', '!', '?']);
            if !path.is_empty() && !path.starts_with('@') {
                parts.push(Part::Text(std::mem::take(&mut text)));
                parts.push(Part::File(path.to_string()));
                rest = after.get(path.len()..).unwrap_or_default();
                continue;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            text.push(c);
        }
        rest = chars.as_str();
    }
    parts.push(Part::Text(text));
    parts.retain(|part| !matches!(part, Part::Text(text) if text.is_empty()));
    parts
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
            allowed_tools: None,
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
    fn indexed_arguments_commands_and_files_are_parts() {
        let t = template(
            "Fix #$ARGUMENTS[0] ($ARGUMENTS[1]). Status: !`git status $1` See @src/$2.rs, mail a@b.c. !`` x",
        );
        assert_eq!(
            t.expand_parts("42 lib"),
            [
                Part::Text("Fix #42 (lib). Status: ".into()),
                Part::Shell("git status 42".into()),
                Part::Text(" See ".into()),
                Part::File("src/lib.rs".into()),
                Part::Text(", mail a@b.c. !`` x".into()),
            ]
        );
        // An argument never becomes a command or a file reference.
        assert_eq!(
            template("Say $1").expand_parts("!`rm -rf x`"),
            [Part::Text("Say !`rm".into())]
        );
        assert_eq!(
            template("Say $ARGUMENTS").expand_parts("@secret"),
            [Part::Text("Say @secret".into())]
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
