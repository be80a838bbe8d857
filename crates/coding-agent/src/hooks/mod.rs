//! Hook configuration: the hooks.json model and schema, and discovery of the home and project files.

pub(crate) mod background;
pub(crate) mod claude_code;
pub mod config;
pub mod discovery;
pub mod handler;
pub mod host;
pub(crate) mod line_protocol;
pub(crate) mod persistent;
pub mod process;
#[cfg(test)]
mod properties;
mod recheck;
pub mod record;
pub mod reload;
pub mod runlog;
pub mod tool_names;

pub use discovery::{FileState, HookDefinition, HookFile, HookScope, HookSet, discover};
pub use host::HookHost;
