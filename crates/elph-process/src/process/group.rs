//! Process groups: each child leads one, and it is killed whole.

use std::sync::{Mutex, MutexGuard};

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process groups of children alive, so that a process that must exit at once (a second
/// Ctrl+C) can still kill what it started: [`kill_running_groups`].
static RUNNING_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn running_groups() -> MutexGuard<'static, Vec<i32>> {
    RUNNING_GROUPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Kills the process group of every child still alive. For an exit that will not unwind (for
/// example `std::process::exit` on a second Ctrl+C), where the children's own guards never get to.
pub fn kill_running_groups() {
    for pgid in running_groups().drain(..) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// The process group a child leads (its id is the child's pid): a handle that can kill it from
/// anywhere, while the [`Child`](super::Child) is busy elsewhere (an MCP server's exit watcher).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessGroup {
    pgid: Pid,
}

impl ProcessGroup {
    /// The group's id.
    pub fn pgid(self) -> i32 {
        self.pgid.as_raw()
    }

    /// Whether any process of the group is still there.
    pub(crate) fn exists(self) -> bool {
        killpg(self.pgid, None).is_ok()
    }

    /// SIGKILL to every process of the group; a group already gone is no error.
    pub fn kill(self) {
        self.signal(Signal::SIGKILL);
    }

    /// `signal` to every process of the group; a group already gone is no error (ESRCH is the
    /// normal case at the end of a run).
    pub(crate) fn signal(self, signal: Signal) {
        let _ = killpg(self.pgid, signal);
    }
}

/// Owns a child's group: counts it as running (for [`kill_running_groups`]) while it lives, and
/// kills it when dropped unless disarmed.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    group: ProcessGroup,
    pub(crate) armed: bool,
}

impl GroupGuard {
    pub(crate) fn new(pgid: i32) -> Self {
        running_groups().push(pgid);
        GroupGuard {
            group: ProcessGroup {
                pgid: Pid::from_raw(pgid),
            },
            armed: true,
        }
    }

    pub(crate) fn group(&self) -> ProcessGroup {
        self.group
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            self.group.kill();
        }
        let pgid = self.group.pgid;
        running_groups().retain(|running| *running != pgid.as_raw());
        // A group left running (`Leftovers::Leave`) stays with the orphan watcher, which kills it
        // when Elph dies; a killed or empty one is forgotten.
        if self.armed || killpg(pgid, None) == Err(Errno::ESRCH) {
            crate::orphans::forget(pgid.as_raw());
        }
    }
}
