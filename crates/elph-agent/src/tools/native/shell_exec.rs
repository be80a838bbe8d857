//! `shell_exec`: run a shell command in the project folder, bounded in time and output.

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::Signal;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::process;
use crate::tools::{ToolContext, ToolKind, ToolOutput, TypedTool, one_line};
use elph_process::process::RunOutput;
use elph_process::sandbox::{HostDecision, SandboxPolicy};

pub struct ShellExec;

pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The shell command line, as typed in a POSIX shell (pipes, &&, redirections work).
    #[schemars(length(min = 1))]
    command: String,
    /// Kill the command after this many milliseconds. Default: 120000 (2 minutes); at most
    /// 600000.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    timeout_ms: Option<u64>,
}

#[async_trait::async_trait]
impl TypedTool for ShellExec {
    type Args = Args;

    fn name(&self) -> &str {
        "shell_exec"
    }

    fn description(&self) -> &str {
        "Run a command with /bin/sh -c in the project folder and return its stdout, then its \
         stderr, then its exit code. stdin is closed, so interactive prompts fail instead of \
         waiting. Output is capped: of each stream the first and last 32 KiB are kept. The command \
         and everything it started are killed when the timeout expires. Background processes \
         that keep stdout or stderr open are killed shortly after the command exits; to leave a \
         server running, redirect its output (`server > server.log 2>&1 &`)."
    }

    fn mutates(&self) -> bool {
        true
    }

    /// In plan mode the harness runs the shell read-only (but for its TMPDIR), so it is offered
    /// there.
    fn offered_in_plan_mode(&self) -> bool {
        true
    }

    fn runs_sandboxed(&self) -> bool {
        true
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn title(&self, args: &Args) -> String {
        format!("Run `{}`", one_line(&args.command))
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> ToolOutput {
        if args.command.trim().is_empty() {
            return ToolOutput::error("command must not be empty");
        }
        let timeout_ms = args
            .timeout_ms
            .unwrap_or(DEFAULT_TIMEOUT_MS)
            .clamp(1, MAX_TIMEOUT_MS);
        let policy = process::ShellPolicy {
            sandbox: &ctx.sandbox,
            env: &ctx.shell_env,
        };
        // Protected paths no mount can hold yet (they do not exist): one the command makes is
        // refused after it.
        let missing_before = ctx.sandbox.missing_now();
        let proxy_mark = ctx.sandbox.proxy.as_ref().map(|route| route.journal.mark());
        let result = process::run(
            &args.command,
            &ctx.project_dir,
            Duration::from_millis(timeout_ms),
            policy,
        )
        .await;
        let hosts = match (&ctx.sandbox.proxy, proxy_mark) {
            (Some(route), Some(mark)) => route.journal.since(mark),
            _ => Vec::new(),
        };
        render(
            &result,
            &ctx.project_dir,
            timeout_ms,
            &ctx.sandbox,
            &missing_before,
            &hosts,
        )
    }
}

fn render(
    result: &RunOutput,
    cwd: &Path,
    timeout_ms: u64,
    sandbox: &SandboxPolicy,
    missing_before: &[std::path::PathBuf],
    hosts: &[HostDecision],
) -> ToolOutput {
    if let Some(error) = &result.spawn_error {
        return ToolOutput::error(process::describe_spawn_error(cwd, error)).with_details(json!({
            "exitCode": null,
            "signal": null,
            "timedOut": false,
            "truncated": false,
        }));
    }
    let mut text = String::new();
    for capture in [&result.stdout, &result.stderr] {
        let part = capture.render();
        if !part.is_empty() {
            text.push_str(&part);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    let status = if result.timed_out {
        format!("killed after timeout ({timeout_ms} ms)")
    } else if let Some(code) = result.exit_code {
        format!("exit code {code}")
    } else if let Some(signal) = result.signal {
        let name = Signal::try_from(signal)
            .map(Signal::as_str)
            .unwrap_or("unknown signal");
        format!("killed by signal {signal} ({name})")
    } else {
        result
            .wait_error
            .as_ref()
            .map(|error| error.describe("the command"))
            .unwrap_or_else(|| "the command's exit status is unknown".into())
    };
    // The kernel's refusal only says "Read-only file system"; the model also hears which
    // protection that was and why.
    let protected = sandbox.explain_refusals(&text, cwd);
    for line in &protected {
        text.push_str(line);
        text.push('\n');
    }
    let appeared = sandbox.refuse_appeared(missing_before);
    for line in &appeared {
        text.push_str(line);
        text.push('\n');
    }
    // A failed command that ran into the sandbox: what it refused and which setting allows it.
    let failed = result.timed_out || result.exit_code != Some(0);
    let refusal = if failed && protected.is_empty() && appeared.is_empty() {
        sandbox.explain_refusal(&text, hosts)
    } else {
        None
    };
    text.push_str(&status);
    if result.pipes_held_open {
        text.push_str(
            "\n[background processes still holding stdout or stderr open were killed when the command \
             exited; redirect their output (`cmd > file.log 2>&1 &`) to keep them running]",
        );
    }
    if let Some(line) = refusal {
        text.push('\n');
        text.push_str(&line);
    }
    let truncated = result.stdout.omitted() > 0 || result.stderr.omitted() > 0;
    let failed = failed || !appeared.is_empty();
    // Which permission the sandbox withheld, for the harness to offer a re-run with it (`ask`).
    let refused = if !appeared.is_empty() {
        Some(elph_process::sandbox::Refused::Filesystem)
    } else if failed {
        sandbox.refused_in(&text, cwd)
    } else {
        None
    };
    let output = if failed {
        ToolOutput::error(text)
    } else {
        ToolOutput::text(text)
    };
    let mut details = json!({
        "exitCode": result.exit_code,
        "signal": result.signal,
        "timedOut": result.timed_out,
        "truncated": truncated,
        "stdoutBytes": result.stdout.total(),
        "stderrBytes": result.stderr.total(),
        "durationMs": result.duration.as_millis() as u64,
        "network": hosts.iter().map(|decision| json!({
            "host": decision.host,
            "port": decision.port,
            "allowed": decision.allowed,
            "reason": decision.reason,
        })).collect::<Vec<_>>(),
    });
    if let Some(refused) = refused {
        details["sandboxRefused"] = json!(refused.as_str());
    }
    output.with_details(details)
}
