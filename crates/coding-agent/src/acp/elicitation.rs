//! MCP servers' questions through the editor: ACP v1's `elicitation/create` (stable in the
//! schema Elph speaks), sent when the client's `initialize` declares `elicitation.form` (for a
//! form) or `elicitation.url` (for a URL), scoped to the session. The editor's answer is mapped
//! back (accept with content, decline, cancel); the content is checked against the server's form
//! before it reaches the server. A client that declares neither gets a notice instead, and the
//! server a decline.

use std::sync::{Arc, Mutex};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationCapabilities, ElicitationFormMode,
    ElicitationMode, ElicitationSchema, ElicitationSessionScope, ElicitationUrlMode, SessionId,
};
use serde_json::Value;

use super::updates::{ELPH_MARK, notice};
use crate::mcp::elicitation::{ElicitationAnswer, ElicitationKind, PendingElicitation};

/// The elicitation modes the connection's client declared in `initialize`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Offered(Arc<Mutex<Option<ElicitationCapabilities>>>);

impl Offered {
    /// Remembers what the client declared (a second `initialize` replaces it).
    pub(crate) fn set(&self, capabilities: Option<ElicitationCapabilities>) {
        *super::session::lock(&self.0) = capabilities;
    }

    /// Which modes it takes: (form, url).
    pub(crate) fn modes(&self) -> (bool, bool) {
        super::session::lock(&self.0)
            .as_ref()
            .map_or((false, false), |offered| {
                (offered.form.is_some(), offered.url.is_some())
            })
    }
}

/// Asks the client `question` (or declines it, when the client cannot show its mode) and answers
/// it. A question withdrawn meanwhile (its call ended, its limit passed) stops waiting for the
/// client.
pub(super) async fn ask(
    cx: ConnectionTo<Client>,
    session_id: SessionId,
    mut question: PendingElicitation,
    (form, url): (bool, bool),
) {
    let request = &question.request;
    let mode = match &request.kind {
        ElicitationKind::Form(shown) if form => {
            serde_json::from_value::<ElicitationSchema>(shown.schema.clone())
                .map(|schema| {
                    ElicitationMode::Form(ElicitationFormMode::new(
                        ElicitationSessionScope::new(session_id.clone()),
                        schema,
                    ))
                })
                .map_err(|error| format!("its form is not one ACP can carry ({error})"))
        }
        ElicitationKind::Url { url: address, id } if url => {
            Ok(ElicitationMode::Url(ElicitationUrlMode::new(
                ElicitationSessionScope::new(session_id.clone()),
                id.clone(),
                address.clone(),
            )))
        }
        ElicitationKind::Form(_) => Err("the editor does not declare form elicitation".to_string()),
        ElicitationKind::Url { .. } => Err("the editor does not declare URL elicitation".to_string()),
    };
    let mode = match mode {
        Ok(mode) => mode,
        Err(why) => {
            let text = format!(
                "MCP server '{}' asks: {} (declined: {why})",
                request.server, request.message
            );
            let _ = cx.send_notification(notice(&session_id, ELPH_MARK, &text));
            return question.answer(ElicitationAnswer::Decline);
        }
    };
    // The editor shows the message as it is: it names the asking server.
    let message = format!("MCP server '{}' asks: {}", request.server, request.message);
    let server = request.server.clone();
    let sent = cx
        .send_request(CreateElicitationRequest::new(mode, message))
        .block_task();
    let response = tokio::select! {
        response = sent => response,
        () = question.withdrawn() => return,
    };
    let answer = match response {
        Ok(response) => match response.action {
            ElicitationAction::Accept(accepted) => {
                let content = serde_json::to_value(accepted.content.unwrap_or_default())
                    .ok()
                    .and_then(|content| match content {
                        Value::Object(content) => Some(content),
                        _ => None,
                    })
                    .unwrap_or_default();
                ElicitationAnswer::Accept(content)
            }
            ElicitationAction::Decline => ElicitationAnswer::Decline,
            // Cancelled, or an action this version does not know: nothing was chosen.
            _ => ElicitationAnswer::Cancel,
        },
        Err(error) => {
            tracing::warn!(%server, %error, "elicitation/create failed; the question is cancelled");
            ElicitationAnswer::Cancel
        }
    };
    question.answer(answer);
}
