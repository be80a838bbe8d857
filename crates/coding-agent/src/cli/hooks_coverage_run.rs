//! Runs one path of `elph hooks coverage`: lays out its scratch folders (HOME, CONFIG_DIR,
//! DATA_DIR, TMPDIR and a project trusted with `elph trust`), then drives one session of this very
//! binary through the path's front end — `elph run --output-format stream-json` (and, for the
//! automatic compaction, `elph run --continue` of the same session), or `elph acp` over stdio
//! with a small JSON-RPC client that approves what it is asked — under a deadline.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use elph_agent::hooks::HookEvent;
use elph_process::process::{Child, ChildStdin, Input, Output, SpawnSpec};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::hooks_coverage_paths::{
    COMPACT_COMMAND, Compaction, FrontEnd, MCP_SERVER, NEXT_PROMPT, PROMPT, PathSpec, project_files,
};

/// How long one path's session may take before it is killed and the path fails. Generous: a
/// debug build on a loaded CI machine starts a hook process in tens of milliseconds, and a path
/// runs about twenty.
pub(super) const PATH_DEADLINE: Duration = Duration::from_secs(120);

/// The folders of one path.
pub(super) struct Scratch {
    pub dir: PathBuf,
    pub home: PathBuf,
    pub config: PathBuf,
    pub data: PathBuf,
    pub tmp: PathBuf,
    pub project: PathBuf,
    /// Where the probe hooks write.
    pub log: PathBuf,
    pub script: PathBuf,
    /// The model of the `elph run --continue` of the automatic compaction path.
    pub continuation: PathBuf,
}

/// What the front end showed of a session.
#[derive(Debug, Default)]
pub(super) struct Session {
    /// Why the session itself went wrong (exit status, deadline, protocol), if it did.
    pub problems: Vec<String>,
    /// Whether the front end showed each tool call running, by call id.
    pub ran: BTreeMap<String, bool>,
    /// How many approvals the ACP client was asked for.
    pub permission_requests: usize,
    /// How many compactions the front end showed.
    pub compactions: usize,
}

impl Scratch {
    pub(super) fn new(root: &Path, id: &str) -> anyhow::Result<Self> {
        let dir = root.join(id);
        let scratch = Scratch {
            home: dir.join("home"),
            config: dir.join("config"),
            data: dir.join("data"),
            tmp: dir.join("tmp"),
            project: dir.join("project"),
            log: dir.join("heard.jsonl"),
            script: dir.join("script.json"),
            continuation: dir.join("continue.json"),
            dir,
        };
        for folder in [
            &scratch.home,
            &scratch.config,
            &scratch.data,
            &scratch.tmp,
            &scratch.project.join(".elph"),
        ] {
            std::fs::create_dir_all(folder).with_context(|| format!("cannot make {}", folder.display()))?;
        }
        Ok(scratch)
    }

