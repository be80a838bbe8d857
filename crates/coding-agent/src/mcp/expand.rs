//! Variables in mcp.json values, as the clients people copy their files from expand them, so a file
//! can name a token without holding it and a VS Code or Cursor file works as written:
//!
//! - `${NAME}` and `${NAME:-default}` (Claude Code, Cursor): Elph's environment; unset without a
//!   default is an error.
//! - `${env:NAME}` (VS Code, Cursor): Elph's environment; unset is empty, as in VS Code.
//! - `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${pathSeparator}` (VS Code):
//!   the project folder, its name, the home folder, `/`.
//! - `${input:ID}` (VS Code): the answer to the file's input ID (see [`super::inputs`]).

use std::path::Path;

/// Why a value could not be expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` with NAME unset and no default.
    Unset(String),
    /// A `${` with no closing `}`, or an empty or invalid name.
    Malformed(String),
    /// `${input:ID}` that this session cannot answer; the text says why.
    Input(String),
}

impl std::fmt::Display for ExpandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExpandError::Unset(name) => write!(
                f,
                "environment variable {name} is not set and has no default (write ${{{name}:-DEFAULT}} to give one)"
            ),
            ExpandError::Malformed(reason) | ExpandError::Input(reason) => f.write_str(reason),
        }
    }
}

/// Answers `${input:ID}`, or says why it cannot.
pub(crate) type InputAnswer<'a> = &'a dyn Fn(&str) -> Result<String, ExpandError>;

/// What the variables of one file stand for.
pub(crate) struct Variables<'a> {
    /// Reads a variable of Elph's environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// `${workspaceFolder}`: the project folder (`None`: the variable is refused).
    pub workspace: Option<&'a Path>,
    /// `${userHome}`.
    pub home: Option<&'a Path>,
    /// The answer to `${input:ID}`, or why there is none (`None`: the variable is refused).
    pub input: Option<InputAnswer<'a>>,
}

/// `${NAME}`, `${NAME:-default}` and `${env:NAME}` only, from `lookup` (a hook's `env` in
/// hooks.json, which has no project variables or inputs).
pub(crate) fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    expand_with(
        text,
        &Variables {
            env: lookup,
            workspace: None,
            home: None,
            input: None,
        },
    )
}

/// Expands every variable in `text`. As in a shell, `:-` also applies when the variable is set but
/// empty. A `$` not followed by `{` stays as it is. The default is taken literally (it is not
/// expanded again).
pub(crate) fn expand_with(text: &str, vars: &Variables<'_>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((before, after)) = rest.split_once("${") {
        out.push_str(before);
        let Some((inner, tail)) = after.split_once('}') else {
            return Err(ExpandError::Malformed(format!(
                "'${{' without a closing '}}' in {text:?}"
            )));
        };
        out.push_str(&one(inner, text, vars)?);
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one `${inner}` of `text`.
fn one(inner: &str, text: &str, vars: &Variables<'_>) -> Result<String, ExpandError> {
    if let Some(name) = inner.strip_prefix("env:") {
        check_name(name, inner, text)?;
        return Ok((vars.env)(name).unwrap_or_default());
    }
    if let Some(id) = inner.strip_prefix("input:") {
        if id.is_empty() {
            return Err(ExpandError::Malformed(format!(
                "'${{{inner}}}' in {text:?} names no input: write ${{input:ID}} with an ID of \"inputs\""
            )));
        }
        return match vars.input {
            Some(input) => input(id),
            None => Err(not_here(inner)),
        };
    }
    match inner {
        "workspaceFolder" => {
            return vars
                .workspace
                .map(|folder| folder.display().to_string())
                .ok_or_else(|| not_here(inner));
        }
        "workspaceFolderBasename" => {
            return vars
                .workspace
                .map(|folder| {
                    folder
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_default()
                })
                .ok_or_else(|| not_here(inner));
        }
        "pathSeparator" | "/" => return Ok("/".to_string()),
        "userHome" => {
            return vars
                .home
                .map(|home| home.display().to_string())
                .ok_or_else(|| ExpandError::Malformed("${userHome}: HOME is not set".to_string()));
        }
        _ => {}
    }
    if let Some((kind, _)) = inner.split_once(':')
        && !inner.contains(":-")
    {
        return Err(ExpandError::Malformed(format!(
            "'${{{inner}}}' in {text:?}: Elph does not know ${{{kind}:…}} variables (it knows ${{env:NAME}}, \
             ${{input:ID}}, ${{workspaceFolder}}, ${{userHome}} and ${{NAME:-default}})"
        )));
    }
    let (name, default) = match inner.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (inner, None),
    };
    check_name(name, inner, text)?;
    match (
        (vars.env)(name).filter(|v| !(default.is_some() && v.is_empty())),
        default,
    ) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(ExpandError::Unset(name.to_string())),
    }
}

