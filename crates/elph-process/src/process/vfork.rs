//! The spawn of an unconfined child (a hook, an MCP server, a `full-access` command): a child
//! that shares Elph's memory until it executes its program, as `posix_spawn` makes one
//! (`clone(CLONE_VM | CLONE_VFORK)`), so no page table is copied, with the steps of the one spawn
//! path before exec, in the same order:
//!
//! 1. every signal handler of Elph's back to the default (a handler must not run in a child that
//!    shares Elph's memory; `posix_spawn` does the same), SIGPIPE too (Rust ignores it);
//! 2. `setsid`;
//! 3. its group registered with the orphan watcher, before its program starts, so that a
//!    `kill -9` of Elph at any moment leaves nothing behind;
//! 4. stdin, stdout and stderr, and the working directory;
//! 5. no signal blocked, then `execve` with exactly the environment given.
//!
//! Each step is one raw system call on data prepared before the clone: no allocation, no lock, no
//! unwinding. The parent blocks every signal around the clone and is suspended until the child has
//! executed its program or exited; a failed step leaves its errno in memory they share.
//!
//! A confined child starts the same way in `sandbox/start.rs`, which adds the namespaces and the
//! confinement. `ELPH_SPAWN=fork` sends every child through the fork (`spawn.rs`), so the whole
//! test suite can be run through both.

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString, c_char, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::fcntl::OFlag;

use super::spawn::{Input, Output, SpawnSpec, Started};

/// The child's stack: it runs a few system calls in one small function.
const STACK_BYTES: usize = 64 * 1024;

/// Whether every child starts through the fork (`ELPH_SPAWN=fork`), read once.
pub(super) fn fork_for_every_child() -> bool {
    static FORK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORK.get_or_init(|| std::env::var_os("ELPH_SPAWN").is_some_and(|value| value == "fork"))
}

/// Everything the child reads, prepared by the parent; it lives on the parent's stack, which the
/// parent does not leave while the child runs (CLONE_VFORK).
struct Prepared {
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    /// The descriptor to put on 0, 1 and 2, or -1 to leave Elph's own there.
    stdio: [RawFd; 3],
    /// The orphan watcher's pipe, or -1.
    watcher: RawFd,
    /// The errno of the step that failed, 0 while none did.
    failed: AtomicI32,
}

/// One standard stream of the child: the descriptor it gets, and the parent's end of a pipe.
pub(crate) struct Stream {
    pub(crate) child: Option<OwnedFd>,
    pub(crate) parent: Option<OwnedFd>,
}

pub(crate) fn stream(kind: StreamKind) -> io::Result<Stream> {
    let null = |flags: OFlag| -> io::Result<Stream> {
        let fd = nix::fcntl::open(
            c"/dev/null",
            flags | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )?;
        Ok(Stream {
            child: Some(fd),
            parent: None,
        })
    };
    match kind {
        StreamKind::In(Input::Null) => null(OFlag::O_RDONLY),
        StreamKind::Out(Output::Null) => null(OFlag::O_WRONLY),
        StreamKind::In(Input::Inherit) | StreamKind::Out(Output::Inherit) => Ok(Stream {
            child: None,
            parent: None,
        }),
        StreamKind::In(Input::Piped) => {
            let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
            Ok(Stream {
                child: Some(read),
                parent: Some(write),
            })
        }
        StreamKind::Out(Output::Piped) => {
            let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
            Ok(Stream {
                child: Some(write),
                parent: Some(read),
            })
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum StreamKind {
    In(Input),
    Out(Output),
}

pub(crate) fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a program, argument, variable or folder name holds a NUL byte",
        )
    })
}

/// The environment as std's `Command` passes it: one entry per name (the last value given), in
/// the order of the names, so both spawn paths give a program the same `environ`.
pub(crate) fn environment(env: &[(OsString, OsString)]) -> io::Result<Vec<CString>> {
    let merged: BTreeMap<&OsStr, &OsStr> = env
        .iter()
        .map(|(name, value)| (name.as_os_str(), value.as_os_str()))
        .collect();
    merged
        .into_iter()
        .map(|(name, value)| {
            let mut entry = name.as_bytes().to_vec();
            entry.push(b'=');
            entry.extend_from_slice(value.as_bytes());
            c_string(&entry)
        })
        .collect()
}

