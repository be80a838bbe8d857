//! A PID namespace with its own `/proc`, one per sandbox view, that every sandboxed command of
//! that view runs in.
//!
//! Why: without one, a sandboxed command sees every process of the system in `/proc` and `ps`,
//! with their command lines, and can signal the ones of its own user wherever Landlock cannot
//! scope signals (before its ABI 6). In the namespace it sees only the sandboxed commands of its
//! own Elph and view and what they started: Elph, the user's shell, an editor have no pid there,
//! so there is nothing to list, read, signal or trace.
//!
//! Why one per view and not one per command (as `bwrap --unshare-pid` gives Codex and Claude
//! Code): a namespace per command needs an init process per command, a copy of the mount
//! namespace to mount its `/proc` in, and their teardown, which together cost more than the
//! command `true` itself (elph-agent's `benches/sandbox.rs` measures it; docs/security.md,
//! "How it is enforced (Linux)", states the trade-off for users).
//! The price is that the commands of one Elph see each other: a server one command left in the
//! background is listed (with its command line) to the next. They still cannot read each other's
//! environment or memory, nor trace them (each command has a Landlock domain of its own, and the
//! kernel refuses `ptrace` from one domain into another), nor, with Landlock ABI 6, signal them.
//!
//! How:
//!
//! ```text
//! holder (once per view) ──clone──▶ init (pid 1: `elph-init`, mounts the view's /proc, lives with Elph)
//! Elph ──fork──▶ P (waits) ──clone(CLONE_VM|CLONE_VFORK), in the namespace──▶ H (the command)
//! ```
//!
//! - The view's holder (`confine`), once it made the mount namespace, unshares the PID namespace
//!   and clones its init. The init mounts a fresh `/proc` over the view's, read-only like the rest
//!   of it (only a process inside a PID namespace can mount the `/proc` that shows it), then gives
//!   up its capabilities and its dumpable flag and waits on a pipe whose only write end Elph
//!   holds. It ignores `SIGCHLD`, so the kernel reaps every orphan of the namespace at once. When
//!   Elph's process ends, however it ends, the pipe reads EOF, the init exits and the kernel kills
//!   everything left in the namespace: what a command left in the background outlives the command
//!   and dies with Elph.
//! - Each command's child `P` (Elph's fork, the leader of the command's session and process
//!   group, already in the view's user and mount namespaces) joins the namespace for its children
//!   (`setns`), and starts the command `H` with `clone(CLONE_VM | CLONE_VFORK)`: `H` shares `P`'s
//!   memory until it executes the command, so no copy of Elph's page tables is made (that copy is
//!   most of what a fork of Elph costs). `H` confines itself (capabilities, limits, Landlock,
//!   seccomp) and executes the command; `P` waits for it and exits with its code or its signal.
//! - `H` stays in `P`'s process group and session, so everything Elph does to a command's group
//!   (the kill on a timeout, the orphan watcher, Ctrl+C passed on) reaches the command and what it
//!   started, as without the sandbox. Inside the namespace that group has no number (its leader
//!   `P` is outside): `ps` shows group 0, and `kill -- -$$` finds no group; `kill 0` still
//!   signals the command's own group. `P` blocks every signal, so only the command gets them.
//!
//! Everything here runs in a forked child of a multi-threaded process: only system calls on
//! prepared data, and new processes by a raw `clone(2)`, never the C library's `fork`, whose
//! handlers may take locks that another thread of Elph held at the first fork.

use std::ffi::{CString, OsStr, OsString, c_void};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use super::privileges;

/// How the command's own process `H` failed before its program ran: in a confinement step, or in
/// `execve` itself (a program not found, not executable, busy). The value is the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommandFailure {
    Confine(i32),
    Exec(i32),
}

