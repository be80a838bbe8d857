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
//! How (the default way a command starts is `sandbox/start.rs`, without `P`; what follows about
//! `P` and `H` is the fork path, `ELPH_SPAWN=fork`):
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
//!   and dies with Elph. Elph watches the init through a pidfd: one killed (the OOM killer, a
//!   user) leaves a namespace no process can start in, and the next command makes a new one.
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

mod command;
mod init;

use std::io;

use nix::errno::Errno;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

pub(super) use command::RunCommand;
pub(crate) use command::{CommandFailure, ForkInNamespace};
pub(super) use init::{Init, InitEnds, StartInit, mount_proc};

pub(in crate::sandbox) fn reap(pid: Pid) -> Option<WaitStatus> {
    loop {
        match waitpid(pid, None) {
            Err(Errno::EINTR) => {}
            Ok(status) => return Some(status),
            Err(_) => return None,
        }
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
pub(super) mod tests {
    use std::ffi::{OsStr, OsString};
    use std::path::Path;
    use std::time::Duration;

    use super::*;
    use crate::process::{CaptureMode, EXIT_GRACE, Leftovers, RunOutput, RunSpec, Stdin, run};
    use crate::sandbox::{SandboxPolicy, pid_namespaces_available};

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
    pub(in crate::sandbox) async fn sandboxed(
        policy: &SandboxPolicy,
        script: &str,
        project: &Path,
    ) -> RunOutput {
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
        // The command is created in the namespace as Elph's own child: it leads its group and
        // session there. Only the fork path (`ELPH_SPAWN=fork`) of a user who is not root has
        // a waiter outside, which leads them: then they have no number inside.
        let through_waiter = std::env::var_os("ELPH_SPAWN").is_some_and(|value| value == "fork")
            && !nix::unistd::geteuid().is_root();
        let led = if through_waiter { 0 } else { pid };
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

    /// The init of a session's namespace killed for real (as the OOM killer or a user would):
    /// the session's next command starts anyway, in a new namespace with a new init.
    #[tokio::test]
    async fn a_killed_init_is_replaced_at_the_next_command() {
        if !available() {
            return;
        }
        let project = tempfile::tempdir().unwrap();
        let policy = SandboxPolicy::workspace(project.path());
        let namespace_of = |out: &RunOutput| {
            assert_eq!(out.exit_code, Some(0), "{out:?}");
            out.stdout.render().trim().to_string()
        };
        // A process left in the namespace: once its shell is gone, the init is its parent, which
        // is how the test finds the init (as a user who is not root, it cannot read the init's
        // `/proc/PID/ns`: the init is not dumpable).
        let first = namespace_of(
            &sandboxed(
                &policy,
                "sleep 30.8015 > /dev/null 2>&1 < /dev/null & readlink /proc/self/ns/pid",
                project.path(),
            )
            .await,
        );
        assert!(first.starts_with("pid:["), "{first}");
        let left_behind = || -> Option<i32> {
            std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
                let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
                (std::fs::read(entry.path().join("cmdline")).ok()? == b"sleep\x0030.8015\x00").then_some(pid)
            })
        };
        let parent_of = |pid: i32| -> Option<i32> {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            status
                .lines()
                .find_map(|line| line.strip_prefix("PPid:")?.trim().parse().ok())
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut inits = Vec::new();
        while inits.is_empty() && std::time::Instant::now() < deadline {
            inits = left_behind()
                .and_then(parent_of)
                .filter(|&init| {
                    std::fs::read_to_string(format!("/proc/{init}/comm"))
                        .is_ok_and(|comm| comm.trim() == "elph-init")
                })
                .into_iter()
                .collect();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(inits.len(), 1, "the namespace's init: {inits:?}");
        nix::sys::signal::kill(Pid::from_raw(inits[0]), nix::sys::signal::Signal::SIGKILL).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while Path::new(&format!("/proc/{}/ns", inits[0])).exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let second = sandboxed(
            &policy,
            "readlink /proc/self/ns/pid; cat /proc/1/comm",
            project.path(),
        )
        .await;
        let said = namespace_of(&second);
        // (A new namespace may get the old one's inode number: the old one is gone.)
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.get(1), Some(&"elph-init"), "an init of its own: {said}");
        assert_eq!(
            left_behind(),
            None,
            "the kernel ended the namespace with its init"
        );
        let _ = policy.end_session();
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
