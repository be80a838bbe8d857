//! `${VAR}` and `${VAR:-default}` in mcp.json values, as Claude Code and other clients expand them,
//! so a file can name a token without holding it.

/// Why a value could not be expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` with NAME unset and no default.
    Unset(String),
    /// A `${` with no closing `}`, or an empty or invalid name.
    Malformed(String),
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Unset(name) => write!(
                f,
                "environment variable {name} is not set and has no default (write ${{{name}:-DEFAULT}} to give one)"
            ),
            ExpandError::Malformed(reason) => f.write_str(reason),
        }
    }
}

/// Expands every `${NAME}` and `${NAME:-default}` in `text`; `lookup` reads a variable. As in a
/// shell, `:-` also applies when the variable is set but empty. A `$` not followed by `{` stays as
/// it is. The default is taken literally (it is not expanded again).
pub(crate) fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((before, after)) = rest.split_once("${") {
        out.push_str(before);
        let Some((inner, tail)) = after.split_once('}') else {
            return Err(ExpandError::Malformed(format!(
                "'${{' without a closing '}}' in {text:?}"
            )));
        };
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ExpandError::Malformed(format!(
                "'${{{inner}}}' in {text:?} is not a variable: write ${{NAME}} or ${{NAME:-default}}"
            )));
        }
        match (
            lookup(name).filter(|v| !(default.is_some() && v.is_empty())),
            default,
        ) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(name.to_string())),
        }
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_expand() {
        let cases = [
            ("Bearer ${TOKEN}", "Bearer s3cret"),
            (
                "${MISSING:-http://localhost:3000}/mcp",
                "http://localhost:3000/mcp",
            ),
            ("${TOKEN:-fallback}", "s3cret"),
            ("${EMPTY:-fallback}", "fallback"),
            ("${EMPTY}", ""),
            ("a$b ${TOKEN}${TOKEN} $TOKEN", "a$b s3crets3cret $TOKEN"),
            ("${MISSING:-}", ""),
            ("no variables", "no variables"),
        ];
        for (text, expected) in cases {
            assert_eq!(expand(text, &env).as_deref(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn unset_and_malformed_are_errors() {
        assert_eq!(expand("x ${NOPE}", &env), Err(ExpandError::Unset("NOPE".into())));
        assert!(
            expand("x ${NOPE}", &env)
                .unwrap_err()
                .to_string()
                .contains("NOPE is not set")
        );
        assert!(matches!(expand("${TOKEN", &env), Err(ExpandError::Malformed(_))));
        assert!(matches!(expand("${}", &env), Err(ExpandError::Malformed(_))));
        assert!(matches!(expand("${1A}", &env), Err(ExpandError::Malformed(_))));
    }
}
