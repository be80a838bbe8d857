//! Elicitation (docs/mcp.md, "Elicitation"): an MCP server asks the user for input in the middle
//! of its work, with a form (`requestedSchema`) or a URL to open. Elph declares both modes; the
//! server's request becomes a [`PendingElicitation`] in the session's event stream, and the front
//! end answers it: the terminal UI with a form, an ACP editor that declares elicitation with its
//! own, and a headless run with a decline and a notice (nobody is there to answer).
//!
//! Bounds:
//! - **One question at a time per session.** A second one (another server's, or the same
//!   server's from a parallel call) waits until the first is answered, then is shown; the wait
//!   counts against its limit.
//! - **A limit**: a question not answered within [`ANSWER_LIMIT`] is cancelled, and the user is
//!   told.
//! - **Withdrawn** (the server hears `cancel`) when the tool call it came from ends (a cancelled
//!   turn drops the call), when the server cancels its request, or when the session stops. The
//!   front end sees that through [`PendingElicitation::is_withdrawn`].
//! - While a server's question is open, its tool call's `timeoutMs` does not run: the time the
//!   user takes to answer is not the server's.
//!
//! An answer's content is checked against the form before it goes back; content that does not
//! fit (an editor's, since the terminal UI checks as the user types) is declined with a notice.

pub mod form;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use elph_agent::harness::AgentEvent;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    UrlElicitationCapability,
};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

pub use form::{Choice, Field, FieldKind, Form, TextFormat};

/// How long a question stays open before it is cancelled.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(10 * 60);

/// What Elph declares in `initialize`: form mode (answers checked against the schema) and URL
/// mode.
pub(crate) fn capability() -> ElicitationCapability {
    ElicitationCapability::new()
        .with_form(FormElicitationCapability::new().with_schema_validation(true))
        .with_url(UrlElicitationCapability::new())
}

/// What the server asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationKind {
    /// Fill in a form.
    Form(Form),
    /// Open `url` (in a browser of the user's) and finish there; `id` is the server's.
    Url { url: String, id: String },
}

/// One server's question.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitationRequest {
    /// The asking server's name (from mcp.json, or the editor's).
    pub server: String,
    /// The server's own words: untrusted text, to be escaped where it is shown.
    pub message: String,
    pub kind: ElicitationKind,
}

/// The user's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationAnswer {
    /// The form's values (checked against it), or `{}` for a URL the user agreed to open.
    Accept(Map<String, Value>),
    /// The user said no: the server goes on without the input.
    Decline,
    /// The user dismissed the question without choosing.
    Cancel,
}

/// A question waiting for the front end; answer through [`PendingElicitation::answer`] (dropping
/// it cancels).
#[derive(Debug)]
pub struct PendingElicitation {
    pub request: ElicitationRequest,
    reply: oneshot::Sender<ElicitationAnswer>,
}

impl PendingElicitation {
    pub fn answer(self, answer: ElicitationAnswer) {
        let _ = self.reply.send(answer);
    }

    /// Whether nobody waits for the answer any more: its limit passed, its tool call ended (the
    /// turn was cancelled), the server cancelled it, or the session stopped.
    pub fn is_withdrawn(&self) -> bool {
        self.reply.is_closed()
    }

    /// Resolves when the question is withdrawn (see [`Self::is_withdrawn`]).
    pub async fn withdrawn(&mut self) {
        self.reply.closed().await;
    }

    /// A question with its receiving end, for tests of the front ends.
    pub fn new(request: ElicitationRequest) -> (PendingElicitation, oneshot::Receiver<ElicitationAnswer>) {
        let (reply, answer) = oneshot::channel();
        (PendingElicitation { request, reply }, answer)
    }
}

/// The session's side: where questions go, one at a time, under the limit.
pub struct Elicitations {
    /// The session's queue of questions; none until the session attaches one (then nobody can
    /// answer, and questions are declined).
    asker: Mutex<Option<mpsc::UnboundedSender<PendingElicitation>>>,
    /// Where notices go (a refused form, a question that ran out of time).
    notices: Option<mpsc::UnboundedSender<AgentEvent>>,
    one_at_a_time: tokio::sync::Semaphore,
    limit: Duration,
}

impl Elicitations {
    pub(crate) fn new(notices: Option<mpsc::UnboundedSender<AgentEvent>>, limit: Duration) -> Self {
        Elicitations {
            asker: Mutex::new(None),
            notices,
            one_at_a_time: tokio::sync::Semaphore::new(1),
            limit,
        }
    }

    /// From now on, questions go to `asker` (the session's event stream).
    pub fn attach(&self, asker: mpsc::UnboundedSender<PendingElicitation>) {
        *self.asker.lock().unwrap_or_else(|p| p.into_inner()) = Some(asker);
    }

    fn notice(&self, message: String) {
        tracing::info!(%message, "mcp elicitation");
        if let Some(notices) = &self.notices {
            let _ = notices.send(AgentEvent::Notice { message });
        }
    }

