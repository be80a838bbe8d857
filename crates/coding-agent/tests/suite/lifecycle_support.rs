//! Shared by the lifecycle tests: `elph run` and `elph acp` started as real processes that a test
//! signals, their output collected, and the processes they started found in /proc.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::FakeModelServer;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use super::run_e2e::elph;

/// A running `elph`, its output collected as it comes.
pub struct Running {
    pub child: Child,
    pub pid: i32,
    stdout: mpsc::UnboundedReceiver<String>,
    pub lines: Vec<String>,
    stderr: tokio::task::JoinHandle<String>,
    pub stdin: Option<ChildStdin>,
}

impl Running {
    /// `elph ARGS` against the OpenAI-wire `server`, with stdin piped when `stdin` is true.
    pub fn start(env: &TestEnv, server: &FakeModelServer, args: &[&str], stdin: bool) -> Running {
        Running::start_with(env, server, args, &[], stdin)
    }

    /// `start` with extra environment variables.
    pub fn start_with(
        env: &TestEnv,
        server: &FakeModelServer,
        args: &[&str],
        vars: &[(&str, &str)],
        stdin: bool,
    ) -> Running {
        let mut command = tokio::process::Command::from(env.command(&elph()));
        command
            .envs(vars.iter().copied())
            .env("OPENAI_API_KEY", "sk-test")
            .env("OPENAI_BASE_URL", server.base_url())
            .args(args)
            .stdin(if stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn elph");
        let pid = child.id().expect("pid") as i32;
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text).await;
            text
        });
        let stdin = child.stdin.take();
        Running {
            child,
            pid,
            stdout: rx,
            lines: Vec::new(),
            stderr,
            stdin,
        }
    }

    /// Sends one JSON-RPC frame on stdin.
    pub async fn send(&mut self, frame: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is piped");
        stdin
            .write_all(format!("{frame}\n").as_bytes())
            .await
            .expect("write to elph");
        stdin.flush().await.expect("flush");
    }

    /// Sends raw bytes on stdin.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is piped");
        stdin.write_all(bytes).await.expect("write to elph");
        stdin.flush().await.expect("flush");
    }

    /// Waits for a stdout line that is a JSON object matching `wanted`, and returns it.
    pub async fn wait_json(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let line = tokio::time::timeout_at(deadline, self.stdout.recv())
                .await
                .unwrap_or_else(|_| panic!("waited 30 s for {what}; lines so far: {:#?}", self.lines))
                .unwrap_or_else(|| panic!("stdout closed before {what}; lines: {:#?}", self.lines));
            self.lines.push(line.clone());
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && wanted(&value)
            {
                return value;
            }
        }
    }

    /// Waits for the exit (under a deadline), collects the rest of the output, and returns the
    /// exit code (or `None` for a signal) with stderr.
    pub async fn finish(mut self) -> (Option<i32>, Vec<String>, String) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("elph exited within 30 s")
            .expect("wait for elph");
        // elph has exited: its output ends as soon as the readers have drained the pipes. The
        // waits are generous because a loaded machine may schedule the readers late.
        while let Ok(Some(line)) = tokio::time::timeout(Duration::from_secs(20), self.stdout.recv()).await {
            self.lines.push(line);
        }
        let stderr = tokio::time::timeout(Duration::from_secs(20), self.stderr)
            .await
            .map(|text| text.unwrap_or_default())
            .unwrap_or_default();
        (status.code(), self.lines, stderr)
    }
}

/// Waits until `path` holds at least `count` non-empty lines, and returns them as pids as this
/// test sees them (a sandboxed command records itself in its own PID namespace:
/// `test_support::hook_scripts::SELF_PID`).
pub async fn pids_in(path: &Path, count: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(test_support::hook_scripts::host_pid)
            .collect();
        if pids.len() >= count {
            return pids;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held {count} pids",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A shell command that records its own pid and a background `sleep`'s in `pid_file`, then waits
/// (each as `SELF_PID` records it: [`pids_in`] turns them into pids).
pub fn long_command(pid_file: &Path, seconds: u32) -> String {
    use test_support::hook_scripts::{LAST_JOB_PID, SELF_PID};
    format!(
        "sleep {seconds} & echo \"{LAST_JOB_PID}\" >> '{file}'; echo \"{SELF_PID}\" >> '{file}'; wait",
        file = pid_file.display()
    )
}

/// The JSON-RPC frames that open an ACP session in `cwd`: initialize, then session/new (id 2).
pub async fn acp_open_session(running: &mut Running, cwd: &Path) -> String {
    running
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}))
        .await;
    running.wait_json("the initialize answer", |v| v["id"] == 1).await;
    acp_new_session(running, cwd, 2).await
}

/// Sends `session/new` for `cwd` with request `id`; returns the session id.
pub async fn acp_new_session(running: &mut Running, cwd: &Path, id: u64) -> String {
    running
        .send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/new",
            "params": {"cwd": cwd, "mcpServers": []}}))
        .await;
    let opened = running
        .wait_json("the session/new answer", |v| v["id"] == id)
        .await;
    opened["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("session/new failed: {opened}"))
        .to_string()
}

/// Sends `session/prompt` (id 3) with `text`.
pub async fn acp_prompt(running: &mut Running, session: &str, text: &str) {
    running
        .send(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}}))
        .await;
}
