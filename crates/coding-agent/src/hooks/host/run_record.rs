//! The record of one run (docs/hooks.md, "Limits" and "When a hook fails"): how its process ended, its
//! validated outcome, and the words a failure or note is shown in.

use elph_agent::hooks::runner::FailedClosed;
use elph_agent::hooks::{
    HookDiagnostic, HookEvent, HookRun, ProcessExit, RunStatus, Severity, parse_outcome, parse_stdout,
};

use super::super::discovery::HookDefinition;
use super::super::process::{self, Ending, ProcessOutput, Stream};

/// The record of one run: how it ended and, after exit 0, its validated outcome.
pub fn record(hook: &HookDefinition, event: HookEvent, output: &ProcessOutput) -> HookRun {
    let mut run = base_record(hook, event, output);
    match output.ending() {
        Ending::Exited(0) => match parse_stdout(event, &output.stdout) {
            Ok(parsed) => {
                run.status = RunStatus::Ok;
                if let Some(parsed) = parsed {
                    run.notes.extend(parsed.ignored);
                    run.outcome = Some(parsed.outcome);
                }
            }
            Err(error) => run.cause = Some(format!("outcome rejected: {error}")),
        },
        ending => run.cause = Some(failure_cause(hook, ending)),
    }
    run
}

/// The record of a persistent hook's answer in step: its outcome object, validated for `event`
/// (empty: no change).
pub(super) fn record_answer(
    hook: &HookDefinition,
    event: HookEvent,
    output: &ProcessOutput,
    answer: serde_json::Map<String, serde_json::Value>,
) -> HookRun {
    let mut run = base_record(hook, event, output);
    if answer.is_empty() {
        run.status = RunStatus::Ok;
        return run;
    }
    match parse_outcome(event, &serde_json::Value::Object(answer)) {
        Ok(parsed) => {
            run.status = RunStatus::Ok;
            run.notes.extend(parsed.ignored);
            run.outcome = Some(parsed.outcome);
        }
        Err(error) => run.cause = Some(format!("outcome rejected: {error}")),
    }
    run
}

/// A failed run's record with how the process ended, before its output is read.
pub(crate) fn base_record(hook: &HookDefinition, event: HookEvent, output: &ProcessOutput) -> HookRun {
    let mut run = HookRun {
        hook_id: hook.id.clone(),
        event,
        status: RunStatus::Failed,
        process: Some(ProcessExit {
            exit_code: output.exit_code,
            signal: output.signal,
            timed_out: output.timed_out,
            spawn_error: output.spawn_error.clone(),
            stdout_bytes: output.stdout_bytes,
            stderr_bytes: output.stderr_bytes,
            stderr_tail: output.stderr_tail(),
            protocol_error: false,
        }),
        duration_ms: u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX),
        outcome: None,
        cause: None,
        notes: Vec::new(),
        effects: Vec::new(),
        fail_closed: hook.fail_closed,
    };
    if output.pipes_held_open {
        run.notes.push(format!(
            "its stdout or stderr was still open {} ms after it exited (held by a process it left \
             running); that process group was killed",
            process::EXIT_GRACE.as_millis()
        ));
    }
    run
}

pub(crate) fn failure_cause(hook: &HookDefinition, ending: Ending) -> String {
    match ending {
        Ending::SpawnFailed(why) => format!("{why} (defined in {})", hook.source.display()),
        Ending::OutputLimit(Stream::Stdout) => {
            let limit = if hook.max_output_bytes.is_multiple_of(1024) {
                format!("{} KiB", hook.max_output_bytes / 1024)
            } else {
                format!("{} bytes", hook.max_output_bytes)
            };
            format!(
                "stdout passed {limit} (its maxOutputBytes); the hook's process group was killed and its output ignored"
            )
        }
        Ending::OutputLimit(stream) => format!(
            "{} passed {} KiB; the hook's process group was killed and its output ignored",
            stream.name(),
            stream.cap() / 1024
        ),
        Ending::TimedOut => format!(
            "timed out after {} ms; the hook's process group was killed (timeoutMs can be raised to 60000)",
            hook.timeout.as_millis()
        ),
        Ending::Signalled(signal) => format!("killed by {}", process::signal_name(signal)),
        Ending::Exited(code) => format!(
            "exited with code {code}. No exit code blocks in Elph: the hook failed open and changed \
             nothing. To block, print {{\"block\": true, \"reason\": \"…\"}} on stdout and exit 0"
        ),
        Ending::Unknown(why) => why,
    }
}

/// The diagnostics one run leaves: its failure (see [`failure_text`]) and every note.
pub(crate) fn diagnostics_of(run: &HookRun) -> Vec<HookDiagnostic> {
    let diagnostic = |severity: Severity, message: String| HookDiagnostic {
        hook_id: Some(run.hook_id.clone()),
        event: run.event,
        severity,
        message,
    };
    let mut diagnostics: Vec<HookDiagnostic> = failure_text(run)
        .map(|message| diagnostic(run.severity(), message))
        .into_iter()
        .collect();
    diagnostics.extend(
        run.notes
            .iter()
            .cloned()
            .map(|note| diagnostic(Severity::Note, note)),
    );
    diagnostics
}

/// What a failed or skipped run did to the operation, in words, with its cause and up to 1 KiB of
/// its stderr: "failed open, so the tool call went ahead without its check: …" for a guard that
/// failed open, "failed closed, so the tool call is blocked: …" for a fail-closed hook, "failed: …"
/// on an observation-only event. `None` for a run that succeeded.
pub(crate) fn failure_text(run: &HookRun) -> Option<String> {
    if run.status == RunStatus::Ok {
        return None;
    }
    let cause = run.cause.as_deref().unwrap_or("it did not finish");
    let mut text = if let Some(went_on) = run.failed_open_guard() {
        format!("failed open, so {went_on}: {cause}")
    } else if run.fail_closed {
        format!(
            "failed closed, so {}: {cause}",
            FailedClosed::consequence(run.event)
        )
    } else {
        format!("failed: {cause}")
    };
    if !run.stderr_tail().is_empty() {
        text = format!("{text}; stderr: {}", run.stderr_tail());
    }
    Some(text)
}
