//! Every child process Elph starts, started one way: [`spawn`].
//!
//! One-shot hooks ([`run`]), persistent hooks, `shell_exec` commands ([`run`]), MCP servers and
//! `elph sandbox -- CMD` ([`run_in_foreground`]) all come through [`spawn`], so the steps before
//! the child's program starts exist once, in this order:
//!
//! 1. a session of its own (`setsid`): a new process group whose id is the child's pid, so the
//!    whole group can be killed, and no controlling terminal, so the child can neither read the
//!    user's keys nor draw on a screen the TUI owns, nor be reached by the terminal's signals;
//! 2. its group registered with the orphan watcher (`orphans`), so it dies with Elph even when
//!    Elph is killed with SIGKILL;
//! 3. confined by the sandbox policy, when the caller gives one (`sandbox`), so that nothing
//!    after it needs what the confinement takes away; then no signal blocked (std resets SIGPIPE,
//!    which Rust ignores, to its default);
//! 4. exactly the environment the caller built (an allowlist or the shell environment policy),
//!    never Elph's own: there is no "inherit" option;
//! 5. the program by absolute path, never searched on PATH here (callers resolve names in
//!    absolute PATH entries only), retried briefly while the file is busy (`ETXTBSY`);
//! 6. the group killed with SIGKILL when the [`Child`] is dropped, and by
//!    [`kill_running_groups`] on an exit that does not unwind.
//!
//! Every child starts in a child that shares Elph's memory until it executes, as `posix_spawn`
//! makes one (`vfork`), with the steps as raw system calls, the orphan watcher's registration
//! included: it copies nothing. Unconfined ones start in `vfork.rs`, confined ones in the
//! sandbox's `start.rs`, created by their view's starter (`starter.rs`), which joined the
//! namespaces and applied the confinement every command of the view shares. `ELPH_SPAWN=fork` sends
//! every child through std's `Command` and a `fork` (`spawn.rs`) instead (CI runs the whole suite
//! both ways); docs/architecture.md, "Starting a child", has the figures.

mod capture;
mod child;
mod foreground;
mod group;
#[cfg(test)]
mod one_path;
mod run;
mod spawn;
mod vfork;

pub use capture::{Capture, CaptureMode};
pub use child::{Child, ChildStdin, ChildStdout};
pub use foreground::run_in_foreground;
pub use group::{ProcessGroup, kill_running_groups};
pub use run::{CHUNK, EXIT_GRACE, Leftovers, RunOutput, RunSpec, Stdin, Stream, WaitError, run};
pub use spawn::{Input, Output, SpawnSpec, describe_spawn_error, spawn};
pub(crate) use spawn::{Started, spawn_holder};
pub(crate) use vfork::{
    StreamKind, c_string, clone_shared, default_handlers, environment, lead_session_with_streams, stream,
};
