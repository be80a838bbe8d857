//! [`spawn`]: the one way a child of Elph starts (see the module's documentation for the steps).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
use nix::unistd::{ForkResult, Pid};

use super::child::{self, Child};
use crate::sandbox::{CommandFailure, Confinement, SandboxPolicy, StartFailure};

/// Attempts to spawn a file another thread still holds open for writing (ETXTBSY).
const SPAWN_ATTEMPTS: u32 = 6;
/// Added to the errno of a failed confinement in the child, so that the parent, which std tells
/// only an errno, knows which step failed. Errnos are far below it.
const CONFINE_FAILED: i32 = 1 << 20;

/// What the child reads on stdin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Nothing: `/dev/null`, so a prompt fails instead of waiting.
    Null,
    /// A pipe: [`Child::stdin`].
    Piped,
    /// Elph's own stdin (`elph sandbox -- CMD`, in the foreground).
    Inherit,
}

/// Where the child's stdout or stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A pipe: [`Child::stdout`], [`Child::stderr`].
    Piped,
    /// Nowhere: `/dev/null`.
    Null,
    /// Elph's own (`elph sandbox -- CMD`, in the foreground).
    Inherit,
}

/// What to start. Everything else (session, group, orphan watcher, no controlling terminal) is
/// the same for every child.
#[derive(Clone, Copy, Debug)]
pub struct SpawnSpec<'a> {
    /// The program, as an absolute path: nothing is searched on PATH here.
    pub program: &'a Path,
    /// Its arguments (no shell is involved).
    pub args: &'a [&'a OsStr],
    /// The directory it starts in.
    pub cwd: &'a Path,
    /// Its whole environment: an allowlist or the shell environment policy, never Elph's own.
    pub env: &'a [(OsString, OsString)],
    /// Its stdin.
    pub stdin: Input,
    /// Its stdout.
    pub stdout: Output,
    /// Its stderr.
    pub stderr: Output,
    /// The confinement of the child and everything it starts; `None` (or `full-access`) runs it
    /// unconfined.
    pub sandbox: Option<&'a SandboxPolicy>,
}

/// Which step before the program failed: the confinement, or another (std's words then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Confine,
    Exec,
}

/// Why creating a child failed: the step and the error.
#[derive(Debug)]
struct SpawnError {
    step: Step,
    error: io::Error,
}

/// A child just created and exec'd: its pid and the parent's ends of its pipes.
pub(crate) struct Started {
    pub pid: i32,
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// Starts `spec`'s program and returns at once. Must run within a tokio runtime (the pipes and
/// the child's exit are registered with its reactor). The error is the system's; say it to people
/// with [`describe_spawn_error`].
pub async fn spawn(spec: &SpawnSpec<'_>) -> io::Result<Child> {
    if !spec.program.is_absolute() {
        // Letting the OS search PATH would try relative entries (`.`, an empty one) and find the
        // project's own file.
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "the program is not an absolute path",
        ));
    }
    child::reap_dropped();
    let mut attempt = 1;
    loop {
        // Prepared for each attempt: the closure of a failed one took it.
        let confinement = spec
            .sandbox
            .map(|policy| Confinement::prepare(policy, spec.cwd))
            .transpose()
            .map(Option::flatten)
            .map_err(io::Error::other)?;
        let started = match confinement {
            // Unconfined: a child sharing Elph's memory until it executes (`vfork`).
            None if !super::vfork::fork_for_every_child() => {
                super::vfork::spawn_unconfined(spec).map_err(|error| SpawnError {
                    step: Step::Exec,
                    error,
                })
            }
            // Confined: as unconfined, a child sharing Elph's memory (`sandbox/start.rs`).
            Some(mut confinement) if !super::vfork::fork_for_every_child() => {
                crate::sandbox::start_confined(spec, &mut confinement).map_err(|failure| match failure {
                    StartFailure::Confine(error) => SpawnError {
                        step: Step::Confine,
                        error,
                    },
                    StartFailure::Other(error) => SpawnError {
                        step: Step::Exec,
                        error,
                    },
                })
            }
            confinement => fork(spec, confinement),
        };
        match started {
            Ok(started) => return Child::watch(started),
            // A file that another thread of this process still has open for writing (a script
            // that was just written, while another thread forked) cannot be executed for a moment.
            Err(failed)
                if failed.error.raw_os_error() == Some(Errno::ETXTBSY as i32) && attempt < SPAWN_ATTEMPTS =>
            {
                tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                attempt += 1;
            }
            Err(failed) if failed.step == Step::Confine => {
                return Err(io::Error::new(
                    failed.error.kind(),
                    format!("{} (while confining it in the sandbox)", failed.error),
                ));
            }
            Err(failed) => return Err(failed.error),
        }
    }
}

