//! Claude Code's hook protocol, for hooks with `"protocol": "claude-code"`: so hooks written for
//! Claude Code run unchanged.
//!
//! - [`payload`]: the payload out, in Claude Code's event, tool and field names.
//! - [`answer`]: the answer back — exit code 2, `decision`, `hookSpecificOutput`, `continue`,
//!   plain stdout — as an Elph outcome, validated like any other.
//! - [`tools`]: the tool and field names between the two catalogs.
//!
//! The translation lives on the host side, beside the process runner: what an outcome means is
//! still decided by `elph-agent`'s reducer. Limits, timeouts, trust and environment are those of
//! every hook; the environment also gets `CLAUDE_PROJECT_DIR`, which Claude Code's hook commands
//! use to find their scripts.

pub(crate) mod answer;
pub(crate) mod condition;
pub(crate) mod gemini;
pub(crate) mod payload;
pub(crate) mod permissions;
pub(crate) mod plain;
pub(crate) mod settings;
pub(crate) mod tools;
pub(crate) mod transcript;

use elph_agent::hooks::{HookEvent, HookPayload, HookRun, RunStatus, parse_outcome};

use super::discovery::HookDefinition;
use super::host::base_record;
use super::process::{Ending, ProcessOutput};
pub(crate) use payload::stdin_bytes;
pub(crate) use tools::Dialect;

/// The variable Gemini CLI's hook commands read to find the project (they get
/// `CLAUDE_PROJECT_DIR` too, as in Gemini CLI).
pub(crate) const GEMINI_PROJECT_DIR_VAR: &str = "GEMINI_PROJECT_DIR";

/// The variable Claude Code's hook commands read to find the project (and their scripts in it).
pub(crate) const PROJECT_DIR_VAR: &str = "CLAUDE_PROJECT_DIR";
/// The file a SessionStart hook may append `export NAME=value` lines to, in Claude Code.
pub(crate) const ENV_FILE_VAR: &str = "CLAUDE_ENV_FILE";

/// A note when a hook wrote to its `CLAUDE_ENV_FILE`: the file exists so such hooks run (many use
/// `set -u`), but Elph takes no environment from hooks.
pub(crate) fn env_file_note(file: &tempfile::NamedTempFile) -> Option<String> {
    let text = std::fs::read_to_string(file.path()).ok()?;
    let names: Vec<&str> = text
        .lines()
        .filter_map(|line| {
            let line = line.trim().strip_prefix("export ").unwrap_or(line.trim());
            line.split_once('=').map(|(name, _)| name.trim())
        })
        .collect();
    (!text.trim().is_empty()).then(|| {
        format!(
            "it wrote {} to CLAUDE_ENV_FILE; Elph takes no environment variables from hooks, so they were ignored",
            if names.is_empty() {
                "lines".to_string()
            } else {
                names.join(", ")
            }
        )
    })
}

/// The record of one run of a Claude Code hook, and the context it adds to the next request.
pub(crate) fn record(
    hook: &HookDefinition,
    event: HookEvent,
    output: &ProcessOutput,
    payload: &HookPayload,
    dialect: Dialect,
) -> (HookRun, Option<String>) {
    let mut run = base_record(hook, event, output);
    let translation = match output.ending() {
        Ending::Exited(0) => match std::str::from_utf8(&output.stdout) {
            Ok(stdout) => answer::exit_zero(event, payload, stdout, dialect),
            Err(_) => Err("stdout is not valid UTF-8".to_string()),
        },
        Ending::Exited(2) => Ok(answer::exit_two(
            event,
            payload,
            &String::from_utf8_lossy(&output.stderr),
        )),
        Ending::Exited(code) => {
            run.cause = Some(format!(
                "exited with code {code}: a non-blocking error, as in Claude Code and Gemini CLI; the hook changed nothing (exit 2 blocks)"
            ));
            return (run, None);
        }
        ending => {
            run.cause = Some(super::host::failure_cause(hook, ending));
            return (run, None);
        }
    };
    let translation = match translation {
        Ok(translation) => translation,
        Err(why) => {
            run.cause = Some(format!("outcome rejected: {why}"));
            return (run, None);
        }
    };
    run.notes.extend(translation.notes);
    if let Some(outcome) = &translation.outcome {
        match parse_outcome(event, outcome) {
            Ok(parsed) => {
                run.notes.extend(parsed.ignored);
                run.outcome = Some(parsed.outcome);
            }
            Err(error) => {
                run.cause = Some(format!("outcome rejected: {error}"));
                return (run, None);
            }
        }
    }
    run.status = RunStatus::Ok;
    (run, translation.context)
}
