//! Run one hook as a bounded child process (docs/hooks.md, "The protocol" and "The environment of a hook").
//!
//! The command is executed directly (never through a shell) with its literal args, in PROJECT_DIR,
//! in a new process group, with an environment rebuilt from an allowlist. The payload is written to
//! stdin (a hook that never reads it is not an error); stdout and stderr are read concurrently and
//! capped; the run is bounded by the timeout. The bounds are enforced on the whole process group
//! with `killpg`:
//!
//! - on timeout, and when stdout or stderr passes its cap;
//! - a short grace after the direct child exits, if something it left behind still holds a pipe
//!   open (the run never waits for pipe EOF alone);
//! - when the run ends, whatever is left of the group is killed, so nothing a hook started outlives
//!   it (a hook that wants to leave a daemon behind must start it in a session of its own);
//! - when the future is dropped (a cancelled turn), by the guard that owns the group.
//!
//! The mechanics are `elph_process::process`, the runner `shell_exec` shares; this module is the hook
//! policy on top (environment, caps, `Leftovers::Kill`) and the words for what went wrong.
//!
//! A failure here is data: `run` never returns an error, it returns a `ProcessOutput` that says
//! what happened.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::time::Duration;

use elph_agent::hooks::limits::{MAX_DIAGNOSTIC_STDERR_BYTES, MAX_STDERR_BYTES, MAX_STDOUT_BYTES};
use elph_process::process::{self as bounded, CaptureMode, Leftovers, RunSpec, Stdin, WaitError};
use nix::sys::signal::Signal;

/// How long the pipes may stay open after the direct child exited before the group is killed.
pub const EXIT_GRACE: Duration = bounded::EXIT_GRACE;

/// Variables a hook inherits from the agent when they are set; nothing else is passed on.
pub const ENV_ALLOWLIST: &[&str] = &[
    "HOME",
    "PATH",
    "TMPDIR",
    "TEMP",
    "TMP",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "TZ",
    "USERPROFILE",
    "SystemRoot",
    "WINDIR",
];

/// The variables Elph sets for every hook, whatever its `env` says.
const ELPH_VARS: [&str; 3] = ["ELPH_HOOK_ID", "ELPH_SESSION_ID", "ELPH_PROJECT_DIR"];

/// The herdr integration's variables, passed on when set.
pub const HERDR_VARS: &[&str] = &[
    "HERDR_ENV",
    "HERDR_PANE_ID",
    "HERDR_SOCKET_PATH",
    "HERDR_BIN_PATH",
];

/// The variables of `parent` every child Elph starts outside the shell gets (hooks, MCP
/// servers): the allowlist, the CA and proxy variables (a proxy URL with a password left out).
pub(crate) fn allowlisted_environment(
    parent: &dyn Fn(&str) -> Option<OsString>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = ENV_ALLOWLIST
        .iter()
        .filter_map(|name| parent(name).map(|value| (OsString::from(name), value)))
        .collect();
    env.extend(elph_process::shell_env::ca_and_proxy_environment(parent));
    env
}

/// The whole environment of a hook: the allowlisted variables of `parent` that are set (see
/// [`allowlisted_environment`], and Herdr's), then the hook's own `env` (`configured`, already
/// expanded), then `ELPH_HOOK_ID`, `ELPH_SESSION_ID` (when `session_id` is not empty) and
/// `ELPH_PROJECT_DIR`, which a hook's `env` cannot replace.
pub(crate) fn hook_environment(
    parent: &dyn Fn(&str) -> Option<OsString>,
    configured: &std::collections::BTreeMap<String, String>,
    hook_id: &str,
    session_id: &str,
    project_dir: &Path,
) -> Vec<(OsString, OsString)> {
    let mut env = allowlisted_environment(parent);
    env.extend(
        HERDR_VARS
            .iter()
            .filter_map(|name| parent(name).map(|value| (OsString::from(name), value))),
    );
    for (name, value) in configured {
        env.retain(|(known, _)| known != name.as_str());
        env.push((name.into(), value.into()));
    }
    env.retain(|(name, _)| !ELPH_VARS.iter().any(|elph| name == *elph));
    env.push(("ELPH_HOOK_ID".into(), hook_id.into()));
    if !session_id.is_empty() {
        env.push(("ELPH_SESSION_ID".into(), session_id.into()));
    }
    env.push(("ELPH_PROJECT_DIR".into(), project_dir.as_os_str().to_owned()));
    env
}

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct ProcessSpec<'a> {
    pub program: &'a Path,
    pub args: &'a [String],
    pub cwd: &'a Path,
    /// The complete environment (see `hook_environment`).
    pub env: &'a [(OsString, OsString)],
    /// Written to stdin, then stdin is closed.
    pub stdin: &'a [u8],
    pub timeout: Duration,
    /// The hook's confinement; `None` runs it unconfined.
    pub sandbox: Option<&'a elph_process::sandbox::SandboxPolicy>,
    /// The hook's stdout limit (`maxOutputBytes`).
    pub(crate) stdout_cap: usize,
}

