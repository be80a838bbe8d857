//! The init's half of a view's PID namespace: made once per view by its holder, it mounts the
//! namespace's `/proc` and lives until Elph's process ends (see the parent module).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use super::super::privileges;
use super::{clone_process, close_from, exit, reap};

/// The init's half of a view's namespace, prepared before the holder's fork.
pub(in crate::sandbox) struct StartInit {
    /// The read end of the namespace's lifeline, a pipe whose write end only Elph holds: the
    /// init exits when it reads EOF.
    lifeline: RawFd,
    last_cap: u32,
}

impl StartInit {
    /// The init's half and the lifeline (read end, write end): the caller keeps the write end
    /// for as long as the namespace is to live, and closes the read end once the init started.
    pub(in crate::sandbox) fn prepare() -> io::Result<(StartInit, (OwnedFd, OwnedFd))> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let init = StartInit {
            lifeline: read.as_raw_fd(),
            last_cap: privileges::last_cap(),
        };
        Ok((init, (read, write)))
    }

    /// Runs in the view's holder, after it made the view: unshares the PID namespace and starts
    /// its init, which mounts the namespace's `/proc`. Returns once `/proc` is mounted; the
    /// holder's `/proc/PID/ns/pid_for_children` is the namespace from then on.
    pub(in crate::sandbox) fn in_holder(&self) -> io::Result<()> {
        nix::sched::unshare(CloneFlags::CLONE_NEWPID)?;
        let (from_init, to_holder) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        if clone_process()? == 0 {
            drop(from_init);
            // Everything else the holder had open from Elph (the session's lock, pipes, sockets)
            // is closed first: the init lives long, and none of it is its to hold.
            let (to_holder, lifeline) = keep_pair(to_holder, self.lifeline);
            let errno = mount_proc()
                .err()
                .and_then(|error| error.raw_os_error())
                .unwrap_or(0);
            let _ = nix::unistd::write(&to_holder, &errno.to_ne_bytes());
            drop(to_holder);
            if errno != 0 {
                exit(1);
            }
            be_init(lifeline, self.last_cap);
        }
        drop(to_holder);
        let mut word = [0u8; 4];
        let mut got = 0;
        while got < word.len() {
            match nix::unistd::read(&from_init, &mut word[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(Errno::EINTR) => {}
                Err(errno) => return Err(errno.into()),
            }
        }
        match i32::from_ne_bytes(word) {
            _ if got < word.len() => Err(io::Error::from(Errno::EPERM)),
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// The init of a view's namespace: pid 1 there, until Elph's process ends.
fn be_init(lifeline: OwnedFd, last_cap: u32) -> ! {
    set_name(c"elph-init");
    // A copy of Elph's memory (the holder is Elph's fork, made dumpable to write its id maps).
    let _ = nix::sys::prctl::set_dumpable(false);
    // As pid 1 with no handler, no signal from inside the namespace arrives; from outside, only
    // SIGKILL. SIGCHLD ignored: the kernel reaps the namespace's orphans.
    for signal in 1..32 {
        set_disposition(signal, libc::SIG_DFL);
    }
    set_disposition(libc::SIGCHLD, libc::SIG_IGN);
    set_disposition(libc::SIGPIPE, libc::SIG_IGN);
    let _ = nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&nix::sys::signal::SigSet::empty()),
        None,
    );
    // Nothing the init does from here needs a privilege.
    let _ = privileges::drop_capabilities(last_cap);
    let mut byte = [0u8; 1];
    loop {
        match nix::unistd::read(&lifeline, &mut byte) {
            Ok(0) => exit(0),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => exit(0),
        }
    }
}

/// Whether this system gives sandboxed commands a PID namespace with its own `/proc` (probed
/// once, with a real child that makes the sandbox's view, a PID namespace, and mounts `/proc`
/// from inside it, as a view's init does). Needs a mount namespace; a container whose `/proc`
/// hides paths under other mounts (Docker's default) lets only real root mount another one.
pub fn pid_namespaces_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        if !crate::sandbox::mount_namespaces_available() {
            return false;
        }
        let mut view = crate::sandbox::mount_view::MountView::probe();
        crate::process::probe_in_child(move || {
            view.apply()?;
            nix::sched::unshare(CloneFlags::CLONE_NEWPID)?;
            let init = clone_process()?;
            if init == 0 {
                exit(if mount_proc().is_ok() { 0 } else { 1 });
            }
            match reap(Pid::from_raw(init)) {
                Some(WaitStatus::Exited(_, 0)) => Ok(()),
                _ => Err(io::Error::from(Errno::EPERM)),
            }
        })
    })
}

/// A fresh `/proc` of the calling process's PID namespace, over the view's, with the view's
/// flags (read-only, and neither programs nor devices).
fn mount_proc() -> io::Result<()> {
    nix::mount::mount(
        Some(c"proc"),
        c"/proc",
        Some(c"proc"),
        MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&std::ffi::CStr>,
    )
    .map_err(io::Error::from)
}

#[expect(unsafe_code, reason = "signal(2) with a constant disposition")]
fn set_disposition(signal: libc::c_int, disposition: libc::sighandler_t) {
    // SAFETY: SIG_DFL and SIG_IGN run no code of ours; errors (a signal that cannot be changed)
    // are of no consequence.
    unsafe {
        libc::signal(signal, disposition);
    }
}

#[expect(unsafe_code, reason = "prctl(PR_SET_NAME) with a static string")]
fn set_name(name: &std::ffi::CStr) {
    // SAFETY: the string is static and NUL-terminated; the kernel copies at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, name.as_ptr());
    }
}

/// Moves `first` to descriptor 0 and a copy of `second` to 1, and closes every other one of the
/// process.
#[expect(unsafe_code, reason = "fcntl and dup2 on raw descriptors after fork")]
fn keep_pair(first: OwnedFd, second: RawFd) -> (OwnedFd, OwnedFd) {
    let first = first.into_raw_fd();
    // SAFETY: raw descriptor calls on this process's own table. Both are copied above 2 first,
    // so neither copy to 0 or 1 overwrites the other; `first` (taken out of its `OwnedFd`) and
    // the copies above 2 are closed with the rest, and descriptors 0 and 1 are owned by the
    // `OwnedFd`s returned and nothing else. A failed copy leaves 0 or 1 closed: the init's
    // first write or read then fails and it exits.
    unsafe {
        let high_first = libc::fcntl(first, libc::F_DUPFD, 3);
        let high_second = libc::fcntl(second, libc::F_DUPFD, 3);
        libc::dup2(high_first, 0);
        libc::dup2(high_second, 1);
        close_from(2);
        (OwnedFd::from_raw_fd(0), OwnedFd::from_raw_fd(1))
    }
}
