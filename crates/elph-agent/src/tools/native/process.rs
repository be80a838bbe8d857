//! Run one shell command as a bounded child process, for `shell_exec`.
//!
//! `/bin/sh -c COMMAND` runs in the project folder, in a process group of its own, with stdin
//! closed, confined by the session's sandbox policy, with the environment its shell environment
//! policy leaves (and `TMPDIR` set to the session's temp dir). stdout and stderr are read concurrently until they close;
//! of each, the first and last `HALF_CAP` bytes are kept and the middle is read and discarded, so
//! memory stays bounded however much a command prints. The group is killed with
//! `killpg(SIGKILL)`:
//!
//! - when the timeout expires;
//! - when the direct child has exited but something it started in the background still holds
//!   stdout or stderr open `EXIT_GRACE` later (the call never waits for pipe EOF alone);
//! - when the future is dropped (a cancelled call), by the guard that owns the group.
//!
//! Background processes that let go of the pipes (`server > log 2>&1 &`) are left running when
//! the command finishes normally. The mechanics are `elph_process::process`, shared with the hook host.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::Path;
use std::time::Duration;

use elph_process::process::{self, CaptureMode, EXIT_GRACE, Leftovers, RunOutput, RunSpec, Stdin};
use elph_process::sandbox::SandboxPolicy;
use elph_process::shell_env::ShellEnvPolicy;

/// The bytes kept from the start, and from the end, of each stream.
pub(crate) const HALF_CAP: usize = 32 * 1024;

/// How one command is confined and what it inherits.
pub(crate) struct ShellPolicy<'a> {
    pub sandbox: &'a SandboxPolicy,
    pub env: &'a ShellEnvPolicy,
}

/// Runs `/bin/sh -c command` in `cwd` within `timeout`. Never fails: see the fields of the result.
/// Dropping the future kills the command's process group.
pub async fn run(command: &str, cwd: &Path, timeout: Duration, policy: ShellPolicy<'_>) -> RunOutput {
    let env = environment(&policy);
    process::run(&RunSpec {
        program: Path::new("/bin/sh"),
        args: &[OsStr::new("-c"), OsStr::new(command)],
        cwd,
        env: &env,
        stdin: Stdin::Null,
        stdout: CaptureMode::HeadTail(HALF_CAP, HALF_CAP),
        stderr: CaptureMode::HeadTail(HALF_CAP, HALF_CAP),
        timeout,
        grace: EXIT_GRACE,
        leftovers: Leftovers::Leave,
        sandbox: Some(policy.sandbox),
    })
    .await
}

/// Elph's environment filtered by the policy, with `TMPDIR` pointing at the session's temp dir
/// (the one temp dir a sandboxed command may write).
pub fn environment(policy: &ShellPolicy<'_>) -> Vec<(OsString, OsString)> {
    shell_environment(policy.sandbox, policy.env)
}

/// The environment of a shell command under these policies.
pub fn shell_environment(sandbox: &SandboxPolicy, env_policy: &ShellEnvPolicy) -> Vec<(OsString, OsString)> {
    let mut env = env_policy.apply_to_current();
    // Variables that only point at a socket the sandbox cannot reach (TMUX, SSH_AUTH_SOCK, …).
    env.retain(|(name, value)| {
        elph_process::sandbox::socket_variable(sandbox, &name.to_string_lossy(), &value.to_string_lossy())
            .is_none()
    });
    if let Some(dir) = &sandbox.temp_dir {
        env.retain(|(name, _)| name != "TMPDIR");
        env.push(("TMPDIR".into(), dir.clone().into_os_string()));
    }
    // Nothing retries a connection the sandbox refuses; the user's own value wins.
    for (name, value) in sandbox.offline_environment() {
        if !env.iter().any(|(known, _)| *known == name) {
            env.push((name, value));
        }
    }
    let proxy = sandbox.proxy_environment();
    if !proxy.is_empty() {
        // Every client goes through the session's proxy, `localhost` included: no NO_PROXY.
        env.retain(|(name, _)| {
            !elph_process::sandbox::PROXY_VARIABLES
                .iter()
                .any(|variable| name == *variable)
        });
        env.extend(proxy);
    }
    env
}

/// Why `/bin/sh` could not be started in `cwd`.
pub fn describe_spawn_error(cwd: &Path, error: &io::Error) -> String {
    format!("cannot run /bin/sh in {}: {error}", cwd.display())
}
