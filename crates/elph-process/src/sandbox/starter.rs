//! A view's starter: a process already inside the view and already without privilege, which
//! creates each sandboxed command of the view, so that a command pays only for what is its own.
//!
//! Why: most of what a sandboxed command cost over an unconfined one was the same for every
//! command of a view (perf, per command): clearing the capability bounding set, 41
//! `prctl(PR_CAPBSET_DROP)` calls that each copy and commit credentials, ~40 µs; attaching the
//! seccomp filter ~21 µs; joining the view's namespaces ~13 µs; the signal handlers ~8 µs; and, for
//! a user who is not root, a helper process to create the command in the PID namespace ~100 µs.
//! Credentials, namespaces, seccomp filters and signal dispositions are inherited by a child, so
//! one process that did all of it once can create every command:
//!
//! ```text
//! Elph thread T ──clone(VM|FILES)──▶ S: joins the view (user, mount, PID for children), drops every
//!                                    capability, seccomp; then waits for requests
//! Elph's starting thread ──request (shared memory, futex)──▶ S ──clone(VM|VFORK|PARENT)──▶ C
//! C: a session of its own, its streams, its folder, its limits, a Landlock domain of its own, execve
//! ```
//!
//! - `S` shares Elph's memory and descriptor table, not its thread group: it has its own
//!   credentials, namespaces, file-system context and signal handlers, which is what joining a
//!   user namespace asks. A request is a pointer to the command's data, prepared by the starting
//!   thread as for any confined start (`start.rs`), and a futex word both wait on (one memory, so
//!   a private futex works between them). `S` creates the command with `CLONE_PARENT`: `C` is
//!   Elph's own child (Elph waits for it through a pidfd, kills its group), created in the view's
//!   PID namespace, where it leads its own session and process group. `CLONE_VFORK` keeps `S`
//!   until `C` executed its program or failed, as the starting thread is kept in the direct start.
//! - Each command still restricts itself with a Landlock domain of its own, so the commands of a
//!   view cannot trace or read each other, nor (ABI 6) signal each other; and sets its own limits
//!   (a limit of `S` would be checked when `S` creates a command, not only by what it starts).
//! - `S` runs on `T`'s thread-local storage (the C library's `errno`, which a failed system call
//!   sets), so `T` does nothing but wait for `S` to end. `S` dies with Elph: its parent is `T`,
//!   and `PR_SET_PDEATHSIG` kills it when `T` ends, which Elph's process ending, however it ends,
//!   does. It ends with its view too (the session's end, a replaced view). No command can reach
//!   it: it is outside the PID namespace (no number there), has no capability, and shares Elph's
//!   memory and so its undumpable flag.
//! - A view's starter is made at the view's first command (for each set of seccomp filters its
//!   commands get), and again if it was killed (a user, the OOM killer): a command whose starter
//!   died before it created the command is started by a new one; one killed while it created
//!   the command fails that command (it is killed: whether it had begun is unknown, and a
//!   command is never run twice). A starter that cannot be made
//!   fails the command with the error of the step that failed, as that step would have failed
//!   in the command itself.

