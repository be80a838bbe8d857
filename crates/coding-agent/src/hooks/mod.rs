//! Hook configuration: the hooks.json model and schema, and discovery of the home and project files.

pub mod config;
pub mod discovery;

pub use discovery::{FileState, HookDefinition, HookFile, HookScope, HookSet, discover};
