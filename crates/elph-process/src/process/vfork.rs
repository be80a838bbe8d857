//! Starts a child without copying Elph's address space: `clone(CLONE_VM | CLONE_VFORK)` on a small
//! stack of its own, as glibc's `posix_spawn` does, with the steps every child of Elph needs
//! between clone and exec — its own session (no controlling terminal), the orphan watcher's
//! registration, the sandbox's confinement.
//!
//! Why not std's `Command`: as soon as a `pre_exec` step is set, std takes the `fork` path. A fork
//! copies the page tables of the whole process, and afterwards every page Elph writes takes a
//! copy-on-write fault until the child has exec'd and let go of it; a hook in a real run cost
//! 1.34× a bare spawn-and-wait (std's `posix_spawn` path) of the same command (issue 20). Here the
//! calling thread is suspended until the child execs or exits, and the child copies nothing.
//!
//! The price is discipline in the child: it shares the memory of every thread of Elph that is
//! still running, so between clone and exec it only makes system calls on data prepared before the
//! clone, writes nothing of the parent's but the `failure` slot of its `ChildArgs`, never
//! allocates, locks or unwinds. Signals are blocked in the calling thread around the clone, so no
//! handler of Elph's runs in the child on the shared memory; the child resets every handled signal
//! (and SIGPIPE, which Rust ignores) to its default, then unblocks all of them before exec: the
//! signal state std gives a child. A failure before exec is reported through `failure` (which step,
//! which errno), the child exits 127 and is reaped before `spawn` returns.
//!
//! What happens after the clone (the pidfd, waiting, the group's kill) is the same for both ways
//! of creating a child: `child.rs`.

use std::ffi::{CString, OsStr, OsString, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::spawn::{Input, Output, SpawnError, Started, Step};
use crate::sandbox::Confinement;

/// The child's stack. It runs a handful of system calls and the sandbox's (small) confinement
/// code; a guard page below it turns an overflow into a crash of the child, not a corruption.
const STACK_SIZE: usize = 256 * 1024;

/// What to start.
pub(super) struct Request<'a> {
    pub program: &'a Path,
    pub args: &'a [&'a OsStr],
    pub cwd: &'a Path,
    /// The complete environment.
    pub env: &'a [(OsString, OsString)],
    pub stdin: Input,
    pub stdout: Output,
    pub stderr: Output,
    /// Where the child registers its group with the orphan watcher.
    pub watcher: Option<BorrowedFd<'static>>,
    pub confinement: Option<Confinement>,
}

/// Everything the child reads, prepared before the clone, and the one thing it writes.
struct ChildArgs {
    program: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: CString,
    /// Descriptors to become 0, 1 and 2 (`None`: Elph's own is inherited); all of them above 2
    /// (see `above_stdio`).
    stdio: [Option<RawFd>; 3],
    watcher: Option<BorrowedFd<'static>>,
    confinement: Option<Confinement>,
    /// Set by the child when a step failed: (step, errno).
    failure: Option<(Step, i32)>,
}

/// Starts the child; returns once it has exec'd (or failed to).
pub(super) fn spawn(request: Request<'_>) -> Result<Started, SpawnError> {
    let c = |bytes: &[u8]| CString::new(bytes).map_err(|_| invalid("a NUL byte in an argument or variable"));
    let program = c(request.program.as_os_str().as_bytes()).map_err(SpawnError::parent)?;
    let mut args_c = Vec::with_capacity(request.args.len() + 1);
    args_c.push(program.clone());
    for arg in request.args {
        args_c.push(c(arg.as_bytes()).map_err(SpawnError::parent)?);
    }
    let mut env_c = Vec::with_capacity(request.env.len());
    for (name, value) in request.env {
        let mut pair = Vec::with_capacity(name.len() + value.len() + 1);
        pair.extend_from_slice(name.as_bytes());
        pair.push(b'=');
        pair.extend_from_slice(value.as_bytes());
        env_c.push(c(&pair).map_err(SpawnError::parent)?);
    }
    let cwd = c(request.cwd.as_os_str().as_bytes()).map_err(SpawnError::parent)?;

    let (stdin_child, stdin_parent) = match request.stdin {
        Input::Piped => {
            let (read, write) = pipe_pair().map_err(SpawnError::parent)?;
            (Some(read), Some(write))
        }
        Input::Null => (Some(dev_null().map_err(SpawnError::parent)?), None),
        Input::Inherit => (None, None),
    };
    let (stdout_parent, stdout_child) = output(request.stdout).map_err(SpawnError::parent)?;
    let (stderr_parent, stderr_child) = output(request.stderr).map_err(SpawnError::parent)?;

    let mut args = ChildArgs {
        argv: args_c
            .iter()
            .map(|arg| arg.as_ptr())
            .chain([std::ptr::null()])
            .collect(),
        envp: env_c
            .iter()
            .map(|pair| pair.as_ptr())
            .chain([std::ptr::null()])
            .collect(),
        program,
        cwd,
        stdio: [
            stdin_child.as_ref().map(AsRawFd::as_raw_fd),
            stdout_child.as_ref().map(AsRawFd::as_raw_fd),
            stderr_child.as_ref().map(AsRawFd::as_raw_fd),
        ],
        watcher: request.watcher,
        confinement: request.confinement,
        failure: None,
    };

    let stack = Stack::new().map_err(SpawnError::parent)?;
    // SAFETY: all signals are blocked in this thread for the clone and restored after it, so
    // nothing of Elph's runs in the child; `child_main` gets a pointer to `args`, which outlives
    // the child's use of it: with CLONE_VFORK this thread resumes only after the child exec'd or
    // exited. The stack is ours, mapped for the child and unmapped after it let go of it.
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(
            child_main,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut args).cast::<c_void>(),
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 {
            return Err(SpawnError::parent(clone_error));
        }
        pid
    };
    drop(stack);
    // The child's ends: only the child needs them.
    drop((stdin_child, stdout_child, stderr_child));

    // SAFETY: a read of a field the child wrote before it exited; the child is gone from this
    // memory (CLONE_VFORK resumed us after its exec or exit).
    let failure = unsafe { std::ptr::read_volatile(&raw const args.failure) };
    if let Some((step, errno)) = failure {
        // It called _exit(127): reap it now.
        super::child::reap_blocking(pid);
        return Err(SpawnError {
            step,
            error: io::Error::from_raw_os_error(errno),
        });
    }
    Ok(Started {
        pid,
        stdin: stdin_parent,
        stdout: stdout_parent,
        stderr: stderr_parent,
    })
}

