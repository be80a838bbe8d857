//! Hook activity in words: one line per thing a person should know about a dispatch (a block, a
//! rewrite, added context, a replaced result, a failure). Shared by every front end.
//!
//! What a hook changed is not worked out here: the reduction records it in each run
//! (`HookRun::effects`) as it applies the outcome, so a notice never claims an effect the
//! reduction did not apply.

use elph_agent::hooks::{Dispatch, RunStatus};

/// How a notice should be shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoticeKind {
    /// The hook changed something.
    Effect,
    /// A remark about a run that succeeded (an ignored field, a pipe held open).
    Problem,
    /// The hook failed, was not run, or its output was rejected: the operation went on without
    /// it (a guard that failed open) or was stopped (a fail-closed hook). Shown louder than a
    /// problem: a guard that failed open let something through unchecked.
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Notice {
    pub kind: NoticeKind,
    pub hook_id: Option<String>,
    pub text: String,
}

/// The notices of one dispatch, in run order, then the diagnostics that no run explains.
pub(crate) fn describe(dispatch: &Dispatch) -> Vec<Notice> {
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
                let failure = crate::hooks::host::failure_text(run).unwrap_or_default();
                notices.push(Notice {
                    kind: NoticeKind::Warning,
                    hook_id: Some(id.clone()),
                    text: format!("hook '{id}' ({}) {failure}", run.event),
                });
                continue;
            }
            RunStatus::Ok => {}
        }
        notices.extend(run.effects.iter().cloned().map(effect));
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

/// What a stored prompt replacement says when a session is shown again: who replaced the prompt
/// that follows, and what the user had sent.
pub(crate) fn prompt_replaced(original: &str, by: &[String]) -> String {
    let hooks: Vec<String> = by.iter().map(|id| format!("'{id}'")).collect();
    format!(
        "userPromptSubmit hook {} replaced the next prompt; you sent: {}",
        hooks.join(", then "),
        elph_agent::hooks::events::words::quoted(original, 300)
    )
}
