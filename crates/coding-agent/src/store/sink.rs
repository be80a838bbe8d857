//! `SessionSink`: the harness's transcript persisted through the session store.

use std::sync::Arc;

use elph_agent::harness::{Entry, TranscriptSink};

use super::SessionStore;

/// Appends each transcript entry to one session of a shared store, as it is pushed.
#[derive(Clone, Debug)]
pub struct SessionSink {
    pub store: Arc<SessionStore>,
    pub session_id: String,
}

impl SessionSink {
    pub fn new(store: Arc<SessionStore>, session_id: impl Into<String>) -> Self {
        SessionSink {
            store,
            session_id: session_id.into(),
        }
    }
}

impl TranscriptSink for SessionSink {
    fn save_draft(&self, text: &str) -> Result<(), String> {
        self.store
            .save_draft(&self.session_id, text)
            .map_err(|e| e.to_string())
    }

    fn append(&self, entry: &Entry) -> Result<(), String> {
        self.store
            .append(&self.session_id, entry)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