/// The init's half of a view's namespace, prepared before the holder's fork.
pub(super) struct StartInit {
    /// The read end of the namespace's lifeline, a pipe whose write end only Elph holds: the
    /// init exits when it reads EOF.
    lifeline: RawFd,
    last_cap: u32,
}

impl StartInit {
    /// The init's half and the lifeline (read end, write end): the caller keeps the write end
    /// for as long as the namespace is to live, and closes the read end once the init started.
    pub(super) fn prepare() -> io::Result<(StartInit, (OwnedFd, OwnedFd))> {
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
    pub(super) fn in_holder(&self) -> io::Result<()> {
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

/// While it lives, the processes the calling thread forks start in a view's PID namespace: then
/// Elph's child is the command's own process, with no waiter. Only a process with
/// `CAP_SYS_ADMIN` in its own user namespace (root) may do this; the kernel allows it on one
/// thread of a multi-threaded process, as it does not for the user and mount namespaces.
pub(crate) struct ForkInNamespace {
    /// Tied to the thread whose namespace for children it changed.
    _thread: std::marker::PhantomData<*const ()>,
}

impl ForkInNamespace {
    /// `None` when the kernel refuses (Elph is not root): the child then starts the command
    /// through a waiter ([`RunCommand`]).
    pub(super) fn enter(namespace: &std::fs::File) -> Option<ForkInNamespace> {
        own_pid_namespace()?;
        nix::sched::setns(namespace, CloneFlags::CLONE_NEWPID).ok()?;
        Some(ForkInNamespace {
            _thread: std::marker::PhantomData,
        })
    }
}

impl Drop for ForkInNamespace {
    fn drop(&mut self) {
        // Back to Elph's own: anything else this thread forks (a hook, an unsandboxed command)
        // starts where Elph is. Going back to one's own namespace is always allowed to a
        // process that could leave it.
        if let Some(own) = own_pid_namespace()
            && let Err(error) = nix::sched::setns(own, CloneFlags::CLONE_NEWPID)
        {
            tracing::error!(%error, "cannot return to Elph's own PID namespace");
        }
    }
}

/// Elph's own PID namespace, held open for going back to it.
fn own_pid_namespace() -> Option<&'static std::fs::File> {
    static OWN: OnceLock<Option<std::fs::File>> = OnceLock::new();
    OWN.get_or_init(|| std::fs::File::open("/proc/self/ns/pid").ok())
        .as_ref()
}

/// The command's half, prepared before Elph's fork: the program `H` executes and the stack it
/// runs on. `H` executes the program itself: it runs on a stack of its own, so it cannot return
/// into the code that forked `P` (std's `Command`), as a forked child does.
pub(super) struct RunCommand {
    program: Option<Program>,
    /// `H`'s stack, in `P`'s memory (which `H` shares until it executes the program).
    stack: Vec<u8>,
    /// How `H` failed before its program ran (0: it did not), written by `H` into the memory it
    /// shares with `P`.
    failure: AtomicU64,
}

/// The program, its arguments and its environment as `execve(2)` takes them.
struct Program {
    path: CString,
    _strings: Vec<CString>,
    /// Pointers into `_strings` (which never move: each string is its own allocation), each list
    /// ending with a null pointer.
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

#[expect(unsafe_code, reason = "a Program's pointers point into its own strings")]
// SAFETY: the pointers only point into the `CString`s the same value owns and never changes.
unsafe impl Send for Program {}
#[expect(unsafe_code, reason = "a Program's pointers point into its own strings")]
// SAFETY: as for Send: nothing is ever written through them.
unsafe impl Sync for Program {}

/// `H`'s stack: the confinement steps and `execve` need a few pages; it is mapped lazily.
const STACK_SIZE: usize = 256 * 1024;

const KIND_CONFINE: u64 = 1 << 32;
const KIND_EXEC: u64 = 2 << 32;

impl RunCommand {
    pub(super) fn prepare() -> RunCommand {
        RunCommand {
            program: None,
            stack: Vec::new(),
            failure: AtomicU64::new(0),
        }
    }

    /// The program to execute, as std's `Command` would: `args` without the program, which is
    /// also the first argument.
    pub(super) fn set_program(
        &mut self,
        program: &Path,
        args: &[&OsStr],
        env: &[(OsString, OsString)],
    ) -> io::Result<()> {
        let c = |bytes: &[u8]| {
            CString::new(bytes).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "an argument or variable contains a NUL byte",
                )
            })
        };
        let path = c(program.as_os_str().as_bytes())?;
        let mut strings = vec![path.clone()];
        for arg in args {
            strings.push(c(arg.as_bytes())?);
        }
        let argc = strings.len();
        for (name, value) in env {
            let mut pair = name.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            strings.push(c(&pair)?);
        }
        let pointers = |list: &[CString]| {
            let mut pointers: Vec<*const libc::c_char> = list.iter().map(|s| s.as_ptr()).collect();
            pointers.push(std::ptr::null());
            pointers
        };
        self.stack = vec![0; STACK_SIZE];
        self.program = Some(Program {
            path,
            argv: pointers(&strings[..argc]),
            envp: pointers(&strings[argc..]),
            _strings: strings,
        });
        Ok(())
    }