/// Creates a confined child (and every child under `ELPH_SPAWN=fork`): std's `Command`, whose
/// `pre_exec` step puts it on the fork path, with the steps before exec in one closure, in the
/// documented order.
fn fork(spec: &SpawnSpec<'_>, confinement: Option<Confinement>) -> Result<Started, SpawnError> {
    let mut command = std::process::Command::new(spec.program);
    command
        .args(spec.args)
        .current_dir(spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(match spec.stdin {
            Input::Null => Stdio::null(),
            Input::Piped => Stdio::piped(),
            Input::Inherit => Stdio::inherit(),
        })
        .stdout(stdio(spec.stdout))
        .stderr(stdio(spec.stderr));
    let mut confinement = confinement;
    // As root, the child is forked straight into the sandbox's PID namespace. Its `getpid` there
    // is not its pid outside, so it does not register with the orphan watcher: the namespace's
    // init, which dies with Elph, takes it and everything it started along.
    let in_namespace = confinement.as_mut().and_then(Confinement::fork_in_namespace);
    let watcher = match in_namespace {
        Some(_) => None,
        None => crate::orphans::registration_fd(),
    };
    if let Some(confinement) = &mut confinement {
        // In the sandbox's PID namespace, the command's process executes the program itself.
        confinement
            .set_program(spec.program, spec.args, spec.env)
            .map_err(|error| SpawnError {
                step: Step::Exec,
                error,
            })?;
    }
    in_child_before_exec(&mut command, move || {
        nix::unistd::setsid()?;
        if let Some(fd) = watcher {
            crate::orphans::register_self(fd);
        }
        if let Some(confinement) = &mut confinement {
            confinement.apply_in_child().map_err(|failure| match failure {
                CommandFailure::Confine(errno) => io::Error::from_raw_os_error(CONFINE_FAILED + errno),
                // The program itself could not be executed: said as without the sandbox.
                CommandFailure::Exec(errno) => io::Error::from_raw_os_error(errno),
            })?;
        }
        // The child inherits the forking thread's signal mask, which std leaves as it is when a
        // `pre_exec` step is set: it starts with nothing blocked, as a program expects.
        pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None)?;
        Ok(())
    });
    let spawned = command.spawn();
    drop(in_namespace);
    let mut child = spawned.map_err(|error| match error.raw_os_error() {
        Some(code) if code >= CONFINE_FAILED => SpawnError {
            step: Step::Confine,
            error: io::Error::from_raw_os_error(code - CONFINE_FAILED),
        },
        _ => SpawnError {
            step: Step::Exec,
            error,
        },
    })?;
    // std's `Child` neither waits for nor kills the child when dropped: `Child::watch` takes over.
    Ok(Started {
        pid: child.id().cast_signed(),
        stdin: child.stdin.take().map(OwnedFd::from),
        stdout: child.stdout.take().map(OwnedFd::from),
        stderr: child.stderr.take().map(OwnedFd::from),
    })
}

fn stdio(output: Output) -> Stdio {
    match output {
        Output::Piped => Stdio::piped(),
        Output::Null => Stdio::null(),
        Output::Inherit => Stdio::inherit(),
    }
}

