//! The `Provider` trait every model adapter implements, and the request and stream types it speaks.

use serde::{Deserialize, Serialize};

pub use crate::error::ProviderError;
use crate::messages::{Message, ToolCall};

/// Context window assumed when neither the catalog nor the built-in table knows the model.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema object for the tool's input.
    pub input_schema: serde_json::Value,
}

/// One model turn's worth of input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Request {
    pub system_prompt: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// Output token limit; adapters use their own default when `None`.
    pub max_tokens: Option<u32>,
}

/// Something that arrived while a turn was streaming.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    /// Emitted once the call is complete (its input fully received).
    ToolCall(ToolCall),
    Usage(Usage),
}

/// Token counts of one turn, as the server reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other(String),
}

/// A finished model turn, assembled from the stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    pub stop_reason: StopReason,
}

/// A model behind one streaming call.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// "openai", "anthropic", "scripted", or a catalog name
    fn provider_name(&self) -> &str;
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