    /// Writes the hooks, settings, project files and script of `spec`, and trusts the project.
    pub(super) async fn lay_out(&self, exe: &Path, spec: &PathSpec) -> anyhow::Result<()> {
        let probe = |role: &str| -> Value { json!(["hooks", "coverage-probe", role, self.log]) };
        // The guard is the user's (CONFIG_DIR) and runs first; the probes and the rewriter are the
        // project's: the rewrite comes after the guard has let the call through.
        write_json(
            &self.config.join("hooks.json"),
            &json!({"hooks": [{
                "id": "coverage-guard",
                "event": "preToolUse",
                "command": exe,
                "args": probe("guard"),
                "failClosed": true,
                "timeoutMs": 60000,
                "maxInputBytes": 16777216,
            }]}),
        )?;
        write_json(
            &self.config.join("settings.json"),
            &json!({"hooks": {"notifyTurnAfterMs": 0}}),
        )?;
        let mut hooks: Vec<Value> = HookEvent::ALL
            .into_iter()
            .map(|event| {
                json!({
                    "id": format!("probe-{}", event.as_str()),
                    "event": event.as_str(),
                    "command": exe,
                    "args": probe("probe"),
                    "timeoutMs": 60000,
                    "maxInputBytes": 16777216,
                })
            })
            .collect();
        hooks.push(json!({
            "id": "coverage-rewriter",
            "event": "preToolUse",
            "command": exe,
            "args": probe("rewriter"),
            "timeoutMs": 60000,
            "maxInputBytes": 16777216,
        }));
        write_json(&self.project.join(".elph/hooks.json"), &json!({"hooks": hooks}))?;
        if spec.mcp {
            write_json(
                &self.project.join(".elph/mcp.json"),
                &json!({"mcpServers": {MCP_SERVER: {
                    "command": exe,
                    "args": ["hooks", "coverage-mcp-server"],
                }}}),
            )?;
        }
        for (name, text) in project_files() {
            let path = self.project.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot make {}", parent.display()))?;
            }
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        }
        write_json(&self.script, &spec.script())?;
        if let Some(script) = spec.continuation_script() {
            write_json(&self.continuation, &script)?;
        }
        let mut trust = self.command(exe);
        trust.args.push("trust".into());
        trust.args.push(self.project.clone().into_os_string());
        let (mut child, stderr) = spawn_piped(&trust).await?;
        drop(child.stdin.take());
        let status = tokio::time::timeout(PATH_DEADLINE, child.wait())
            .await
            .context("elph trust did not end in time")?
            .context("cannot wait for elph trust")?;
        if !status.success() {
            let tail = stderr.await.unwrap_or_default();
            anyhow::bail!("elph trust of the scratch project failed ({status}): {tail}");
        }
        Ok(())
    }

    /// `exe` with this path's environment only: nothing of the user's config, data or trust.
    fn command(&self, exe: &Path) -> ElphCommand {
        let mut env: Vec<(OsString, OsString)> = vec![
            ("HOME".into(), self.home.clone().into_os_string()),
            ("ELPH_HOME".into(), self.config.clone().into_os_string()),
            ("ELPH_DATA_DIR".into(), self.data.clone().into_os_string()),
            ("TMPDIR".into(), self.tmp.clone().into_os_string()),
            (
                "PATH".into(),
                std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
            ),
        ];
        // What changes how Elph starts children or which protections it insists on, so the paths
        // run as this Elph would (CI runs with both).
        for name in ["LANG", "ELPH_SPAWN", "ELPH_REQUIRE_LANDLOCK", "ELPH_LOG"] {
            if let Some(value) = std::env::var_os(name) {
                env.push((name.into(), value));
            }
        }
        ElphCommand {
            program: exe.to_path_buf(),
            args: Vec::new(),
            env,
            cwd: self.project.clone(),
        }
    }

    /// Runs the path's session through its front end.
    pub(super) async fn drive(&self, exe: &Path, spec: &PathSpec) -> Session {
        let model = format!("scripted/{}", self.script.display());
        let mut session = Session::default();
        let result = match spec.front_end {
            FrontEnd::Headless => {
                let run = |model: &str, continued: bool, prompt: &str| {
                    let mut command = self.command(exe);
                    command.push_args(&["run", "--output-format", "stream-json", "--approval", "auto"]);
                    command.push_args(&["--sandbox", spec.sandbox, "--model", model]);
                    if continued {
                        command.push_args(&["--continue"]);
                    }
                    command.push_args(&[prompt]);
                    command
                };
                let first = run(&model, false, PROMPT);
                // The automatic compaction: the same session again, with a model whose window the
                // conversation already fills.
                let continued = (spec.compaction == Some(Compaction::Auto)).then(|| {
                    let model = format!("scripted/{}", self.continuation.display());
                    run(&model, true, NEXT_PROMPT)
                });
                let both = async {
                    headless(&first, &mut session).await?;
                    match &continued {
                        Some(command) if session.problems.is_empty() => headless(command, &mut session).await,
                        _ => Ok(()),
                    }
                };
                tokio::time::timeout(PATH_DEADLINE, both).await
            }
            FrontEnd::Acp => {
                let mut command = self.command(exe);
                command.push_args(&["acp", "--approval", "ask"]);
                command.push_args(&["--sandbox", spec.sandbox, "--model", &model]);
                // `/compact` needs a turn before the one it keeps.
                let prompts: &[&str] = match spec.compaction {
                    Some(Compaction::Manual) => &[PROMPT, NEXT_PROMPT, COMPACT_COMMAND],
                    _ => &[PROMPT],
                };
                tokio::time::timeout(PATH_DEADLINE, acp(&command, &self.project, prompts, &mut session)).await
            }
        };
        match result {
            Ok(Ok(())) => {}
            Ok(Err(error)) => session.problems.push(format!("{error:#}")),
            Err(_) => session.problems.push(format!(
                "the session did not end within {} s and was killed",
                PATH_DEADLINE.as_secs()
            )),
        }
        session
    }
}

