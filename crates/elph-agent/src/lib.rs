//! The agent runtime of Elph and its typed lifecycle contracts.
//!
//! This crate owns what hook events, payloads and outcomes mean. It never reads a hooks.json and
//! never spawns a process: that is the host's job in `coding-agent`.

pub mod harness;
pub mod hooks;
pub mod process;
pub mod tools;

pub use elph_ai::messages;
