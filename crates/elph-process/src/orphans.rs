//! Children die with Elph, however Elph dies (even `kill -9`).
//!
//! Every child Elph starts (a `shell_exec` command, a hook, an MCP server) runs in a process group
//! of its own, so that it can be killed with everything it started. Elph kills those groups when
//! it exits in order, but a process killed by SIGKILL runs no code. So a small watcher process,
//! forked once, holds the read end of a pipe whose only write end Elph holds: each child, between
//! fork and exec, writes `+PGID` into the pipe, and Elph writes `-PGID` once a group is gone. When
//! Elph dies, for whatever reason, the kernel closes the write end; the watcher reads EOF, sends
//! SIGKILL to every group still registered and exits.
//!
//! Why not `PR_SET_PDEATHSIG` alone: it reaches only the direct child (`sh`, not the `sleep` it
//! started), and it fires when the *thread* that forked the child exits, and tokio retires idle
//! threads of its blocking pool. The watcher is forked while Elph is running many threads, so it
//! only makes raw, async-signal-safe system calls and never allocates.
//!
//! What is guaranteed: on Linux and other Unix systems, every group registered here is killed
//! when Elph's process ends, by any signal, unless the watcher itself was killed (it runs in a
//! session of its own, so a signal to Elph's process group or terminal does not reach it). The
//! registration happens before the child's program starts, so nothing the child starts escapes.
//! A process that leaves its group (`setsid`, `setpgid` in a grandchild) escapes, as it would
//! escape `killpg`. Elsewhere (no `fork`), nothing beyond the orderly kills.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::OnceLock;

/// How many groups the watcher keeps at once; registrations past it are dropped (and those
/// groups only get the orderly kills). Far above what one Elph runs at a time.
const SLOTS: usize = 8192;

/// Elph's end of the pipe, or `None` when the watcher could not be started. Never closed: its
/// close when Elph's process ends is what the watcher waits for.
static WATCHER: OnceLock<Option<OwnedFd>> = OnceLock::new();

fn watcher() -> Option<BorrowedFd<'static>> {
    WATCHER.get_or_init(start_watcher).as_ref().map(AsFd::as_fd)
}

/// The pipe a child writes its registration to (starting the watcher the first time); `None` when
/// there is no watcher. `process::spawn` hands it to the child, which calls [`register_self`].
pub(crate) fn registration_fd() -> Option<BorrowedFd<'static>> {
    watcher()
}

/// In a child between clone and exec: registers its own process group (its pid: the child leads
/// its group) with the watcher behind `fd`. Only getpid(2) and write(2) on a stack buffer, so it
/// is safe in a forked child of a multi-threaded process.
pub(crate) fn register_self(fd: BorrowedFd<'_>) {
    let mut record = [0u8; 16];
    let len = encode(b'+', nix::unistd::getpid().as_raw(), &mut record);
    // A failure is ignored: the group then only gets the orderly kills.
    let _ = nix::unistd::write(fd, &record[..len]);
}

/// Tells the watcher that group `pgid` is gone (killed, or empty), so that a later process reusing
/// the number is never killed for it.
pub fn forget(pgid: i32) {
    let Some(Some(fd)) = WATCHER.get() else {
        return;
    };
    let mut record = [0u8; 16];
    let len = encode(b'-', pgid, &mut record);
    let _ = nix::unistd::write(fd, &record[..len]);
}

/// `+1234\n` into `out`; returns the length. One write of at most 16 bytes is atomic on a pipe,
/// so records from many processes never interleave.
fn encode(sign: u8, pid: i32, out: &mut [u8; 16]) -> usize {
    let mut digits = [0u8; 12];
    let mut n = pid.unsigned_abs();
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out[0] = sign;
    for i in 0..count {
        out[1 + i] = digits[count - 1 - i];
    }
    out[1 + count] = b'\n';
    count + 2
}

/// The watcher's bookkeeping: registered groups, and a record being parsed across reads.
struct Groups {
    slots: [i32; SLOTS],
    len: usize,
    sign: u8,
    number: i32,
}

