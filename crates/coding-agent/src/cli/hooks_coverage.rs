//! `elph hooks coverage` (docs/hooks.md, "Proving coverage"): runs every tool path through this
//! very binary — each native tool as the registry lists them, the shell in the sandbox, an MCP
//! tool, the ACP front end and a call a hook rewrites — with a probe hook on every event, in
//! scratch folders of its own, and reports per path which events fired and whether a block held.
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
use serde_json::Value;

use super::exit;
use super::hooks_coverage_paths::{Effect, FrontEnd, Intent, PathKind, PathSpec, all_paths};
use super::hooks_coverage_probe::Role;
use super::hooks_coverage_run::{Scratch, Session};

/// The end of `elph hooks coverage --help`.
pub(super) const AFTER_HELP: &str = "\
Paths: one per native tool (elph run; shell_exec with --sandbox full-access), sandboxed-shell
(shell_exec in workspace-write, which must not write beside the project), mcp (a tool of a stdio
MCP server), acp (write_file through elph acp, approved when asked), rewritten (a project hook
rewrites a shell command after your fail-closed guard let it through; the guard must see the
rewritten input). A native tool without a call here fails its path, naming the tool.

Events expected on every path: sessionStart, userPromptSubmit, beforeAgent, context, preToolUse,
postToolUse, stop, notification, sessionEnd; permissionRequest on acp; postToolUseFailure where a
call fails. preCompact and postCompact have probes but no path compacts.

--json: {ok, events, paths: [{id, kind, frontEnd, tool, sandbox, expected, fired, missing, calls:
[{tool, intent, toolCallId, events, ran, ok}], blockHeld, guardSawRewrite, sandboxHeld,
permissionRequests, durationMs, ok, problems}]}. See docs/hooks.md, \"Proving coverage\".

Progress goes to stderr. Each path has 120 s; the hooks and servers are this elph binary, so only
elph and the kernel's sandbox are needed.";

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

/// What one call of a path showed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CallReport {
    tool: String,
    /// `runs`, `fails` or `blocked`: what the call must do.
    intent: &'static str,
    /// `null`: no hook heard the call.
    tool_call_id: Option<String>,
    /// The events hooks heard for this call, in lifecycle order.
    events: Vec<HookEvent>,
    /// Whether the front end showed the tool running; `null` when it said nothing of the call.
    ran: Option<bool>,
    ok: bool,
}

/// What one path showed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PathReport {
    id: String,
    kind: PathKind,
    front_end: FrontEnd,
    tool: String,
    sandbox: &'static str,
    expected: Vec<HookEvent>,
    /// Every event the probes heard in the session, in lifecycle order.
    fired: Vec<HookEvent>,
    /// Expected and not heard.
    missing: Vec<HookEvent>,
    calls: Vec<CallReport>,
    /// Every call the guard blocked did not run: no post-tool event, the front end did not run it,
    /// and its side effect is not on disk.
    block_held: bool,
    /// The rewritten path: the fail-closed guard ran again on the input the rewriter made.
    #[serde(skip_serializing_if = "Option::is_none")]
    guard_saw_rewrite: Option<bool>,
    /// The sandboxed shell: the command could not write beside the project.
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox_held: Option<bool>,
    /// ACP: how many approvals the client was asked for (and gave).
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_requests: Option<usize>,
    duration_ms: u64,
    ok: bool,
    problems: Vec<String>,
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

