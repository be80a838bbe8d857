//! Model providers for Elph: one streaming `Provider` trait and its adapters.

pub mod messages;

pub use messages::{Content, ContentBlock, Message, ToolCall};