/// The one place that runs code in a forked child before exec.
fn in_child_before_exec<F>(command: &mut std::process::Command, setup: F)
where
    F: FnMut() -> io::Result<()> + Send + Sync + 'static,
{
    use std::os::unix::process::CommandExt;
    // SAFETY: `setup` runs in the forked child of a multi-threaded process, where only
    // async-signal-safe work is allowed. Every closure passed here only makes system calls on data
    // prepared before the fork (setsid(2); write(2) of a stack buffer to the orphan watcher;
    // `Confinement::apply_in_child` and `MountPlan::apply`, which unshare, mount, write prepared
    // bytes, call landlock_restrict_self(2) and seccomp(2), and for a PID namespace clone(2) raw
    // (never the C library's fork) and wait4(2); pthread_sigmask(3) of an empty set);
    // none allocates or takes a lock.
    unsafe {
        command.pre_exec(setup);
    }
}

/// A child that made a namespace (its `setup`) and now only waits, executing nothing, until
/// its caller has opened the namespace through /proc and ends it: the sandbox's own helper, never
/// a command of the user's. It lives a few milliseconds; dropping it ends and reaps it.
pub(crate) struct Holder {
    pid: Pid,
    /// The write end of the pipe the holder waits on; closing it lets the holder go.
    release: Option<OwnedFd>,
    reaped: bool,
}

impl Holder {
    pub(crate) fn id(&self) -> u32 {
        self.pid.as_raw().cast_unsigned()
    }

    /// Ends the holder and reaps it.
    pub(crate) fn end(&mut self) {
        if self.reaped {
            return;
        }
        drop(self.release.take());
        let _ = nix::sys::signal::kill(self.pid, nix::sys::signal::Signal::SIGKILL);
        child::reap_blocking(self.pid.as_raw());
        self.reaped = true;
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.end();
    }
}

/// Forks a child that runs `setup`, says whether it succeeded, and waits, executing nothing,
/// until the returned [`Holder`] ends it. It must fork: it waits beside Elph while Elph writes
/// its namespace's id maps, which it may only when the holder is dumpable (Elph is not), so it
/// needs a memory of its own. It executes no program, so it costs a fork and no more (it once
/// executed `sh`: a millisecond more at every session's start).
pub(crate) fn spawn_holder<F>(setup: F) -> io::Result<Holder>
where
    F: FnOnce() -> io::Result<()>,
{
    let (pid, release) = fork_and_setup(setup)?;
    Ok(Holder {
        pid,
        release: Some(release),
        reaped: false,
    })
}

