//! What `elph hooks coverage` concludes about one path: which events the probe hooks heard, which
//! calls ran, and whether the guard's block held, from the probes' lines, what the front end
//! showed and what is on disk.

use std::path::Path;

use elph_agent::hooks::HookEvent;
use serde::Serialize;
use serde_json::Value;

use super::hooks_coverage_paths::{Compaction, Effect, FrontEnd, Intent, PathKind, PathSpec};
use super::hooks_coverage_probe::Role;
use super::hooks_coverage_run::Session;

/// What one call of a path showed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CallReport {
    pub(super) tool: String,
    /// `runs`, `fails` or `blocked`: what the call must do.
    pub(super) intent: &'static str,
    /// `null`: no hook heard the call.
    pub(super) tool_call_id: Option<String>,
    /// The events hooks heard for this call, in lifecycle order.
    pub(super) events: Vec<HookEvent>,
    /// Whether the front end showed the tool running; `null` when it said nothing of the call.
    pub(super) ran: Option<bool>,
    pub(super) ok: bool,
}

/// What one path showed.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PathReport {
    pub(super) id: String,
    pub(super) kind: PathKind,
    pub(super) front_end: FrontEnd,
    pub(super) tool: String,
    pub(super) sandbox: &'static str,
    pub(super) expected: Vec<HookEvent>,
    /// Every event the probes heard in the session, in lifecycle order.
    pub(super) fired: Vec<HookEvent>,
    /// Expected and not heard.
    pub(super) missing: Vec<HookEvent>,
    pub(super) calls: Vec<CallReport>,
    /// Every call the guard blocked did not run: no post-tool event, the front end did not run it,
    /// and its side effect is not on disk.
    pub(super) block_held: bool,
    /// The rewritten path: the fail-closed guard ran again on the input the rewriter made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) guard_saw_rewrite: Option<bool>,
    /// The sandboxed shell: the command could not write beside the project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) sandbox_held: Option<bool>,
    /// ACP: how many approvals the client was asked for (and gave).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) permission_requests: Option<usize>,
    /// A compaction path: how it compacted (`manual`, `auto`), as preCompact and postCompact
    /// heard it and the front end showed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) compaction: Option<Compaction>,
    pub(super) duration_ms: u64,
    pub(super) ok: bool,
    pub(super) problems: Vec<String>,
}

/// The probes' lines (a line cut short by a killed probe is left out).
pub(super) fn read_records(log: &Path) -> Vec<Value> {
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
    if let Some(compaction) = spec.compaction {
        problems.extend(compaction_problems(compaction, &probes, session.compactions));
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
        compaction: spec.compaction,
        duration_ms,
        ok: problems.is_empty(),
        problems,
    }
}

/// What is wrong with a compaction path's compaction: preCompact and postCompact must each have
/// been heard with the path's trigger, and the front end must have shown the compaction.
fn compaction_problems(compaction: Compaction, probes: &[&Value], shown: usize) -> Vec<String> {
    let trigger = compaction.trigger();
    let mut problems = Vec::new();
    for event in [HookEvent::PreCompact, HookEvent::PostCompact] {
        let heard: Vec<&Value> = probes
            .iter()
            .filter(|record| event_of(record) == Some(event))
            .map(|record| &record["trigger"])
            .collect();
        if !heard.is_empty() && !heard.iter().any(|heard| **heard == trigger) {
            problems.push(format!(
                "{} was heard with trigger {}, not {trigger}",
                event.as_str(),
                heard
                    .iter()
                    .map(|heard| heard.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if shown == 0 {
        problems.push(format!("the front end did not show a compaction ({trigger})"));
    }
    problems
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

#[cfg(test)]
mod tests {
    use super::super::hooks_coverage_paths::all_paths;
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

    fn compaction_path(id: &str) -> PathSpec {
        all_paths(None).into_iter().find(|path| path.id == id).unwrap()
    }

    #[test]
    fn a_compaction_path_needs_both_events_with_its_trigger_and_the_front_end_showing_it() {
        let spec = compaction_path("auto-compact");
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join("before-compacting.txt"), "coverage\n").unwrap();
        let heard = |trigger: &str| {
            let mut records = a_working_session(&spec);
            for event in ["preCompact", "postCompact"] {
                let mut compaction = record("probe", event, None, None);
                compaction["trigger"] = json!(trigger);
                records.push(compaction);
            }
            records
        };
        let shown = || Session {
            compactions: 1,
            ..Session::default()
        };
        let report = judge(&spec, &heard("auto"), shown(), project.path(), vec![], 0);
        assert!(report.ok, "{:?}", report.problems);
        assert_eq!(report.compaction, Some(Compaction::Auto));

        let manual = judge(&spec, &heard("manual"), shown(), project.path(), vec![], 0);
        assert!(!manual.ok);
        assert!(
            manual
                .problems
                .iter()
                .any(|problem| problem.contains("preCompact was heard with trigger \"manual\", not auto")),
            "{:?}",
            manual.problems
        );

        let unseen = judge(
            &spec,
            &heard("auto"),
            Session::default(),
            project.path(),
            vec![],
            0,
        );
        assert!(!unseen.ok);

        let silent = judge(
            &spec,
            &a_working_session(&spec),
            shown(),
            project.path(),
            vec![],
            0,
        );
        assert_eq!(silent.missing, [HookEvent::PreCompact, HookEvent::PostCompact]);
        assert!(!silent.ok);
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