fn not_here(inner: &str) -> ExpandError {
    ExpandError::Malformed(format!(
        "${{{inner}}} is an MCP file's variable; here only ${{NAME}}, ${{NAME:-default}} and ${{env:NAME}} expand"
    ))
}

fn check_name(name: &str, inner: &str, text: &str) -> Result<(), ExpandError> {
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(ExpandError::Malformed(format!(
            "'${{{inner}}}' in {text:?} is not a variable: write ${{NAME}}, ${{NAME:-default}} or ${{env:NAME}}"
        )))
    }
}

/// The input IDs `text` names (`${input:ID}`), in order.
pub(crate) fn inputs_named(text: &str) -> Vec<&str> {
    let mut ids = Vec::new();
    let mut rest = text;
    while let Some((_, after)) = rest.split_once("${") {
        let Some((inner, tail)) = after.split_once('}') else {
            break;
        };
        if let Some(id) = inner.strip_prefix("input:")
            && !id.is_empty()
        {
            ids.push(id);
        }
        rest = tail;
    }
    ids
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

    fn expand_env(text: &str) -> Result<String, ExpandError> {
        expand(text, &env)
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
            ("${env:TOKEN}", "s3cret"),
            ("[${env:MISSING}]", "[]"),
        ];
        for (text, expected) in cases {
            assert_eq!(expand_env(text).as_deref(), Ok(expected), "{text}");
        }
    }

    #[test]
    fn vs_code_variables_expand() {
        let answers = |id: &str| match id {
            "api-key" => Ok("k-1".to_string()),
            other => Err(ExpandError::Input(format!("input '{other}' was not answered"))),
        };
        let vars = Variables {
            env: &env,
            workspace: Some(Path::new("/home/me/code/shop")),
            home: Some(Path::new("/home/me")),
            input: Some(&answers),
        };
        let cases = [
            ("${workspaceFolder}/src", "/home/me/code/shop/src"),
            ("${workspaceFolderBasename}", "shop"),
            ("${userHome}${pathSeparator}x${/}y", "/home/me/x/y"),
            ("Bearer ${input:api-key}", "Bearer k-1"),
        ];
        for (text, expected) in cases {
            assert_eq!(expand_with(text, &vars).as_deref(), Ok(expected), "{text}");
        }
        assert_eq!(
            expand_with("${input:other}", &vars),
            Err(ExpandError::Input("input 'other' was not answered".into()))
        );
        assert_eq!(inputs_named("a ${input:x} ${TOKEN} ${input:y-2}"), ["x", "y-2"]);
    }

    #[test]
    fn unset_and_malformed_are_errors() {
        assert_eq!(expand_env("x ${NOPE}"), Err(ExpandError::Unset("NOPE".into())));
        assert!(
            expand_env("x ${NOPE}")
                .unwrap_err()
                .to_string()
                .contains("NOPE is not set")
        );
        let refused_here = ["${workspaceFolder}", "${input:token}"];
        for text in [
            "${TOKEN",
            "${}",
            "${1A}",
            "${env:1A}",
            "${input:}",
            "${command:pick}",
            "${config:a.b}",
        ]
        .into_iter()
        .chain(refused_here)
        {
            assert!(
                matches!(expand_env(text), Err(ExpandError::Malformed(_))),
                "{text}"
            );
        }
        assert!(
            expand_env("${command:pick}")
                .unwrap_err()
                .to_string()
                .contains("does not know ${command:…}")
        );
    }
}