/// Forks; the child makes itself dumpable again (Elph is not, see
/// `sandbox::make_self_undumpable`, and a process that is not dumpable cannot write its own
/// `/proc/self/uid_map`), runs `setup`, writes its errno (0: it succeeded) to the parent, then
/// waits until the parent closes the returned pipe or kills it, and exits. Returns once the child
/// has reported: `Err` with the child's error (the child is reaped), or its pid and the pipe that
/// keeps it waiting.
fn fork_and_setup<F>(setup: F) -> io::Result<(Pid, OwnedFd)>
where
    F: FnOnce() -> io::Result<()>,
{
    let (report_read, report_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let (wait_read, wait_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    // SAFETY: the child of a multi-threaded process may only make async-signal-safe calls until
    // it executes or exits, and this one never executes: it closes two descriptors, makes the
    // system calls of `setup` (every caller's setup only makes system calls on data prepared
    // before the fork, as the steps of `in_child_before_exec` do: unshare, mount, writes of
    // prepared bytes), prctl(2), write(2) and read(2) on stack buffers, and leaves with _exit(2),
    // so no destructor, allocation or lock of the parent's runs in it.
    match unsafe { nix::unistd::fork() }? {
        ForkResult::Child => {
            drop(report_read);
            drop(wait_write);
            let errno = match nix::sys::prctl::set_dumpable(true)
                .map_err(io::Error::from)
                .and_then(|()| setup())
            {
                Ok(()) => 0,
                Err(error) => error.raw_os_error().unwrap_or(libc::EPERM),
            };
            let _ = nix::unistd::write(&report_write, &errno.to_ne_bytes());
            if errno == 0 {
                let mut byte = [0u8; 1];
                while nix::unistd::read(&wait_read, &mut byte) == Err(Errno::EINTR) {}
            }
            // SAFETY: ends the child at once, running no atexit handler and no destructor of the
            // parent's state it holds a copy of.
            unsafe { libc::_exit(i32::from(errno != 0)) }
        }
        ForkResult::Parent { child: pid } => {
            drop(report_write);
            drop(wait_read);
            let mut report = [0u8; 4];
            let mut got = 0;
            while got < report.len() {
                match nix::unistd::read(&report_read, &mut report[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(Errno::EINTR) => {}
                    Err(_) => break,
                }
            }
            // Fewer bytes: it died before it could say.
            let errno = if got == report.len() {
                i32::from_ne_bytes(report)
            } else {
                libc::ECHILD
            };
            if errno != 0 {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                child::reap_blocking(pid.as_raw());
                return Err(io::Error::from_raw_os_error(errno));
            }
            Ok((pid, wait_write))
        }
    }
}

/// Says why `program` could not be started, and what to do about it.
pub fn describe_spawn_error(program: &Path, error: &io::Error) -> String {
    use std::os::unix::fs::PermissionsExt;
    let shown = program.display();
    if !program.is_absolute() {
        // Callers resolve a bare name in the absolute PATH entries; one still bare was not found.
        return format!(
            "command not found: '{shown}' is not in any absolute PATH entry (empty and relative entries \
             are skipped); write the command as an absolute path"
        );
    }
    match std::fs::metadata(program) {
        Err(_) if error.kind() == io::ErrorKind::NotFound => {
            format!("command not found: {shown} does not exist")
        }
        Ok(meta) if meta.is_dir() => format!("cannot run {shown}: it is a directory, not an executable"),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => {
            format!("cannot run {shown}: it is not executable (run `chmod +x {shown}`)")
        }
        Ok(_) if error.kind() == io::ErrorKind::NotFound => {
            format!("cannot run {shown}: the interpreter on its #! line was not found")
        }
        Ok(_) if error.raw_os_error() == Some(libc::ENOEXEC) => format!(
            "cannot run {shown}: not a program this system can run (a script needs a first line such as #!/bin/sh)"
        ),
        _ => format!("cannot run {shown}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    use super::*;

    fn quiet<'a>(program: &'a Path, cwd: &'a Path) -> SpawnSpec<'a> {
        SpawnSpec {
            program,
            args: &[],
            cwd,
            env: &[],
            stdin: Input::Null,
            stdout: Output::Null,
            stderr: Output::Null,
            sandbox: None,
        }
    }

    #[tokio::test]
    async fn a_program_not_given_as_an_absolute_path_is_refused_and_said_so() {
        let program = Path::new("sh");
        let error = spawn(&quiet(program, Path::new("/"))).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            describe_spawn_error(program, &error),
            "command not found: 'sh' is not in any absolute PATH entry (empty and relative entries are \
             skipped); write the command as an absolute path"
        );
    }

    /// A script that another thread still holds open for writing cannot be executed (ETXTBSY)
    /// until it is closed: the spawn tries again for a while instead of failing.
    #[tokio::test]
    async fn a_program_still_open_for_writing_is_tried_again_until_it_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hook");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&path)
            .unwrap();
        file.write_all(b"#!/bin/sh\nexit 3\n").unwrap();
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(file);
        });
        let started = tokio::time::timeout(Duration::from_secs(30), spawn(&quiet(&path, dir.path())))
            .await
            .expect("the spawn ended within the test deadline");
        closer.join().unwrap();
        let mut child = started.expect("tried again past ETXTBSY");
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the child exited within the test deadline")
            .unwrap();
        assert_eq!(status.code(), Some(3));
    }

    /// Runs `program` unconfined through the fork (`fork_path`) or the shared-memory child, with a
    /// pipe on stdin (closed at once) and stdout; returns what it printed.
    async fn output_through(
        fork_path: bool,
        program: &str,
        args: &[&str],
        env: &[(OsString, OsString)],
        cwd: &Path,
    ) -> String {
        use tokio::io::AsyncReadExt;
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let spec = SpawnSpec {
            program: Path::new(program),
            args: &args,
            cwd,
            env,
            stdin: Input::Piped,
            stdout: Output::Piped,
            stderr: Output::Null,
            sandbox: None,
        };
        let started = if fork_path {
            fork(&spec, None).map_err(|failed| failed.error)
        } else {
            super::super::vfork::spawn_unconfined(&spec)
        };
        let mut child = Child::watch(started.unwrap()).unwrap();
        drop(child.stdin.take());
        let mut out = String::new();
        let mut stdout = child.stdout.take().unwrap();
        tokio::time::timeout(Duration::from_secs(30), stdout.read_to_string(&mut out))
            .await
            .expect("the output ended within the test deadline")
            .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("the child exited within the test deadline")
            .unwrap();
        assert!(status.success(), "{program}: {status:?}");
        out
    }

    /// The fork (confined children, and every child under `ELPH_SPAWN=fork`) and the shared-memory
    /// child (unconfined ones) start a program in the same state, as the kernel shows it: a session
    /// and group of its own with no terminal, no signal blocked and the same ones ignored, exactly
    /// the environment given (one entry per name), the working directory, stdin a pipe, and the
    /// same descriptors (Elph's own are close-on-exec; what the test runner leaves open is
    /// inherited on both paths alike).
    #[tokio::test]
    async fn both_spawn_paths_start_a_program_in_the_same_state() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        let env: Vec<(OsString, OsString)> = [("B", "1"), ("A", "2"), ("B", "3")]
            .map(|(name, value)| (name.into(), value.into()))
            .to_vec();
        let mut seen = Vec::new();
        for fork_path in [true, false] {
            let path = if fork_path { "fork" } else { "shared memory" };
            let stat = output_through(fork_path, "/bin/cat", &["/proc/self/stat"], &env, &cwd).await;
            let pid = stat.split(' ').next().unwrap().to_string();
            let after_name: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
            // state, ppid, pgrp, session, tty_nr
            assert_eq!(after_name[2], pid, "{path}: its own process group");
            assert_eq!(after_name[3], pid, "{path}: its own session");
            assert_eq!(after_name[4], "0", "{path}: no controlling terminal");
            let status = output_through(fork_path, "/bin/cat", &["/proc/self/status"], &env, &cwd).await;
            let signals: Vec<String> = status
                .lines()
                .filter(|line| {
                    line.starts_with("SigBlk") || line.starts_with("SigIgn") || line.starts_with("NoNewPrivs")
                })
                .map(str::to_string)
                .collect();
            assert!(
                signals.contains(&"SigBlk:\t0000000000000000".to_string()),
                "{path}: {signals:?}"
            );
            let environ = output_through(fork_path, "/usr/bin/env", &[], &env, &cwd).await;
            assert_eq!(environ, "A=2\nB=3\n", "{path}");
            let pwd = output_through(fork_path, "/bin/pwd", &["-P"], &env, &cwd).await;
            assert_eq!(pwd.trim_end(), cwd.to_str().unwrap(), "{path}");
            let stdin = output_through(fork_path, "/bin/readlink", &["/proc/self/fd/0"], &env, &cwd).await;
            assert!(stdin.starts_with("pipe:"), "{path}: {stdin}");
            let fds = output_through(fork_path, "/bin/ls", &["/proc/self/fd"], &env, &cwd).await;
            seen.push((signals, fds));
        }
        assert_eq!(seen[0], seen[1], "the same signals and descriptors on both paths");
    }
}
