//! Whether a Claude Code hook command is a plain program with arguments, so that `elph hooks import`
//! can write it as `"command": "python3", "args": [".claude/hooks/x.py"]` instead of `/bin/sh -c
//! "…"`: in that form trust pins the script the hook runs (docs/trust.md), and nothing is left to a
//! shell's reading of the line.
//!
//! A command is plain when it is words separated by blanks, with single quotes, double quotes and
//! backslashes only quoting, and no other shell syntax: no pipes, lists, redirections, globs,
//! substitutions, assignments or comments. The one expansion taken is `$CLAUDE_PROJECT_DIR` (also
//! `${CLAUDE_PROJECT_DIR}`) at the start of a word, before `/` or alone: Elph runs hooks in the
//! project folder, so the path becomes relative to it.

/// Where the imported hook will live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The project's `.elph/hooks.json`: commands are relative to `.elph/`, the hook runs in the
    /// project folder.
    Project,
    /// CONFIG_DIR/hooks.json: nothing project-relative can be written down.
    Home,
}

const PROJECT_VARS: [&str; 2] = ["$CLAUDE_PROJECT_DIR", "${CLAUDE_PROJECT_DIR}"];

/// The program and its arguments, if `command` is plain.
pub(crate) fn split(command: &str, target: Target) -> Option<(String, Vec<String>)> {
    let words = words(command)?;
    let mut resolved = Vec::with_capacity(words.len());
    for word in words {
        resolved.push(resolve_word(word, target)?);
    }
    let mut resolved = resolved.into_iter();
    let program = resolved.next()?;
    // `NAME=value cmd` sets a variable: shell syntax.
    if program.contains('=') {
        return None;
    }
    let program = if program.contains('/') && !program.starts_with('/') {
        match target {
            // Claude Code ran it from the project folder; Elph reads it from `.elph/`.
            Target::Project => format!("../{}", program.strip_prefix("./").unwrap_or(&program)),
            Target::Home => return None,
        }
    } else {
        program
    };
    Some((program, resolved.collect()))
}

/// One word as read: its text, and whether it began with an unquoted or double-quoted
/// `$CLAUDE_PROJECT_DIR`.
#[derive(Debug, Default)]
struct Word {
    text: String,
    project_prefix: bool,
}

/// The word with the project folder's variable made relative.
fn resolve_word(word: Word, target: Target) -> Option<String> {
    if !word.project_prefix {
        return Some(word.text);
    }
    if target == Target::Home {
        return None;
    }
    match word.text.as_str() {
        "" => Some(".".to_string()),
        rest => rest.strip_prefix('/').map(|rest| {
            if rest.is_empty() {
                ".".into()
            } else {
                rest.to_string()
            }
        }),
    }
}

/// The words of `command`, or `None` when it uses shell syntax beyond quoting.
fn words(command: &str) -> Option<Vec<Word>> {
    let mut words = Vec::new();
    let mut current: Option<Word> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(word) = current.take() {
                    words.push(word);
                }
            }
            '\'' => {
                let word = current.get_or_insert_with(Word::default);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        other => word.text.push(other),
                    }
                }
            }
            '"' => {
                let word = current.get_or_insert_with(Word::default);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' => take_project_var(&mut chars, word)?,
                        '\\' | '`' => return None,
                        other => word.text.push(other),
                    }
                }
            }
            '\\' => {
                let escaped = chars.next()?;
                if escaped == '\n' {
                    return None;
                }
                current.get_or_insert_with(Word::default).text.push(escaped);
            }
            '$' => take_project_var(&mut chars, current.get_or_insert_with(Word::default))?,
            '#' if current.is_none() => return None,
            '~' if current.is_none() => return None,
            c if "|&;<>()`*?[]{}!\n\r".contains(c) => return None,
            other => current.get_or_insert_with(Word::default).text.push(other),
        }
    }
    if let Some(word) = current {
        words.push(word);
    }
    Some(words)
}

/// After a `$`: the project folder's variable, only at the very start of a word.
fn take_project_var(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, word: &mut Word) -> Option<()> {
    if !word.text.is_empty() || word.project_prefix {
        return None;
    }
    let rest: String = chars.clone().collect();
    // The `$` was read already: match the rest of each name.
    let (name, after) = PROJECT_VARS.iter().find_map(|var| {
        let bare = var.strip_prefix('$')?;
        Some((var, rest.strip_prefix(bare)?))
    })?;
    // `$CLAUDE_PROJECT_DIRX` is another variable.
    if name.ends_with('R') && after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    for _ in 0..name.len() - 1 {
        chars.next();
    }
    word.project_prefix = true;
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(command: &str) -> Option<(String, Vec<String>)> {
        split(command, Target::Project)
    }

    fn owned(program: &str, args: &[&str]) -> Option<(String, Vec<String>)> {
        Some((program.to_string(), args.iter().map(|a| a.to_string()).collect()))
    }

    #[test]
    fn plain_programs_become_program_and_args() {
        assert_eq!(
            project("python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/v.py"),
            owned("python3", &[".claude/hooks/v.py"])
        );
        assert_eq!(
            project("python3 ${CLAUDE_PROJECT_DIR}/.claude/hooks/v.py --strict"),
            owned("python3", &[".claude/hooks/v.py", "--strict"])
        );
        assert_eq!(project("g.sh"), owned("g.sh", &[]));
        assert_eq!(
            project("  node 'a b.js'  x\\ y "),
            owned("node", &["a b.js", "x y"])
        );
        assert_eq!(
            project("\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh arg"),
            owned("../.claude/hooks/check.sh", &["arg"])
        );
        assert_eq!(project("./tools/h.sh"), owned("../tools/h.sh", &[]));
        assert_eq!(
            project("/usr/bin/env python3 x.py"),
            owned("/usr/bin/env", &["python3", "x.py"])
        );
    }

    #[test]
    fn shell_syntax_keeps_the_shell() {
        for command in [
            "a | b",
            "a && b",
            "a; b",
            "a > out",
            "echo $HOME",
            "echo \"$HOME\"",
            "x $(id)",
            "x `id`",
            "ls *.rs",
            "FOO=1 run",
            "# comment",
            "cd ~/x",
            "a\nb",
            "\"unterminated",
            "x \"$CLAUDE_PROJECT_DIRX\"/y",
            "x a$CLAUDE_PROJECT_DIR",
            "",
        ] {
            assert_eq!(project(command), None, "{command:?}");
        }
    }

    #[test]
    fn the_home_file_cannot_hold_project_paths() {
        assert_eq!(split("python3 \"$CLAUDE_PROJECT_DIR\"/x.py", Target::Home), None);
        assert_eq!(split("./x.sh", Target::Home), None);
        assert_eq!(
            split("notify-send hi", Target::Home),
            owned("notify-send", &["hi"])
        );
    }
}
