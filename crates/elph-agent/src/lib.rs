//! The agent runtime of Elph and its typed lifecycle contracts.
//!
//! This crate owns what hook events, payloads and outcomes mean, the turn loop, and the tools. It
//! never reads a hooks.json and never decides which hook runs or how: that is the host's job in
//! `coding-agent`. The one bounded-child-process mechanism (`process`) lives here because the
//! `shell_exec` tool needs it too; the hook policy on top of it (environment allowlist, caps,
//! diagnostics) stays in the host.
//!
//! The public surface, by module (everything else is `pub(crate)`; a `pub` item here is one that
//! `coding-agent` or this crate's tests use):
//!
//! - [`harness`]: `AgentHarness` (the turn loop), its events, approval, modes, transcripts;
//! - [`hooks`]: the events (one module each under `hooks::events`), payloads, outcomes, matchers,
//!   the registry and its one fold (`Reducer`), and the run record (`HookRun`);
//! - [`tools`]: the `Tool` trait, the catalog and `native::all()` (the native tools' types are private);
//! - [`process`], [`orphans`], [`sandbox`], [`shell_env`], [`policy`]: bounded, confined child
//!   processes and the file policy the native tools enforce;
//! - [`messages`]: the conversation types, from `elph-ai`.
//!
//! `missing_docs` is on: every public item says what it is and why a caller cares.

#![warn(missing_docs)]

pub mod harness;
pub mod hooks;
pub mod orphans;
pub mod policy;
pub mod process;
pub mod sandbox;
pub mod shell_env;
pub mod tools;
#[cfg(target_os = "linux")]
mod vfork_spawn;

pub use elph_ai::messages;
