//! A stdio MCP server as a child process: started in PROJECT_DIR through the one spawn path
//! (`elph_process::process::spawn`: a session and process group of its own, so no controlling
//! terminal — a server can neither draw on the TUI's screen nor read its keys —, registered with
//! the orphan watcher), with an environment rebuilt from an allowlist (never the agent's API keys),
//! stderr kept as a short tail for error messages, and the exit watched so that a crash is noticed
//! even when something the server left behind keeps its stdout open.
//!
//! Stopping kills the whole group (`killpg`), so helpers the server started go with it; the
//! [`GroupKiller`] does that when it is dropped too.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use elph_process::process::{ChildStdin, ChildStdout, Input, Output, ProcessGroup, SpawnSpec};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

use crate::hooks::process::{allowlisted_environment, describe_spawn_error, signal_name};

/// How much of the server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// The environment of a stdio server: the allowlisted variables of `parent` that are set, then
/// `ELPH_PROJECT_DIR`, then the server's configured `env` (which may override any of them).
pub(crate) fn server_environment(
    parent: &dyn Fn(&str) -> Option<OsString>,
    project_dir: &Path,
    configured: &BTreeMap<String, String>,
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = allowlisted_environment(parent).into_iter().collect();
    env.insert("ELPH_PROJECT_DIR".into(), project_dir.as_os_str().to_owned());
    for (name, value) in configured {
        env.insert(name.into(), value.into());
    }
    env.into_iter().collect()
}

/// Kills a process group when dropped (or earlier, with [`GroupKiller::kill`]).
#[derive(Debug)]
pub(crate) struct GroupKiller {
    group: ProcessGroup,
}

impl GroupKiller {
    pub(crate) fn pgid(&self) -> i32 {
        self.group.pgid()
    }

    /// SIGKILL to every process of the group; a group that is already gone is not an error.
    pub(crate) fn kill(&self) {
        self.group.kill();
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last bytes a server wrote to stderr.
#[derive(Clone, Debug)]
pub(crate) struct StderrTail {
    bytes: Arc<Mutex<Vec<u8>>>,
    /// `true` once the reader saw EOF (or is gone).
    closed: watch::Receiver<bool>,
}

impl Default for StderrTail {
    /// A tail that nothing writes to (a server without a process).
    fn default() -> Self {
        StderrTail {
            bytes: Arc::default(),
            closed: watch::channel(true).1,
        }
    }
}

impl StderrTail {
    /// Waits, at most `limit`, until the server's stderr is closed, so that what a crashed
    /// server wrote last is in the tail (a helper that keeps the pipe open cannot hold this up).
    pub(crate) async fn settle(&self, limit: Duration) {
        let mut closed = self.closed.clone();
        let _ = tokio::time::timeout(limit, closed.wait_for(|closed| *closed)).await;
    }

    fn push(&self, chunk: &[u8]) {
        let mut tail = self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        tail.extend_from_slice(chunk);
        if tail.len() > STDERR_TAIL {
            let cut = tail.len() - STDERR_TAIL;
            tail.drain(..cut);
        }
    }

    /// The tail as text, trimmed; empty when the server wrote nothing.
    pub(crate) fn text(&self) -> String {
        let tail = self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        String::from_utf8_lossy(&tail).trim().to_string()
    }
}

/// A running stdio server: its pipes (until the client takes them), its group, its exit.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub group: GroupKiller,
    pub stderr: StderrTail,
    /// `Some(description)` once the direct child has exited ("exited with status 3").
    pub exit: watch::Receiver<Option<String>>,
}

impl ServerProcess {
    /// Starts `program` with `args` in `cwd` with exactly `env`. Must run inside a tokio runtime:
    /// the exit watcher and the stderr reader are tasks of it.
    pub(crate) async fn spawn(
        program: &Path,
        args: &[String],
        cwd: &Path,
        env: &[(OsString, OsString)],
    ) -> Result<ServerProcess, String> {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let mut child = elph_process::process::spawn(&SpawnSpec {
            program,
            args: &args,
            cwd,
            env,
            stdin: Input::Piped,
            stdout: Output::Piped,
            stderr: Output::Piped,
            sandbox: None,
        })
        .await
        .map_err(|error| describe_spawn_error(program, &error))?;
        let group = GroupKiller { group: child.group() };
        let (closed_tx, closed) = watch::channel(false);
        let stderr = StderrTail {
            bytes: Arc::default(),
            closed,
        };
        if let Some(mut pipe) = child.stderr.take() {
            let tail = stderr.clone();
            tokio::spawn(async move {
                let mut chunk = [0u8; 1024];
                while let Ok(read) = pipe.read(&mut chunk).await {
                    if read == 0 {
                        break;
                    }
                    tail.push(&chunk[..read]);
                }
                let _ = closed_tx.send(true);
            });
        }
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let description = match child.wait().await {
                Ok(status) => describe_status(status),
                Err(error) => format!("could not be waited for: {error}"),
            };
            let _ = exit_tx.send(Some(description));
        });
        Ok(ServerProcess {
            stdin,
            stdout,
            group,
            stderr,
            exit,
        })
    }
}

fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by {}", signal_name(signal)),
        _ => format!("ended ({status})"),
    }
}

/// Waits until `exit` says the process exited, and returns how.
pub(crate) async fn exited(mut exit: watch::Receiver<Option<String>>) -> String {
    loop {
        if let Some(description) = exit.borrow_and_update().clone() {
            return description;
        }
        if exit.changed().await.is_err() {
            return exit.borrow().clone().unwrap_or_else(|| "ended".to_string());
        }
    }
}

#[cfg(test)]
#[expect(
    clippy::string_slice,
    reason = "test code: a cut inside a character fails the test loudly"
)]
mod tests {
    use nix::sys::signal::killpg;
    use nix::unistd::Pid;

    use super::*;

    #[test]
    fn environment_is_the_allowlist_plus_project_and_configured_variables() {
        let parent = |name: &str| -> Option<OsString> {
            match name {
                "HOME" => Some("/home/u".into()),
                "PATH" => Some("/usr/bin".into()),
                "OPENAI_API_KEY" => Some("sk-secret".into()),
                _ => None,
            }
        };
        let configured = BTreeMap::from([
            ("TOKEN".to_string(), "t".to_string()),
            ("PATH".to_string(), "/opt".to_string()),
        ]);
        let env = server_environment(&parent, Path::new("/p"), &configured);
        let names: Vec<&str> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert_eq!(names, ["ELPH_PROJECT_DIR", "HOME", "PATH", "TOKEN"]);
        assert!(
            env.iter().any(|(k, v)| k == "PATH" && v == "/opt"),
            "configured wins"
        );
        assert!(!env.iter().any(|(_, v)| v == "sk-secret"));
    }

    #[tokio::test]
    async fn stderr_tail_exit_and_group_kill() {
        let script = "echo starting >&2; sleep 30 & wait";
        let process = ServerProcess::spawn(
            Path::new("/bin/sh"),
            &["-c".to_string(), script.to_string()],
            Path::new("/"),
            &[("PATH".into(), "/usr/bin:/bin".into())],
        )
        .await
        .unwrap();
        let pgid = process.group.pgid();
        // stderr is read as it comes: wait for it (a loaded machine may start the shell late).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while process.stderr.text().is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(process.stderr.text(), "starting");
        process.stderr.settle(Duration::from_millis(50)).await;
        assert!(process.exit.borrow().is_none());
        process.group.kill();
        let how = tokio::time::timeout(Duration::from_secs(10), exited(process.exit.clone()))
            .await
            .expect("the kill ends the process");
        assert_eq!(how, "was killed by SIGKILL");
        // The backgrounded `sleep` was in the group too (killed processes may take a while to die
        // on a loaded machine; this returns as soon as they have).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while killpg(Pid::from_raw(pgid), None).is_ok() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let alive = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .filter(|stat| {
                let rest = &stat[stat.rfind(')').unwrap() + 2..];
                let fields: Vec<&str> = rest.split_whitespace().collect();
                fields[2] == pgid.to_string() && fields[0] != "Z"
            })
            .count();
        assert_eq!(alive, 0, "nothing of the group is left");
    }

    #[tokio::test]
    async fn a_missing_program_is_a_clear_error() {
        let error = ServerProcess::spawn(Path::new("/no/such/server"), &[], Path::new("/"), &[])
            .await
            .unwrap_err();
        assert!(error.contains("/no/such/server does not exist"), "{error}");
    }
}