/// Which output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }

    pub fn cap(self) -> usize {
        match self {
            Stream::Stdout => MAX_STDOUT_BYTES,
            Stream::Stderr => MAX_STDERR_BYTES,
        }
    }
}

/// Why a run ended, most telling first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The command could not be started; the text says why and what to do.
    SpawnFailed(String),
    /// A stream passed its cap and the group was killed.
    OutputLimit(Stream),
    /// The timeout expired and the group was killed.
    TimedOut,
    /// The direct child was killed by this signal.
    Signalled(i32),
    /// The direct child exited with this code.
    Exited(i32),
    /// Waiting for the child failed (should not happen), or it could not be reaped after a kill.
    Unknown(String),
}

/// Everything that happened to one run. Output beyond the caps was never kept.
#[derive(Clone, Debug)]
pub struct ProcessOutput {
    pub spawn_error: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub overflow: Option<Stream>,
    /// Why the child's status is unknown, when it is.
    pub wait_error: Option<String>,
    /// Up to the stdout cap.
    pub stdout: Vec<u8>,
    /// Up to the stderr cap.
    pub stderr: Vec<u8>,
    /// Bytes read from stdout (at most one read past the cap).
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub duration: Duration,
    /// When the direct child's exit was seen, from the start of the run.
    pub exited_after: Option<Duration>,
    /// The pipes were still open `EXIT_GRACE` after the direct child exited: something it left
    /// behind held them, and the group was killed.
    pub pipes_held_open: bool,
    /// The process group the hook ran in (its pid).
    pub pgid: Option<i32>,
}

impl ProcessOutput {
    /// A run in which no process produced anything (yet): the base for runs that never started
    /// or whose outcome comes from elsewhere.
    pub fn nothing(duration: Duration) -> Self {
        ProcessOutput {
            spawn_error: None,
            exit_code: None,
            signal: None,
            timed_out: false,
            overflow: None,
            wait_error: None,
            stdout: Vec::new(),
            stderr: Vec::new(),
            stdout_bytes: 0,
            stderr_bytes: 0,
            duration,
            exited_after: None,
            pipes_held_open: false,
            pgid: None,
        }
    }

    pub fn ending(&self) -> Ending {
        if let Some(error) = &self.spawn_error {
            return Ending::SpawnFailed(error.clone());
        }
        if let Some(stream) = self.overflow {
            return Ending::OutputLimit(stream);
        }
        if self.timed_out {
            return Ending::TimedOut;
        }
        if let Some(signal) = self.signal {
            return Ending::Signalled(signal);
        }
        if let Some(code) = self.exit_code {
            return Ending::Exited(code);
        }
        Ending::Unknown(
            self.wait_error
                .clone()
                .unwrap_or_else(|| WaitError::NotReaped.describe("the hook")),
        )
    }

    /// Whether the direct child exited 0 and no bound was hit.
    pub fn succeeded(&self) -> bool {
        self.ending() == Ending::Exited(0)
    }

    /// Up to 1 KiB of the end of stderr, as text, trimmed.
    pub fn stderr_tail(&self) -> String {
        tail(&self.stderr, MAX_DIAGNOSTIC_STDERR_BYTES)
    }
}

/// The last `max` bytes of `bytes` as (lossy) text, starting on a character boundary, trimmed.
pub fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text.get(start..).unwrap_or_default().trim_start().to_string()
}

