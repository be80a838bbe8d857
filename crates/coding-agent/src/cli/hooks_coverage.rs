//! `elph hooks coverage` (docs/hooks.md, "Proving coverage"): runs every tool path through this
//! very binary — each native tool as the registry lists them, the shell in the sandbox, an MCP
//! tool, the ACP front end, a call a hook rewrites, and a session compacted by `/compact` and by
//! its context filling up — with a probe hook on every event, in scratch folders of its own, and
//! reports per path which events fired and whether a block held.
//!
//! Nothing is simulated: each path is a real session whose hooks are real processes (this binary
//! again, `elph hooks coverage-probe`), and the report is read from what the probes wrote, what the
//! front end showed and what the calls left, or did not leave, on disk.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use elph_agent::hooks::HookEvent;
use futures::StreamExt;
use serde::Serialize;

use super::exit;
use super::hooks_coverage_judge::{PathReport, judge, read_records};
use super::hooks_coverage_paths::{FrontEnd, PathSpec, all_paths};
use super::hooks_coverage_run::{Scratch, Session};

/// The end of `elph hooks coverage --help`.
pub(super) const AFTER_HELP: &str = "\
Paths: one per native tool (elph run; shell_exec with --sandbox full-access), sandboxed-shell
(shell_exec in workspace-write, which must not write beside the project), mcp (a tool of a stdio
MCP server), acp (write_file through elph acp, approved when asked), rewritten (a project hook
rewrites a shell command after your fail-closed guard let it through; the guard must see the
rewritten input), compact (elph acp: the calls, one more prompt, then /compact), auto-compact
(elph run, then elph run --continue with a model whose window the session already fills). A
native tool without a call here fails its path, naming the tool.

Events expected on every path: sessionStart, userPromptSubmit, beforeAgent, context, preToolUse,
postToolUse, stop, notification, sessionEnd; permissionRequest on acp paths; postToolUseFailure
where a call fails; preCompact and postCompact (with the path's trigger) on the compaction paths.

--json: {ok, events, paths: [{id, kind, frontEnd, tool, sandbox, expected, fired, missing, calls:
[{tool, intent, toolCallId, events, ran, ok}], blockHeld, guardSawRewrite, sandboxHeld,
permissionRequests, compaction, durationMs, ok, problems}]}. See docs/hooks.md, \"Proving coverage\".

Progress goes to stderr. Each path has 120 s; the hooks and servers are this elph binary, so only
elph and the kernel's sandbox are needed. Ctrl+C stops it with exit 130, the scratch folders removed.";

#[derive(Debug, clap::Args)]
pub struct CoverageArgs {
    /// Print one JSON document instead of the table (docs/hooks.md has its shape).
    #[arg(long)]
    json: bool,
}

/// How many paths run at once.
fn parallel() -> usize {
    std::thread::available_parallelism().map_or(2, |count| count.get().clamp(1, 4))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    ok: bool,
    /// Every event a probe hook listened to.
    events: Vec<HookEvent>,
    paths: Vec<PathReport>,
}

pub(super) fn run(args: CoverageArgs) -> anyhow::Result<u8> {
    let exe = std::env::current_exe().context("cannot find the elph binary to run the paths with")?;
    let scratch = tempfile::Builder::new()
        .prefix("elph-hooks-coverage-")
        .tempdir()
        .context("cannot make the scratch folder")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let specs = all_paths(wait_tool());
    let outcome = runtime.block_on(async {
        tokio::select! {
            paths = run_paths(&exe, scratch.path(), specs) => Ok(paths),
            signal = ending_signal() => Err(signal),
        }
    });
    // The sessions' futures are dropped by now, and with them their children (killed on drop;
    // what those started dies with them, Elph's orphan watcher sees to it).
    drop(runtime);
    remove_scratch(scratch);
    let paths = match outcome {
        Ok(paths) => paths?,
        Err(signal) => {
            eprintln!("elph hooks coverage: interrupted; the scratch folders are removed");
            return Ok(128 + signal);
        }
    };
    let report = Report {
        ok: paths.iter().all(|path| path.ok),
        events: HookEvent::ALL.to_vec(),
        paths,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_table(&mut crate::terminal_text::Escaping::new(&mut out), &report)?;
    }
    Ok(if report.ok { exit::SUCCESS } else { exit::ERROR })
}

/// MCP servers start in the background: the MCP path first has the model wait for them, or its
/// first call could come before the server's tools joined.
fn wait_tool() -> Option<&'static str> {
    Some(crate::mcp::wait::WAIT_TOOL)
}

/// The first of SIGINT, SIGTERM and SIGHUP, as its number.
async fn ending_signal() -> u8 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => 2,
        _ = terminate.recv() => 15,
        _ = hangup.recv() => 1,
    }
}

