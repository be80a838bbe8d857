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
//! 3. confined by the sandbox policy, when the caller gives one (`sandbox`), last, so that nothing
//!    after it needs what the confinement takes away;
//! 4. exactly the environment the caller built (an allowlist or the shell environment policy),
//!    never Elph's own: there is no "inherit" option;
//! 5. the program by absolute path, never searched on PATH here (callers resolve names in
//!    absolute PATH entries only), retried briefly while the file is busy (`ETXTBSY`);
//! 6. the group killed with SIGKILL when the [`Child`] is dropped, and by
//!    [`kill_running_groups`] on an exit that does not unwind.
//!
//! How the child is created is one of two equivalent ways ([`SpawnPath`]), with the same steps
//! above: `clone(CLONE_VM | CLONE_VFORK)` (`vfork`), which copies nothing of Elph's address
//! space, or std's `fork` path; see the `spawn` benchmark for what the difference costs.

mod capture;
mod child;
mod foreground;
mod group;
mod run;
mod spawn;
mod vfork;

pub use capture::{Capture, CaptureMode};
pub use child::{Child, ChildStdin, ChildStdout};
pub use foreground::run_in_foreground;
pub use group::{ProcessGroup, kill_running_groups};
pub use run::{CHUNK, EXIT_GRACE, Leftovers, RunOutput, RunSpec, Stdin, Stream, WaitError, run};
pub use spawn::{Input, Output, SpawnPath, SpawnSpec, describe_spawn_error, spawn, use_spawn_path};
pub(crate) use spawn::{probe_in_child, spawn_holder};
