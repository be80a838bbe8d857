//! A started child: its pid (also its process group and session id), the
//! parent's ends of its pipes, its exit, and its group's kill.
//!
//! The exit is watched through a pidfd (Linux 5.3: the process's exit makes it readable), so no
//! SIGCHLD handler is involved and nothing else in Elph may reap the child. A child dropped before
//! it was reaped is killed and reaped later (`reap_dropped`, at the next spawn), never left a
//! zombie for Elph's lifetime.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Mutex, MutexGuard};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

use super::group::{GroupGuard, ProcessGroup};
use super::spawn::Started;

/// The parent's end of a child's stdin.
pub type ChildStdin = pipe::Sender;
/// The parent's end of a child's stdout or stderr.
pub type ChildStdout = pipe::Receiver;

/// A running child, the leader of its own session and process group. Dropping it kills the whole
/// group (unless [`Child::leave_group_running`] was called) and reaps the child.
#[derive(Debug)]
pub struct Child {
    pid: Pid,
    pidfd: AsyncFd<OwnedFd>,
    status: Option<ExitStatus>,
    group: GroupGuard,
    /// stdin, when it was [`Input::Piped`](super::Input::Piped).
    pub stdin: Option<ChildStdin>,
    /// stdout, when it was [`Output::Piped`](super::Output::Piped).
    pub stdout: Option<ChildStdout>,
    /// stderr, when it was [`Output::Piped`](super::Output::Piped).
    pub stderr: Option<ChildStdout>,
}

impl Child {
    /// Takes ownership of a child just created; on failure it is killed and reaped.
    pub(super) fn watch(started: Started) -> io::Result<Child> {
        let pid = Pid::from_raw(started.pid);
        // The guard first: from here on, any way out kills the group.
        let group = GroupGuard::new(started.pid);
        let pidfd = pidfd_open(started.pid).and_then(|pidfd| {
            // SAFETY: an `OwnedFd` stays open and names the same descriptor until it is dropped,
            // which is what `register_with_interest` asks of its argument.
            unsafe { AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE) }
                .map_err(io::Error::from)
        });
        let pipes = (|| -> io::Result<_> {
            Ok((
                started.stdin.map(pipe::Sender::from_owned_fd).transpose()?,
                started.stdout.map(pipe::Receiver::from_owned_fd).transpose()?,
                started.stderr.map(pipe::Receiver::from_owned_fd).transpose()?,
            ))
        })();
        match (pidfd, pipes) {
            (Ok(pidfd), Ok((stdin, stdout, stderr))) => Ok(Child {
                pid,
                pidfd,
                status: None,
                group,
                stdin,
                stdout,
                stderr,
            }),
            (Err(error), _) | (_, Err(error)) => {
                drop(group);
                let _ = kill(pid, Signal::SIGKILL);
                reap_blocking(started.pid);
                Err(error)
            }
        }
    }

    /// The pid: also the child's process group and session id.
    pub fn id(&self) -> u32 {
        self.pid.as_raw().unsigned_abs()
    }

    /// The child's process group, as a handle that can kill it from elsewhere.
    pub fn group(&self) -> ProcessGroup {
        self.group.group()
    }

    /// SIGKILL to the whole group now.
    pub fn kill_group(&self) {
        self.group.group().kill();
    }

    /// When this child is dropped, leave what is left of its group running (background processes
    /// that let go of the pipes, `server > log 2>&1 &`); the orphan watcher still kills it when
    /// Elph dies.
    pub fn leave_group_running(&mut self) {
        self.group.armed = false;
    }

    /// Waits for the child to exit and reaps it. Cancel-safe (the reaping is not split by an
    /// await), and it may be called again: the status is kept.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            let mut ready = self.pidfd.readable().await?;
            ready.clear_ready();
        }
    }

    /// The exit status, if the child has exited (and it is reaped now).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = exit_status(waitpid(self.pid, Some(WaitPidFlag::WNOHANG))?);
        }
        Ok(self.status)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        // Dropped unreaped (a cancelled run): killed, and reaped now or at a later spawn. The pid
        // is our own unreaped child, so it names no other process. The group's guard kills the
        // rest of the group after this.
        let _ = kill(self.pid, Signal::SIGKILL);
        if !matches!(self.try_wait(), Ok(Some(_))) {
            dropped().push(self.pid.as_raw());
        }
    }
}

/// Children dropped before they could be reaped.
fn dropped() -> MutexGuard<'static, Vec<i32>> {
    static DROPPED: Mutex<Vec<i32>> = Mutex::new(Vec::new());
    DROPPED.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Reaps the dropped children that have exited since.
pub(super) fn reap_dropped() {
    dropped().retain(|&pid| {
        matches!(
            waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)),
            Ok(WaitStatus::StillAlive)
        )
    });
}

/// Blocks until `pid` (our child, exited or killed) is reaped.
pub(super) fn reap_blocking(pid: i32) {
    while waitpid(Pid::from_raw(pid), None) == Err(Errno::EINTR) {}
}

/// A wait status as std's `ExitStatus` (the raw `wait(2)` encoding); `None` while the child runs.
fn exit_status(status: WaitStatus) -> Option<ExitStatus> {
    match status {
        WaitStatus::Exited(_, code) => Some(ExitStatus::from_raw((code & 0xff) << 8)),
        WaitStatus::Signaled(_, signal, core_dumped) => Some(ExitStatus::from_raw(
            signal as i32 | if core_dumped { 0x80 } else { 0 },
        )),
        _ => None,
    }
}

fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open(2) with no flags has no memory arguments; it returns a new descriptor.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let error = io::Error::last_os_error();
        return Err(if error.raw_os_error() == Some(libc::ENOSYS) {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel cannot watch a child through a pidfd (pidfd_open needs Linux 5.3 or later)",
            )
        } else {
            error
        });
    }
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}
