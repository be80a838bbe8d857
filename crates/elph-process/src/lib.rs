//! Elph's OS layer: every child process Elph starts (one-shot and persistent hooks, `shell_exec`
//! commands, `elph sandbox -- CMD`, MCP servers) starts here, one way.
//!
//! What lives here, and nowhere else in the workspace:
//!
//! - [`process`]: the spawn (a session and process group of its own, the orphan watcher's
//!   registration, the confinement, exactly the environment asked for, the `ETXTBSY` retry), the
//!   bounded run (timeout, output caps, the grace after exit) and the kill of the whole group;
//! - [`orphans`]: the watcher process that kills every registered group when Elph dies, even by
//!   `kill -9`;
//! - [`sandbox`]: the sandbox policy and its enforcement (Landlock, seccomp, a mount namespace);
//! - [`shell_env`]: which of Elph's variables a shell command inherits;
//! - [`memory`]: how Elph's own allocator is set up.
//!
//! What does not live here: what a hook event means, which hook runs, how a hook's output is read
//! (`elph-agent` and `coding-agent`). This crate knows programs, arguments, environments, pipes
//! and process groups, nothing about hooks or models.
//!
//! This is the only crate of the workspace that contains `unsafe` code (every other one says
//! `#![forbid(unsafe_code)]`): system calls in a child between its creation and `exec`, and a few
//! raw calls that neither std nor nix offers. Each `unsafe` block says why it is sound in a
//! `// SAFETY:` comment, which clippy checks (`undocumented_unsafe_blocks`).

#![warn(missing_docs)]
#![expect(
    unsafe_code,
    reason = "the OS layer: the one crate allowed to make raw system calls, each block with a SAFETY comment"
)]

pub mod memory;
pub mod orphans;
pub mod process;
pub mod sandbox;
pub mod shell_env;
