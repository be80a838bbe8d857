//! Starting a confined child without copying Elph's memory.
//!
//! Why: a fork copies Elph's page tables, and the child's `execve` tears the copy down again;
//! for a trivial command that copy and teardown were most of what the sandbox cost (perf:
//! `copy_page_range`, `unmap_page_range`, `clear_page`). So a confined child starts as an
//! unconfined one does (`process/vfork.rs`): a `clone(CLONE_VM | CLONE_VFORK)` that shares
//! Elph's memory until it executes its program, while the forking thread sleeps.
//!
//! It can: every step of the confinement is a system call on data prepared before the clone,
//! and the kernel asks of the namespace steps only what such a child has: `setns` into a user
//! namespace wants a process of one thread (not one memory) and its own file-system context,
//! which a clone without `CLONE_THREAD` and `CLONE_FS` is; `setns` into a mount namespace wants
//! the latter only.
//!
//! The view's PID namespace is where the command must start, which a process can only be
//! created into:
//!
//! ```text
//! root:      Elph thread (setns pid_for_children) ──clone(VM|VFORK)──▶ C (the command)
//! not root:  Elph thread ──clone(VM|VFORK)──▶ J (joins the view, setns pid) ──clone(VM|VFORK|PARENT)──▶ C
//! ```
//!
//! - As root, the forking thread joins the namespace for its children (`ForkInNamespace`), so
//!   the child is created there.
//! - Otherwise the kernel refuses that `setns` to Elph (it needs `CAP_SYS_ADMIN` in Elph's own
//!   user namespace). A first child `J` joins the view's user namespace, where it has that
//!   right, and the mount namespace, joins the PID namespace for its children, and creates the
//!   command with `CLONE_PARENT`: the command is Elph's child as in the root case (Elph waits
//!   for it through its pidfd, gets its exit status, kills its group), and `J` exits at once.
//!   There is no waiter process between them, as there is on the fork path.
//!
//! Either way the command (`C`) leads its own session and process group in the namespace, with
//! no controlling terminal; its group has the same number outside, which is what Elph kills on
//! a timeout. It is not registered with the orphan watcher (its `getpid` is the namespace's
//! number): the namespace's init, whose lifeline only Elph holds, dies with Elph and the kernel
//! kills the whole namespace with it. Without a PID namespace, `C` is Elph's direct child and
//! registers as an unconfined child does.
//!
//! `ELPH_SPAWN=fork` keeps the fork path for confined children too (`process/spawn.rs`).

use std::ffi::{CString, c_char, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use super::confine::Confinement;
use crate::process::{
    SpawnSpec, Started, StreamKind, c_string, clone_shared, environment, lead_session_with_streams, stream,
};

/// Each child's stack: the confinement steps and `execve` need a few pages; mapped lazily.
const STACK_BYTES: usize = 256 * 1024;

const KIND_CONFINE: u64 = 1 << 32;
const KIND_EXEC: u64 = 2 << 32;

/// Why a confined child did not start: a step of the confinement, or another (the program not
/// found, a pipe not made), with the system's error.
#[derive(Debug)]
pub(crate) enum StartFailure {
    Confine(io::Error),
    Other(io::Error),
}

/// Everything the children read, prepared by Elph; it lives on the forking thread's stack,
/// which that thread does not leave while they run (`CLONE_VFORK`).
struct Prepared<'a> {
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    /// The descriptor to put on 0, 1 and 2, or -1 to leave Elph's own there.
    stdio: [RawFd; 3],
    /// The orphan watcher's pipe, or -1 (in a PID namespace).
    watcher: RawFd,
    confinement: &'a mut Confinement,
    /// The view's PID namespace, when `J` must enter it for the command.
    enter: RawFd,
    /// `J`'s stack for the command, when there is a `J`.
    command_stack: *mut u8,
    command_stack_len: usize,
    /// The command's pid, written by `J`.
    command: AtomicI32,
    /// How a child failed before the program ran (0: it did not): kind and errno.
    failed: AtomicU64,
}