use std::ffi::{c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::confine::Confinement;

/// Each stack: the setup and a clone (for `S`), the command's steps and `execve` (for `C`).
const STACK_BYTES: usize = 256 * 1024;

/// The states of the futex word that `S` and the starting threads wait on.
const STARTING: u32 = 0;
const READY: u32 = 1;
const ASKED: u32 = 2;
const ANSWERED: u32 = 3;
/// `S` ended (its setup failed, or it was killed): set by `T` once it reaped it.
const GONE: u32 = 4;

/// What `S` and Elph share: the futex word, a request and its answer, and the stacks.
struct Mailbox {
    state: AtomicU32,
    /// Elph's pid: `S` checks that its parent is still Elph once its parent's death would kill it.
    elph: libc::pid_t,
    /// The first command's confinement, for `S`'s setup (read once, before `READY`).
    setup: AtomicPtr<Confinement>,
    /// How the setup or the last clone failed (0: it did not).
    errno: AtomicI32,
    /// The command's entry and its data (`start.rs`'s).
    entry: extern "C" fn(*mut c_void) -> c_int,
    request: AtomicPtr<c_void>,
    /// The command's pid, written by the kernel (`CLONE_PARENT_SETTID`) before it runs, so it is
    /// known even when `S` is killed while the command starts.
    command: AtomicI32,
    /// A pidfd of `S`, written by the kernel (`CLONE_PIDFD`) before `S` runs.
    pidfd: AtomicI32,
    /// The number of the last request, and of the last one `S` answered.
    asked: AtomicU64,
    answered: AtomicU64,
    own_stack: usize,
    command_stack: usize,
    _stacks: [Vec<u8>; 2],
}

/// A view's starter, as Elph holds it.
pub(super) struct Starter {
    mailbox: std::sync::Arc<Mailbox>,
    /// A pidfd of `S`, for its end (its pid could name another process once `T` reaped it).
    pidfd: OwnedFd,
    /// `S` serves one request at a time.
    one_at_a_time: Mutex<()>,
    waiter: Option<std::thread::JoinHandle<()>>,
}

/// How a request ended.
pub(super) enum Started {
    /// The command's pid (Elph's child); whether it runs is in the request's own record.
    Command(libc::pid_t),
    /// `S` could not create it (the clone's errno).
    Failed(io::Error),
    /// `S` was gone before it created the command: nothing ran, the request may be made again.
    Gone,
    /// `S` was killed while it created the command, which was killed and reaped here: whether
    /// it had got to its program is unknown, so it is not started again.
    KilledWhileStarting,
}

impl Starter {
    /// Makes the starter of the view `first` belongs to and sets it up with `first`'s
    /// confinement; `entry` is what each command runs first. Returns once `S` is ready, or with
    /// the error of the step of its setup that failed.
    pub(super) fn make(
        first: &Confinement,
        entry: extern "C" fn(*mut c_void) -> c_int,
    ) -> io::Result<Starter> {
        let mut own = vec![0u8; STACK_BYTES];
        let mut command = vec![0u8; STACK_BYTES];
        // The stacks grow down from their ends, 16-byte aligned as the ABI asks.
        let top = |stack: &mut Vec<u8>| stack.as_mut_ptr_range().end as usize & !15;
        let mailbox = std::sync::Arc::new(Mailbox {
            state: AtomicU32::new(STARTING),
            elph: std::process::id().cast_signed(),
            setup: AtomicPtr::new(std::ptr::from_ref(first).cast_mut()),
            errno: AtomicI32::new(0),
            entry,
            request: AtomicPtr::new(std::ptr::null_mut()),
            command: AtomicI32::new(0),
            pidfd: AtomicI32::new(-1),
            asked: AtomicU64::new(0),
            answered: AtomicU64::new(0),
            own_stack: top(&mut own),
            command_stack: top(&mut command),
            _stacks: [own, command],
        });
        let waiter = {
            let mailbox = mailbox.clone();
            std::thread::Builder::new()
                .name("elph-starter".into())
                .spawn(move || wait_for_starter(&mailbox))?
        };
        wait_while(&mailbox.state, |state| state == STARTING);
        // `S` read the setup, or never will.
        mailbox.setup.store(std::ptr::null_mut(), Ordering::Release);
        let pidfd = mailbox.pidfd.load(Ordering::Acquire);
        if mailbox.state.load(Ordering::Acquire) != READY || pidfd < 0 {
            let _ = waiter.join();
            if pidfd >= 0 {
                close(pidfd);
            }
            let errno = match mailbox.errno.load(Ordering::Acquire) {
                0 => libc::ECHILD,
                errno => errno,
            };
            return Err(io::Error::from_raw_os_error(errno));
        }
        Ok(Starter {
            mailbox,
            pidfd: owned(pidfd),
            one_at_a_time: Mutex::new(()),
            waiter: Some(waiter),
        })
    }

    /// Whether `S` ended (killed): the view then needs a new starter.
    pub(super) fn is_gone(&self) -> bool {
        self.mailbox.state.load(Ordering::Acquire) == GONE
    }

    /// `S`'s pid (for tests), read from its pidfd's information.
    #[cfg(test)]
    pub(super) fn pid(&self) -> i32 {
        std::fs::read_to_string(format!("/proc/self/fdinfo/{}", self.pidfd.as_raw_fd()))
            .ok()
            .and_then(|info| {
                info.lines()
                    .find_map(|line| line.strip_prefix("Pid:")?.trim().parse().ok())
            })
            .unwrap_or(-1)
    }

    /// Has `S` create a command running the entry on `request`; returns once the command
    /// executed its program or failed before it, or `S` is gone.
    pub(super) fn start<T>(&self, request: &T) -> Started {
        let _one = self
            .one_at_a_time
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mailbox = &*self.mailbox;
        mailbox.command.store(0, Ordering::Relaxed);
        mailbox.errno.store(0, Ordering::Relaxed);
        mailbox
            .request
            .store(std::ptr::from_ref(request).cast_mut().cast(), Ordering::Relaxed);
        let number = mailbox.asked.fetch_add(1, Ordering::Relaxed) + 1;
        if mailbox
            .state
            .compare_exchange(READY, ASKED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Started::Gone;
        }
        futex_wake(&mailbox.state);
        wait_while(&mailbox.state, |state| state == ASKED);
        let command = mailbox.command.load(Ordering::Acquire);
        if mailbox.answered.load(Ordering::Acquire) != number {
            if command <= 0 {
                return Started::Gone;
            }
            // Killed while it created the command, which goes on by itself, reading the
            // request: it must be gone before the request is.
            kill_and_reap(command);
            return Started::KilledWhileStarting;
        }
        let _ = mailbox
            .state
            .compare_exchange(ANSWERED, READY, Ordering::AcqRel, Ordering::Acquire);
        match mailbox.errno.load(Ordering::Acquire) {
            0 if command > 0 => Started::Command(command),
            0 => Started::Failed(io::Error::from_raw_os_error(libc::ECHILD)),
            errno => Started::Failed(io::Error::from_raw_os_error(errno)),
        }
    }
}

impl Drop for Starter {
    fn drop(&mut self) {
        // No request is in flight: the view holds the starter while a command starts.
        pidfd_send_sigkill(&self.pidfd);
        if let Some(waiter) = self.waiter.take() {
            let _ = waiter.join();
        }
    }
}

/// `T`: creates `S`, then waits for it to end, touching nothing `S` shares with it (its
/// thread-local storage) until then.
fn wait_for_starter(mailbox: &Mailbox) {
    // `S` starts with every signal blocked, and keeps them so: no handler of Elph's runs in it.
    // The same mask keeps `T` out of signal delivery while `S` runs on its thread-local storage.
    let all = nix::sys::signal::SigSet::all();
    let _ = nix::sys::signal::pthread_sigmask(nix::sys::signal::SigmaskHow::SIG_SETMASK, Some(&all), None);
    match clone_starter(mailbox) {
        Ok(pid) => reap(pid),
        Err(error) => {
            mailbox
                .errno
                .store(error.raw_os_error().unwrap_or(libc::EAGAIN), Ordering::Release);
        }
    }
    mailbox.state.store(GONE, Ordering::Release);
    futex_wake(&mailbox.state);
}

/// `clone(CLONE_VM | CLONE_FILES | CLONE_PIDFD)` of `S` on its stack: its pid (and a pidfd in
/// the mailbox).
#[expect(unsafe_code, reason = "clone(2) of a process that shares Elph's memory")]
fn clone_starter(mailbox: &Mailbox) -> io::Result<libc::pid_t> {
    // SAFETY: `S` runs `starter_main` on its own stack, which the mailbox owns; the mailbox
    // outlives `S` (`T` holds it until it reaped `S`). `S` shares this memory and descriptor
    // table, not the thread group, credentials, file-system context or signal handlers (no
    // CLONE_THREAD, CLONE_FS, CLONE_SIGHAND). It runs on this thread's thread-local storage,
    // which this thread leaves alone until `S` is reaped. The C library's clone runs no fork
    // handlers; the kernel writes the pidfd into the mailbox before `S` runs.
    let pid = unsafe {
        libc::clone(
            starter_main,
            mailbox.own_stack as *mut c_void,
            libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_PIDFD | libc::SIGCHLD,
            std::ptr::from_ref(mailbox).cast_mut().cast::<c_void>(),
            mailbox.pidfd.as_ptr(),
        )
    };
    if pid == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// `S`: dies with Elph, sets itself up once, then creates a command per request.
extern "C" fn starter_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the mailbox `clone_starter` passed, alive until `S` is reaped.
    #[expect(unsafe_code, reason = "the argument of a clone(2) child")]
    let mailbox = unsafe { &*arg.cast::<Mailbox>() };
    if let Err(error) = set_up(mailbox) {
        mailbox
            .errno
            .store(error.raw_os_error().unwrap_or(libc::EPERM), Ordering::Release);
        exit(1);
    }
    mailbox.state.store(READY, Ordering::Release);
    futex_wake(&mailbox.state);
    loop {
        wait_while(&mailbox.state, |state| state != ASKED);
        let number = mailbox.asked.load(Ordering::Acquire);
        let request = mailbox.request.load(Ordering::Acquire);
        if let Err(error) = clone_command(mailbox, request) {
            mailbox
                .errno
                .store(error.raw_os_error().unwrap_or(libc::EAGAIN), Ordering::Release);
        }
        mailbox.answered.store(number, Ordering::Release);
        mailbox.state.store(ANSWERED, Ordering::Release);
        futex_wake(&mailbox.state);
    }
}

/// `S`'s setup: its death tied to Elph's, Elph's signal handlers gone, and the view's
/// confinement that every command shares.
#[expect(unsafe_code, reason = "prctl(2) and getppid(2) with integer arguments")]
fn set_up(mailbox: &Mailbox) -> io::Result<()> {
    // SAFETY: prctl(2) with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // Elph may have ended before the line above: then its death signal will not come.
    // SAFETY: getppid(2) takes no argument.
    if unsafe { libc::getppid() } != mailbox.elph {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    crate::process::default_handlers();
    let first = mailbox.setup.load(Ordering::Acquire);
    // SAFETY: the first command's confinement, alive and unchanged while the thread that made
    // the starter waits for `READY`, before which this is its only use.
    let first = unsafe { first.as_ref() }.ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
    first.confine_starter()
}

/// `clone(CLONE_VM | CLONE_VFORK | CLONE_PARENT)` of the command on its stack: it shares this
/// memory until it executes its program, and its parent is Elph.
#[expect(unsafe_code, reason = "clone(2) of a child that shares Elph's memory")]
fn clone_command(mailbox: &Mailbox, request: *mut c_void) -> io::Result<()> {
    // SAFETY: the command runs `entry` on the command stack, which only it uses (one request at a
    // time) and the mailbox owns; `request` is the starting thread's prepared data, alive while
    // that thread waits for the answer, and `CLONE_VFORK` keeps this process until the command
    // executed its program or exited. No CLONE_FILES, CLONE_FS or CLONE_SIGHAND: the command gets
    // its own copies. The kernel writes its pid into `command` before it runs.
    let pid = unsafe {
        libc::clone(
            mailbox.entry,
            mailbox.command_stack as *mut c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT | libc::CLONE_PARENT_SETTID,
            request,
            mailbox.command.as_ptr(),
        )
    };
    if pid == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits on `word` while `waiting` says so of its value.
fn wait_while(word: &AtomicU32, waiting: impl Fn(u32) -> bool) {
    loop {
        let state = word.load(Ordering::Acquire);
        if !waiting(state) {
            return;
        }
        futex_wait(word, state);
    }
}

#[expect(unsafe_code, reason = "futex(2) on an atomic word")]
fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT reads the aligned 32-bit word the atomic owns and sleeps while it holds
    // `expected`; a private futex is keyed by the memory, which `S` and Elph share.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

#[expect(unsafe_code, reason = "futex(2) on an atomic word")]
fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE only wakes the waiters on the word's address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            c_int::MAX,
        );
    }
}

