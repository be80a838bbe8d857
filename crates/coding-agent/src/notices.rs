//! Hook activity in words: one line per thing a person should know about a dispatch (a block, a
//! rewrite, added context, a replaced result, a failure). Shared by every front end.

use elph_agent::hooks::{Dispatch, HookEvent, HookOutcome, RunStatus};

/// How a notice should be shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    /// The hook changed something.
    Effect,
    /// The hook failed or its output was rejected; the operation went on.
    Problem,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub kind: NoticeKind,
    pub hook_id: Option<String>,
    pub text: String,
}

/// The notices of one dispatch, in run order, then the diagnostics that no run explains.
pub fn describe(dispatch: &Dispatch) -> Vec<Notice> {
    let mut notices = Vec::new();
    for run in &dispatch.runs {
        let id = run.hook_id.clone();
        let effect = |text: String| Notice {
            kind: NoticeKind::Effect,
            hook_id: Some(id.clone()),
            text,
        };
        match run.status {
            RunStatus::Failed | RunStatus::Skipped => {
                let cause = run.cause.clone().unwrap_or_else(|| "failed".into());
                notices.push(Notice {
                    kind: NoticeKind::Problem,
                    hook_id: Some(id.clone()),
                    text: format!("hook '{id}' ({}) failed open: {cause}", run.event),
                });
                continue;
            }
            RunStatus::Ok => {}
        }
        if let Some(outcome) = &run.outcome {
            notices.extend(
                describe_outcome(&id, dispatch.event, outcome)
                    .into_iter()
                    .map(effect),
            );
        }
        for note in &run.notes {
            notices.push(Notice {
                kind: NoticeKind::Problem,
                hook_id: Some(id.clone()),
                text: format!("hook '{id}' ({}): {note}", run.event),
            });
        }
    }
    notices
}

fn describe_outcome(id: &str, event: HookEvent, outcome: &HookOutcome) -> Vec<String> {
    let mut lines = Vec::new();
    match outcome {
        HookOutcome::PreToolUse(o) => {
            let reason = o.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            if o.block == Some(true) || o.decision == Some(elph_agent::hooks::Decision::Deny) {
                lines.push(format!("hook '{id}' blocked the tool call{reason}"));
            } else if o.decision == Some(elph_agent::hooks::Decision::Ask) {
                lines.push(format!("hook '{id}' asked for approval{reason}"));
            }
            if o.tool_input.is_some() && o.block != Some(true) {
                lines.push(format!("hook '{id}' rewrote the tool input"));
            }
        }
        HookOutcome::PostToolUse(o) => {
            if o.content.is_some() {
                lines.push(format!("hook '{id}' replaced the tool result ({event})"));
            }
            if let Some(flag) = o.is_error {
                lines.push(format!("hook '{id}' set isError to {flag}"));
            }
            if o.details.is_some() {
                lines.push(format!("hook '{id}' replaced the result details"));
            }
            if o.terminate == Some(true) {
                lines.push(format!("hook '{id}' asked to end the turn"));
            }
        }
        HookOutcome::BeforeAgent(o) => {
            if o.system_prompt.is_some() || o.additional_context.is_some() {
                lines.push(format!("hook '{id}' added to the system prompt for this turn"));
            }
            if let Some(messages) = &o.messages {
                lines.push(format!(
                    "hook '{id}' added {} temporary message(s) to this turn",
                    messages.len()
                ));
            }
        }
        HookOutcome::Context(o) => {
            if let Some(messages) = &o.messages {
                lines.push(format!(
                    "hook '{id}' replaced the request context ({} message(s))",
                    messages.len()
                ));
            }
        }
        HookOutcome::PreCompact(o) => {
            if o.cancel == Some(true) {
                lines.push(format!("hook '{id}' cancelled compaction"));
            }
            if o.custom_instructions.is_some() {
                lines.push(format!("hook '{id}' set the compaction instructions"));
            }
        }
        HookOutcome::Observation => {}
    }
    lines
}
