//! The init's half of a view's PID namespace: made once per view by its holder, it mounts the
//! namespace's `/proc` and lives until Elph's process ends (see the parent module).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;

use super::super::privileges;
use super::{clone_process, close_from, exit};

/// The init's half of a view's namespace, prepared before the holder's fork.
pub(in crate::sandbox) struct StartInit {
    /// The read end of the namespace's lifeline, a pipe whose write end only Elph holds: the
    /// init exits when it reads EOF.
    lifeline: RawFd,
    /// Where the holder says the init's pid, for Elph to watch it.
    report: RawFd,
    last_cap: u32,
}

/// Elph's ends of a view's init: the lifeline and the pipe the holder says the init's pid on.
pub(in crate::sandbox) struct InitEnds {
    lifeline: (OwnedFd, OwnedFd),
    report: (OwnedFd, OwnedFd),
}

/// A view's init, as Elph holds it once it started.
pub(in crate::sandbox) struct Init {
    /// The lifeline's write end: the init, and its whole namespace, live while it is open.
    _lifeline: OwnedFd,
    /// A pidfd of the init: readable once it is gone.
    pidfd: OwnedFd,
}

impl StartInit {
    /// The init's half, and Elph's ends ([`InitEnds::started`] once the holder reported).
    pub(in crate::sandbox) fn prepare() -> io::Result<(StartInit, InitEnds)> {
        let lifeline = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let report = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let init = StartInit {
            lifeline: lifeline.0.as_raw_fd(),
            report: report.1.as_raw_fd(),
            last_cap: privileges::last_cap(),
        };
        Ok((init, InitEnds { lifeline, report }))
    }

    /// Runs in the view's holder, after it made the view: unshares the PID namespace and starts
    /// its init, which mounts the namespace's `/proc`. Returns once `/proc` is mounted; the
    /// holder's `/proc/PID/ns/pid_for_children` is the namespace from then on.
    pub(in crate::sandbox) fn in_holder(&self) -> io::Result<()> {
        nix::sched::unshare(CloneFlags::CLONE_NEWPID)?;
        let (from_init, to_holder) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let pid = clone_process()?;
        if pid == 0 {
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
        let init = pid;
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
            0 => {
                #[expect(unsafe_code, reason = "a descriptor made before the fork")]
                // SAFETY: `report` is the write end Elph made before the fork, open in this
                // process (the holder) until it exits.
                let report = unsafe { BorrowedFd::borrow_raw(self.report) };
                nix::unistd::write(report, &init.to_ne_bytes())?;
                Ok(())
            }
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

impl InitEnds {
    /// Once the holder reported the view made (and before it ends: the init is its child until
    /// then, so its pid names no other process): reads the init's pid and opens a pidfd of it.
    pub(in crate::sandbox) fn started(self) -> io::Result<Init> {
        let InitEnds {
            lifeline: (_read, write),
            report: (report, _),
        } = self;
        let mut word = [0u8; 4];
        let got = nix::unistd::read(&report, &mut word)?;
        let pid = i32::from_ne_bytes(word);
        if got < word.len() || pid <= 0 {
            return Err(io::Error::from(Errno::ECHILD));
        }
        Ok(Init {
            _lifeline: write,
            pidfd: pidfd_open(pid)?,
        })
    }
}

impl Init {
    /// Whether the init is gone (killed: it only exits by itself when the lifeline closes),
    /// which leaves its namespace unusable: no process can be created in it any more.
    pub(in crate::sandbox) fn is_gone(&self) -> bool {
        readable(&self.pidfd, 0)
    }

    /// Closes the lifeline and waits, up to `deadline`, for the init to be gone, and with it
    /// everything in its namespace (the kernel kills the namespace before the init's exit ends).
    pub(in crate::sandbox) fn end(self, deadline: std::time::Instant) {
        let Init {
            _lifeline: lifeline,
            pidfd,
        } = self;
        drop(lifeline);
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        readable(&pidfd, i32::try_from(left.as_millis()).unwrap_or(i32::MAX));
    }
}

/// Whether `fd` becomes readable within `milliseconds`.
#[expect(
    unsafe_code,
    reason = "poll(2) on one descriptor; nix's poll is not enabled here"
)]
fn readable(fd: &OwnedFd, milliseconds: libc::c_int) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) on one struct on this stack, for the duration of the call.
    unsafe { libc::poll(&mut poll, 1, milliseconds) > 0 }
}

#[expect(unsafe_code, reason = "pidfd_open(2) has no wrapper in nix")]
fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open(2) takes no memory argument and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = Errno::result(fd).map_err(io::Error::from)?;
    // SAFETY: the descriptor was just made, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
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

/// A fresh `/proc` of the calling process's PID namespace, over the view's, with the view's
/// flags (read-only, and neither programs nor devices).
pub(in crate::sandbox) fn mount_proc() -> io::Result<()> {
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