fn write_json(path: &Path, value: &Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// One `elph` to start: what [`SpawnSpec`] borrows, owned.
struct ElphCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: PathBuf,
}

impl ElphCommand {
    fn push_args(&mut self, args: &[&str]) {
        self.args.extend(args.iter().map(OsString::from));
    }
}

/// Starts `command` through the one spawn path (its own process group, killed when the [`Child`]
/// is dropped — a path past its deadline leaves nothing running) with pipes; its stderr is read as
/// it comes (so a chatty child never blocks on a full pipe), and the handle gives its last lines.
async fn spawn_piped(command: &ElphCommand) -> anyhow::Result<(Child, tokio::task::JoinHandle<String>)> {
    let args: Vec<&OsStr> = command.args.iter().map(OsString::as_os_str).collect();
    let mut child = elph_process::process::spawn(&SpawnSpec {
        program: &command.program,
        args: &args,
        cwd: &command.cwd,
        env: &command.env,
        stdin: Input::Piped,
        stdout: Output::Piped,
        stderr: Output::Piped,
        sandbox: None,
    })
    .await
    .with_context(|| format!("cannot start {}", command.program.display()))?;
    let stderr = child.stderr.take();
    let tail = tokio::spawn(async move {
        let mut text = String::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_string(&mut text).await;
        }
        let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(3)..].join(" / ")
    });
    Ok((child, tail))
}

/// `elph run --output-format stream-json`: which calls ran, from its `toolCallFinished` lines, and
/// how many compactions it showed.
async fn headless(command: &ElphCommand, session: &mut Session) -> anyhow::Result<()> {
    let (mut child, stderr) = spawn_piped(command).await?;
    drop(child.stdin.take());
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    while let Some(line) = lines.next_line().await.context("cannot read elph run's output")? {
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if event["type"] == "toolCallFinished"
            && let (Some(id), Some(ran)) = (event["toolCallId"].as_str(), event["ran"].as_bool())
        {
            session.ran.insert(id.to_string(), ran);
        }
        if event["type"] == "compacted" {
            session.compactions += 1;
        }
    }
    let status = child.wait().await.context("cannot wait for elph run")?;
    if !status.success() {
        let tail = stderr.await.unwrap_or_default();
        session
            .problems
            .push(format!("elph run ended with {status}: {tail}"));
    }
    Ok(())
}

