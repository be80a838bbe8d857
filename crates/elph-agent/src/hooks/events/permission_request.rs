//! `permissionRequest`: a tool call waits for the user's approval (native approval, a protected
//! write, or a preToolUse hook's `ask`). A hook sees the call and the reason; it may deny the call
//! before the user is asked, never allow it: the decision to let a call through stays the user's.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Event, Sample, Step};
use crate::hooks::outcome::{OutcomeError, check_len};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::{ChainFlow, Verdict};

/// The `permissionRequest` event: an approval is waiting.
pub struct PermissionRequest;

/// What a `permissionRequest` hook reads: the call that waits, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequestPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// The tool the model called.
    pub tool_name: String,
    /// The model's id for this call.
    pub tool_call_id: String,
    /// The arguments the call would run with (after any preToolUse rewrite).
    pub tool_input: Value,
    /// Why approval is needed, in the words the user is shown.
    pub reason: String,
}

/// The one decision a `permissionRequest` hook may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionDecision {
    /// Refuse the call without asking the user; the model is told why.
    Deny,
}

/// What a `permissionRequest` hook may print.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionRequestOutcome {
    /// `deny` refuses the call before the user is asked. There is no `allow`.
    pub decision: Option<PermissionDecision>,
    /// Why, in words the model and the user are shown.
    pub reason: Option<String>,
}

/// Whether a hook denied the call before the user was asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename = "permissionRequest", rename_all = "camelCase")]
pub struct PermissionRequestReduced {
    /// The hook that denied the call; nothing after it ran, and the user was not asked.
    pub denied: Option<Verdict>,
}

impl Event for PermissionRequest {
    type Payload = PermissionRequestPayload;
    type Outcome = PermissionRequestOutcome;
    type Reduced = PermissionRequestReduced;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("PermissionRequest");
    const UNCHECKED: Option<&'static str> = Some("the user was asked without its check");
    const FAIL_CLOSED: &'static str = "the tool call is denied without asking the user";
    const TOOL_EVENT: bool = true;

    fn base(payload: &PermissionRequestPayload) -> &PayloadBase {
        &payload.base
    }

    fn tool_name(payload: &PermissionRequestPayload) -> Option<&str> {
        Some(&payload.tool_name)
    }

    fn tool_call_id(payload: &PermissionRequestPayload) -> Option<&str> {
        Some(&payload.tool_call_id)
    }

    fn validate(outcome: &PermissionRequestOutcome) -> Result<(), OutcomeError> {
        check_len("reason", outcome.reason.as_deref())
    }

    fn explain_invalid(error: serde_json::Error) -> String {
        if error.to_string().contains("unknown variant") {
            "decision must be \"deny\": a permissionRequest hook can deny a call, never allow it \
             (the user decides)"
                .into()
        } else {
            error.to_string()
        }
    }

    fn start(_payload: &PermissionRequestPayload) -> PermissionRequestReduced {
        PermissionRequestReduced::default()
    }

    fn apply(mut step: Step<'_, Self>, outcome: &PermissionRequestOutcome) -> ChainFlow {
        if outcome.decision != Some(PermissionDecision::Deny) {
            return ChainFlow::Continue;
        }
        let reason = outcome
            .reason
            .as_deref()
            .map(|reason| format!(": {reason}"))
            .unwrap_or_default();
        step.reduced.denied = Some(step.verdict(outcome.reason.clone()));
        step.effect(format!("denied the tool call before you were asked{reason}"));
        ChainFlow::Stop
    }

    fn stopped_by(reduced: &PermissionRequestReduced) -> Option<&Verdict> {
        reduced.denied.as_ref()
    }

    fn explain(reduced: &PermissionRequestReduced) -> Vec<String> {
        match &reduced.denied {
            Some(verdict) => vec![format!(
                "DENIED: {}. The user is not asked; the model receives that reason as an error result.",
                verdict.describe("denied")
            )],
            None => vec!["not denied: the user is asked.".into()],
        }
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> PermissionRequestPayload {
        PermissionRequestPayload {
            base,
            tool_name: sample.tool_name.to_string(),
            tool_call_id: "call_test".into(),
            tool_input: sample.tool_input.clone(),
            reason: format!(
                "{} changes files or runs commands (approval policy: ask)",
                sample.tool_name
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::{HookEvent, HookOutcome, HookPayload, Reduced, Reducer, parse_outcome};
    use serde_json::json;

    fn payload() -> HookPayload {
        HookPayload::PermissionRequest(PermissionRequestPayload {
            base: PayloadBase::new("s", "/p"),
            tool_name: "shell_exec".into(),
            tool_call_id: "c1".into(),
            tool_input: json!({"command": "ls"}),
            reason: "asks".into(),
        })
    }

    #[test]
    fn a_deny_stops_the_chain_and_names_the_hook() {
        let deny = HookOutcome::PermissionRequest(PermissionRequestOutcome {
            decision: Some(PermissionDecision::Deny),
            reason: Some("not on Fridays".into()),
        });
        let mut chain = Reducer::new(payload());
        assert_eq!(chain.apply("friday", &deny), ChainFlow::Stop);
        let Reduced::PermissionRequest(reduced) = chain.finish() else {
            panic!()
        };
        assert_eq!(
            reduced.denied.unwrap().describe("denied"),
            "denied by hook 'friday': not on Fridays"
        );
    }

    #[test]
    fn allow_is_refused_with_words_that_say_why() {
        let error = parse_outcome(HookEvent::PermissionRequest, &json!({"decision": "allow"})).unwrap_err();
        assert!(error.to_string().contains("never allow"), "{error}");
        assert!(parse_outcome(HookEvent::PermissionRequest, &json!({"decision": "deny"})).is_ok());
    }
}