/// Starts `spec`'s program, unconfined, in a child that shares Elph's memory until it executes.
pub(super) fn spawn_unconfined(spec: &SpawnSpec<'_>) -> io::Result<Started> {
    let program = c_string(spec.program.as_os_str().as_bytes())?;
    let mut args = vec![program.clone()];
    for arg in spec.args {
        args.push(c_string(arg.as_bytes())?);
    }
    let env = environment(spec.env)?;
    let cwd = c_string(spec.cwd.as_os_str().as_bytes())?;
    let argv: Vec<*const c_char> = args
        .iter()
        .map(|arg| arg.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const c_char> = env
        .iter()
        .map(|entry| entry.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let streams = [
        stream(StreamKind::In(spec.stdin))?,
        stream(StreamKind::Out(spec.stdout))?,
        stream(StreamKind::Out(spec.stderr))?,
    ];
    let fd_of = |stream: &Stream| stream.child.as_ref().map_or(-1, AsRawFd::as_raw_fd);
    let prepared = Prepared {
        program: program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ptr(),
        stdio: [fd_of(&streams[0]), fd_of(&streams[1]), fd_of(&streams[2])],
        watcher: crate::orphans::registration_fd().map_or(-1, |fd| fd.as_raw_fd()),
        failed: AtomicI32::new(0),
    };
    let mut stack = vec![0u8; STACK_BYTES];
    let pid = clone_shared(child_main, &mut stack, &prepared)?;
    let failed = prepared.failed.load(Ordering::Acquire);
    if failed != 0 {
        // It exited without executing anything.
        super::child::reap_blocking(pid);
        return Err(io::Error::from_raw_os_error(failed));
    }
    let [stdin, stdout, stderr] = streams.map(|stream| stream.parent);
    Ok(Started {
        pid,
        stdin,
        stdout,
        stderr,
    })
}

/// `clone(CLONE_VM | CLONE_VFORK)` of `entry` on `stack`, every signal blocked in the
/// calling thread meanwhile (and so in the child until it unblocks them); returns once the
/// child has executed its program or exited.
/// Unconfined children (here), confined ones without a view (`sandbox/start.rs`) and the
/// sandbox's probe (`sandbox/probe.rs`) start through it.
#[expect(unsafe_code, reason = "clone(2) of a child that shares this process's memory")]
pub(crate) fn clone_shared<T>(
    entry: extern "C" fn(*mut c_void) -> c_int,
    stack: &mut [u8],
    prepared: &T,
) -> io::Result<i32> {
    use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
    let mut previous = SigSet::empty();
    // Blocked until the child has reset its handlers: no handler of Elph's runs in it.
    pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::all()), Some(&mut previous))?;
    // The stack grows down from its end, 16-byte aligned as the ABI asks.
    let top = stack.as_mut_ptr_range().end as usize & !15;
    // SAFETY: `entry` runs on `stack`, which outlives the child's use of it: with CLONE_VFORK
    // the caller is suspended until the child executes its program or exits, so `prepared` and
    // everything it points to stay alive; the child only makes system calls on them and writes
    // the atomics. No CLONE_FS,
    // CLONE_SIGHAND, CLONE_THREAD or CLONE_FILES: the child has its own working directory,
    // signal handlers, credentials and descriptors. The C library's clone runs no fork handlers.
    let pid = unsafe {
        libc::clone(
            entry,
            top as *mut c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(prepared).cast_mut().cast::<c_void>(),
        )
    };
    let cloned = if pid == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid)
    };
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&previous), None);
    cloned
}

/// The child, between clone and exec: the steps of the module's documentation, each one raw
/// system call; on a failure its errno goes to `failed` and the child exits with 127.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the parent's `Prepared`, alive and unchanged while the child runs
    // (`clone_and_exec`); the child only reads it, and writes `failed`, an atomic.
    let prepared = unsafe { &*arg.cast::<Prepared>() };
    let errno = run_steps(prepared);
    prepared.failed.store(errno, Ordering::Release);
    // SAFETY: leaves at once, running nothing of the parent's (no atexit handler, no destructor).
    unsafe { libc::_exit(127) }
}

/// Runs the steps before exec; returns only when one failed, with its errno.
fn run_steps(prepared: &Prepared) -> c_int {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    default_handlers();
    // SAFETY: the watcher's pipe stays open in Elph (a static) while children start.
    let watcher = (prepared.watcher >= 0).then(|| unsafe { BorrowedFd::borrow_raw(prepared.watcher) });
    if let Err(errno) = lead_session_with_streams(watcher, &prepared.stdio) {
        return errno;
    }
    // SAFETY: every call below is a plain system call on prepared, NUL-terminated data or on
    // stack values; none allocates, takes a lock or unwinds.
    unsafe {
        if libc::chdir(prepared.cwd) == -1 {
            return errno();
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(prepared.program, prepared.argv, prepared.envp);
    }
    errno()
}

/// The first steps of every child on its way to its program, unconfined (here) or confined
/// (`sandbox/start.rs`), in a child that shares Elph's memory: a session of its own (so no
/// controlling terminal), its group registered with the orphan watcher before anything of its own
/// runs, and its standard streams in place. The errno of the step that failed.
#[expect(unsafe_code, reason = "raw system calls in a clone(2) child")]
pub(crate) fn lead_session_with_streams(
    watcher: Option<BorrowedFd<'_>>,
    stdio: &[RawFd; 3],
) -> Result<(), c_int> {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    // SAFETY: setsid(2) is a system call without arguments; it allocates nothing, takes no lock
    // and does not unwind.
    if unsafe { libc::setsid() } == -1 {
        return Err(errno());
    }
    if let Some(watcher) = watcher {
        crate::orphans::register_self(watcher);
    }
    for (target, &fd) in (0..).zip(stdio.iter()) {
        if fd < 0 {
            continue;
        }
        // SAFETY: fcntl(2) and dup2(2) on integers: a descriptor that is not open is EBADF, not
        // memory; neither allocates, takes a lock or unwinds. dup2 onto itself would keep
        // close-on-exec, so a stream already in place only loses that flag.
        let done = unsafe {
            if fd == target {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, target)
            }
        };
        if done == -1 {
            return Err(errno());
        }
    }
    Ok(())
}

/// Every signal with a handler back to its default, SIGPIPE too (Rust ignores it): a handler of
/// Elph's must not run in a child that shares its memory. A view's starter does it once for every
/// command it creates.
#[expect(unsafe_code, reason = "sigaction(2) on stack data")]
pub(crate) fn default_handlers() {
    // SAFETY: sigaction(2) on zeroed structs on this stack; SIG_DFL runs no code; nothing here
    // allocates, takes a lock or unwinds.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in 1..libc::SIGRTMAX() {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            let handled = current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN;
            if handled || signal == libc::SIGPIPE {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_one_entry_per_name_in_name_order() {
        let env = [("B", "1"), ("A", "2"), ("B", "3")].map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let entries: Vec<String> = environment(&env)
            .unwrap()
            .into_iter()
            .map(|entry| entry.into_string().unwrap())
            .collect();
        assert_eq!(entries, ["A=2", "B=3"]);
    }
}