/// Starts `spec`'s program confined by `confinement`, in a child that shares Elph's memory
/// until it executes.
pub(crate) fn start_confined(
    spec: &SpawnSpec<'_>,
    confinement: &mut Confinement,
) -> Result<Started, StartFailure> {
    let other = StartFailure::Other;
    let program = c_string(spec.program.as_os_str().as_bytes()).map_err(other)?;
    let mut args = vec![program.clone()];
    for arg in spec.args {
        args.push(c_string(arg.as_bytes()).map_err(other)?);
    }
    let env = environment(spec.env).map_err(other)?;
    let cwd = c_string(spec.cwd.as_os_str().as_bytes()).map_err(other)?;
    let pointers = |list: &[CString]| -> Vec<*const c_char> {
        list.iter()
            .map(|entry| entry.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let argv = pointers(&args);
    let envp = pointers(&env);
    let streams = [
        stream(StreamKind::In(spec.stdin)).map_err(other)?,
        stream(StreamKind::Out(spec.stdout)).map_err(other)?,
        stream(StreamKind::Out(spec.stderr)).map_err(other)?,
    ];
    let fd_of = |kind: usize| streams[kind].child.as_ref().map_or(-1, AsRawFd::as_raw_fd);
    let stdio = [fd_of(0), fd_of(1), fd_of(2)];

    // As root, the child is created straight in the view's PID namespace.
    let in_namespace = confinement.fork_in_namespace();
    let enter = confinement.namespace_to_enter().map_or(-1, AsRawFd::as_raw_fd);
    let watcher = match (&in_namespace, enter) {
        (None, -1) => crate::orphans::registration_fd().map_or(-1, |fd| fd.as_raw_fd()),
        _ => -1,
    };
    let mut command_stack = if enter >= 0 {
        vec![0u8; STACK_BYTES]
    } else {
        Vec::new()
    };
    let prepared = Prepared {
        program: program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ptr(),
        stdio,
        watcher,
        confinement,
        enter,
        command_stack: command_stack.as_mut_ptr(),
        command_stack_len: command_stack.len(),
        command: AtomicI32::new(0),
        failed: AtomicU64::new(0),
    };
    let mut stack = vec![0u8; STACK_BYTES];
    // `J` shares Elph's descriptor table too: it changes none, and the command copies it once.
    let (entry, files) = if enter >= 0 {
        (
            joiner_main as extern "C" fn(*mut c_void) -> c_int,
            libc::CLONE_FILES,
        )
    } else {
        (command_main as extern "C" fn(*mut c_void) -> c_int, 0)
    };
    let cloned = clone_shared(entry, &mut stack, &prepared, files);
    drop(in_namespace);
    let first = cloned.map_err(other)?;
    let command = if enter >= 0 {
        // `J` exited once the command executed its program or failed.
        reap(first);
        prepared.command.load(Ordering::Acquire)
    } else {
        first
    };
    match prepared.failed.load(Ordering::Acquire) {
        0 if command > 0 => {
            let [stdin, stdout, stderr] = streams.map(|stream| stream.parent);
            Ok(Started {
                pid: command,
                stdin,
                stdout,
                stderr,
            })
        }
        failed => {
            if command > 0 {
                reap(command);
            }
            let errno = match (failed & 0xffff_ffff) as i32 {
                0 => libc::ECHILD,
                errno => errno,
            };
            let error = io::Error::from_raw_os_error(errno);
            Err(if failed & KIND_EXEC != 0 {
                StartFailure::Other(error)
            } else {
                StartFailure::Confine(error)
            })
        }
    }
}

fn reap(pid: i32) {
    while waitpid(Pid::from_raw(pid), None) == Err(nix::errno::Errno::EINTR) {}
}

/// The `Prepared` a child was given.
#[expect(unsafe_code, reason = "the argument of a clone(2) child")]
fn prepared_of<'a>(arg: *mut c_void) -> &'a mut Prepared<'a> {
    // SAFETY: `arg` is the `Prepared` that `clone_shared` passed, alive on the suspended
    // thread's stack while the child runs; only one process at a time uses it (`J` sleeps
    // while the command runs before its exec).
    unsafe { &mut *arg.cast::<Prepared<'a>>() }
}

/// `J`: joins the view and its PID namespace, creates the command there as Elph's child, and
/// exits.
extern "C" fn joiner_main(arg: *mut c_void) -> c_int {
    let prepared = prepared_of(arg);
    // No handler of Elph's can run here: every signal stays blocked in `J` (the command resets
    // the handlers it inherits before it unblocks them).
    let joined = prepared.confinement.join_view().and_then(|_| {
        #[expect(unsafe_code, reason = "a descriptor the confinement holds open")]
        // SAFETY: `enter` is the view's PID namespace file, which the confinement holds open in
        // Elph (and so in this child's copy of the table) for the call.
        let namespace = unsafe { BorrowedFd::borrow_raw(prepared.enter) };
        nix::sched::setns(namespace, nix::sched::CloneFlags::CLONE_NEWPID).map_err(io::Error::from)
    });
    if let Err(error) = joined {
        fail(prepared, KIND_CONFINE, &error);
    }
    #[expect(unsafe_code, reason = "the command's stack, allocated by Elph")]
    // SAFETY: `command_stack` and its length are those of the Vec Elph keeps alive until this
    // child has exited; nothing else uses it meanwhile.
    let stack = unsafe { std::slice::from_raw_parts_mut(prepared.command_stack, prepared.command_stack_len) };
    match clone_shared(command_main, stack, prepared, libc::CLONE_PARENT) {
        Ok(pid) => prepared.command.store(pid, Ordering::Release),
        Err(error) => fail(prepared, KIND_CONFINE, &error),
    }
    exit(0)
}

/// `C`, the command's own process: the steps of the one spawn path (a session of its own, the
/// orphan watcher, stdin/stdout/stderr, the working directory), the confinement, then the
/// program.
extern "C" fn command_main(arg: *mut c_void) -> c_int {
    let prepared = prepared_of(arg);
    default_handlers();
    let errno = run_steps(prepared);
    prepared
        .failed
        .store(KIND_CONFINE | u64::from(errno.cast_unsigned()), Ordering::Release);
    exit(127)
}

/// Runs the steps and executes the program; returns only when a step before `execve` failed,
/// with its errno (a failed `execve` is recorded as such, and the process exits).
#[expect(unsafe_code, reason = "raw system calls on prepared data in a clone(2) child")]
fn run_steps(prepared: &mut Prepared<'_>) -> c_int {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    let of = |error: io::Error| error.raw_os_error().unwrap_or(libc::EPERM);
    // SAFETY: the watcher's pipe stays open in Elph (a static) while children start.
    let watcher = (prepared.watcher >= 0).then(|| unsafe { BorrowedFd::borrow_raw(prepared.watcher) });
    if let Err(errno) = lead_session_with_streams(watcher, &prepared.stdio) {
        return errno;
    }
    // `J` joined the view already; otherwise this process does.
    let in_view = prepared.enter >= 0 || {
        match prepared.confinement.join_view() {
            Ok(joined) => joined,
            Err(error) => return of(error),
        }
    };
    // SAFETY: as above.
    if !in_view && unsafe { libc::chdir(prepared.cwd) } == -1 {
        return errno();
    }
    if let Err(error) = prepared.confinement.confine_self() {
        return of(error);
    }
    // SAFETY: as above; the program, its arguments and its environment are NUL-terminated
    // strings and null-terminated pointer arrays that live in Elph's memory until the exec.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(prepared.program, prepared.argv, prepared.envp);
    }
    let error = errno();
    prepared
        .failed
        .store(KIND_EXEC | u64::from(error.cast_unsigned()), Ordering::Release);
    exit(127)
}

/// Records a failure of `J` and exits.
fn fail(prepared: &Prepared<'_>, kind: u64, error: &io::Error) -> ! {
    let errno = error.raw_os_error().unwrap_or(libc::EPERM);
    prepared
        .failed
        .store(kind | u64::from(errno.cast_unsigned()), Ordering::Release);
    exit(127)
}

/// Every signal with a handler back to its default, SIGPIPE too (Rust ignores it): a handler of
/// Elph's must not run in a child that shares its memory.
#[expect(unsafe_code, reason = "sigaction(2) on stack data")]
fn default_handlers() {
    // SAFETY: sigaction(2) on zeroed structs on this stack; SIG_DFL runs no code.
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

#[expect(unsafe_code, reason = "_exit(2): nothing of Elph's may run in its clone")]
fn exit(code: c_int) -> ! {
    // SAFETY: ends the process at once, running no atexit handler and no destructor.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use std::ffi::{OsStr, OsString};
    use std::path::Path;
    use std::time::Duration;

    use crate::process::{CaptureMode, EXIT_GRACE, Leftovers, RunSpec, Stdin, run};
    use crate::sandbox::SandboxPolicy;

    /// Landlock rulesets Elph holds open right now.
    fn rulesets() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .flatten()
            .filter(|entry| {
                std::fs::read_link(entry.path())
                    .is_ok_and(|target| target.to_string_lossy().contains("landlock-ruleset"))
            })
            .count()
    }

    /// The child that shares Elph's memory restricts itself with a copy of the ruleset's
    /// descriptor: Elph closes its own once the command started, so none is left open per
    /// command (they were, one each, when the child took the ruleset out of the shared memory).
    #[tokio::test]
    async fn no_ruleset_is_left_open_in_elph_per_command() {
        if !crate::sandbox::landlock_support().available() {
            eprintln!("skipped: no Landlock on this system");
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::workspace(project.path());
        let env: Vec<(OsString, OsString)> = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let args = [OsStr::new("-c"), OsStr::new("true")];
        let spec = RunSpec {
            program: Path::new("/bin/sh"),
            args: &args,
            cwd: project.path(),
            env: &env,
            stdin: Stdin::Null,
            stdout: CaptureMode::HeadTail(4096, 4096),
            stderr: CaptureMode::HeadTail(4096, 4096),
            timeout: Duration::from_secs(30),
            grace: EXIT_GRACE,
            leftovers: Leftovers::Leave,
            sandbox: Some(&policy),
        };
        let before = rulesets();
        for _ in 0..20 {
            let out = tokio::time::timeout(Duration::from_secs(60), run(&spec))
                .await
                .expect("the run ended within the test deadline");
            assert_eq!(out.exit_code, Some(0), "{out:?}");
        }
        // Other tests of this process may hold one or two for a moment while they start theirs.
        let after = rulesets();
        assert!(
            after < before + 5,
            "{before} rulesets open before 20 commands, {after} after"
        );
        let _ = policy.end_session();
    }
}
