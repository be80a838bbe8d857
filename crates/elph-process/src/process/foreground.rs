//! `elph sandbox -- CMD`: one confined command with the terminal's stdin, stdout and stderr,
//! waited for in the foreground.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::process::ExitStatus;

use nix::sys::signal::Signal;
use tokio::signal::unix::{SignalKind, signal};

use super::spawn::{Input, Output, SpawnSpec, spawn};
use crate::sandbox::SandboxPolicy;

/// Runs `program` confined by `policy` with Elph's own stdin, stdout and stderr, and waits for it.
///
/// Like every child, it leads a session of its own and so has no controlling terminal: it can
/// read and write the terminal through the descriptors it inherits, but it cannot take the
/// terminal over (open `/dev/tty`, push keys into its input with `TIOCSTI`, change its foreground
/// group). The terminal's signals reach Elph's group, not the command's, so Elph passes SIGINT,
/// SIGTERM, SIGHUP and SIGQUIT on to the command's whole group.
pub async fn run_in_foreground(
    program: &Path,
    args: &[&OsStr],
    cwd: &Path,
    env: &[(OsString, OsString)],
    policy: &SandboxPolicy,
) -> io::Result<ExitStatus> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let mut quit = signal(SignalKind::quit())?;
    let mut child = spawn(&SpawnSpec {
        program,
        args,
        cwd,
        env,
        stdin: Input::Inherit,
        stdout: Output::Inherit,
        stderr: Output::Inherit,
        sandbox: Some(policy),
    })
    .await?;
    let group = child.group();
    loop {
        let passed_on = tokio::select! {
            status = child.wait() => return status,
            Some(()) = interrupt.recv() => Signal::SIGINT,
            Some(()) = terminate.recv() => Signal::SIGTERM,
            Some(()) = hangup.recv() => Signal::SIGHUP,
            Some(()) = quit.recv() => Signal::SIGQUIT,
        };
        group.signal(passed_on);
    }
}
