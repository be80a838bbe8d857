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
//! The child is created by std's `Command` with a `pre_exec` step, that is by `fork`: it copies
//! Elph's page tables, a cost that grows with Elph's memory. A `clone(CLONE_VM)` spawn that copies
//! nothing was measured against it and removed: at Elph's size it saved about 0.2 ms per hook,
//! which no one waits for beside a model round trip (the `spawn` benchmark, and
//! docs/architecture.md, "Starting a child").

mod capture;
mod child;
mod foreground;
mod group;
#[cfg(test)]
mod one_path;
mod run;
mod spawn;

pub use capture::{Capture, CaptureMode};
pub use child::{Child, ChildStdin, ChildStdout};
pub use foreground::run_in_foreground;
pub use group::{ProcessGroup, kill_running_groups};
pub use run::{CHUNK, EXIT_GRACE, Leftovers, RunOutput, RunSpec, Stdin, Stream, WaitError, run};
pub use spawn::{Input, Output, SpawnSpec, describe_spawn_error, spawn};
pub(crate) use spawn::{probe_in_child, spawn_holder};
