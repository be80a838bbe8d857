//! Starting a confined child without copying Elph's memory.
//!
//! Why: a fork copies Elph's page tables, and the child's `execve` tears the copy down again;
//! for a trivial command that copy and teardown were most of what the sandbox cost (perf:
//! `copy_page_range`, `unmap_page_range`, `clear_page`). So a confined child starts as an
//! unconfined one does (`process/vfork.rs`): a `clone(CLONE_VM | CLONE_VFORK)` that shares
//! Elph's memory until it executes its program, while the thread that made it waits.
//!
//! ```text
//! with a view:    Elph thread ──request──▶ the view's starter S ──clone(VM|VFORK|PARENT)──▶ C
//! without a view: Elph thread ──clone(VM|VFORK)──▶ C (confines itself)
//! ```
//!
//! - With a view (a mount namespace, and where the system allows one a PID namespace), the
//!   view's starter (`starter`) creates the command: `S` already joined the view and gave up
//!   every privilege, and the command (`C`) inherits that, so it only takes the steps that are
//!   its own (a session, its streams, its folder, its limits, a Landlock domain of its own).
//!   `C` is Elph's child (`CLONE_PARENT`): Elph waits for it through its pidfd, gets its exit
//!   status, kills its group. In a PID namespace it leads its own session and process group
//!   there, with no controlling terminal; its group has the same number outside, which is what
//!   Elph kills on a timeout. It is not registered with the orphan watcher (its `getpid` is the
//!   namespace's number): the namespace's init, whose lifeline only Elph holds, dies with Elph
//!   and the kernel kills the whole namespace with it.
//! - Without a view (a system without mount namespaces), `C` takes every step of the
//!   confinement itself, registers with the orphan watcher as an unconfined child does, and
//!   executes its program.
//!
//! Every step is a system call on data prepared before the clone: no allocation, no lock.
//! `ELPH_SPAWN=fork` keeps the fork path for confined children too (`process/spawn.rs`).

use std::ffi::{CString, c_char, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::wait::waitpid;
use nix::unistd::Pid;

use super::confine::Confinement;
use super::starter::{self, Starter};
use crate::process::{
    SpawnSpec, Started, StreamKind, c_string, clone_shared, environment, lead_session_with_streams, stream,
};

/// The child's stack: the confinement steps and `execve` need a few pages; mapped lazily.
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

/// The command as `execve` takes it, and where it runs: pointers into strings the caller of
/// [`start_confined`] owns until the command executed.
#[derive(Clone, Copy)]
struct Exec {
    program: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    /// The descriptor to put on 0, 1 and 2, or -1 to leave Elph's own there.
    stdio: [RawFd; 3],
}

/// Everything the command reads, prepared by Elph; it lives on the starting thread's stack,
/// which that thread does not leave while the command runs before its exec (`CLONE_VFORK`, or
/// the wait for the view's starter's answer).
struct Prepared<'a> {
    exec: Exec,
    /// The orphan watcher's pipe, or -1 (in a PID namespace).
    watcher: RawFd,
    confinement: &'a Confinement,
    /// Created by the view's starter: only the command's own steps are left.
    by_starter: bool,
    /// How the command failed before its program ran (0: it did not): kind and errno.
    failed: AtomicU64,
}

/// Starts `spec`'s program confined by `confinement`, in a child that shares Elph's memory
/// until it executes: created by the view's starter where there is a view, directly otherwise.
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
    let exec = Exec {
        program: program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ptr(),
        stdio: [fd_of(0), fd_of(1), fd_of(2)],
    };
    let command = if confinement.has_view() {
        start_by_starter(exec, confinement)?
    } else {
        start_directly(exec, confinement)?
    };
    let [stdin, stdout, stderr] = streams.map(|stream| stream.parent);
    Ok(Started {
        pid: command,
        stdin,
        stdout,
        stderr,
    })
}