    /// Asks the user `params` of `server` and returns the answer for the server. `cancelled` is
    /// the server's own cancellation of its request.
    pub(crate) async fn ask(
        &self,
        server: &str,
        desk: &ServerDesk,
        params: ElicitRequestParams,
        cancelled: CancellationToken,
    ) -> Result<ElicitResult, McpError> {
        let (message, kind) = match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
                match Form::from_schema(&schema) {
                    Ok(form) => (message, ElicitationKind::Form(form)),
                    Err(problem) => {
                        self.notice(format!(
                            "MCP server '{server}' asked for input with a form Elph cannot show ({problem}); refused"
                        ));
                        return Err(McpError::invalid_params(
                            format!("the requested schema cannot be shown as a form: {problem}"),
                            None,
                        ));
                    }
                }
            }
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => (
                message,
                ElicitationKind::Url {
                    url,
                    id: elicitation_id,
                },
            ),
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        let form = match &kind {
            ElicitationKind::Form(form) => Some(form.clone()),
            ElicitationKind::Url { .. } => None,
        };
        let request = ElicitationRequest {
            server: server.to_string(),
            message,
            kind,
        };
        let asker = self.asker.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(asker) = asker else {
            self.notice(format!(
                "MCP server '{server}' asked for input ({}), but nobody can answer here; declined",
                request.message
            ));
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let _open = desk.open();
        let from_a_call = *desk.calls.borrow() > 0;
        let mut calls = desk.calls.subscribe();
        let call_ended = async move {
            if from_a_call {
                let _ = calls.wait_for(|calls| *calls == 0).await;
            } else {
                std::future::pending::<()>().await;
            }
        };
        let asked = async {
            let _turn = self.one_at_a_time.acquire().await;
            let (pending, answer) = PendingElicitation::new(request);
            if asker.send(pending).is_err() {
                return ElicitationAnswer::Decline;
            }
            answer.await.unwrap_or(ElicitationAnswer::Cancel)
        };
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.limit, asked) => answer.unwrap_or_else(|_| {
                self.notice(format!(
                    "MCP server '{server}''s question was not answered within {}; cancelled",
                    super::server::human_duration(self.limit)
                ));
                ElicitationAnswer::Cancel
            }),
            () = cancelled.cancelled() => ElicitationAnswer::Cancel,
            () = call_ended => ElicitationAnswer::Cancel,
        };
        Ok(match answer {
            ElicitationAnswer::Accept(content) => match form.map(|form| form.check(&content)) {
                Some(Err(problem)) => {
                    self.notice(format!(
                        "the answer to MCP server '{server}' does not fit its form ({problem}); declined"
                    ));
                    ElicitResult::new(ElicitationAction::Decline)
                }
                Some(Ok(())) => {
                    ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
                }
                None => ElicitResult::new(ElicitationAction::Accept),
            },
            ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}

/// One server's side: its calls in flight (a question from a call is withdrawn when the call
/// ends) and its open questions (its calls' timeouts wait while one is open).
pub(crate) struct ServerDesk {
    calls: watch::Sender<usize>,
    open: watch::Sender<usize>,
}

/// Counts one while it lives.
pub(crate) struct Counted(watch::Sender<usize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

impl ServerDesk {
    pub(crate) fn new() -> Arc<ServerDesk> {
        Arc::new(ServerDesk {
            calls: watch::channel(0).0,
            open: watch::channel(0).0,
        })
    }

    fn count(sender: &watch::Sender<usize>) -> Counted {
        sender.send_modify(|count| *count += 1);
        Counted(sender.clone())
    }

    /// A tool call of the server runs while the guard lives.
    pub(crate) fn call(&self) -> Counted {
        Self::count(&self.calls)
    }

    fn open(&self) -> Counted {
        Self::count(&self.open)
    }

    /// `work`, unless `limit` passes first, not counting the time while one of the server's
    /// questions is open; `None` when the limit passed.
    pub(crate) async fn within<F: std::future::Future>(&self, limit: Duration, work: F) -> Option<F::Output> {
        tokio::pin!(work);
        let mut open = self.open.subscribe();
        let mut left = limit;
        loop {
            let asking = *open.borrow_and_update() > 0;
            let started = tokio::time::Instant::now();
            tokio::select! {
                output = &mut work => return Some(output),
                () = tokio::time::sleep(left), if !asking => return None,
                changed = open.changed() => {
                    if changed.is_err() {
                        return tokio::time::timeout(left, work).await.ok();
                    }
                    if !asking {
                        left = left.saturating_sub(started.elapsed());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form_params(message: &str) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 2}},
                "required": ["name"]
            }
        }))
        .unwrap()
    }

    fn desk(
        limit: Duration,
    ) -> (
        Arc<Elicitations>,
        mpsc::UnboundedReceiver<PendingElicitation>,
        mpsc::UnboundedReceiver<AgentEvent>,
    ) {
        let (notices, notes) = mpsc::unbounded_channel();
        let elicitations = Arc::new(Elicitations::new(Some(notices), limit));
        let (asker, questions) = mpsc::unbounded_channel();
        elicitations.attach(asker);
        (elicitations, questions, notes)
    }

    #[tokio::test]
    async fn the_second_question_waits_until_the_first_is_answered() {
        let (elicitations, mut questions, _notes) = desk(Duration::from_secs(60));
        let server = ServerDesk::new();
        let first = tokio::spawn({
            let (elicitations, server) = (elicitations.clone(), server.clone());
            async move {
                elicitations
                    .ask("a", &server, form_params("first"), CancellationToken::new())
                    .await
            }
        });
        let asked = questions.recv().await.unwrap();
        assert_eq!(asked.request.message, "first");
        let second = tokio::spawn({
            let (elicitations, server) = (elicitations.clone(), server.clone());
            async move {
                elicitations
                    .ask("b", &server, form_params("second"), CancellationToken::new())
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            questions.try_recv().is_err(),
            "the second waits while the first is open"
        );
        asked.answer(ElicitationAnswer::Accept(
            json!({"name": "Ada"}).as_object().unwrap().clone(),
        ));
        let result = first.await.unwrap().unwrap();
        assert_eq!(result.action, ElicitationAction::Accept);
        assert_eq!(result.content, Some(json!({"name": "Ada"})));
        let next = questions.recv().await.unwrap();
        assert_eq!(next.request.server, "b");
        next.answer(ElicitationAnswer::Decline);
        assert_eq!(second.await.unwrap().unwrap().action, ElicitationAction::Decline);
    }

    #[tokio::test]
    async fn an_answer_that_breaks_the_form_is_declined_and_said() {
        let (elicitations, mut questions, mut notes) = desk(Duration::from_secs(60));
        let server = ServerDesk::new();
        let asking = tokio::spawn({
            let elicitations = elicitations.clone();
            async move {
                elicitations
                    .ask("s", &server, form_params("?"), CancellationToken::new())
                    .await
            }
        });
        let asked = questions.recv().await.unwrap();
        asked.answer(ElicitationAnswer::Accept(
            json!({"name": "A"}).as_object().unwrap().clone(),
        ));
        assert_eq!(asking.await.unwrap().unwrap().action, ElicitationAction::Decline);
        let AgentEvent::Notice { message } = notes.recv().await.unwrap() else {
            panic!("a notice")
        };
        assert_eq!(
            message,
            "the answer to MCP server 's' does not fit its form (name: needs at least 2 characters); declined"
        );
    }

    #[tokio::test]
    async fn an_unanswered_question_is_cancelled_at_its_limit_and_withdrawn() {
        let (elicitations, mut questions, mut notes) = desk(Duration::from_millis(200));
        let server = ServerDesk::new();
        let asking = tokio::spawn({
            let elicitations = elicitations.clone();
            async move {
                elicitations
                    .ask("slow", &server, form_params("?"), CancellationToken::new())
                    .await
            }
        });
        let mut asked = questions.recv().await.unwrap();
        assert_eq!(asking.await.unwrap().unwrap().action, ElicitationAction::Cancel);
        asked.withdrawn().await;
        assert!(asked.is_withdrawn());
        let AgentEvent::Notice { message } = notes.recv().await.unwrap() else {
            panic!("a notice")
        };
        assert_eq!(
            message,
            "MCP server 'slow''s question was not answered within 200 ms; cancelled"
        );
    }

    #[tokio::test]
    async fn a_question_from_a_call_is_withdrawn_when_the_call_ends() {
        let (elicitations, mut questions, _notes) = desk(Duration::from_secs(60));
        let server = ServerDesk::new();
        let call = server.call();
        let asking = tokio::spawn({
            let (elicitations, server) = (elicitations.clone(), server.clone());
            async move {
                elicitations
                    .ask("s", &server, form_params("?"), CancellationToken::new())
                    .await
            }
        });
        let mut asked = questions.recv().await.unwrap();
        drop(call);
        assert_eq!(asking.await.unwrap().unwrap().action, ElicitationAction::Cancel);
        asked.withdrawn().await;
    }

    #[tokio::test]
    async fn without_a_front_end_the_question_is_declined_with_a_notice() {
        let (notices, mut notes) = mpsc::unbounded_channel();
        let elicitations = Elicitations::new(Some(notices), Duration::from_secs(60));
        let result = elicitations
            .ask(
                "s",
                &ServerDesk::new(),
                form_params("Your name?"),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        assert_eq!(result.action, ElicitationAction::Decline);
        let AgentEvent::Notice { message } = notes.recv().await.unwrap() else {
            panic!("a notice")
        };
        assert!(message.contains("'s' asked for input (Your name?)"), "{message}");
    }

    #[tokio::test]
    async fn a_calls_limit_does_not_run_while_its_server_asks() {
        let server = ServerDesk::new();
        let open = server.open();
        // Work of 2 s under a 1 s limit, with a question open for its first 1.5 s: the limit
        // starts after the question, so the work finishes first.
        let limited = tokio::spawn({
            let server = server.clone();
            async move {
                server
                    .within(Duration::from_secs(1), tokio::time::sleep(Duration::from_secs(2)))
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(1500)).await;
        drop(open);
        assert_eq!(limited.await.unwrap(), Some(()));
        let endless = std::future::pending::<()>();
        assert_eq!(server.within(Duration::from_millis(100), endless).await, None);
    }
}
