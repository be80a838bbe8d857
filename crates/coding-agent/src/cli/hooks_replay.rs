//! `elph hooks test --replay FILE`: sends every hook chain recorded by `elph run --record-hooks
//! FILE` (or `ELPH_RECORD_HOOKS`) through the hooks as they are configured now, with the same host
//! as `elph hooks test`, and reports each chain whose decision changed, with the hooks whose
//! outcome did. Exit 1 when a decision changed (so a hook's CI fails), 0 when none did.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, bail};
use elph_agent::hooks::events::words::shorten;
use elph_agent::hooks::{HookEvent, HookRun};
use serde::Serialize;

use super::exit;
use super::hooks_test::test_host;
use crate::hooks::record::{Decision, Recorded, RecordedRun};
use crate::paths::Paths;

/// One replayed chain.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Replayed {
    /// The line of the recording.
    line: usize,
    event: HookEvent,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    changed: bool,
    was: Decision,
    now: Decision,
    /// The hooks whose status or outcome differs from the recording.
    hooks: Vec<HookChange>,
    /// What a session would do now, in words.
    verdict: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HookChange {
    hook_id: String,
    /// The recorded run; `null`: the hook did not run then.
    was: Option<RecordedRun>,
    /// The run now; `null`: the hook does not run now.
    now: Option<RecordedRun>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    chains: Vec<Replayed>,
    changed: usize,
}

pub(super) fn run(cwd: Option<&Path>, recording: &Path, json: bool) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    let chains = read_recording(recording)?;
    let (host, malformed, _temp_dir) = test_host(&paths)?;
    if malformed {
        bail!("a hook file is malformed and was ignored; fix it (`elph hooks validate`) and replay again");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut report = Report {
        chains: Vec::with_capacity(chains.len()),
        changed: 0,
    };
    for (line, recorded) in chains {
        let event = recorded.payload.event();
        let tool_name = recorded.payload.tool_name().map(str::to_string);
        let dispatch = runtime.block_on(host.run_chain(recorded.payload));
        let now = Decision::of(&dispatch.reduced, &dispatch.runs);
        let changed = now != recorded.decision;
        report.changed += usize::from(changed);
        report.chains.push(Replayed {
            line,
            event,
            tool_name,
            changed,
            hooks: hook_changes(&recorded.runs, &dispatch.runs),
            was: recorded.decision,
            now,
            verdict: match dispatch.failed_closed() {
                Some(failed) => vec![format!("{}: {}", failed.reason(), failed_consequence(event))],
                None => dispatch.reduced.explain(),
            },
        });
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_report(
            &mut crate::terminal_text::Escaping::new(&mut out),
            &report,
            recording,
        )?;
    }
    Ok(if report.changed > 0 {
        exit::ERROR
    } else {
        exit::SUCCESS
    })
}

fn failed_consequence(event: HookEvent) -> &'static str {
    elph_agent::hooks::runner::FailedClosed::consequence(event)
}

/// The recorded chains with their line numbers. A line that is not one is an error that names it.
fn read_recording(path: &Path) -> anyhow::Result<Vec<(usize, Recorded)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the recording {}", path.display()))?;
    let mut chains = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let recorded: Recorded = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a recorded hook chain (`elph run --record-hooks FILE` writes them)",
                path.display(),
                index + 1
            )
        })?;
        chains.push((index + 1, recorded));
    }
    if chains.is_empty() {
        bail!("{}: no recorded hook chains in it", path.display());
    }
    Ok(chains)
}

/// The hooks whose recorded run and run now differ (status or outcome), in the order they ran.
fn hook_changes(was: &[RecordedRun], now: &[HookRun]) -> Vec<HookChange> {
    let now: Vec<RecordedRun> = now.iter().map(RecordedRun::of).collect();
    let mut ids: Vec<&str> = was.iter().map(|run| run.hook_id.as_str()).collect();
    for run in &now {
        if !ids.contains(&run.hook_id.as_str()) {
            ids.push(&run.hook_id);
        }
    }
    // A guard that ran again has two runs; its last one is what counted.
    let last = |runs: &[RecordedRun], id: &str| runs.iter().rev().find(|run| run.hook_id == id).cloned();
    ids.into_iter()
        .filter_map(|id| {
            let (was, now) = (last(was, id), last(&now, id));
            (was != now).then(|| HookChange {
                hook_id: id.to_string(),
                was,
                now,
            })
        })
        .collect()
}

fn describe_run(run: Option<&RecordedRun>) -> String {
    match run {
        None => "did not run".into(),
        Some(run) => match &run.outcome {
            Some(outcome) => format!("{} {}", run.status, shorten(&outcome.to_string(), 300)),
            None => format!("{} (no outcome)", run.status),
        },
    }
}

fn describe_decision(decision: &Decision) -> String {
    match (&decision.failed_closed, &decision.reduced) {
        (Some(hook), _) => format!("fail-closed hook '{hook}' could not decide"),
        (None, Some(reduced)) => shorten(&reduced.to_string(), 400),
        (None, None) => "nothing".into(),
    }
}

fn print_report(out: &mut impl Write, report: &Report, recording: &Path) -> std::io::Result<()> {
    writeln!(
        out,
        "replayed {} hook chain(s) from {} through the hooks configured now",
        report.chains.len(),
        recording.display()
    )?;
    writeln!(out)?;
    for chain in &report.chains {
        let subject = match &chain.tool_name {
            Some(tool) => format!("{} ({tool})", chain.event),
            None => chain.event.to_string(),
        };
        if !chain.changed {
            writeln!(out, "= line {}  {subject}: same decision", chain.line)?;
            continue;
        }
        writeln!(out, "≠ line {}  {subject}: the decision changed", chain.line)?;
        writeln!(out, "    was: {}", describe_decision(&chain.was))?;
        writeln!(out, "    now: {}", describe_decision(&chain.now))?;
        for change in &chain.hooks {
            writeln!(
                out,
                "    hook '{}': was {}; now {}",
                change.hook_id,
                describe_run(change.was.as_ref()),
                describe_run(change.now.as_ref())
            )?;
        }
        for line in &chain.verdict {
            writeln!(out, "    now a session: {line}")?;
        }
    }
    writeln!(out)?;
    match report.changed {
        0 => writeln!(out, "No decision changed."),
        n => writeln!(out, "{n} of {} decision(s) changed.", report.chains.len()),
    }
}