    /// Runs in `P`, in the view's user and mount namespaces: joins `namespace` for `H`, starts
    /// `H`, which runs `confine` and executes the program, then waits for `H` and exits as it
    /// did. Returns only when `H` failed before its program ran.
    pub(super) fn run(
        &mut self,
        namespace: &std::fs::File,
        confine: &mut dyn FnMut() -> io::Result<()>,
    ) -> CommandFailure {
        let errno = |error: io::Error| error.raw_os_error().unwrap_or(libc::EPERM);
        if let Err(error) = nix::sched::setns(namespace, CloneFlags::CLONE_NEWPID) {
            return CommandFailure::Confine(error as i32);
        }
        let Some(program) = &self.program else {
            return CommandFailure::Confine(libc::EINVAL);
        };
        // `P` takes no signal but SIGKILL from here on: the command's group gets them; `H`
        // unblocks them before its program runs.
        let _ = nix::sys::signal::pthread_sigmask(
            nix::sys::signal::SigmaskHow::SIG_SETMASK,
            Some(&nix::sys::signal::SigSet::all()),
            None,
        );
        let mut start = Start {
            confine,
            program,
            failure: &self.failure,
        };
        let command = match clone_command(&mut self.stack, &mut start) {
            Ok(pid) => Pid::from_raw(pid),
            Err(error) => return CommandFailure::Confine(errno(error)),
        };
        // `CLONE_VFORK`: `H` has executed its program or exited by now.
        match self.failure.load(Ordering::SeqCst) {
            0 => wait_for_command(command),
            failure => {
                let _ = reap(command);
                let errno = (failure & 0xffff_ffff) as i32;
                if failure & KIND_EXEC != 0 {
                    CommandFailure::Exec(errno)
                } else {
                    CommandFailure::Confine(errno)
                }
            }
        }
    }
}

/// What `H` gets from `P`: a pointer to this, on `P`'s stack, which `H` shares.
struct Start<'a> {
    confine: &'a mut dyn FnMut() -> io::Result<()>,
    program: &'a Program,
    failure: &'a AtomicU64,
}

