//! `scripted/PATH`: an offline, deterministic provider that plays a JSON script of assistant turns,
//! one per `stream` call — for the demo, for tests, and for trying hooks without spending tokens.
//!
//! ```json
//! {"turns": [
//!   {"text": "Let me look.", "toolCalls": [{"name": "shell_exec", "input": {"command": "ls"}}]},
//!   {"text": "Done.", "delayMs": 200},
//!   {"error": "simulated outage"}
//! ]}
//! ```

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::messages::ToolCall;
use crate::provider::{
    DEFAULT_CONTEXT_WINDOW, Provider, ProviderError, Request, StopReason, StreamEvent, Turn, Usage,
};

/// A whole script file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Script {
    pub turns: Vec<ScriptTurn>,
    /// Reported as the provider's context window (tokens), so compaction can be exercised offline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// One assistant turn of a script.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    /// When set, the call fails with this message instead of answering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wait this long before answering (cancellable by dropping the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Plays a script, one turn per call.
#[derive(Debug)]
pub struct ScriptedProvider {
    path: PathBuf,
    model_id: String,
    script: Script,
    state: Mutex<PlayState>,
}

#[derive(Debug, Default)]
struct PlayState {
    next_turn: usize,
    next_call_id: u64,
}

impl ScriptedProvider {
    /// Reads and validates the script at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ProviderError> {
        let path = path.as_ref();
        let error = |message: String| ProviderError::Script {
            path: path.to_path_buf(),
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| error(format!("cannot read the script: {e}")))?;
        let script: Script = serde_json::from_str(&text).map_err(|e| {
            error(format!(
                "{e}; expected {{\"turns\": [{{\"text\": \"...\", \"toolCalls\": [{{\"name\": \"...\", \"input\": {{}}}}]}}]}}"
            ))
        })?;
        Self::from_script(path, script)
    }

    /// Plays an in-memory script; `path` names it in errors and is the model id.
    pub fn from_script(path: impl AsRef<Path>, script: Script) -> Result<Self, ProviderError> {
        let path = path.as_ref().to_path_buf();
        let error = |message: String| ProviderError::Script {
            path: path.clone(),
            message,
        };
        if script.turns.is_empty() {
            return Err(error(
                "the script has no turns; add at least one to \"turns\"".into(),
            ));
        }
        for (i, turn) in script.turns.iter().enumerate() {
            if let Some(call) = turn.tool_calls.iter().find(|c| c.name.trim().is_empty()) {
                return Err(error(format!(
                    "turn {}: a tool call has an empty name ({call:?})",
                    i + 1
                )));
            }
        }
        if script.context_window == Some(0) {
            return Err(error("\"contextWindow\" must be positive".into()));
        }
        Ok(ScriptedProvider {
            model_id: path.display().to_string(),
            path,
            script,
            state: Mutex::new(PlayState {
                next_turn: 0,
                next_call_id: 1,
            }),
        })
    }

    /// The script file it plays.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Turns in the script.
    pub fn turn_count(&self) -> usize {
        self.script.turns.len()
    }

    /// Turns played so far (failed and cancelled ones included).
    pub fn turns_played(&self) -> usize {
        self.lock().next_turn
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PlayState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait::async_trait]
impl Provider for ScriptedProvider {
    fn provider_name(&self) -> &str {
        "scripted"
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn context_window(&self) -> u64 {
        self.script.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    async fn stream(
        &self,
        request: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, ProviderError> {
        let number = {
            let mut state = self.lock();
            state.next_turn += 1;
            state.next_turn
        };
        let Some(turn) = self.script.turns.get(number - 1) else {
            return Err(ProviderError::ScriptExhausted {
                path: self.path.clone(),
                turns: self.script.turns.len(),
                requested: number,
            });
        };
        if let Some(ms) = turn.delay_ms.filter(|ms| *ms > 0) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if let Some(message) = &turn.error {
            return Err(ProviderError::ScriptedFailure {
                path: self.path.clone(),
                turn: number,
                message: message.clone(),
            });
        }

        for chunk in text_chunks(&turn.text) {
            on_event(StreamEvent::TextDelta(chunk.to_string()));
            tokio::task::yield_now().await;
        }
        let tool_calls: Vec<ToolCall> = {
            let mut state = self.lock();
            turn.tool_calls
                .iter()
                .map(|call| {
                    let id = format!("call_{}", state.next_call_id);
                    state.next_call_id += 1;
                    ToolCall {
                        id,
                        name: call.name.clone(),
                        input: call.input.clone(),
                    }
                })
                .collect()
        };
        for call in &tool_calls {
            on_event(StreamEvent::ToolCall(call.clone()));
        }
        let usage = estimate_usage(request, &turn.text, &tool_calls);
        on_event(StreamEvent::Usage(usage));
        let stop_reason = if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Ok(Turn {
            text: turn.text.clone(),
            tool_calls,
            usage: Some(usage),
            stop_reason,
        })
    }
}

/// Splits text after each run of whitespace, keeping the whitespace: "a b  c" → "a ", "b  ", "c".
pub(crate) fn text_chunks(text: &str) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else if in_space {
            // `start` and `i` come from char_indices: both are character boundaries.
            if let Some(chunk) = text.get(start..i)
                && !chunk.trim().is_empty()
            {
                chunks.push(chunk);
                start = i;
            }
            in_space = false;
        }
    }
    if let Some(tail) = text.get(start..)
        && !tail.is_empty()
    {
        chunks.push(tail);
    }
    chunks
}

/// About four characters per token, of everything sent and everything answered.
fn estimate_usage(request: &Request, text: &str, tool_calls: &[ToolCall]) -> Usage {
    let tokens = |chars: usize| chars.div_ceil(4) as u64;
    let mut input_chars = request.system_prompt.len();
    input_chars += request
        .messages
        .iter()
        .map(|m| serde_json::to_string(m).map_or(0, |s| s.len()))
        .sum::<usize>();
    input_chars += request
        .tools
        .iter()
        .map(|t| serde_json::to_string(t).map_or(0, |s| s.len()))
        .sum::<usize>();
    let output_chars = text.len()
        + tool_calls
            .iter()
            .map(|c| c.name.len() + c.input.to_string().len())
            .sum::<usize>();
    Usage {
        input_tokens: tokens(input_chars),
        output_tokens: tokens(output_chars),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_keep_every_character() {
        assert_eq!(
            text_chunks("Hello big  world\n"),
            vec!["Hello ", "big  ", "world\n"]
        );
        assert_eq!(text_chunks("  lead"), vec!["  lead"]);
        assert_eq!(text_chunks(""), Vec::<&str>::new());
        let text = "one two\tthree\n\nfour ";
        assert_eq!(text_chunks(text).concat(), text);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let result: Result<Script, _> = serde_json::from_str(r#"{"turns": [{"txt": "x"}]}"#);
        assert!(result.unwrap_err().to_string().contains("txt"));
    }
}
