//! Sessions and transcripts in SQLite: `DATA_DIR/sessions.db`, never inside the project.
//!
//! - [`SessionStore`]: the database (WAL, one transaction per appended entry, safe to share
//!   between threads and between `elph` processes).
//! - [`SessionSink`]: the harness's [`TranscriptSink`](elph_agent::harness::TranscriptSink),
//!   persisting every transcript entry as it is pushed.
//! - [`format_sessions`]: the table `elph sessions` prints.
//! - `lease`: one writer per session, a lock the kernel releases when its holder dies.
//! - `repair`: a session left with a tool call and no result is made whole again on load.

mod db;
mod error;
mod format;
mod lease;
mod repair;
mod sink;

use std::path::PathBuf;

use serde::{Serialize, Serializer};
use time::OffsetDateTime;

pub(crate) use db::one_line;
pub(crate) use db::refuse_read_only;
pub use db::{BUSY_TIMEOUT, DB_FILE, SCHEMA_VERSION, SessionStore, TITLE_CHARS};
pub use error::StoreError;
pub use format::{ago, distinct_prefixes, format_sessions};
pub use lease::LOCKS_DIR;
pub use repair::{INTERRUPTED_RESULT, interrupted_result, unanswered_calls};
pub use sink::SessionSink;

/// A new session id: a UUID v7, so ids sort by creation time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// One session as listed by `elph sessions` (`--json` prints these, camelCase, times in RFC 3339).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub id: String,
    pub project_dir: PathBuf,
    #[serde(serialize_with = "rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(serialize_with = "rfc3339")]
    pub updated_at: OffsetDateTime,
    /// `PROVIDER/MODEL`, as given when the session started (or last changed).
    pub model: String,
    /// The first user prompt on one line, cut to [`TITLE_CHARS`]; `None` until there is one.
    pub title: Option<String>,
    pub entry_count: u64,
}

fn rfc3339<S: Serializer>(time: &OffsetDateTime, serializer: S) -> Result<S::Ok, S::Error> {
    let text = time
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(serde::ser::Error::custom)?;
    serializer.serialize_str(&text)
}
