//! The `elph` binary's library: paths, hook discovery, trust, the hook host, and the front ends.

pub mod acp;
pub mod cli;
pub mod diagnostics;
pub mod doctor;
pub mod gate;
pub mod hooks;
pub mod logging;
pub mod logrotate;
pub mod mcp;
pub mod notices;
pub mod paths;
pub mod runtime;
pub mod sandbox;
pub mod session;
pub mod settings;
pub mod shutdown;
pub mod store;
pub(crate) mod suggest;
pub mod terminal_text;
pub mod trust;
pub mod tui;
pub mod workflows;
