//! What the result of an operation says, worded once for every front end: the TUI shows it as a
//! notice, ACP as the agent's message. A front end decides only whether to show it (the TUI shows
//! the sessions list instead of their count, for example) and what to add around it (the hook
//! set's notices after a reload or a trust change).

use elph_agent::harness::CompactOutcome;

use super::{HookState, ModelOutcome, Outcome, TrustOutcome};

/// How a result reads: news, a change a hook made, or a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tone {
    Info,
    Effect,
    Error,
}

/// One result, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Said {
    pub(crate) tone: Tone,
    pub(crate) text: String,
}

impl Said {
    fn info(text: impl Into<String>) -> Self {
        Said {
            tone: Tone::Info,
            text: text.into(),
        }
    }

    fn error(text: impl Into<String>) -> Self {
        Said {
            tone: Tone::Error,
            text: text.into(),
        }
    }
}

/// The words for an operation's `outcome`, or `None` when the events before it said everything: a
/// turn, a finished compaction.
pub(crate) fn said(outcome: &Outcome) -> Option<Said> {
    Some(match outcome {
        Outcome::Turn(_) => return None,
        Outcome::Compaction(compaction) => return compacted(compaction),
        Outcome::Reloaded(hooks) => Said::info(format!(
            "Reloaded hooks: {} active hook(s), {} diagnostic(s); project {}.",
            hooks.active(),
            hooks.set.diagnostics.len(),
            trust_word(hooks.trust.trusted)
        )),
        Outcome::Trust { trust, outcome } => trusted(*trust, outcome),
        Outcome::Switched => Said::info("Switched sessions."),
        Outcome::AlreadyInSession(id) => Said::info(format!("Already in session {id}.")),
        Outcome::SwitchFailed(error) | Outcome::PromptRejected(error) => Said::error(error),
        Outcome::Sessions(Ok(sessions)) => Said::info(format!("{} stored session(s).", sessions.len())),
        Outcome::Sessions(Err(error)) => Said::error(error),
        Outcome::Mode(Ok(mode)) => Said::info(format!("Mode {mode}: {}", mode.description())),
        Outcome::Mode(Err(error)) => Said::error(error),
        Outcome::Model(ModelOutcome::Current(model)) => Said::info(format!(
            "Model: {model}. /model PROVIDER/MODEL switches this session to another."
        )),
        Outcome::Model(ModelOutcome::Switched(model)) => {
            Said::info(format!("Model: {model}; the next requests go to it."))
        }
        Outcome::Model(ModelOutcome::Failed { error, current }) => Said::error(format!(
            "Cannot switch the model: {error}. Still using {current}."
        )),
    })
}

fn compacted(outcome: &CompactOutcome) -> Option<Said> {
    Some(match outcome {
        // The harness's Compacted event already said so.
        CompactOutcome::Compacted { .. } => return None,
        CompactOutcome::CancelledByHook { hook_id } => Said {
            tone: Tone::Effect,
            text: format!("Compaction was cancelled by hook '{hook_id}'."),
        },
        CompactOutcome::Interrupted => Said::info("Compaction cancelled."),
        CompactOutcome::NothingToCompact => Said::info("Nothing to compact yet."),
        CompactOutcome::Failed(error) => Said::error(format!("Compaction failed: {error}")),
    })
}

/// `/trust` (`trust`) or `/untrust`, as it went.
fn trusted(trust: bool, outcome: &TrustOutcome) -> Said {
    match (trust, outcome) {
        (true, TrustOutcome::Changed(hooks)) => Said::info(format!(
            "Trusted {}: its project hooks are on ({} active hook(s) in all).",
            hooks.project_dir.display(),
            hooks.active()
        )),
        (true, TrustOutcome::Unchanged(hooks)) => Said::info(format!(
            "{} is already trusted ({}).",
            hooks.project_dir.display(),
            hooks.trust.explanation()
        )),
        (false, TrustOutcome::Changed(hooks)) => Said::info(untrusted(hooks)),
        (false, TrustOutcome::Unchanged(hooks)) => Said::info(format!(
            "{} is not trusted, so there is nothing to untrust.",
            hooks.project_dir.display()
        )),
        (trust, TrustOutcome::Failed { project_dir, error }) => Said::error(format!(
            "Could not {} {}: {error}",
            if trust { "trust" } else { "untrust" },
            project_dir.display()
        )),
    }
}

fn untrusted(hooks: &HookState) -> String {
    let dir = hooks.project_dir.display();
    format!(
        "{dir} is no longer trusted: its project hooks are off ({} active hook(s) left). {} \
         Trust it again with /trust.",
        hooks.active(),
        crate::gate::next_start(hooks.trust.default)
    )
}

/// `trusted` or `not trusted`.
pub(crate) fn trust_word(trusted: bool) -> &'static str {
    if trusted { "trusted" } else { "not trusted" }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use elph_agent::harness::{AgentMode, CompactOutcome};

    use super::*;

    #[test]
    fn a_failed_trust_change_names_the_project_and_the_cause() {
        let failed = |trust| Outcome::Trust {
            trust,
            outcome: TrustOutcome::Failed {
                project_dir: PathBuf::from("/work/p"),
                error: "trust.json is read-only".into(),
            },
        };
        assert_eq!(
            said(&failed(true)),
            Some(Said::error("Could not trust /work/p: trust.json is read-only"))
        );
        assert_eq!(
            said(&failed(false)),
            Some(Said::error("Could not untrust /work/p: trust.json is read-only"))
        );
    }

    #[test]
    fn what_the_events_already_told_has_no_words() {
        let compacted = CompactOutcome::Compacted { entries_compacted: 3 };
        assert_eq!(said(&Outcome::Compaction(compacted)), None);
        assert_eq!(
            said(&Outcome::Compaction(CompactOutcome::NothingToCompact)),
            Some(Said::info("Nothing to compact yet."))
        );
        assert_eq!(
            said(&Outcome::Mode(Ok(AgentMode::Plan))).map(|said| said.tone),
            Some(Tone::Info)
        );
    }
}
