//! Approvals through the editor: a tool call that needs the user's decision (native policy `ask`, or
//! a preToolUse hook's `decision: "ask"`) becomes a `session/request_permission` with the options
//! allow once, allow for this session, and reject.

use std::sync::OnceLock;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, SessionNotification, SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use elph_agent::harness::{ApprovalDecision, ApprovalRequest, Approver};

use super::updates::{Flusher, status_update, tool_kind, tool_title};

pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_SESSION: &str = "allow_session";
pub const REJECT: &str = "reject";

/// Where a session's permission requests go; known once the session exists.
struct Link {
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    flusher: Flusher,
}

/// The session's approver. Until it is linked to its session there is no one to ask.
#[derive(Default)]
pub struct AcpApprover {
    link: OnceLock<Link>,
}

impl AcpApprover {
    pub fn link(&self, cx: ConnectionTo<Client>, session_id: SessionId, flusher: Flusher) {
        let _ = self.link.set(Link {
            cx,
            session_id,
            flusher,
        });
    }
}

fn options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_SESSION,
            "Allow always (this session)",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
    ]
}

#[async_trait::async_trait]
impl Approver for AcpApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Option<ApprovalDecision> {
        let link = self.link.get()?;
        // The client sees the tool call (and its pending status) before the question about it.
        link.flusher.flush().await;
        let reason = ToolCallContent::from(ContentBlock::from(format!("Needs approval: {}", request.reason)));
        let tool_call = ToolCallUpdate::new(
            request.tool_call_id.clone(),
            ToolCallUpdateFields::new()
                .title(tool_title(&request.tool_name, &request.input))
                .kind(tool_kind(&request.tool_name))
                .status(ToolCallStatus::Pending)
                .content(vec![reason])
                .raw_input(request.input.clone()),
        );
        let question = RequestPermissionRequest::new(link.session_id.clone(), tool_call, options());
        let decision = match link.cx.send_request(question).block_task().await {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
                    ALLOW_ONCE => ApprovalDecision::AllowOnce,
                    ALLOW_SESSION => ApprovalDecision::AllowForSession,
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
        if decision != ApprovalDecision::Deny {
            // Its content was the question; the result replaces it when the call finishes.
            let running = status_update(&request.tool_call_id, ToolCallStatus::InProgress);
            let update =
                SessionNotification::new(link.session_id.clone(), SessionUpdate::ToolCallUpdate(running));
            let _ = link.cx.send_notification(update);
        }
        Some(decision)
    }
}
