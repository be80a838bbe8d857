//! Model providers for Elph: one streaming [`Provider`] trait and its adapters.
//!
//! The public surface is what the harness and the `elph` binary use, re-exported here; the modules
//! behind it are private:
//!
//! - the trait and its data: [`Provider`], [`Request`], [`StreamEvent`], [`Turn`], [`ToolSpec`],
//!   [`StopReason`], [`Usage`], and the conversation in [`messages`];
//! - the two HTTP wire formats (server-sent events): [`OpenAiProvider`], [`AnthropicProvider`],
//!   configured by [`HttpProviderConfig`] and retried by [`RetryPolicy`];
//! - [`ScriptedProvider`]: an offline provider that plays a JSON script;
//! - the built-in providers' table and custom providers: [`BUILTIN_PROVIDERS`], [`Catalog`],
//!   [`ModelSelection`], [`build_provider`], and every provider's secret variables
//!   ([`provider_secret_vars`]);
//! - every failure: [`ProviderError`];
//! - the TLS set-up, for the binary's other HTTP clients: [`http_client_builder`].
#![forbid(unsafe_code)]
#![warn(unreachable_pub, missing_docs)]

mod anthropic;
mod builtin;
mod catalog;
mod error;
mod http;
mod limits;
pub mod messages;
mod openai;
#[cfg(test)]
mod proptests;
mod provider;
mod retry;
mod scripted;
mod select;
mod sse;
mod tls;

pub use anthropic::AnthropicProvider;
pub use builtin::{BUILTIN_PROVIDERS, BuiltinProvider, provider_secret_vars};
pub use catalog::{Catalog, CatalogProblem, LimitsDef, ModelDef, ProviderDef, WireApi};
pub use error::ProviderError;
pub use http::{ApiKey, ExtraHeader, HttpProviderConfig};
pub use limits::{Limit, StreamLimits};
pub use messages::{Content, ContentBlock, Message, ToolCall};
pub use openai::OpenAiProvider;
pub use provider::{Provider, Request, StopReason, StreamEvent, ToolSpec, Turn, Usage};
pub use retry::RetryPolicy;
pub use scripted::ScriptedProvider;
pub use select::{ModelOrigin, ModelSelection, build as build_provider};
pub use tls::http_client_builder;
