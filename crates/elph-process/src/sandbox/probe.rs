//! What this system lets a sandboxed command have besides Landlock: a user namespace, a mount
//! namespace with the sandbox's read-only view, and a PID namespace with its own `/proc`. Found
//! out once per process, by trying each for real in one short-lived child.
//!
//! Why one child that shares Elph's memory (`clone(CLONE_VM | CLONE_VFORK)`, as an unconfined
//! spawn makes one) and not a fork per namespace: a session asks at its start, before its first
//! model request, and each fork of Elph copies its page tables and write-protects every page it
//! has written, holding its memory map's lock meanwhile, so the thread doing the rest of the start
//! stalls on its page faults and faults again on each page it writes afterwards; three forks cost
//! about a millisecond and a half of a 5-6 ms start. `unshare(2)` and `mount(2)` need no memory
//! of their own, only a thread group and a file-system context of their own, which this child
//! has. The steps are system calls on prepared data; the child writes its answers into the
//! memory it shares and exits; Elph's thread is suspended until it did.
//!
//! What is tried (each answer is what the real thing needs, minus what only a fork can do):
//! - **mount**: a new mount namespace in which `/` is remounted read-only, as every view is made
//!   (see `mount_view`); for a user who is not root, inside a new user namespace, which is what
//!   lets it. The real view also writes that namespace's id maps, which a child sharing Elph's
//!   memory cannot (its `/proc/self/uid_map` belongs to root while Elph is not dumpable); a map of
//!   one's own id is never refused where the namespace was given, and a view that fails anyway
//!   fails its command with the kernel's error, never weaker in silence.
//! - **PID**: in that view, a new PID namespace whose first process mounts a fresh `/proc`, as a
//!   view's init does (`pid_namespace`).
//! - **user**: a new user namespace (for root, after the rest: root's views need none). The
//!   shared namespace root's sandboxed commands join, with its id maps, is made by a fork at the
//!   first command that needs it (`privileges`), not here.

use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use nix::sched::CloneFlags;
use nix::unistd::Pid;

use super::mount_view::MountView;
use super::pid_namespace::{mount_proc, reap};

/// The probing child's stack; the init it starts gets a part of it.
const STACK_BYTES: usize = 64 * 1024;
/// The PID namespace's first process's stack, on the probing child's: it makes one mount.
const INIT_STACK_BYTES: usize = 16 * 1024;

/// An answer not given: the child ended (or never started) before it got there.
const UNANSWERED: i32 = libc::ECHILD;

/// What this system gives, each as 0 (it does) or the errno of the step that failed.
struct Answers {
    user: i32,
    mount: i32,
    pid: i32,
}

/// What the probing child reads and writes; on the caller's stack, which the caller does not
/// leave while the child runs (CLONE_VFORK).
struct Probe {
    /// The view to make, as for a command but with only `/` in it. Only the child touches it.
    view: UnsafeCell<MountView>,
    user: AtomicI32,
    mount: AtomicI32,
    pid: AtomicI32,
}

/// Whether this system gives sandboxed children a user namespace of their own.
pub fn user_namespaces_available() -> bool {
    answers().user == 0
}

/// Whether this system lets Elph make a private mount namespace for a child, with a read-only
/// view of `/` as every sandboxed command's view has. Some systems forbid it to unprivileged users;
/// there the read-only paths inside writable roots cannot be held read-only and metadata outside
/// them is only guarded in `read-only`, which `elph doctor` says.
pub fn mount_namespaces_available() -> bool {
    answers().mount == 0
}

/// Whether this system gives sandboxed commands a PID namespace with its own `/proc`. Needs a
/// mount namespace; a container whose `/proc` hides paths under other mounts (Docker's default)
/// lets only real root mount another one.
pub fn pid_namespaces_available() -> bool {
    answers().pid == 0
}

/// The answers, probed on first use; whoever asks while the probe runs waits for it.
fn answers() -> &'static Answers {
    static ANSWERS: OnceLock<Answers> = OnceLock::new();
    let mut probing_child = None;
    let answers = ANSWERS.get_or_init(|| {
        let (answers, child) = probe();
        probing_child = child;
        for (errno, missing) in [
            (answers.user, "no user namespace for sandboxed commands"),
            (answers.mount, "no mount namespace for the read-only view"),
            (answers.pid, "no PID namespace with its own /proc"),
        ] {
            if errno != 0 {
                tracing::info!(error = %io::Error::from_raw_os_error(errno), "{missing}");
            }
        }
        answers
    });
    // Reaped once the answers are out: the child's exit tears down the namespaces it made (the
    // mount namespace's mounts, the PID namespace's `/proc`), up to half a millisecond that whoever
    // waits for the answers (a session's start, before its first model request) need not wait for.
    if let Some(pid) = probing_child {
        reap(pid);
    }
    answers
}

