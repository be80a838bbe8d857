//! The durable transcript of a session: every message, plus compaction summaries that later
//! requests start from. Temporary material (beforeAgent messages, context replacements) never
//! enters it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::messages::Message;

/// One stored entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Entry {
    /// A message of the conversation.
    Message {
        /// The message, as sent or received.
        message: Message,
    },
    /// A summary of the entries before `first_kept`; requests start from the latest summary, then
    /// the messages from entry `first_kept` on (the recent part, kept verbatim).
    Summary {
        /// The model-written summary of the compacted entries.
        summary: String,
        /// How many entries the summary stands for.
        entries_compacted: u64,
        /// The index of the first entry kept verbatim after the summary.
        first_kept: usize,
    },
    /// userPromptSubmit hooks replaced the user's prompt: this is what the user sent, and the
    /// message entry right after it holds what the model received instead.
    PromptReplaced {
        /// The prompt as the user sent it (after any template expansion).
        original: String,
        /// The hooks that replaced it, in order.
        replaced_by: Vec<String>,
    },
}

/// Where entries are persisted as they are appended (the session store implements this).
pub trait TranscriptSink: Send + Sync {
    /// Stores `entry` durably; the error says why it could not.
    fn append(&self, entry: &Entry) -> Result<(), String>;

    /// Keeps the text of an answer while it streams, so that a crash loses nothing already shown.
    /// The next `append` supersedes it.
    fn save_draft(&self, _text: &str) -> Result<(), String> {
        Ok(())
    }
}

/// The session's stored entries, in memory and (with a sink) persisted as they are appended.
#[derive(Clone, Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    sink: Option<Arc<dyn TranscriptSink>>,
}

impl std::fmt::Debug for Transcript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transcript")
            .field("entries", &self.entries)
            .finish()
    }
}

impl Transcript {
    /// An empty transcript that persists nothing.
    pub fn new() -> Self {
        Transcript::default()
    }

    /// A transcript resumed from stored entries; new entries go to `sink`.
    pub fn resume(entries: Vec<Entry>, sink: Option<Arc<dyn TranscriptSink>>) -> Self {
        Transcript { entries, sink }
    }

    /// Where entries are persisted, if anywhere.
    pub fn sink(&self) -> Option<Arc<dyn TranscriptSink>> {
        self.sink.clone()
    }

    /// Persists every entry appended from now on to `sink`.
    pub fn with_sink(mut self, sink: Arc<dyn TranscriptSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Appends and persists an entry. A storage failure is returned so the caller can tell the
    /// user; the entry stays in memory either way.
    pub fn push(&mut self, entry: Entry) -> Result<(), String> {
        let stored = match &self.sink {
            Some(sink) => sink.append(&entry),
            None => Ok(()),
        };
        self.entries.push(entry);
        stored
    }

    /// Appends and persists a message (see [`Transcript::push`]).
    pub fn push_message(&mut self, message: Message) -> Result<(), String> {
        self.push(Entry::Message { message })
    }

    /// Every entry, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Every message ever stored, in order (summaries left out).
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.entries.iter().filter_map(|entry| match entry {
            Entry::Message { message } => Some(message),
            Entry::Summary { .. } | Entry::PromptReplaced { .. } => None,
        })
    }

    /// Index of the latest summary entry, if any.
    fn last_summary(&self) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|entry| matches!(entry, Entry::Summary { .. }))
    }

    /// The index of the first entry requests still see verbatim.
    pub(crate) fn live_start(&self) -> usize {
        match self.last_summary().map(|index| &self.entries[index]) {
            Some(Entry::Summary { first_kept, .. }) => *first_kept,
            _ => 0,
        }
    }

    /// The messages a request starts from: the latest summary (as a user message), then the
    /// messages it kept verbatim and everything after.
    pub fn context_messages(&self) -> Vec<Message> {
        let mut messages = Vec::new();
        if let Some(Entry::Summary { summary, .. }) = self.last_summary().map(|index| &self.entries[index]) {
            messages.push(Message::user(format!(
                "Summary of the earlier conversation:\n\n{summary}"
            )));
        }
        messages.extend(
            self.live_messages()
                .into_iter()
                .map(|(_, message)| message.clone()),
        );
        messages
    }

    /// The messages requests see verbatim, with their entry indexes.
    pub(crate) fn live_messages(&self) -> Vec<(usize, &Message)> {
        let start = self.live_start();
        self.entries
            .iter()
            .enumerate()
            .skip(start)
            .filter_map(|(index, entry)| match entry {
                Entry::Message { message } => Some((index, message)),
                Entry::Summary { .. } | Entry::PromptReplaced { .. } => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_starts_from_the_latest_summary() {
        let mut t = Transcript::new();
        t.push_message(Message::user("old")).unwrap();
        t.push_message(Message::user("recent")).unwrap();
        t.push(Entry::Summary {
            summary: "S".into(),
            entries_compacted: 1,
            first_kept: 1,
        })
        .unwrap();
        t.push_message(Message::user("new")).unwrap();
        let context = t.context_messages();
        assert_eq!(context.len(), 3);
        assert!(context[0].content().text().contains("S"));
        assert_eq!(context[1..], [Message::user("recent"), Message::user("new")]);
        assert_eq!(t.messages().count(), 3, "the full history is kept");
    }
}
