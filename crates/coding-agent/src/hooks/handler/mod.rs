//! What a hook runs (docs/hooks.md, "Handlers"): a command (a bounded child process, see
//! `hooks::process`), a URL the payload is posted to, a prompt a model judges, or a tool of a
//! connected MCP server.
//!
//! The three that are not a process share one shape: the payload goes out as JSON, an answer comes
//! back, and the answer is read exactly as a command's stdout is (`parse_stdout`: empty or `{}` is no
//! change, anything else must be a valid outcome for the event). Every failure — refused, timed out,
//! an HTTP error, a model that answers prose — is a failed run with its cause, fail-open unless the
//! hook is `failClosed`, as for a command.

pub(crate) mod http;
pub(crate) mod mcp_tool;
pub(crate) mod prompt;
pub(crate) mod runner;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use elph_agent::hooks::{HookEvent, HookRun, RunStatus, parse_stdout};
use serde::Serialize;

use super::config::{HookConfig, McpToolConfig};
use super::discovery::{HookDefinition, ResolvedCommand, resolve_command};

/// What a hook runs. Serialized (in `elph hooks list --json`) as one field named for the kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Handler {
    /// A program, one bounded child process per run (or one for the session when persistent).
    Command(ResolvedCommand),
    /// An HTTP endpoint the payload is posted to.
    Url(UrlHandler),
    /// A prompt a model answers with an outcome.
    Prompt(PromptHandler),
    /// A tool of a connected MCP server.
    McpTool(McpToolConfig),
}

/// A url hook's endpoint and headers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UrlHandler {
    pub url: String,
    /// Names only when serialized: a value may hold a token written out.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", serialize_with = "names_only")]
    pub headers: BTreeMap<String, String>,
    /// The variables of Elph's environment the headers may take.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_env_vars: Vec<String>,
}

/// A prompt hook's instructions and model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptHandler {
    pub prompt: String,
    /// `PROVIDER/MODEL`; `None`: the session's model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn names_only<S: serde::Serializer>(
    headers: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(headers.keys())
}

impl Handler {
    /// The handler of a validated hook: `folder` is where its file is, for a relative command.
    pub(crate) fn of(config: &HookConfig, folder: &Path, path_var: &str) -> Handler {
        if let Some(url) = &config.url {
            Handler::Url(UrlHandler {
                url: url.clone(),
                headers: config.headers.clone(),
                allowed_env_vars: config.allowed_env_vars.clone(),
            })
        } else if let Some(prompt) = &config.prompt {
            Handler::Prompt(PromptHandler {
                prompt: prompt.clone(),
                model: config.model.clone(),
            })
        } else if let Some(tool) = &config.mcp_tool {
            Handler::McpTool(tool.clone())
        } else {
            Handler::Command(resolve_command(
                config.command.as_deref().unwrap_or_default(),
                folder,
                path_var,
            ))
        }
    }

    /// One line for people: the command as resolved, `POST URL`, `prompt (MODEL)`,
    /// `mcp SERVER/TOOL`.
    pub fn describe(&self) -> String {
        match self {
            Handler::Command(command) => command.path.display().to_string(),
            Handler::Url(url) => format!("POST {}", url.url),
            Handler::Prompt(prompt) => match &prompt.model {
                Some(model) => format!("prompt ({model})"),
                None => "prompt (the session's model)".to_string(),
            },
            Handler::McpTool(tool) => format!("mcp {}/{}", tool.server, tool.tool),
        }
    }

    /// The kind, as hooks.json names its field.
    pub fn kind(&self) -> &'static str {
        match self {
            Handler::Command(_) => "command",
            Handler::Url(_) => "url",
            Handler::Prompt(_) => "prompt",
            Handler::McpTool(_) => "mcpTool",
        }
    }
}

/// How a url, prompt or mcpTool run ended: the answer's bytes (read as a command's stdout is), or
/// why there is none.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) result: Result<Vec<u8>, Failure>,
    pub(crate) duration: Duration,
    /// Remarks that did not fail the run.
    pub(crate) notes: Vec<String>,
}

/// Why a handler has no answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Not sent at all (a refused URL, an unset variable, no such server): the run is skipped.
    Refused(String),
    /// Sent, and it went wrong (an HTTP error, a timeout, a tool error).
    Failed(String),
}

impl Answer {
    pub(crate) fn refused(cause: impl Into<String>) -> Self {
        Answer {
            result: Err(Failure::Refused(cause.into())),
            duration: Duration::ZERO,
            notes: Vec::new(),
        }
    }

    pub(crate) fn failed(cause: impl Into<String>, duration: Duration) -> Self {
        Answer {
            result: Err(Failure::Failed(cause.into())),
            duration,
            notes: Vec::new(),
        }
    }

    pub(crate) fn body(body: Vec<u8>, duration: Duration) -> Self {
        Answer {
            result: Ok(body),
            duration,
            notes: Vec::new(),
        }
    }
}