/// The probes' lines (a line cut short by a killed probe is left out).
fn read_records(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn role_of(record: &Value) -> Option<Role> {
    serde_json::from_value(record["role"].clone()).ok()
}

fn event_of(record: &Value) -> Option<HookEvent> {
    serde_json::from_value(record["event"].clone()).ok()
}

/// Compares what a path showed with what it must show.
pub(super) fn judge(
    spec: &PathSpec,
    records: &[Value],
    session: Session,
    project: &Path,
    mut problems: Vec<String>,
    duration_ms: u64,
) -> PathReport {
    problems.extend(session.problems);
    let probes: Vec<&Value> = records
        .iter()
        .filter(|record| role_of(record) == Some(Role::Probe))
        .collect();
    let guard_runs: Vec<&Value> = records
        .iter()
        .filter(|record| role_of(record) == Some(Role::Guard))
        .collect();
    let fired: Vec<HookEvent> = HookEvent::ALL
        .into_iter()
        .filter(|event| probes.iter().any(|record| event_of(record) == Some(*event)))
        .collect();
    let expected = spec.expected();
    let missing: Vec<HookEvent> = expected
        .iter()
        .copied()
        .filter(|event| !fired.contains(event))
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|event| event.as_str()).collect();
        problems.push(format!("no probe heard {}", names.join(", ")));
    }

    let mut calls = Vec::new();
    let mut taken: Vec<String> = Vec::new();
    let mut block_held = true;
    let mut guard_saw_rewrite = true;
    for call in &spec.calls {
        // The guard runs first, so its first run on a call saw the input as the model sent it.
        let id = guard_runs
            .iter()
            .chain(probes.iter())
            .filter(|record| event_of(record) == Some(HookEvent::PreToolUse))
            .filter(|record| record["toolInput"] == call.input || record["toolInput"] == call.runs_with())
            .filter_map(|record| record["toolCallId"].as_str())
            .find(|id| !taken.iter().any(|taken| taken == id))
            .map(str::to_string);
        // Heard by any hook: a blocked call's chain ends at the guard, before the probes.
        let events: Vec<HookEvent> = HookEvent::ALL
            .into_iter()
            .filter(|event| {
                id.as_deref().is_some_and(|id| {
                    records
                        .iter()
                        .any(|record| record["toolCallId"] == id && event_of(record) == Some(*event))
                })
            })
            .collect();
        let ran = id.as_deref().and_then(|id| session.ran.get(id).copied());
        let mut call_problems = Vec::new();
        let label = format!("{} {}", call.tool, call.input);
        if let Some(id) = &id {
            taken.push(id.clone());
        } else if call.intent != Intent::Setup {
            call_problems.push(format!("no preToolUse was heard for {label}"));
        }
        let has = |event| events.contains(&event);
        let post = has(HookEvent::PostToolUse) || has(HookEvent::PostToolUseFailure);
        let effect = effect_on_disk(project, &call.effect);
        match call.intent {
            Intent::Setup => {}
            Intent::Runs => {
                if id.is_some() && !has(HookEvent::PostToolUse) {
                    call_problems.push(format!("{label} ran without a postToolUse"));
                }
                if ran == Some(false) {
                    call_problems.push(format!("the front end did not run {label}"));
                }
                if effect == Some(false) {
                    call_problems.push(format!("{label} left nothing on disk"));
                }
            }
            Intent::Fails => {
                if id.is_some() && !has(HookEvent::PostToolUseFailure) {
                    call_problems.push(format!("{label} failed without a postToolUseFailure"));
                }
            }
            Intent::Blocked => {
                let mut held = id.is_some();
                if post {
                    call_problems.push(format!("the block did not hold: {label} got a post-tool event"));
                    held = false;
                }
                if ran == Some(true) {
                    call_problems.push(format!("the block did not hold: the front end ran {label}"));
                    held = false;
                }
                if effect == Some(true) {
                    call_problems.push(format!("the block did not hold: {label} left its mark on disk"));
                    held = false;
                }
                block_held &= held;
            }
        }
        if spec.kind == PathKind::Rewritten && call.intent != Intent::Setup {
            let rewritten = call.runs_with();
            let saw = id.as_deref().is_some_and(|id| {
                guard_runs
                    .iter()
                    .any(|record| record["toolCallId"] == id && record["toolInput"] == rewritten)
            });
            if !saw {
                call_problems.push(format!(
                    "the fail-closed guard never saw the rewritten input {rewritten}"
                ));
            }
            guard_saw_rewrite &= saw;
        }
        calls.push(CallReport {
            tool: call.tool.clone(),
            intent: match call.intent {
                Intent::Runs => "runs",
                Intent::Fails => "fails",
                Intent::Blocked => "blocked",
                Intent::Setup => "setup",
            },
            tool_call_id: id,
            events,
            ran,
            ok: call_problems.is_empty(),
        });
        problems.extend(call_problems);
    }
    if !spec.calls.iter().any(|call| call.intent == Intent::Blocked) {
        block_held = false;
    }
    let permission_requests = (spec.front_end == FrontEnd::Acp).then_some(session.permission_requests);
    PathReport {
        id: spec.id.clone(),
        kind: spec.kind,
        front_end: spec.front_end,
        tool: spec.tool.clone(),
        sandbox: spec.sandbox,
        expected,
        fired,
        missing,
        calls,
        block_held,
        guard_saw_rewrite: (spec.kind == PathKind::Rewritten).then_some(guard_saw_rewrite),
        sandbox_held: None,
        permission_requests,
        duration_ms,
        ok: problems.is_empty(),
        problems,
    }
}

