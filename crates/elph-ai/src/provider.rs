//! The `Provider` trait every model adapter implements, and the request and stream types it speaks.

use serde::{Deserialize, Serialize};

pub(crate) use crate::error::ProviderError;
use crate::messages::{Message, ToolCall};

/// Context window assumed when neither the catalog nor the built-in table knows the model.
pub(crate) const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON Schema object for the tool's input.
    pub input_schema: serde_json::Value,
}

/// One model turn's worth of input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    /// The system prompt.
    pub system_prompt: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Output token limit; adapters use their own default when `None`.
    pub max_tokens: Option<u32>,
}

/// Something that arrived while a turn was streaming.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// A piece of the answer's text.
    TextDelta(String),
    /// Emitted once the call is complete (its input fully received).
    ToolCall(ToolCall),
    /// Token counts, when the server reports them.
    Usage(Usage),
}

/// Token counts of one turn, as the server reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Tokens read.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model asked for tool calls.
    ToolUse,
    /// The output token limit cut the answer short (OpenAI `length`, Anthropic `max_tokens`).
    MaxTokens,
    /// The provider's content filter withheld or cut the answer (OpenAI `content_filter`).
    ContentFilter,
    /// The model declined to answer (OpenAI's `refusal` text, Anthropic `refusal`).
    Refusal,
    /// A long server-side turn was paused; sending the conversation back continues it (Anthropic
    /// `pause_turn`).
    PauseTurn,
    /// A reason this code does not know, as the server named it.
    Other(String),
}

impl StopReason {
    /// Whether the model ended the way it normally does: an answer, or tool calls to run.
    pub fn is_normal(&self) -> bool {
        matches!(self, StopReason::EndTurn | StopReason::ToolUse)
    }

    /// The name front ends report (`stopReason` in `elph run`'s JSON): camelCase for the known
    /// reasons, the provider's own word for the others.
    pub fn name(&self) -> String {
        match self {
            StopReason::EndTurn => "endTurn".into(),
            StopReason::ToolUse => "toolUse".into(),
            StopReason::MaxTokens => "maxTokens".into(),
            StopReason::ContentFilter => "contentFilter".into(),
            StopReason::Refusal => "refusal".into(),
            StopReason::PauseTurn => "pauseTurn".into(),
            StopReason::Other(other) => other.clone(),
        }
    }

    /// A sentence for people about a stop that is not normal; `None` for a normal one.
    pub fn explain(&self) -> Option<String> {
        Some(match self {
            StopReason::EndTurn | StopReason::ToolUse => return None,
            StopReason::MaxTokens => "the model's answer was cut off at its output token limit".into(),
            StopReason::ContentFilter => "the provider's content filter stopped the model's answer".into(),
            StopReason::Refusal => "the model refused to answer".into(),
            StopReason::PauseTurn => "the provider paused the model's turn; continuing it".into(),
            StopReason::Other(other) => format!("the model stopped for a reason Elph does not know: {other}"),
        })
    }
}

/// Removes the top-level `$schema` keyword from a tool's input schema: it describes the document,
/// not the input, and strict or OpenAI-compatible servers may refuse a schema that carries it.
pub(crate) fn provider_schema(schema: &serde_json::Value) -> serde_json::Value {
    match schema {
        serde_json::Value::Object(map) if map.contains_key("$schema") => {
            let mut map = map.clone();
            map.remove("$schema");
            serde_json::Value::Object(map)
        }
        other => other.clone(),
    }
}

/// A finished model turn, assembled from the stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// The answer's text.
    pub text: String,
    /// The tool calls it asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts, if reported.
    pub usage: Option<Usage>,
    /// Why it stopped.
    pub stop_reason: StopReason,
}

/// A model behind one streaming call.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// "openai", "anthropic", "scripted", or a catalog name
    fn provider_name(&self) -> &str;
    /// The model id.
    fn model_id(&self) -> &str;
    /// tokens; from the catalog, else a sane default (128_000)
    fn context_window(&self) -> u64;
    /// Streams one model turn; calls `on_event` for each delta as it arrives and returns the assembled turn.
    /// Cancellation = dropping the future.
    async fn stream(
        &self,
        request: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, ProviderError>;
}