/// The record of one url, prompt or mcpTool run: its answer validated as `event`'s outcome.
pub(crate) fn record(hook: &HookDefinition, event: HookEvent, answer: Answer) -> HookRun {
    let mut run = match answer.result {
        Err(Failure::Refused(cause)) => HookRun::skipped(&hook.id, event, format!("not run: {cause}")),
        Err(Failure::Failed(cause)) => {
            let mut run = HookRun::skipped(&hook.id, event, cause);
            run.status = RunStatus::Failed;
            run
        }
        Ok(body) if body.len() > hook.max_output_bytes => {
            let mut run = HookRun::skipped(
                &hook.id,
                event,
                format!(
                    "its answer is {} bytes, over its {}-byte limit (maxOutputBytes); ignored",
                    body.len(),
                    hook.max_output_bytes
                ),
            );
            run.status = RunStatus::Failed;
            run
        }
        Ok(body) => {
            let mut run = HookRun::skipped(&hook.id, event, String::new());
            run.cause = None;
            match parse_stdout(event, &body) {
                Ok(parsed) => {
                    run.status = RunStatus::Ok;
                    if let Some(parsed) = parsed {
                        run.notes.extend(parsed.ignored);
                        run.outcome = Some(parsed.outcome);
                    }
                }
                Err(error) => {
                    run.status = RunStatus::Failed;
                    run.cause = Some(format!("outcome rejected: {error}"));
                }
            }
            run
        }
    };
    run.duration_ms = u64::try_from(answer.duration.as_millis()).unwrap_or(u64::MAX);
    run.notes.extend(answer.notes);
    run.fail_closed = hook.fail_closed;
    run
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::discovery::merge;
    use crate::hooks::discovery::{FileLoad, HookScope};

    fn hook(json: &str) -> HookDefinition {
        let file = crate::hooks::config::parse(json.as_bytes()).unwrap();
        let set = merge(
            vec![FileLoad {
                path: "/cfg/hooks.json".into(),
                scope: HookScope::Home,
                result: Ok(Some(file)),
            }],
            Some("/usr/bin:/bin"),
        );
        set.hooks.into_iter().next().unwrap()
    }

    #[test]
    fn each_handler_is_read_from_its_field() {
        let url = hook(r#"{"hooks": [{"id": "u", "event": "preToolUse", "url": "https://h.example/x"}]}"#);
        assert_eq!(url.handler.describe(), "POST https://h.example/x");
        let prompt = hook(
            r#"{"hooks": [{"id": "p", "event": "preToolUse", "prompt": "judge", "model": "openai/m"}]}"#,
        );
        assert_eq!(prompt.handler.describe(), "prompt (openai/m)");
        let tool = hook(
            r#"{"hooks": [{"id": "t", "event": "preToolUse", "mcpTool": {"server": "s", "tool": "t"}}]}"#,
        );
        assert_eq!(tool.handler.describe(), "mcp s/t");
        let command = hook(r#"{"hooks": [{"id": "c", "event": "stop", "command": "/bin/true"}]}"#);
        assert_eq!(command.handler.kind(), "command");
        assert!(command.command().is_some() && url.command().is_none());
    }

    #[test]
    fn the_list_shows_header_names_but_never_their_values() {
        let url = hook(
            r#"{"hooks": [{"id": "u", "event": "stop", "url": "https://h.example/x",
                "headers": {"Authorization": "Bearer sk-written-out"}}]}"#,
        );
        let listed = serde_json::to_string(&url).unwrap();
        assert!(
            listed.contains("\"url\":{\"url\":\"https://h.example/x\",\"headers\":[\"Authorization\"]"),
            "{listed}"
        );
        assert!(!listed.contains("sk-written-out"), "{listed}");
    }

    #[test]
    fn an_answer_is_read_as_a_commands_stdout() {
        let guard = hook(
            r#"{"hooks": [{"id": "g", "event": "preToolUse", "url": "https://h.example/x", "failClosed": true}]}"#,
        );
        let blocked = record(
            &guard,
            HookEvent::PreToolUse,
            Answer::body(
                br#"{"block": true, "reason": "no"}"#.to_vec(),
                Duration::from_millis(7),
            ),
        );
        assert_eq!((blocked.status, blocked.duration_ms), (RunStatus::Ok, 7));
        assert!(blocked.outcome.is_some() && blocked.fail_closed);
        let empty = record(
            &guard,
            HookEvent::PreToolUse,
            Answer::body(Vec::new(), Duration::ZERO),
        );
        assert_eq!((empty.status, empty.outcome), (RunStatus::Ok, None));
        let prose = record(
            &guard,
            HookEvent::PreToolUse,
            Answer::body(b"I think this is fine".to_vec(), Duration::ZERO),
        );
        assert_eq!(prose.status, RunStatus::Failed);
        assert!(prose.cause.unwrap().starts_with("outcome rejected"));
        let refused = record(&guard, HookEvent::PreToolUse, Answer::refused("not allowed"));
        assert_eq!(refused.status, RunStatus::Skipped);
        assert_eq!(refused.cause.as_deref(), Some("not run: not allowed"));
    }
}