/// `clone(CLONE_VM | CLONE_VFORK)` of `H` on `stack`: `P` sleeps until `H` has executed its
/// program or exited.
#[expect(unsafe_code, reason = "clone(2) of a process that shares this one's memory")]
fn clone_command(stack: &mut [u8], start: &mut Start<'_>) -> io::Result<libc::pid_t> {
    let top = stack.as_mut_ptr_range().end as usize & !15;
    // SAFETY: `H` runs `command_main` on `stack`, which is `P`'s and stays allocated while `H`
    // uses it: `P` sleeps (CLONE_VFORK) until `H` executes its program or exits, and only then
    // reads `start` again. `H` gets its own copy of the descriptors and signal handlers (no
    // CLONE_FILES, no CLONE_SIGHAND); what it writes in the shared memory is `start.failure` and
    // its own stack. The C library's clone wrapper runs no fork handlers.
    let pid = unsafe {
        libc::clone(
            command_main,
            top as *mut c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (start as *mut Start<'_>).cast::<c_void>(),
        )
    };
    Errno::result(pid).map_err(io::Error::from)
}

/// `H`: the command's own process, pid N of the view's namespace.
#[expect(
    unsafe_code,
    reason = "the entry of a clone(2) child: a pointer and execve(2)"
)]
extern "C" fn command_main(start: *mut c_void) -> libc::c_int {
    // SAFETY: `start` is the `Start` that `clone_command` passed, alive on `P`'s stack while `P`
    // sleeps.
    let start = unsafe { &mut *start.cast::<Start<'_>>() };
    // Handlers inherited from Elph would run Elph's code in `P`'s memory.
    default_handlers();
    if let Err(error) = (start.confine)() {
        let errno = error.raw_os_error().unwrap_or(libc::EPERM);
        start
            .failure
            .store(KIND_CONFINE | errno as u32 as u64, Ordering::SeqCst);
        exit(127);
    }
    // The program starts with nothing blocked, as a program expects.
    let _ = nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&nix::sys::signal::SigSet::empty()),
        None,
    );
    let program = start.program;
    // SAFETY: the path and both lists are NUL-terminated strings and null-terminated pointer
    // arrays that `Program` owns; execve(2) only reads them.
    unsafe {
        libc::execve(
            program.path.as_ptr(),
            program.argv.as_ptr(),
            program.envp.as_ptr(),
        );
    }
    let errno = Errno::last() as i32;
    start
        .failure
        .store(KIND_EXEC | errno as u32 as u64, Ordering::SeqCst);
    exit(127)
}

/// Every signal with a handler back to its default (ignored ones stay ignored, as across exec).
#[expect(unsafe_code, reason = "sigaction(2) on stack data")]
fn default_handlers() {
    for signal in 1..libc::SIGRTMAX() {
        // SAFETY: sigaction(2) reads and writes `old`, a zeroed struct on this stack; SIG_DFL
        // runs no code.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN
            {
                libc::signal(signal, libc::SIG_DFL);
            }
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
        if !super::mount_namespaces_available() {
            return false;
        }
        let mut view = super::mount_view::MountView::probe();
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

/// `P`: waits for the command and exits as it did. It holds no descriptor: holding the command's
/// stdout or std's exec-error pipe would keep Elph waiting for them.
fn wait_for_command(command: Pid) -> ! {
    close_from(0);
    match reap(command) {
        Some(WaitStatus::Exited(_, code)) => exit_as(EXITED, code as u8),
        Some(WaitStatus::Signaled(_, signal, _)) => exit_as(SIGNALED, signal as i32 as u8),
        _ => exit(1),
    }
}

const EXITED: u8 = 0;
const SIGNALED: u8 = 1;

fn reap(pid: Pid) -> Option<WaitStatus> {
    loop {
        match waitpid(pid, None) {
            Err(Errno::EINTR) => {}
            Ok(status) => return Some(status),
            Err(_) => return None,
        }
    }
}

/// Ends `P` the way the command ended: the same exit code, or the same signal (without a core
/// dump: `P` is a copy of Elph's memory).
fn exit_as(how: u8, value: u8) -> ! {
    if how == SIGNALED {
        let signal = libc::c_int::from(value);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        raise_default(signal, &no_core);
        exit(128 + signal);
    }
    exit(libc::c_int::from(value))
}

#[expect(
    unsafe_code,
    reason = "setrlimit, sigaction, sigprocmask and kill on stack data"
)]
fn raise_default(signal: libc::c_int, no_core: &libc::rlimit) {
    // SAFETY: system calls with integer arguments and pointers to stack values that live for
    // the call; nothing is allocated.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
    }
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