fn reap(pid: libc::pid_t) {
    while nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::EINTR) {}
}

fn kill_and_reap(pid: libc::pid_t) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    reap(pid);
}

#[expect(unsafe_code, reason = "pidfd_send_signal(2) has no wrapper in nix")]
fn pidfd_send_sigkill(pidfd: &OwnedFd) {
    // SAFETY: a system call on an open pidfd, with no memory argument (a null siginfo).
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
}

#[expect(unsafe_code, reason = "a descriptor the kernel just made for this process")]
fn owned(fd: c_int) -> OwnedFd {
    // SAFETY: the pidfd `clone` made, which nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn close(fd: c_int) {
    drop(owned(fd));
}

#[expect(unsafe_code, reason = "_exit(2): nothing of Elph's may run in its clone")]
fn exit(code: c_int) -> ! {
    // SAFETY: ends `S` at once, running no atexit handler and no destructor.
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::sandbox::SandboxPolicy;
    use crate::sandbox::pid_namespace::tests::sandboxed;

    fn starters(policy: &SandboxPolicy) -> Vec<i32> {
        crate::sandbox::confine::starter_pids(policy.watch.id())
    }

    fn status_field(pid: i32, field: &str) -> Option<String> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|line| Some(line.strip_prefix(field)?.trim().to_string()))
    }

    /// Whether `pid` is still a starter (gone, or its number taken by another process, it is not).
    fn is_starter(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == "elph-starter")
            && status_field(pid, "State:").is_some_and(|state| !state.starts_with('Z'))
    }

    fn gone_within(pid: i32, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while is_starter(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        !is_starter(pid)
    }

    /// Commands of a view are created by its starter: a process of Elph's (its child, named
    /// `elph-starter`), outside the view's PID namespace and with no capability left; killed for
    /// real, the next command still starts, by a new one; and it ends with its session.
    #[tokio::test]
    async fn a_views_starter_is_replaced_when_killed_and_ends_with_the_session() {
        if !crate::sandbox::landlock_support().available() || !crate::sandbox::mount_namespaces_available() {
            eprintln!("skipped: no Landlock or no mount namespace on this system");
            return;
        }
        if std::env::var_os("ELPH_SPAWN").is_some_and(|value| value == "fork") {
            eprintln!("skipped: ELPH_SPAWN=fork starts every child through a fork, without a starter");
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::workspace(project.path());
        let out = sandboxed(&policy, "echo first", project.path()).await;
        assert_eq!(out.exit_code, Some(0), "{out:?}");
        let first = starters(&policy);
        assert_eq!(first.len(), 1, "one starter for the session's view: {first:?}");
        let first = first[0];
        assert!(is_starter(first), "{first} is the starter");
        assert_eq!(
            status_field(first, "PPid:"),
            Some(std::process::id().to_string()),
            "the starter is Elph's child"
        );
        // In Elph's PID namespace only: no number in the view's, so no command can name it.
        assert_eq!(status_field(first, "NSpid:"), Some(first.to_string()));
        assert_eq!(
            status_field(first, "CapEff:").as_deref(),
            Some("0000000000000000")
        );
        assert_eq!(
            status_field(first, "CapBnd:").as_deref(),
            Some("0000000000000000")
        );

        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(first),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
        let out = sandboxed(&policy, "echo second", project.path()).await;
        assert_eq!(out.exit_code, Some(0), "{out:?}");
        assert_eq!(out.stdout.render(), "second\n");
        assert!(
            gone_within(first, Duration::from_secs(10)),
            "the killed starter was reaped"
        );
        let second = starters(&policy);
        assert_eq!(second.len(), 1, "{second:?}");
        assert_ne!(second[0], first, "a new starter");
        assert!(is_starter(second[0]));

        let _ = policy.end_session();
        assert!(
            gone_within(second[0], Duration::from_secs(10)),
            "the session's end ended its starter"
        );
        assert!(starters(&policy).is_empty());
    }

    /// Tried as an attacker in a sandboxed command would, who knows the starter's number (it shares
    /// Elph's memory and descriptors): it can neither signal it nor read its environment, memory or
    /// descriptors, nor trace it; the starter goes on serving the session.
    #[tokio::test]
    async fn a_sandboxed_command_that_knows_the_starters_number_cannot_reach_it() {
        if !crate::sandbox::landlock_support().available() || !crate::sandbox::mount_namespaces_available() {
            eprintln!("skipped: no Landlock or no mount namespace on this system");
            return;
        }
        if std::env::var_os("ELPH_SPAWN").is_some_and(|value| value == "fork") {
            eprintln!("skipped: ELPH_SPAWN=fork starts every child through a fork, without a starter");
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::workspace(project.path());
        let out = sandboxed(&policy, "echo first", project.path()).await;
        assert_eq!(out.exit_code, Some(0), "{out:?}");
        let starter = starters(&policy)[0];
        let script = format!(
            "for s in KILL STOP TERM; do kill -$s {starter} 2>/dev/null && echo signalled-$s; done; \
             head -c 300 /proc/{starter}/environ 2>/dev/null && echo read-environ; \
             head -c 16 /proc/{starter}/mem 2>/dev/null && echo read-mem; \
             ls /proc/{starter}/fd 2>/dev/null && echo listed-fds; \
             head -c 300 /proc/{starter}/cmdline 2>/dev/null && echo read-cmdline; \
             echo tried"
        );
        let out = sandboxed(&policy, &script, project.path()).await;
        let said = out.stdout.render();
        assert!(said.ends_with("tried\n"), "{out:?}");
        for reached in [
            "signalled",
            "read-environ",
            "read-mem",
            "listed-fds",
            "read-cmdline",
        ] {
            assert!(!said.contains(reached), "the command {reached}: {said}");
        }
        assert!(!said.contains("PATH=") && !said.contains("HOME="), "{said}");
        assert!(is_starter(starter), "the starter still runs");
        assert_eq!(
            status_field(starter, "State:").map(|state| state.starts_with('T')),
            Some(false),
            "the starter is not stopped"
        );
        let out = sandboxed(&policy, "echo after", project.path()).await;
        assert_eq!(out.stdout.render(), "after\n", "{out:?}");
        assert_eq!(starters(&policy), vec![starter], "the same starter served it");
        let _ = policy.end_session();
    }
}
