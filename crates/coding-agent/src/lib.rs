//! The `elph` binary's library: paths, hook discovery, trust, the hook host, and the front ends.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod acp;
pub mod cli;
pub(crate) mod diagnostics;
pub(crate) mod doctor;
pub(crate) mod gate;
pub mod hooks;
pub(crate) mod locked_file;
pub(crate) mod logging;
pub(crate) mod logrotate;
pub mod mcp;
pub(crate) mod model_choice;
pub(crate) mod netproxy;
pub(crate) mod notices;
pub mod paths;
pub(crate) mod permissions;
pub(crate) mod protected_paths;
pub(crate) mod runtime;
pub(crate) mod sandbox;
pub mod session;
pub(crate) mod session_temp;
pub mod settings;
pub(crate) mod shutdown;
pub mod store;
pub(crate) mod suggest;
pub(crate) mod telemetry;
pub(crate) mod terminal_text;
pub mod trust;
pub mod tui;
pub mod workflows;
