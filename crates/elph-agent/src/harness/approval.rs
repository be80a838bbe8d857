//! Native approval: the `--approval` policy, and who answers when a call needs approval.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The native policy for tools that change files or run commands (read-only tools always run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalPolicy {
    /// Run every call.
    #[default]
    Auto,
    /// Ask before each mutating call.
    Ask,
    /// Refuse every mutating call.
    Deny,
}

impl std::str::FromStr for ApprovalPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(ApprovalPolicy::Auto),
            "ask" => Ok(ApprovalPolicy::Ask),
            "deny" => Ok(ApprovalPolicy::Deny),
            other => Err(format!(
                "unknown approval policy '{other}'; expected auto, ask or deny"
            )),
        }
    }
}

/// A tool call waiting for the user's decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The model's id for the call, so the answer reaches the right call.
    pub tool_call_id: String,
    /// The tool the model wants to run.
    pub tool_name: String,
    /// The arguments it would run with (after any hook rewrite), for the user to judge.
    pub input: Value,
    /// What the call does, in the tool's words ([`crate::tools::TypedTool::title`]).
    pub title: String,
    /// The change to a file it proposes (`write_file`, `edit_file`), for a diff with the question.
    pub change: Option<crate::tools::ProposedChange>,
    /// Why approval is needed, in words for the user.
    pub reason: String,
    /// Whether "yes for this session" means anything here. It does not for a write to a protected
    /// place or a hook's `ask`: those are approved one call at a time, so a front end offers only
    /// yes (once) and no.
    pub offers_session: bool,
    /// The allow rule "always allow" would add (`shell_exec(git status*)`), when the question is
    /// the approval policy's about one plain command; a front end that offers it saves the rule.
    pub suggested_rule: Option<String>,
    /// Set when the command already ran and the sandbox refused it: yes runs it once more with
    /// this one extra permission.
    pub escalation: Option<Escalation>,
}

/// The one permission a re-run of a refused command gets, for that run only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Escalation {
    /// The network (the sandbox stays otherwise).
    Network,
    /// No sandbox at all.
    Unconfined,
}

impl Escalation {
    /// What the re-run gets, in words for the user.
    pub fn describe(self) -> &'static str {
        match self {
            Escalation::Network => "with the network on",
            Escalation::Unconfined => "outside the sandbox",
        }
    }
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    /// Run this one call.
    AllowOnce,
    /// Allow this tool for the rest of the session.
    AllowForSession,
    /// Add the request's `suggested_rule` to the allow rules: this session at once, and the front
    /// end saves it for the next ones.
    AllowAlways,
    /// Do not run it; the model is told the user refused.
    Deny,
}

/// Asks the user. Front ends with a user (TUI, ACP) implement it.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// `None` when there is no one to ask (headless): the call is denied.
    async fn approve(&self, request: &ApprovalRequest) -> Option<ApprovalDecision>;

    /// Whether someone is there to ask: only then does an approval wait (and the
    /// `permissionRequest` and `notification` hooks hear of it).
    fn asks(&self) -> bool {
        true
    }
}

/// Headless: there is no one to ask.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoApprover;

#[async_trait::async_trait]
impl Approver for NoApprover {
    async fn approve(&self, _request: &ApprovalRequest) -> Option<ApprovalDecision> {
        None
    }

    fn asks(&self) -> bool {
        false
    }
}