/// The answers, and the probing child still to reap. They are final once the child let go of
/// Elph's memory, which is when `clone_shared` returns (CLONE_VFORK): the child writes nothing
/// after, it only exits.
fn probe() -> (Answers, Option<Pid>) {
    let probe = Probe {
        view: UnsafeCell::new(MountView::probe()),
        user: AtomicI32::new(UNANSWERED),
        mount: AtomicI32::new(UNANSWERED),
        pid: AtomicI32::new(UNANSWERED),
    };
    let mut stack = vec![0u8; STACK_BYTES];
    let child = match crate::process::clone_shared(probe_main, &mut stack, &probe) {
        Ok(pid) => Some(Pid::from_raw(pid)),
        Err(error) => {
            tracing::info!(%error, "cannot start the sandbox's probe");
            None
        }
    };
    let answers = Answers {
        user: probe.user.load(Ordering::Acquire),
        mount: probe.mount.load(Ordering::Acquire),
        pid: probe.pid.load(Ordering::Acquire),
    };
    (answers, child)
}

/// The probing child: tries each namespace in turn and says how each went.
extern "C" fn probe_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the caller's `Probe`, alive and untouched by the caller while this child
    // runs (`probe`, CLONE_VFORK); this child is the only one to use its view.
    let probe = unsafe { &*arg.cast::<Probe>() };
    // SAFETY: as above: nothing else reads or writes the view meanwhile.
    let view = unsafe { &mut *probe.view.get() };
    let errno = |error: io::Error| error.raw_os_error().unwrap_or(libc::EPERM);
    let own_user = view.has_user_namespace();
    let mount = view.apply().map_err(errno);
    if own_user {
        // The view's user namespace answers for the user namespace too; without a view, alone.
        let user = match mount {
            Ok(()) => 0,
            Err(_) => unshare(CloneFlags::CLONE_NEWUSER),
        };
        probe.user.store(user, Ordering::Release);
    }
    probe.mount.store(mount.err().unwrap_or(0), Ordering::Release);
    if mount.is_ok() {
        probe.pid.store(pid_namespace_with_proc(), Ordering::Release);
    }
    if !own_user {
        probe
            .user
            .store(unshare(CloneFlags::CLONE_NEWUSER), Ordering::Release);
    }
    // SAFETY: leaves at once, running nothing of Elph's (no atexit handler, no destructor).
    unsafe { libc::_exit(0) }
}

fn unshare(flags: CloneFlags) -> i32 {
    match nix::sched::unshare(flags) {
        Ok(()) => 0,
        Err(errno) => errno as i32,
    }
}

/// In the probing child, once in its view: a new PID namespace, whose first process mounts its
/// `/proc`. 0 when it did, or the errno of the step that failed.
fn pid_namespace_with_proc() -> i32 {
    if let Err(errno) = nix::sched::unshare(CloneFlags::CLONE_NEWPID) {
        return errno as i32;
    }
    let mounted = AtomicI32::new(UNANSWERED);
    let mut stack = [0u8; INIT_STACK_BYTES];
    match crate::process::clone_shared(init_main, &mut stack, &mounted) {
        Ok(pid) => {
            reap(Pid::from_raw(pid));
            mounted.load(Ordering::Acquire)
        }
        Err(error) => error.raw_os_error().unwrap_or(libc::EPERM),
    }
}

/// The PID namespace's first process: mounts the namespace's `/proc` and says how it went.
extern "C" fn init_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the probing child's atomic, alive while this child runs (CLONE_VFORK).
    let mounted = unsafe { &*arg.cast::<AtomicI32>() };
    let errno = match mount_proc() {
        Ok(()) => 0,
        Err(error) => error.raw_os_error().unwrap_or(libc::EPERM),
    };
    mounted.store(errno, Ordering::Release);
    // SAFETY: as in `probe_main`.
    unsafe { libc::_exit(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether util-linux's `unshare` can run `true` with `args`: the same question asked by
    /// another program, in a fork of its own.
    fn unshare_allows(args: &[&str]) -> Option<bool> {
        let status = std::process::Command::new("unshare")
            .args(args)
            .arg("true")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        Some(status.success())
    }

    /// The probe's answers are this system's: each agrees with util-linux's `unshare` making the
    /// same namespaces; and the probe leaves the caller's own namespaces as they were.
    #[test]
    fn the_probe_answers_as_the_system_does_and_changes_nothing_in_the_caller() {
        let namespaces = || {
            ["user", "mnt", "pid", "pid_for_children"]
                .map(|name| std::fs::read_link(format!("/proc/self/ns/{name}")).unwrap())
        };
        let before = namespaces();
        let (answers, child) = probe();
        if let Some(pid) = child {
            reap(pid);
        }
        assert_eq!(namespaces(), before);
        let own_user: &[&'static str] = if nix::unistd::geteuid().is_root() {
            &[]
        } else {
            &["--user"]
        };
        let with = |more: &[&'static str]| -> Vec<&'static str> { [own_user, more].concat() };
        let (Some(user), Some(mount), Some(pid)) = (
            unshare_allows(&["--user"]),
            unshare_allows(&with(&["--mount"])),
            unshare_allows(&with(&["--mount", "--pid", "--fork", "--mount-proc"])),
        ) else {
            eprintln!("skipped: no util-linux `unshare` to compare with");
            return;
        };
        assert_eq!(answers.user == 0, user, "user: {}", answers.user);
        assert_eq!(answers.mount == 0, mount, "mount: {}", answers.mount);
        assert_eq!(answers.pid == 0, pid, "pid: {}", answers.pid);
        if answers.mount != 0 {
            assert_eq!(answers.pid, UNANSWERED, "a PID namespace is only tried in a view");
        }
    }
}