/// Runs one hook to completion within its bounds. Never fails: see `ProcessOutput::ending`.
///
/// Dropping the future kills the hook's process group.
pub async fn run(spec: &ProcessSpec<'_>) -> ProcessOutput {
    let args: Vec<&OsStr> = spec.args.iter().map(OsStr::new).collect();
    let out = bounded::run(&RunSpec {
        program: spec.program,
        args: &args,
        cwd: spec.cwd,
        env: spec.env,
        stdin: Stdin::Bytes(spec.stdin),
        stdout: CaptureMode::KillPastCap(spec.stdout_cap),
        stderr: CaptureMode::KillPastCap(Stream::Stderr.cap()),
        timeout: spec.timeout,
        grace: EXIT_GRACE,
        leftovers: Leftovers::Kill,
        sandbox: spec.sandbox,
    })
    .await;
    ProcessOutput {
        spawn_error: out
            .spawn_error
            .map(|error| describe_spawn_error(spec.program, &error)),
        exit_code: out.exit_code,
        signal: out.signal,
        timed_out: out.timed_out,
        overflow: out.overflow.map(|stream| match stream {
            bounded::Stream::Stdout => Stream::Stdout,
            bounded::Stream::Stderr => Stream::Stderr,
        }),
        wait_error: out.wait_error.map(|error| error.describe("the hook")),
        stdout_bytes: out.stdout.total(),
        stderr_bytes: out.stderr.total(),
        stdout: out.stdout.into_kept(),
        stderr: out.stderr.into_kept(),
        duration: out.duration,
        exited_after: out.exited_after,
        pipes_held_open: out.pipes_held_open,
        pgid: out.pgid,
    }
}

/// Says why `program` could not be started, and what to do about it (one wording for every
/// child Elph starts).
pub use elph_process::process::describe_spawn_error;

/// A signal's name, for messages.
pub(crate) fn signal_name(signal: i32) -> String {
    Signal::try_from(signal)
        .map(|signal| signal.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_is_the_allowlist_plus_elph_variables() {
        let parent = |name: &str| -> Option<OsString> {
            match name {
                "HOME" => Some("/home/u".into()),
                "PATH" => Some("/usr/bin".into()),
                "HERDR_PANE_ID" => Some("7".into()),
                "SSL_CERT_FILE" => Some("/etc/ca.pem".into()),
                "HTTPS_PROXY" => Some("http://u:pw@proxy:3128".into()),
                "OPENAI_API_KEY" => Some("sk-secret".into()),
                _ => None,
            }
        };
        let none = std::collections::BTreeMap::new();
        let env = hook_environment(&parent, &none, "audit", "s-1", Path::new("/p"));
        let names: Vec<_> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "HOME",
                "PATH",
                "SSL_CERT_FILE",
                "HERDR_PANE_ID",
                "ELPH_HOOK_ID",
                "ELPH_SESSION_ID",
                "ELPH_PROJECT_DIR"
            ]
        );
        let own: std::collections::BTreeMap<String, String> = [
            ("PATH", "/opt/bin"),
            ("LOG_LEVEL", "debug"),
            ("ELPH_HOOK_ID", "forged"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let env = hook_environment(&parent, &own, "audit", "s-1", Path::new("/p"));
        let value = |name: &str| {
            env.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_str().unwrap())
        };
        assert_eq!(value("PATH"), Some("/opt/bin"));
        assert_eq!(value("LOG_LEVEL"), Some("debug"));
        assert_eq!(value("ELPH_HOOK_ID"), Some("audit"));
        assert_eq!(env.iter().filter(|(k, _)| k == "ELPH_HOOK_ID").count(), 1);
        let without_session = hook_environment(&parent, &none, "audit", "", Path::new("/p"));
        assert!(!without_session.iter().any(|(k, _)| k == "ELPH_SESSION_ID"));
    }

    #[test]
    fn tail_keeps_the_end_on_a_char_boundary() {
        assert_eq!(tail(b"hello\n", 1024), "hello");
        let text = "é".repeat(600);
        let t = tail(text.as_bytes(), 1024);
        assert!(t.len() <= 1024 && t.chars().all(|c| c == 'é'));
        assert_eq!(tail(b"abcdef", 3), "def");
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
    }
}
