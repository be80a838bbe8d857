//! Pipelined requests after `initialize`. A client may send `session/new` right behind its
//! `initialize`, without waiting for the answer; the protocol library checks the handshake when a
//! request is *read* and refused such a request (-32600, "initialization must complete"). So the
//! line after an `initialize` request is not handed on until the answer to it has been written:
//! the requests are then served in the order they arrived, as if the client had waited.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::Notify;

/// How long the lines after an `initialize` wait for its answer at most. The answer is immediate;
/// this only keeps a lost one from stopping the connection for good.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// Shared by the connection's incoming lines and its outgoing frames.
#[derive(Clone, Default)]
pub(crate) struct Handshake {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The id of the `initialize` request read and not answered yet.
    pending: Mutex<Option<Value>>,
    answered: Notify,
}

type Lines = Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>;

impl Handshake {
    /// `lines`, each one after an `initialize` request held back until that request's answer
    /// has been written ([`Handshake::sent`]).
    pub(crate) fn gate(
        &self,
        lines: impl Stream<Item = io::Result<String>> + Send + 'static,
    ) -> impl Stream<Item = io::Result<String>> + Send + 'static {
        let lines: Lines = Box::pin(lines);
        futures::stream::unfold((lines, self.inner.clone()), |(mut lines, inner)| async move {
            inner.wait_for_answer().await;
            let line = lines.next().await?;
            if let Ok(text) = &line
                && let Some(id) = initialize_id(text)
            {
                *super::session::lock(&inner.pending) = Some(id);
            }
            Some((line, (lines, inner)))
        })
    }

    /// Called with every frame once it is written: the answer to the pending `initialize` lets
    /// the next line through.
    pub(crate) fn sent(&self, frame: &str) {
        let mut pending = super::session::lock(&self.inner.pending);
        let Some(id) = pending.as_ref() else {
            return;
        };
        if answer_id(frame).as_ref() == Some(id) {
            *pending = None;
            self.inner.answered.notify_one();
        }
    }
}

impl Inner {
    async fn wait_for_answer(&self) {
        let deadline = tokio::time::Instant::now() + MAX_WAIT;
        loop {
            let answered = self.answered.notified();
            if super::session::lock(&self.pending).is_none() {
                return;
            }
            if tokio::time::timeout_at(deadline, answered).await.is_err() {
                tracing::warn!("no answer to initialize was written in time; reading on");
                *super::session::lock(&self.pending) = None;
                return;
            }
        }
    }
}

/// The id of an `initialize` request (not a notification); only lines that name the method are
/// parsed.
fn initialize_id(line: &str) -> Option<Value> {
    if !line.contains("\"initialize\"") {
        return None;
    }
    let value: Value = serde_json::from_str(line).ok()?;
    let object = value.as_object()?;
    if object.get("method")?.as_str()? != "initialize" {
        return None;
    }
    object.get("id").cloned()
}

/// The id of a response (a frame with an id and no method).
fn answer_id(frame: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(frame).ok()?;
    let object = value.as_object()?;
    if object.contains_key("method") {
        return None;
    }
    object.get("id").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_initialize_requests_hold_the_lines_behind_them() {
        let id = |line: &str| initialize_id(line);
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            Some(Value::from(1))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","method":"initialize"}"#),
            None,
            "a notification"
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"text":"initialize"}}"#),
            None
        );
        assert_eq!(id("{\"initialize\": not json"), None);
        assert_eq!(
            answer_id(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Some(Value::from("a"))
        );
        assert_eq!(answer_id(r#"{"jsonrpc":"2.0","id":3,"method":"fs/read"}"#), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, failure_persistence: None, ..Default::default() })]

        #[test]
        fn any_line_or_frame_is_looked_at_without_a_panic(text in "(\"initialize\"|[{}:,\"]|.){0,48}") {
            let _ = initialize_id(&text);
            let _ = answer_id(&text);
        }
    }

    #[tokio::test]
    async fn the_line_after_initialize_waits_for_its_answer() {
        let handshake = Handshake::default();
        let lines = futures::stream::iter(
            [
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
                r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{}}"#,
            ]
            .map(|line| Ok(line.to_string())),
        );
        let mut gated = Box::pin(handshake.gate(lines));
        assert!(gated.next().await.unwrap().unwrap().contains("initialize"));
        let next = tokio::time::timeout(Duration::from_millis(100), gated.next()).await;
        assert!(next.is_err(), "held while initialize is unanswered");
        handshake.sent(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#);
        handshake.sent(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(gated.next().await.unwrap().unwrap().contains("session/new"));
    }
}