impl Groups {
    fn new() -> Self {
        Groups {
            slots: [0; SLOTS],
            len: 0,
            sign: 0,
            number: 0,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            match byte {
                b'+' | b'-' => {
                    self.sign = byte;
                    self.number = 0;
                }
                b'0'..=b'9' => {
                    self.number = self
                        .number
                        .saturating_mul(10)
                        .saturating_add(i32::from(byte - b'0'));
                }
                b'\n' => {
                    self.apply();
                    self.sign = 0;
                }
                _ => self.sign = 0,
            }
        }
    }

    fn apply(&mut self) {
        let pgid = self.number;
        if pgid <= 1 {
            return;
        }
        match self.sign {
            b'+' if self.len < SLOTS => {
                self.slots[self.len] = pgid;
                self.len += 1;
            }
            b'-' => {
                if let Some(at) = self.slots[..self.len].iter().position(|&p| p == pgid) {
                    self.len -= 1;
                    self.slots[at] = self.slots[self.len];
                }
            }
            _ => {}
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn start_watcher() -> Option<OwnedFd> {
    None
}

#[cfg(target_os = "linux")]
fn start_watcher() -> Option<OwnedFd> {
    let Ok((read_end, write_end)) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) else {
        tracing::warn!("cannot create the orphan watcher's pipe");
        return None;
    };
    // std opens with O_CLOEXEC.
    let devnull = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .ok();
    let devnull_fd = devnull.as_ref().map_or(-1, AsRawFd::as_raw_fd);
    // The watcher's bookkeeping lives on the heap of the parent, copied by fork: the child
    // never allocates.
    let mut groups = Box::new(Groups::new());
    // SAFETY: the child of this multi-threaded process runs only `watch`, which makes
    // async-signal-safe system calls on descriptors and memory prepared here, and never returns.
    match unsafe { libc::fork() } {
        -1 => {
            tracing::warn!("cannot start the orphan watcher");
            None
        }
        0 => watch(read_end.as_raw_fd(), devnull_fd, &mut groups),
        // The parent keeps only the write end; the read end and /dev/null close here.
        _watcher => Some(write_end),
    }
}

/// The watcher, in the forked child: only async-signal-safe calls from here on.
#[cfg(target_os = "linux")]
fn watch(read_end: RawFd, devnull: RawFd, groups: &mut Groups) -> ! {
    // SAFETY: raw system calls on descriptors this process owns; nothing allocates.
    unsafe {
        // Out of Elph's session: a Ctrl+C or a hangup of the terminal, or a signal to Elph's
        // process group, must not take the watcher down before it has done its job.
        libc::setsid();
        libc::prctl(libc::PR_SET_NAME, c"elph-reaper".as_ptr());
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, std::ptr::null_mut());
        for signal in [
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGTERM,
            libc::SIGPIPE,
        ] {
            libc::signal(signal, libc::SIG_IGN);
        }
        // Keep only the pipe: holding Elph's stdout or a socket would keep them open after Elph.
        let fd = libc::fcntl(read_end, libc::F_DUPFD, 64);
        if devnull >= 0 {
            for target in 0..3 {
                libc::dup2(devnull, target);
            }
        }
        libc::dup2(fd, 3);
        if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
            for other in 4..4096 {
                libc::close(other);
            }
        }
        let mut buf = [0u8; 4096];
        loop {
            let read = libc::read(3, buf.as_mut_ptr().cast(), buf.len());
            if read > 0 {
                groups.feed(&buf[..read as usize]);
            } else if read == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        for &pgid in &groups.slots[..groups.len] {
            libc::kill(-pgid, libc::SIGKILL);
        }
        libc::_exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_decimal_lines() {
        let mut out = [0u8; 16];
        let len = encode(b'+', 1234, &mut out);
        assert_eq!(&out[..len], b"+1234\n");
        let len = encode(b'-', 7, &mut out);
        assert_eq!(&out[..len], b"-7\n");
        let len = encode(b'+', i32::MAX, &mut out);
        assert_eq!(&out[..len], b"+2147483647\n");
    }

    #[test]
    fn records_split_across_reads_register_and_forget() {
        let mut groups = Groups::new();
        groups.feed(b"+12");
        groups.feed(b"3\n+456\n+7");
        groups.feed(b"89\n-456\n");
        assert_eq!(&groups.slots[..groups.len], &[123, 789]);
        groups.feed(b"-999\n+1\n+0\n");
        assert_eq!(
            &groups.slots[..groups.len],
            &[123, 789],
            "unknown and init-like ids are ignored"
        );
    }
}
