//! Approvals through the editor: a tool call that needs the user's decision (native policy `ask`, or
//! a preToolUse hook's `decision: "ask"`) becomes a `session/request_permission` with the options
//! allow once, allow for this session, and reject.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, SessionNotification, SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use elph_agent::harness::{ApprovalDecision, ApprovalRequest};

use super::updates::{status_update, tool_kind};
use crate::session::PendingApproval;

pub(crate) const ALLOW_ONCE: &str = "allow_once";
pub(crate) const ALLOW_SESSION: &str = "allow_session";
pub(crate) const ALLOW_RULE: &str = "allow_rule";
pub(crate) const REJECT: &str = "reject";

/// Allow once (for a re-run the sandbox refused: run it again with the one permission it lacked),
/// allow for this session and always allow (saves the suggested rule) only where that means
/// something, reject.
fn options(request: &ApprovalRequest) -> Vec<PermissionOption> {
    let once = match request.escalation {
        Some(escalation) => format!("Run it again {}", escalation.describe()),
        None => "Allow once".to_string(),
    };
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        once,
        PermissionOptionKind::AllowOnce,
    )];
    if request.offers_session {
        options.push(PermissionOption::new(
            ALLOW_SESSION,
            "Allow always (this session)",
            PermissionOptionKind::AllowAlways,
        ));
    }
    if let Some(rule) = &request.suggested_rule {
        options.push(PermissionOption::new(
            ALLOW_RULE,
            format!("Always allow {rule} (saved in settings.json)"),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// Asks the client about `question` and answers it. The session forwards the question after the
/// events before it, so the client has seen the tool call (and its pending status) already.
pub(super) async fn ask(
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    question: PendingApproval,
    project_dir: std::path::PathBuf,
) {
    let request = &question.request;
    let reason = ToolCallContent::from(ContentBlock::from(format!("Needs approval: {}", request.reason)));
    // The change the call would make, for the editor to review with the question.
    let mut content: Vec<ToolCallContent> = request
        .change
        .iter()
        .filter_map(|change| super::updates::diff(change, &project_dir))
        .collect();
    content.push(reason);
    let tool_call = ToolCallUpdate::new(
        request.tool_call_id.clone(),
        ToolCallUpdateFields::new()
            .title(request.title.clone())
            .kind(tool_kind(&request.tool_name))
            .status(ToolCallStatus::Pending)
            .content(content)
            .raw_input(request.input.clone()),
    );
    let permission = RequestPermissionRequest::new(session_id.clone(), tool_call, options(request));
    let decision = match cx.send_request(permission).block_task().await {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                ALLOW_ONCE => ApprovalDecision::AllowOnce,
                ALLOW_SESSION => ApprovalDecision::AllowForSession,
                ALLOW_RULE if request.suggested_rule.is_some() => ApprovalDecision::AllowAlways,
                _ => ApprovalDecision::Deny,
            },
            // The turn was cancelled while the question was open.
            _ => ApprovalDecision::Deny,
        },
        Err(err) => {
            tracing::warn!(tool = %request.tool_name, %err, "permission request failed; the call is denied");
            ApprovalDecision::Deny
        }
    };
    // A cancelled turn no longer waits for the answer: its call does not run.
    if decision != ApprovalDecision::Deny && !question.reply.is_closed() {
        // Its content was the question; the result replaces it when the call finishes.
        let running = status_update(&request.tool_call_id, ToolCallStatus::InProgress);
        let update = SessionNotification::new(session_id, SessionUpdate::ToolCallUpdate(running));
        let _ = cx.send_notification(update);
    }
    question.answer(decision);
}