/// Whether `effect` is on disk; `None` for a call that leaves nothing.
fn effect_on_disk(project: &Path, effect: &Effect) -> Option<bool> {
    match effect {
        Effect::Nothing => None,
        Effect::Creates(file) => Some(project.join(file).exists()),
        Effect::Holds(file, text) => Some(
            std::fs::read_to_string(project.join(file)).is_ok_and(|content| content.contains(text.as_str())),
        ),
    }
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
    use serde_json::json;

    fn record(role: &str, event: &str, id: Option<&str>, input: Option<Value>) -> Value {
        let mut record = json!({"role": role, "event": event});
        if let Some(id) = id {
            record["toolCallId"] = json!(id);
            record["toolName"] = json!("write_file");
        }
        if let Some(input) = input {
            record["toolInput"] = input;
        }
        record
    }

    /// What a write_file path that works hears: every expected event, the first call run, the
    /// second blocked by the guard.
    fn a_working_session(spec: &PathSpec) -> Vec<Value> {
        let runs = spec.calls[0].input.clone();
        let blocked = spec.calls[1].input.clone();
        let mut records = vec![
            record("probe", "sessionStart", None, None),
            record("probe", "userPromptSubmit", None, None),
            record("probe", "beforeAgent", None, None),
            record("probe", "context", None, None),
            record("guard", "preToolUse", Some("call_1"), Some(runs.clone())),
            record("probe", "preToolUse", Some("call_1"), Some(runs.clone())),
            record("probe", "postToolUse", Some("call_1"), Some(runs)),
            record("guard", "preToolUse", Some("call_2"), Some(blocked)),
        ];
        records
            .extend(["stop", "notification", "sessionEnd"].map(|event| record("probe", event, None, None)));
        records
    }

    fn write_file_path() -> PathSpec {
        all_paths(None)
            .into_iter()
            .find(|path| path.id == "write_file")
            .unwrap()
    }

    #[test]
    fn a_path_that_hears_every_event_and_holds_its_block_passes() {
        let spec = write_file_path();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("written.txt"), "coverage\n").unwrap();
        let report = judge(
            &spec,
            &a_working_session(&spec),
            Session::default(),
            project.path(),
            vec![],
            0,
        );
        assert!(report.ok, "{:?}", report.problems);
        assert!(report.block_held);
        assert!(report.missing.is_empty());
    }

    #[test]
    fn a_missing_event_fails_the_path_and_names_the_event() {
        let spec = write_file_path();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("written.txt"), "coverage\n").unwrap();
        let records: Vec<Value> = a_working_session(&spec)
            .into_iter()
            .filter(|record| record["event"] != "beforeAgent")
            .collect();
        let report = judge(&spec, &records, Session::default(), project.path(), vec![], 0);
        assert!(!report.ok);
        assert_eq!(report.missing, [HookEvent::BeforeAgent]);
        assert!(
            report
                .problems
                .iter()
                .any(|problem| problem.contains("beforeAgent")),
            "{:?}",
            report.problems
        );
    }

    #[test]
    fn a_blocked_call_that_left_its_file_is_a_block_that_did_not_hold() {
        let spec = write_file_path();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("written.txt"), "coverage\n").unwrap();
        let Effect::Creates(file) = &spec.calls[1].effect else {
            panic!("write_file's blocked call would make a file");
        };
        std::fs::write(project.path().join(file), "").unwrap();
        let report = judge(
            &spec,
            &a_working_session(&spec),
            Session::default(),
            project.path(),
            vec![],
            0,
        );
        assert!(!report.ok);
        assert!(!report.block_held);
    }

    #[test]
    fn a_blocked_call_the_front_end_ran_is_a_block_that_did_not_hold() {
        let spec = write_file_path();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("written.txt"), "coverage\n").unwrap();
        let mut session = Session::default();
        session.ran.insert("call_2".into(), true);
        let report = judge(
            &spec,
            &a_working_session(&spec),
            session,
            project.path(),
            vec![],
            0,
        );
        assert!(!report.block_held);
    }

    #[test]
    fn a_call_that_left_nothing_on_disk_fails_the_path() {
        let spec = write_file_path();
        let project = tempfile::tempdir().unwrap();
        let report = judge(
            &spec,
            &a_working_session(&spec),
            Session::default(),
            project.path(),
            vec![],
            0,
        );
        assert!(!report.ok);
        assert!(report.block_held, "the block itself held");
    }
}
