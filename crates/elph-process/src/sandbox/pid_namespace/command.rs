//! The command's half of a view's PID namespace: how each sandboxed command starts in it, forked
//! straight into it as root, or through a waiter that shares its memory otherwise (see the
//! parent module).

use std::ffi::{CString, OsStr, OsString, c_void};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::errno::Errno;
use nix::sched::CloneFlags;
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use super::{close_from, exit, reap};

/// How the command's own process `H` failed before its program ran: in a confinement step, or in
/// `execve` itself (a program not found, not executable, busy). The value is the errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommandFailure {
    Confine(i32),
    Exec(i32),
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
    pub(in crate::sandbox) fn enter(namespace: &std::fs::File) -> Option<ForkInNamespace> {
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
pub(in crate::sandbox) struct RunCommand {
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
    pub(in crate::sandbox) fn prepare() -> RunCommand {
        RunCommand {
            program: None,
            stack: Vec::new(),
            failure: AtomicU64::new(0),
        }
    }

    /// The program to execute, as std's `Command` would: `args` without the program, which is
    /// also the first argument.
    pub(in crate::sandbox) fn set_program(
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
    pub(in crate::sandbox) fn run(
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