/// Removes the scratch folders; a child killed a moment ago may still be writing in them, so a
/// failed removal is tried again for a while.
fn remove_scratch(scratch: tempfile::TempDir) {
    let path = scratch.keep();
    for _ in 0..20 {
        if std::fs::remove_dir_all(&path).is_ok() || !path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    eprintln!(
        "elph hooks coverage: could not remove the scratch folder {}",
        path.display()
    );
}

async fn run_paths(exe: &Path, root: &Path, specs: Vec<PathSpec>) -> anyhow::Result<Vec<PathReport>> {
    let total = specs.len();
    eprintln!(
        "elph hooks coverage: {total} tool paths, a probe hook on each of the {} events ({} at a time)",
        HookEvent::ALL.len(),
        parallel()
    );
    let mut done = 0;
    let mut reports = Vec::with_capacity(total);
    let mut runs =
        futures::stream::iter(specs.into_iter().map(|spec| run_path(exe, root, spec))).buffered(parallel());
    while let Some(report) = runs.next().await {
        let report = report?;
        done += 1;
        eprintln!(
            "  [{done}/{total}] {:<16} {} ({:.1} s)",
            report.id,
            if report.ok { "ok" } else { "FAILED" },
            report.duration_ms as f64 / 1000.0
        );
        reports.push(report);
    }
    Ok(reports)
}

async fn run_path(exe: &Path, root: &Path, spec: PathSpec) -> anyhow::Result<PathReport> {
    let started = Instant::now();
    if let Some(why) = &spec.missing_call {
        return Ok(judge(
            &spec,
            &[],
            Session::default(),
            Path::new("/"),
            vec![why.clone()],
            0,
        ));
    }
    let scratch = Scratch::new(root, &spec.id)?;
    let mut problems = Vec::new();
    let session = match scratch.lay_out(exe, &spec).await {
        Ok(()) => scratch.drive(exe, &spec).await,
        Err(error) => {
            problems.push(format!("{error:#}"));
            Session::default()
        }
    };
    let records = read_records(&scratch.log);
    let mut report = judge(
        &spec,
        &records,
        session,
        &scratch.project,
        problems,
        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    );
    if let Some(outside) = &spec.outside {
        let held = !scratch.dir.join(outside).exists();
        if !held {
            report
                .problems
                .push(format!("the sandboxed command made {outside} beside the project"));
            report.ok = false;
        }
        report.sandbox_held = Some(held);
    }
    Ok(report)
}

fn print_table(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let names = |events: &[HookEvent]| {
        events
            .iter()
            .map(|event| event.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    };
    for path in &report.paths {
        let heard = path.expected.len() - path.missing.len();
        let mut line = format!(
            "{:<7}{} ({}, {}, sandbox {}): {heard} of {} expected events; block {}",
            if path.ok { "ok" } else { "FAILED" },
            path.id,
            match path.front_end {
                FrontEnd::Headless => "elph run",
                FrontEnd::Acp => "elph acp",
            },
            path.tool,
            path.sandbox,
            path.expected.len(),
            if path.block_held { "held" } else { "DID NOT HOLD" },
        );
        if let Some(saw) = path.guard_saw_rewrite {
            line.push_str(if saw {
                "; the guard saw the rewritten input"
            } else {
                "; the guard DID NOT see the rewritten input"
            });
        }
        if let Some(compaction) = path.compaction {
            line.push_str(&format!("; compacted ({})", compaction.trigger()));
        }
        if let Some(held) = path.sandbox_held {
            line.push_str(if held {
                "; the sandbox held"
            } else {
                "; the sandbox DID NOT hold"
            });
        }
        writeln!(out, "{line}")?;
        writeln!(out, "       fired: {}", names(&path.fired))?;
        for problem in &path.problems {
            writeln!(out, "       ! {problem}")?;
        }
    }
    let failed = report.paths.iter().filter(|path| !path.ok).count();
    let never: Vec<HookEvent> = HookEvent::ALL
        .into_iter()
        .filter(|event| !report.paths.iter().any(|path| path.expected.contains(event)))
        .collect();
    writeln!(out, "{} paths, {failed} failed", report.paths.len())?;
    if !never.is_empty() {
        writeln!(
            out,
            "not part of any tool path (a probe listens, none is expected): {}",
            names(&never)
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_native_tool_without_a_call_is_a_failed_path_that_names_it() {
        let mut spec = all_paths(None)
            .into_iter()
            .find(|path| path.id == "write_file")
            .unwrap();
        spec.calls.clear();
        spec.missing_call = Some("elph hooks coverage has no call for the native tool write_file".into());
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let nowhere = Path::new("/nonexistent");
        let report = runtime.block_on(run_path(nowhere, nowhere, spec)).unwrap();
        assert!(!report.ok);
        assert!(!report.block_held);
        assert!(
            report
                .problems
                .iter()
                .any(|problem| problem.contains("native tool write_file"))
        );
    }
}