/// Has the view's starter create the command; a starter found gone (killed) before it created
/// the command is replaced once.
fn start_by_starter(exec: Exec, confinement: &Confinement) -> Result<i32, StartFailure> {
    // In a PID namespace the command is not registered: its `getpid` is the namespace's number,
    // and the namespace's init takes everything in it along when Elph ends.
    let watcher = if confinement.in_pid_namespace() {
        -1
    } else {
        crate::orphans::registration_fd().map_or(-1, |fd| fd.as_raw_fd())
    };
    let prepared = Prepared {
        exec,
        watcher,
        confinement,
        by_starter: true,
        failed: AtomicU64::new(0),
    };
    for _ in 0..2 {
        let starter: std::sync::Arc<Starter> =
            confinement.starter(command_main).map_err(StartFailure::Confine)?;
        prepared.failed.store(0, Ordering::Relaxed);
        match starter.start(&prepared) {
            starter::Started::Command(pid) => return outcome(&prepared, pid),
            starter::Started::Failed(error) => return Err(StartFailure::Confine(error)),
            starter::Started::Gone => {}
            starter::Started::KilledWhileStarting => return Err(starter_killed()),
        }
    }
    Err(starter_killed())
}

fn starter_killed() -> StartFailure {
    StartFailure::Confine(io::Error::new(
        io::ErrorKind::Interrupted,
        "the sandbox's starter process was killed while it started the command",
    ))
}

/// Without a view: the command confines itself entirely.
fn start_directly(exec: Exec, confinement: &Confinement) -> Result<i32, StartFailure> {
    let prepared = Prepared {
        exec,
        watcher: crate::orphans::registration_fd().map_or(-1, |fd| fd.as_raw_fd()),
        confinement,
        by_starter: false,
        failed: AtomicU64::new(0),
    };
    let mut stack = vec![0u8; STACK_BYTES];
    let command = clone_shared(command_main, &mut stack, &prepared).map_err(StartFailure::Other)?;
    outcome(&prepared, command)
}

/// The command's pid once it executed its program, or how it failed before (it is reaped).
fn outcome(prepared: &Prepared<'_>, command: i32) -> Result<i32, StartFailure> {
    match prepared.failed.load(Ordering::Acquire) {
        0 if command > 0 => Ok(command),
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

/// `C`, the command's own process: the steps of the one spawn path (a session of its own, the
/// orphan watcher, stdin/stdout/stderr, the working directory), the confinement, then the
/// program.
extern "C" fn command_main(arg: *mut c_void) -> c_int {
    #[expect(unsafe_code, reason = "the argument of a clone(2) child")]
    // SAFETY: `arg` is the `Prepared` given to the clone, alive on the stack of the thread
    // that waits for this child to execute its program or exit; the child only reads it and
    // writes `failed`, an atomic.
    let prepared = unsafe { &*arg.cast::<Prepared<'_>>() };
    // The view's starter reset its handlers once, and its children inherit its.
    if !prepared.by_starter {
        crate::process::default_handlers();
    }
    let errno = run_steps(prepared);
    prepared
        .failed
        .store(KIND_CONFINE | u64::from(errno.cast_unsigned()), Ordering::Release);
    exit(127)
}

/// Runs the steps and executes the program; returns only when a step before `execve` failed,
/// with its errno (a failed `execve` is recorded as such, and the process exits).
#[expect(unsafe_code, reason = "raw system calls on prepared data in a clone(2) child")]
fn run_steps(prepared: &Prepared<'_>) -> c_int {
    let errno = || io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    let of = |error: io::Error| error.raw_os_error().unwrap_or(libc::EPERM);
    // SAFETY: the watcher's pipe stays open in Elph (a static) while children start.
    let watcher = (prepared.watcher >= 0).then(|| unsafe { BorrowedFd::borrow_raw(prepared.watcher) });
    let exec = prepared.exec;
    if let Err(errno) = lead_session_with_streams(watcher, &exec.stdio) {
        return errno;
    }
    let confinement = prepared.confinement;
    // The view's starter joined the view already; without one there is none to join, but a
    // confinement with a view is never left unjoined.
    if !prepared.by_starter
        && let Err(error) = confinement.join_view()
    {
        return of(error);
    }
    // SAFETY: as above.
    if unsafe { libc::chdir(exec.cwd) } == -1 {
        return errno();
    }
    let confined = if prepared.by_starter {
        confinement.confine_started_command()
    } else {
        confinement.confine_self()
    };
    if let Err(error) = confined {
        return of(error);
    }
    // SAFETY: as above; the program, its arguments and its environment are NUL-terminated
    // strings and null-terminated pointer arrays that live in Elph's memory until the exec.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::execve(exec.program, exec.argv, exec.envp);
    }
    let error = errno();
    prepared
        .failed
        .store(KIND_EXEC | u64::from(error.cast_unsigned()), Ordering::Release);
    exit(127)
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
