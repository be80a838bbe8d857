//! The agent runtime of Elph and its typed lifecycle contracts.
//!
//! This crate owns what hook events, payloads and outcomes mean, the turn loop, and the tools. It
//! never reads a hooks.json and never decides which hook runs or how: that is the host's job in
//! `coding-agent`. It starts no process itself either: the `shell_exec` tool runs its command
//! through `elph-process`, the OS layer below this crate, as the hook host does; this crate
//! contains no raw system calls.
//!
//! The public surface, by module (everything else is `pub(crate)`; a `pub` item here is one that
//! `coding-agent` or this crate's tests use):
//!
//! - [`harness`]: `AgentHarness` (the turn loop), its events, approval, modes, transcripts;
//! - [`hooks`]: the events (one module each under `hooks::events`), payloads, outcomes, matchers,
//!   the registry and its one fold (`Reducer`), and the run record (`HookRun`);
//! - [`tools`]: the `Tool` trait, the catalog and `native::all()` (the native tools' types are private);
//! - [`policy`]: the file policy the native tools enforce (the sandbox policy it follows is
//!   `elph_process::sandbox`);
//! - [`json_schema`]: JSON Schema validation, for tool arguments and `coding-agent`'s hooks.json;
//! - [`messages`]: the conversation types, from `elph-ai`.
//!
//! `missing_docs` is on: every public item says what it is and why a caller cares.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod harness;
pub mod hooks;
pub mod json_schema;
pub mod policy;
pub mod tools;

pub use elph_ai::messages;
