//! [`spawn`]: the one way a child of Elph starts (see the module's documentation for the steps).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use nix::errno::Errno;

use super::child::{self, Child};
use super::vfork;
use crate::sandbox::{Confinement, SandboxPolicy};

/// Attempts to spawn a file another thread still holds open for writing (ETXTBSY).
const SPAWN_ATTEMPTS: u32 = 6;

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

/// How the child is created; the steps before its program starts are the same either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnPath {
    /// `clone(CLONE_VM | CLONE_VFORK)`: nothing of Elph's address space is copied.
    Vfork,
    /// std's `fork` path (`Command` with a `pre_exec` step). `ELPH_SPAWN_PATH=fork` selects it.
    Fork,
}

const UNSET: u8 = 0;
static SPAWN_PATH: AtomicU8 = AtomicU8::new(UNSET);

/// Makes every later spawn of this process take `path` (a benchmark comparing the two).
pub fn use_spawn_path(path: SpawnPath) {
    SPAWN_PATH.store(path as u8 + 1, Ordering::Relaxed);
}

fn spawn_path() -> SpawnPath {
    match SPAWN_PATH.load(Ordering::Relaxed) {
        UNSET => {
            let path = if std::env::var_os("ELPH_SPAWN_PATH").is_some_and(|value| value == "fork") {
                SpawnPath::Fork
            } else {
                SpawnPath::Vfork
            };
            use_spawn_path(path);
            path
        }
        chosen if chosen == SpawnPath::Fork as u8 + 1 => SpawnPath::Fork,
        _ => SpawnPath::Vfork,
    }
}

/// What the child does before exec, in this order (`Step` names the one that failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Stdio,
    Cwd,
    Session,
    Confine,
    Exec,
}

/// Why creating a child failed: the step and the error.
#[derive(Debug)]
pub(super) struct SpawnError {
    pub step: Step,
    pub error: io::Error,
}

impl SpawnError {
    pub(super) fn parent(error: io::Error) -> Self {
        SpawnError {
            step: Step::Exec,
            error,
        }
    }
}

/// A child just created and exec'd: its pid and the parent's ends of its pipes.
pub(super) struct Started {
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
        // Prepared for each attempt: the child of a failed one may have used it.
        let confinement = spec
            .sandbox
            .map(|policy| Confinement::prepare(policy, spec.cwd))
            .transpose()
            .map(Option::flatten)
            .map_err(io::Error::other)?;
        let confined = confinement.is_some();
        let created = match spawn_path() {
            SpawnPath::Vfork => vfork::spawn(vfork::Request {
                program: spec.program,
                args: spec.args,
                cwd: spec.cwd,
                env: spec.env,
                stdin: spec.stdin,
                stdout: spec.stdout,
                stderr: spec.stderr,
                watcher: crate::orphans::registration_fd(),
                confinement,
            }),
            SpawnPath::Fork => fork(spec, confinement),
        };
        match created {
            Ok(started) => return Child::watch(started),
            // A file that another thread of this process still has open for writing (a script
            // that was just written, while another thread forked) cannot be executed for a moment.
            Err(failed)
                if failed.error.raw_os_error() == Some(Errno::ETXTBSY as i32) && attempt < SPAWN_ATTEMPTS =>
            {
                tokio::time::sleep(Duration::from_millis(5 << attempt)).await;
                attempt += 1;
            }
            Err(failed) if confined && failed.step == Step::Confine => {
                return Err(io::Error::new(
                    failed.error.kind(),
                    format!("{} (while confining it in the sandbox)", failed.error),
                ));
            }
            Err(failed) => return Err(failed.error),
        }
    }
}

/// The child through std's fork path: the same steps, in the same order, in a `pre_exec` closure.
fn fork(spec: &SpawnSpec<'_>, confinement: Option<Confinement>) -> Result<super::spawn::Started, SpawnError> {
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
    let confined = confinement.is_some();
    let watcher = crate::orphans::registration_fd();
    let mut confinement = confinement;
    in_child_before_exec(&mut command, move || {
        nix::unistd::setsid()?;
        if let Some(fd) = watcher {
            crate::orphans::register_self(fd);
        }
        if let Some(confinement) = &mut confinement {
            confinement.apply_in_child()?;
        }
        Ok(())
    });
    let mut child = command.spawn().map_err(|error| SpawnError {
        // std passes on only the errno of a failed step; the confinement's failures are EPERM,
        // which exec(2) of a program that exists almost never returns.
        step: if confined && error.raw_os_error() == Some(libc::EPERM) {
            Step::Confine
        } else {
            Step::Exec
        },
        error,
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
    // bytes, call landlock_restrict_self(2) and seccomp(2)); none allocates or takes a lock.
    unsafe {
        command.pre_exec(setup);
    }
}

/// Starts `/bin/sh -c 'read _'` (it waits on a pipe that stays open) with `setup` applied in the
/// child before exec: the holder of a namespace the caller then opens through /proc. It must fork
/// (a child sharing Elph's memory cannot make a user namespace), and it is the sandbox's own
/// helper, never a command of the user's: it lives a few milliseconds and is killed and reaped by
/// its caller.
pub(crate) fn spawn_holder<F>(setup: F) -> io::Result<std::process::Child>
where
    F: FnMut() -> io::Result<()> + Send + Sync + 'static,
{
    let mut command = std::process::Command::new("/bin/sh");
    command
        .args(["-c", "read _"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    in_child_before_exec(&mut command, setup);
    command.spawn()
}

/// Runs `/bin/sh -c :` with `setup` applied in the child before exec; true if it exits 0. For
/// probing what the kernel lets a child do (a mount namespace) without trying it in this
/// multi-threaded process.
pub(crate) fn probe_in_child<F>(setup: F) -> bool
where
    F: FnMut() -> io::Result<()> + Send + Sync + 'static,
{
    let mut command = std::process::Command::new("/bin/sh");
    command
        .args(["-c", ":"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    in_child_before_exec(&mut command, setup);
    command.status().is_ok_and(|status| status.success())
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
