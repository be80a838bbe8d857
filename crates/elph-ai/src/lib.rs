//! Model providers for Elph: one streaming `Provider` trait and its adapters.
//!
//! - [`provider`]: the trait, requests, stream events, turns.
//! - [`openai`], [`anthropic`]: the two HTTP wire formats (server-sent events), over [`http`].
//! - [`scripted`]: an offline provider that plays a JSON script.
//! - [`retry`]: when and how long to retry.
//! - [`catalog`], [`select`]: custom providers and choosing the model.

pub mod anthropic;
pub mod catalog;
pub mod error;
pub mod http;
pub mod messages;
pub mod openai;
pub mod provider;
pub mod retry;
pub mod scripted;
pub mod select;
mod tls;

pub use anthropic::AnthropicProvider;
pub use catalog::{Catalog, ProviderDef, WireApi};
pub use error::ProviderError;
pub use http::{ApiKey, HttpProviderConfig};
pub use messages::{Content, ContentBlock, Message, ToolCall};
pub use openai::OpenAiProvider;
pub use provider::{Provider, Request, StopReason, StreamEvent, ToolSpec, Turn, Usage};
pub use retry::RetryPolicy;
pub use scripted::ScriptedProvider;
pub use select::{ModelOrigin, ModelSelection, resolve};
