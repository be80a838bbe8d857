//! A PID namespace of its own, with its own `/proc`, for every sandboxed command.
//!
//! Why: without one, a sandboxed command sees every process of the system in `/proc` and `ps`,
//! with their command lines, and can signal the ones of its own user wherever Landlock cannot
//! scope signals (before its ABI 6). In a namespace of its own it sees only itself and what it
//! started: Elph, the user's shell, an editor have no pid there, so there is nothing to list,
//! read, signal or trace.
//!
//! How, in the child Elph forks (`P`: the leader of the command's session and process group,
//! already in the sandbox's mount and user namespaces):
//!
//! ```text
//! P (Elph's pid namespace) ──clone──▶ G (pid 1 of a new one) ──clone──▶ H (pid 2: the command)
//! ```
//!
//! - `P` unshares the PID namespace (only its children enter it), clones `G`, then keeps nothing
//!   open but a pipe from `G`, waits for the command's status on it and exits with it: Elph's
//!   child exits when the command does, with its code or its signal.
//! - `G` is the namespace's init. It unshares a mount namespace (a copy of the sandbox's view)
//!   and mounts a fresh `/proc` there, read-only like the rest of the view; only a process inside
//!   the namespace can mount the `/proc` that shows it. It clones `H`, closes everything but the
//!   pipe, gives up its capabilities and reaps: every orphan of the namespace becomes its child.
//!   When `H` exits, it sends `H`'s status to `P`; it stays while something `H` left in the
//!   background still runs (`server > log 2>&1 &`, which `shell_exec` leaves running) and exits
//!   when nothing is left. When `G` dies, the kernel kills everything in the namespace, even a
//!   process that left the process group: killing the group on timeout, or the orphan watcher
//!   when Elph dies, leaves nothing behind.
//! - `H` leads a session and process group of its own inside the namespace (pid, group and
//!   session 2: to the command, and to `kill -- -$$` in its scripts, nothing changed), then goes
//!   on confining itself (capabilities, limits, Landlock, seccomp) and executes the command.
//!
//! Elph's process group is `P` and `G`; killing it kills `G`, and with it the whole namespace.
//! `G` passes on to the command's group the signals Elph passes on (SIGINT, SIGTERM, SIGHUP,
//! SIGQUIT: Ctrl+C in `elph sandbox`); `P` ignores them. As pid 1, `G` gets no other signal from
//! outside but SIGKILL, nor any from inside but those four. `G` is a copy of Elph: it is not
//! dumpable and outside the command's Landlock domain, so the command cannot read its memory or
//! `/proc/1/environ`.
//!
//! Everything here runs in a forked child of a multi-threaded process: only system calls on
//! prepared data, and new processes by a raw `clone(2)`, never the C library's `fork`, whose
//! handlers may take locks that another thread of Elph held at the first fork.

use std::io;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::privileges;

/// What `P` learns from `G`: how the command ended, and whether `G` is exiting too.
const EXITED: u8 = 0;
const SIGNALED: u8 = 1;

/// The PID namespace step of a confinement, prepared before the fork.
pub(super) struct PidNamespace {
    /// For `G` to give up its capabilities (`/proc/sys/kernel/cap_last_cap`).
    last_cap: u32,
}

impl PidNamespace {
    pub(super) fn prepare() -> PidNamespace {
        PidNamespace {
            last_cap: privileges::last_cap(),
        }
    }

    /// Runs in `P` after it joined the sandbox's mount (and user) namespace. Returns only in the
    /// command's process `H`; `P` and `G` end in `_exit`. An error before `H` exists fails the
    /// spawn, as any other step of the confinement does.
    pub(super) fn enter_in_child(&self) -> io::Result<()> {
        nix::sched::unshare(CloneFlags::CLONE_NEWPID)?;
        let (from_init, to_parent) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let init = clone_process()?;
        if init != 0 {
            drop(to_parent);
            wait_for_command(init, from_init);
        }
        // G: pid 1.
        drop(from_init);
        nix::sched::unshare(CloneFlags::CLONE_NEWNS)?;
        mount_proc()?;
        let command = clone_process()?;
        if command != 0 {
            be_init(Pid::from_raw(command), to_parent, self.last_cap);
        }
        // H: the command.
        drop(to_parent);
        nix::unistd::setsid()?;
        Ok(())
    }
}

