//! Approval questions as session events: the harness asks the session's approver, which puts the
//! question into the event stream and waits for the front end's answer.

use elph_agent::harness::{AgentEvent, ApprovalDecision, ApprovalRequest, Approver};
use tokio::sync::{mpsc, oneshot};

use std::path::PathBuf;

use super::preview::ChangePreview;

/// Whether anyone can answer approval questions in this front end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approvals {
    /// The front end shows each question ([`SessionEvent::Approval`](super::SessionEvent)) and
    /// answers it.
    Asked,
    /// Nobody can answer (headless): a call that needs approval is refused as such.
    Nobody,
}

/// A tool call waiting for the user; answer through `reply` (dropping it denies).
#[derive(Debug)]
pub struct PendingApproval {
    pub request: ApprovalRequest,
    /// What a `write_file` or `edit_file` call would change, as a diff to show with the question.
    pub preview: Option<ChangePreview>,
    pub reply: oneshot::Sender<ApprovalDecision>,
}

impl PendingApproval {
    /// Answers the question (the turn may have ended meanwhile; then nobody listens).
    pub fn answer(self, decision: ApprovalDecision) {
        let _ = self.reply.send(decision);
    }
}

/// Sends each question to the session task, which forwards it in order with the harness's events.
pub(super) struct QueueApprover {
    pub(super) questions: mpsc::UnboundedSender<PendingApproval>,
    /// Where relative paths in a write's arguments lead, for its preview.
    pub(super) project_dir: PathBuf,
    /// Where an "always allow" answer saves its rule (settings.json).
    pub(super) config_dir: PathBuf,
    /// Where the notice that says where the rule went (or why it could not be saved) goes.
    pub(super) notices: mpsc::UnboundedSender<AgentEvent>,
}

#[async_trait::async_trait]
impl Approver for QueueApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Option<ApprovalDecision> {
        let (reply, answer) = oneshot::channel();
        let pending = PendingApproval {
            request: request.clone(),
            preview: request
                .change
                .as_ref()
                .map(|change| super::preview::preview(&self.project_dir, change)),
            reply,
        };
        if self.questions.send(pending).is_err() {
            return None;
        }
        let decision = answer.await.unwrap_or(ApprovalDecision::Deny);
        if decision == ApprovalDecision::AllowAlways
            && let Some(rule) = &request.suggested_rule
        {
            // The harness allows it for this session either way; only the next sessions depend on
            // the file.
            let message = match crate::permissions::save_allow_rule(&self.config_dir, rule) {
                Ok(path) => format!("added the allow rule {rule} to {}", path.display()),
                Err(error) => format!("the allow rule {rule} holds for this session only: {error}"),
            };
            let _ = self.notices.send(AgentEvent::Notice { message });
        }
        Some(decision)
    }
}
