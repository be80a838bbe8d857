//! The agent runtime of Elph and its typed lifecycle contracts.
//!
//! This crate owns what hook events, payloads and outcomes mean, the turn loop, and the tools. It
//! never reads a hooks.json and never decides which hook runs or how: that is the host's job in
//! `coding-agent`. The one bounded-child-process mechanism (`process`) lives here because the
//! `shell_exec` tool needs it too; the hook policy on top of it (environment allowlist, caps,
//! diagnostics) stays in the host.

pub mod harness;
pub mod hooks;
pub mod orphans;
pub mod policy;
pub mod process;
pub mod sandbox;
pub mod shell_env;
pub mod tools;

pub use elph_ai::messages;