/// The parent's and the child's ends for one output stream.
fn output(mode: Output) -> io::Result<(Option<OwnedFd>, Option<OwnedFd>)> {
    Ok(match mode {
        Output::Piped => {
            let (read, write) = pipe_pair()?;
            (Some(read), Some(write))
        }
        Output::Null => (None, Some(dev_null()?)),
        Output::Inherit => (None, None),
    })
}

/// `/dev/null`, open for reading and writing, above 2.
fn dev_null() -> io::Result<OwnedFd> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    above_stdio(OwnedFd::from(null))
}

/// The child: runs on its own stack in the parent's memory until exec.
extern "C" fn child_main(raw: *mut c_void) -> c_int {
    // SAFETY: `raw` is the `ChildArgs` the parent keeps alive, and only this child uses it while
    // the parent's thread is suspended.
    let args = unsafe { &mut *raw.cast::<ChildArgs>() };
    let (step, errno) = child_steps(args);
    args.failure = Some((step, errno));
    // SAFETY: _exit(2) ends the child without running anything of the parent's (no atexit, no
    // stdio flush).
    unsafe { libc::_exit(127) }
}

/// The steps before exec, then exec; returns only on a failure: which step, which errno.
fn child_steps(args: &mut ChildArgs) -> (Step, i32) {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    // SAFETY: system calls on memory prepared before the clone; nothing allocates, locks or
    // unwinds. The errors are `Os` errors (no allocation either).
    unsafe {
        // No handler of Elph's may run here, in the shared memory: every handled signal goes back
        // to its default (exec would do the same), and SIGPIPE too (Rust ignores it).
        for signal in 1..=64 {
            if signal == libc::SIGKILL || signal == libc::SIGSTOP {
                continue;
            }
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                continue;
            }
            if signal == libc::SIGPIPE
                || (current.sa_sigaction != libc::SIG_DFL && current.sa_sigaction != libc::SIG_IGN)
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        for (target, fd) in args.stdio.iter().enumerate() {
            // Every source is above 2, so no dup2 clobbers a source still to be moved.
            if let Some(fd) = *fd
                && libc::dup2(fd, target as c_int) < 0
            {
                return (Step::Stdio, errno());
            }
        }
        if libc::chdir(args.cwd.as_ptr()) != 0 {
            return (Step::Cwd, errno());
        }
        // A session of its own: a new process group (its pid), and no controlling terminal.
        if libc::setsid() < 0 {
            return (Step::Session, errno());
        }
        if let Some(fd) = args.watcher {
            crate::orphans::register_self(fd);
        }
        if let Some(confinement) = &args.confinement
            && let Err(error) = confinement.apply_in_memory_sharing_child()
        {
            return (Step::Confine, error.raw_os_error().unwrap_or(libc::EPERM));
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(args.program.as_ptr(), args.argv.as_ptr(), args.envp.as_ptr());
        (Step::Exec, errno())
    }
}

/// The child's stack: an anonymous mapping with a guard page at its low end.
struct Stack {
    base: *mut c_void,
}

impl Stack {
    fn new() -> io::Result<Stack> {
        // SAFETY: a fresh anonymous mapping, and a protection change of its own first page.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                STACK_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Stack { base };
            if libc::mprotect(base, page_size(), libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// The high end: stacks grow down. 16-byte aligned, as the ABI wants.
    fn top(&self) -> *mut c_void {
        self.base.cast::<u8>().wrapping_add(STACK_SIZE).cast()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer used: the child exec'd (a new address space) or exited.
        unsafe {
            libc::munmap(self.base, STACK_SIZE);
        }
    }
}

fn page_size() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|size| usize::try_from(size).ok())
        .unwrap_or(4096)
}

/// A pipe, both ends close-on-exec and above 2: (read end, write end).
fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((above_stdio(read)?, above_stdio(write)?))
}

/// `fd`, moved above 2 when it is one of 0, 1, 2 (possible when Elph's own are closed), so the
/// child's dup2 onto 0, 1 and 2 never overwrites a descriptor it still has to move. std's
/// `try_clone` is `fcntl(F_DUPFD_CLOEXEC, 3)`: the copy is 3 or above.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    fd.try_clone()
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, what.to_string())
}