/// A small ACP client on `elph acp`'s stdio: initialize, session/new, then each of `prompts` as a
/// session/prompt (the next once the one before is answered), allowing each permission request
/// once; then it closes stdin and waits for the exit.
async fn acp(
    command: &ElphCommand,
    project: &Path,
    prompts: &[&str],
    session: &mut Session,
) -> anyhow::Result<()> {
    let (mut child, stderr) = spawn_piped(command).await?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
               "params": {"cwd": project, "mcpServers": []}}),
    ];
    for request in &requests {
        send(&mut stdin, request).await?;
    }
    let mut session_id: Option<Value> = None;
    // The next prompt to send, and whether the one before it is still unanswered.
    let mut next = 0;
    let mut waiting = false;
    loop {
        if let Some(id) = session_id.as_ref().filter(|_| !waiting) {
            let Some(prompt) = prompts.get(next) else {
                break;
            };
            send(
                &mut stdin,
                &json!({"jsonrpc": "2.0", "id": next + 3, "method": "session/prompt", "params": {
                    "sessionId": id,
                    "prompt": [{"type": "text", "text": prompt}],
                }}),
            )
            .await?;
            next += 1;
            waiting = true;
        }
        let Some(line) = lines.next_line().await.context("cannot read elph acp's output")? else {
            let _ = child.wait().await;
            let tail = stderr.await.unwrap_or_default();
            anyhow::bail!("elph acp closed its output before the prompt was answered: {tail}");
        };
        let frame: Value =
            serde_json::from_str(&line).with_context(|| format!("not JSON from elph acp: {line}"))?;
        if let Some(error) = frame.get("error") {
            anyhow::bail!("elph acp answered request {} with an error: {error}", frame["id"]);
        }
        match (frame.get("method").and_then(Value::as_str), frame.get("id")) {
            // A request of the agent's: approve what it asks, refuse anything else.
            (Some(method), Some(id)) => {
                let answer = if method == "session/request_permission" {
                    session.permission_requests += 1;
                    let option = frame["params"]["options"]
                        .as_array()
                        .and_then(|options| options.iter().find(|option| option["kind"] == "allow_once"))
                        .and_then(|option| option["optionId"].as_str())
                        .unwrap_or("allow_once")
                        .to_string();
                    json!({"jsonrpc": "2.0", "id": id,
                           "result": {"outcome": {"outcome": "selected", "optionId": option}}})
                } else {
                    json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": -32601, "message": format!("{method} is not offered")}})
                };
                send(&mut stdin, &answer).await?;
            }
            (Some("session/update"), None) => {
                let update = &frame["params"]["update"];
                if let Some(id) = update["toolCallId"].as_str() {
                    let running = update["status"] == "in_progress";
                    let ran = session.ran.entry(id.to_string()).or_insert(false);
                    *ran |= running;
                }
                if update.to_string().contains("earlier message(s) into a summary") {
                    session.compactions += 1;
                }
            }
            (None, Some(id)) if id == 2 => {
                session_id = Some(frame["result"]["sessionId"].clone());
            }
            // The answer to the prompt sent last (request ids 3, 4, …).
            (None, Some(id)) if id.as_u64().is_some_and(|id| id >= 3) => {
                waiting = false;
                let reason = &frame["result"]["stopReason"];
                if reason != "end_turn" {
                    session
                        .problems
                        .push(format!("the ACP prompt {id} ended with stopReason {reason}"));
                }
            }
            _ => {}
        }
    }
    if session_id.is_none() {
        anyhow::bail!("elph acp never answered session/new");
    }
    // Closing stdin ends the session (sessionEnd, reason closed) and the process.
    drop(stdin);
    while lines.next_line().await.ok().flatten().is_some() {}
    let status = child.wait().await.context("cannot wait for elph acp")?;
    if !status.success() {
        let tail = stderr.await.unwrap_or_default();
        session
            .problems
            .push(format!("elph acp ended with {status}: {tail}"));
    }
    Ok(())
}

async fn send(stdin: &mut ChildStdin, frame: &Value) -> anyhow::Result<()> {
    let mut line = serde_json::to_vec(frame)?;
    line.push(b'\n');
    stdin.write_all(&line).await.context("cannot write to elph acp")?;
    stdin.flush().await.context("cannot write to elph acp")
}