/// Whether this system gives a sandboxed command a PID namespace with its own `/proc` (probed
/// once, with a real child that makes the sandbox's view and then this step, as a command does).
/// Needs a mount namespace; a container whose `/proc` hides paths under other mounts (Docker's
/// default) lets only real root mount another one.
pub fn pid_namespaces_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        if !super::mount_namespaces_available() {
            return false;
        }
        let mut view = super::mount_view::MountView::probe();
        let step = PidNamespace::prepare();
        crate::process::probe_in_child(move || {
            view.apply()?;
            step.enter_in_child()
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

/// `P`: waits for the command's status from `G` and exits with it.
fn wait_for_command(init: libc::pid_t, from_init: OwnedFd) -> ! {
    // The command's group gets the signals Elph passes on; `P` must outlive the command.
    for signal in 1..32 {
        if ![libc::SIGKILL, libc::SIGSTOP, libc::SIGCHLD].contains(&signal) {
            set_disposition(signal, libc::SIG_IGN);
        }
    }
    // Holding the command's stdout or std's exec-error pipe would keep Elph waiting for them.
    let from_init = keep_only(from_init);
    let mut message = [0u8; 3];
    let mut got = 0;
    while got < message.len() {
        match nix::unistd::read(&from_init, &mut message[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::EINTR) => {}
            Err(_) => break,
        }
    }
    let init = Pid::from_raw(init);
    if got == message.len() {
        if message[2] == 1 {
            // `G` is exiting: wait for it, so that no part of the group outlives Elph's child.
            let _ = reap(init);
        }
        exit_as(message[0], message[1]);
    }
    // `G` ended without a word: its own setup failed (the spawn's error says why) or it was
    // killed.
    match reap(init) {
        Some(WaitStatus::Exited(_, code)) => exit_as(EXITED, code as u8),
        Some(WaitStatus::Signaled(_, signal, _)) => exit_as(SIGNALED, signal as i32 as u8),
        _ => exit_as(EXITED, 1),
    }
}

fn reap(pid: Pid) -> Option<WaitStatus> {
    loop {
        match waitpid(pid, None) {
            Err(Errno::EINTR) => {}
            Ok(status) => return Some(status),
            Err(_) => return None,
        }
    }
}

/// `G`: the namespace's init, until nothing is left in the namespace.
fn be_init(command: Pid, to_parent: OwnedFd, last_cap: u32) -> ! {
    set_name(c"elph-init");
    COMMAND.store(command.as_raw(), Ordering::Relaxed);
    // Handlers inherited from Elph would let signals in; as pid 1 without one, none arrives.
    for signal in 1..32 {
        set_disposition(signal, libc::SIG_DFL);
    }
    set_disposition(libc::SIGPIPE, libc::SIG_IGN);
    for signal in PASSED_ON {
        set_disposition(
            signal,
            pass_on as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let _ = nix::sys::signal::pthread_sigmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&nix::sys::signal::SigSet::empty()),
        None,
    );
    let to_parent = keep_only(to_parent);
    // Nothing `G` does from here needs a privilege.
    let _ = privileges::drop_capabilities(last_cap);
    let mut to_parent = Some(to_parent);
    loop {
        let ended = match waitpid(None, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == command => Some((EXITED, code as u8)),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == command => {
                Some((SIGNALED, signal as i32 as u8))
            }
            Ok(_) | Err(Errno::EINTR) => None,
            Err(_) => exit(0),
        };
        if let (Some((how, value)), Some(pipe)) = (ended, to_parent.take()) {
            let last = nothing_left();
            let _ = nix::unistd::write(&pipe, &[how, value, u8::from(last)]);
            drop(pipe);
            if last {
                exit(0);
            }
        }
    }
}

/// The signals Elph passes on to a command's group (`process::run_in_foreground`).
const PASSED_ON: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// `H`'s pid in `G`'s namespace: the group `G` passes signals on to.
static COMMAND: AtomicI32 = AtomicI32::new(0);

/// `G`'s handler of [`PASSED_ON`]: the signal goes on to the command's group (or to the command
/// alone in the instant before it made its group).
#[expect(unsafe_code, reason = "kill(2) in a signal handler")]
extern "C" fn pass_on(signal: libc::c_int) {
    let command = COMMAND.load(Ordering::Relaxed);
    // SAFETY: kill(2) is async-signal-safe and takes integers only.
    unsafe {
        if command > 0 && libc::kill(-command, signal) != 0 {
            libc::kill(command, signal);
        }
    }
}

/// Reaps what has already ended; true when `G` has no child left.
fn nothing_left() -> bool {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return false,
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return true,
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

/// Moves `fd` to descriptor 0 and closes every other one of the process.
#[expect(unsafe_code, reason = "dup2 and close_range on raw descriptors after fork")]
fn keep_only(fd: OwnedFd) -> OwnedFd {
    let raw = fd.into_raw_fd();
    // SAFETY: raw descriptor calls on this process's own table. `raw` is owned here (taken out
    // of its `OwnedFd`); once copied to 0 it is closed with the rest, and descriptor 0, the
    // copy, is owned by the `OwnedFd` returned and nothing else.
    unsafe {
        if raw != 0 {
            libc::dup2(raw, 0);
        }
        if libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32) != 0 {
            for other in 1..4096 {
                libc::close(other);
            }
        }
        OwnedFd::from_raw_fd(0)
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

    async fn sandboxed(script: &str, project: &Path) -> RunOutput {
        let policy = SandboxPolicy::workspace(project);
        let env: Vec<(OsString, OsString)> = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let args = [OsStr::new("-c"), OsStr::new(script)];
        let spec = RunSpec {
            program: Path::new("/bin/sh"),
            args: &args,
            cwd: project,
            env: &env,
            stdin: Stdin::Null,
            stdout: CaptureMode::HeadTail(4096, 4096),
            stderr: CaptureMode::HeadTail(4096, 4096),
            timeout: Duration::from_secs(30),
            grace: EXIT_GRACE,
            leftovers: Leftovers::Kill,
            sandbox: Some(&policy),
        };
        tokio::time::timeout(Duration::from_secs(60), run(&spec))
            .await
            .expect("the run ended within the test deadline")
    }

    /// The command is pid 2 under its own init, leads its own group and session there, sees
    /// only those in its `/proc`, and Elph's child ends with the command's code or signal.
    #[tokio::test]
    async fn a_command_sees_only_its_namespace_and_its_status_comes_back() {
        if !crate::sandbox::landlock_support().available() || !pid_namespaces_available() {
            eprintln!("skipped: no Landlock or no PID namespace on this system");
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let out = sandboxed(
            "echo $$ $(ps -o pgid= -p $$) $(cut -d' ' -f6 /proc/$$/stat); ls /proc | grep -c '^[0-9]*$'; \
             cat /proc/1/comm; echo x > /dev/stdout; exit 7",
            project.path(),
        )
        .await;
        let stdout = out.stdout.render();
        let stderr = out.stderr.render();
        assert_eq!(out.exit_code, Some(7), "{stdout} {stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        let first: Vec<&str> = lines
            .first()
            .map(|line| line.split_whitespace().collect())
            .unwrap_or_default();
        assert_eq!(first, ["2", "2", "2"], "pid, group, session: {stdout} {stderr}");
        let listed: usize = lines.get(1).and_then(|n| n.parse().ok()).unwrap_or(usize::MAX);
        // init, sh, and the command substitution's processes at most.
        assert!(listed <= 4, "{stdout}");
        assert_eq!(lines.get(2), Some(&"elph-init"), "{stdout}");
        assert_eq!(lines.get(3), Some(&"x"), "{stdout} {stderr}");

        let out = sandboxed("kill -TERM $$", project.path()).await;
        assert_eq!(out.signal, Some(libc::SIGTERM));
        assert_eq!(out.exit_code, None);
    }
}