/// Closes every descriptor from `first` up.
#[expect(unsafe_code, reason = "close_range and close on raw descriptors after fork")]
fn close_from(first: u32) {
    // SAFETY: closes this process's own descriptors; none of them is used afterwards except
    // through an `OwnedFd` made after this call.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) != 0 {
            for other in first as libc::c_int..4096 {
                libc::close(other);
            }
        }
    }
}

/// A copy of the calling single-threaded process, as `fork` makes it: 0 in the copy, its pid in
/// the caller.
#[expect(
    unsafe_code,
    reason = "clone(2) without the C library: its fork handlers may take locks after a fork"
)]
fn clone_process() -> io::Result<libc::pid_t> {
    // SAFETY: clone(2) with only SIGCHLD as its flags and no new stack is fork(2): the copy gets
    // its own memory, and both go on from here. The caller is the single thread of a forked
    // child; the copy only makes system calls until it executes a program or calls `_exit`.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    Errno::result(pid)
        .map(|pid| pid as libc::pid_t)
        .map_err(io::Error::from)
}

#[expect(
    unsafe_code,
    reason = "_exit(2): no destructor or atexit handler may run in a forked child"
)]
fn exit(code: libc::c_int) -> ! {
    // SAFETY: _exit ends the process at once; it touches no memory of ours.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use std::ffi::{OsStr, OsString};
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::process::{CaptureMode, EXIT_GRACE, Leftovers, RunOutput, RunSpec, Stdin, run};
    use crate::sandbox::SandboxPolicy;

    async fn sandboxed_program(
        policy: &SandboxPolicy,
        program: &Path,
        script: &str,
        project: &Path,
    ) -> RunOutput {
        let env: Vec<(OsString, OsString)> = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let args = [OsStr::new("-c"), OsStr::new(script)];
        let spec = RunSpec {
            program,
            args: &args,
            cwd: project,
            env: &env,
            stdin: Stdin::Null,
            stdout: CaptureMode::HeadTail(4096, 4096),
            stderr: CaptureMode::HeadTail(4096, 4096),
            timeout: Duration::from_secs(30),
            grace: EXIT_GRACE,
            leftovers: Leftovers::Leave,
            sandbox: Some(policy),
        };
        tokio::time::timeout(Duration::from_secs(60), run(&spec))
            .await
            .expect("the run ended within the test deadline")
    }

    /// `script` in the session of `policy` (its namespaces are the session's).
    async fn sandboxed(policy: &SandboxPolicy, script: &str, project: &Path) -> RunOutput {
        sandboxed_program(policy, Path::new("/bin/sh"), script, project).await
    }

    fn available() -> bool {
        let available = crate::sandbox::landlock_support().available() && pid_namespaces_available();
        if !available {
            eprintln!("skipped: no Landlock or no PID namespace on this system");
        }
        available
    }

    /// The command runs under the view's init, sees only the namespace in its `/proc`, and
    /// Elph's child ends with the command's code or signal.
    #[tokio::test]
    async fn a_command_sees_only_its_namespace_and_its_status_comes_back() {
        if !available() {
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::workspace(project.path());
        let out = sandboxed(
            &policy,
            "echo $$ $(ps -o pgid= -p $$) $(cut -d' ' -f6 /proc/$$/stat); ls /proc | grep -c '^[0-9]*$'; \
             cat /proc/1/comm; echo x > /dev/stdout; exit 7",
            project.path(),
        )
        .await;
        let stdout = out.stdout.render();
        let stderr = out.stderr.render();
        assert_eq!(out.exit_code, Some(7), "{stdout} {stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        let first: Vec<i32> = lines
            .first()
            .map(|line| line.split_whitespace().filter_map(|n| n.parse().ok()).collect())
            .unwrap_or_default();
        let pid = first.first().copied().unwrap_or(0);
        assert!(pid > 1, "{stdout} {stderr}");
        // Root forks the command straight into the namespace: it leads its group and session
        // there. Otherwise they are led by the waiter outside, and have no number inside.
        let led = if nix::unistd::geteuid().is_root() { pid } else { 0 };
        assert_eq!(
            first.get(1..),
            Some(&[led, led][..]),
            "group, session: {stdout} {stderr}"
        );
        let listed: usize = lines.get(1).and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
        // init, sh, and the command substitution's processes at most.
        assert!(listed <= 4, "{stdout}");
        assert_eq!(lines.get(2), Some(&"elph-init"), "{stdout}");
        assert_eq!(lines.get(3), Some(&"x"), "{stdout} {stderr}");

        let out = sandboxed(&policy, "kill -TERM $$", project.path()).await;
        assert_eq!(out.signal, Some(libc::SIGTERM));
        assert_eq!(out.exit_code, None);
    }

    /// The trade-off of one namespace per view: a later command sees what an earlier one left
    /// running, but cannot read its environment, and with Landlock ABI 6 cannot signal it; an
    /// orphan that ended is reaped by the init, not left a zombie.
    #[tokio::test]
    async fn commands_of_one_view_share_its_namespace_but_not_their_environments() {
        if !available() {
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::workspace(project.path());
        let first = sandboxed(
            &policy,
            "SECRET_OF_FIRST=first-secret setsid sleep 30.4711 > /dev/null 2>&1 < /dev/null & echo $!; \
             (sleep 0.1 &) ; exit 0",
            project.path(),
        )
        .await;
        let left: i32 = first.stdout.render().trim().parse().expect("the background pid");
        std::thread::sleep(Duration::from_millis(300));
        let second = sandboxed(
            &policy,
            &format!(
                "cat /proc/{left}/comm; tr '\\0' '\\n' < /proc/{left}/environ; echo \"environ=$?\"; \
                 kill -0 {left}; echo \"signal=$?\"; grep -l '^State:.*Z' /proc/[0-9]*/status; echo end"
            ),
            project.path(),
        )
        .await;
        let said = second.stdout.render();
        // The session's end ends its namespace, and what the first command left with it.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let running = || {
            std::fs::read_dir("/proc")
                .into_iter()
                .flatten()
                .flatten()
                .any(|entry| {
                    std::fs::read(entry.path().join("cmdline"))
                        .is_ok_and(|line| line == b"sleep\x0030.4711\x00")
                })
        };
        assert!(
            running(),
            "the background process ran before the session's end: {said}"
        );
        let _ = policy.end_session();
        while running() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let ended = !running();
        assert!(said.starts_with("sleep\n"), "{said} {}", second.stderr.render());
        assert!(!said.contains("first-secret"), "{said}");
        assert!(!said.contains("environ=0"), "{said}");
        if crate::sandbox::landlock_support().abi.is_some_and(|abi| abi >= 6) {
            assert!(!said.contains("signal=0"), "{said}");
        }
        assert!(
            said.ends_with("end\n") && !said.contains("/status"),
            "a zombie: {said}"
        );
        assert!(ended, "the session's end left the background process running");
    }

    /// A program that cannot be executed in the namespace is said as without the sandbox (the
    /// system's error, not a confinement step's).
    #[tokio::test]
    async fn a_missing_program_fails_the_spawn_with_the_systems_error() {
        if !available() {
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let missing = project.path().join("no-such-program");
        let policy = SandboxPolicy::workspace(project.path());
        let out = sandboxed_program(&policy, &missing, "", project.path()).await;
        let error = out.spawn_error.expect("the spawn failed");
        assert_eq!(error.raw_os_error(), Some(libc::ENOENT), "{error}");
    }
}
