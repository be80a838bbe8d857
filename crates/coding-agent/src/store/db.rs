//! `SessionStore`: the connection to `DATA_DIR/sessions.db`, its schema, and every query.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use elph_agent::harness::{Entry, Transcript};
use elph_agent::messages::Message;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use time::OffsetDateTime;

use super::error::StoreError;
use super::lease::{self, Claim, SessionLease};
use super::{SessionInfo, SessionSink};

/// The database file inside DATA_DIR.
pub const DB_FILE: &str = "sessions.db";

/// The schema version this build writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// How long a write waits for another process (another `elph` on the same DATA_DIR) to finish its
/// transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// WAL pages after which a commit checkpoints (and the next write restarts the WAL). The WAL is
/// kept between runs and recovered at open, so this bounds what each start reads back.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 100;

/// Titles are the first user prompt on one line, cut to this many characters.
pub const TITLE_CHARS: usize = 80;

/// Version 1. Times are UTC microseconds since the Unix epoch. `seq` counts from 0 in each session
/// with no gaps, so it equals the entry's index in the `Transcript` (what `Summary.first_kept`
/// refers to). Entries are append-only. Sessions are indexed by project only, not by
/// `updated_at`: every append bumps `updated_at`, and an index on it would be one more page
/// rewritten per append, while a project's sessions are few enough to sort in memory. `drafts`
/// holds the text of an answer while it streams, so a crash or kill -9 loses nothing already shown;
/// the next entry of the session replaces it.
const SCHEMA_V1: &str = "
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    project_dir TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    model       TEXT NOT NULL,
    title       TEXT
);
CREATE INDEX sessions_by_project ON sessions (project_dir);
CREATE TABLE entries (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE drafts (
    session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    text       TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
";

/// `updated_at` for a session being touched: now, but strictly later than every other session of
/// the same project, so "the most recently updated session" (`elph -c`) is never a tie, even when
/// two sessions are written within one clock tick or the clock steps back.
const NEXT_UPDATED_AT: &str = "MAX(?1, COALESCE((SELECT MAX(o.updated_at) + 1 FROM sessions o \
     WHERE o.project_dir = ?2 AND o.id <> ?3), 0))";

const INFO_COLUMNS: &str = "id, project_dir, created_at, updated_at, model, title, \
     (SELECT COALESCE(MAX(e.seq) + 1, 0) FROM entries e WHERE e.session_id = sessions.id)";

/// Sessions and transcripts in `DATA_DIR/sessions.db`, shared by every front end.
///
/// One connection behind a mutex: cheap to share as `Arc<SessionStore>` across threads and
/// tasks (every call is short and synchronous). Several processes may open the same file; writes
/// take SQLite's write lock up front and wait up to [`BUSY_TIMEOUT`] for each other.
///
/// Durability: WAL journal with `synchronous=NORMAL`. Every `append` is its own transaction, and
/// a commit has reached the operating system (the WAL file) before `append` returns, so a crash or
/// `kill -9` of Elph at any moment loses nothing already appended — and the harness appends an
/// entry before the front end shows it. Only an operating-system crash or power cut can lose the
/// last few commits (never corrupting the file); `synchronous=FULL` would close that gap at the
/// cost of an fsync per entry, which the spec does not ask for.
pub struct SessionStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Set once an operation found the file damaged: from then on nothing is written into it.
    damaged: AtomicBool,
    /// The sessions this store's process has taken ([`SessionStore::take`]); they are let go when
    /// the store is dropped, or by the kernel when the process dies.
    leases: Mutex<Vec<(String, SessionLease)>>,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SessionStore {
    /// Opens `DATA_DIR/sessions.db`, creating the folder (mode 0700) and the file (mode 0600) when
    /// missing, and the schema inside one transaction. A damaged file is reported as
    /// [`StoreError::Corrupt`], never replaced.
    pub fn open(data_dir: &Path) -> Result<SessionStore, StoreError> {
        create_private_dir(data_dir)?;
        let path = data_dir.join(DB_FILE);
        check_writable(data_dir, &path)?;
        let conn = Connection::open(&path).map_err(|e| match StoreError::sqlite(&path, "opening it", e) {
            StoreError::Sqlite { source, .. } => StoreError::Open {
                path: path.clone(),
                source,
            },
            other => other,
        })?;
        configure(&conn, &path)?;
        let mut store = SessionStore {
            path,
            conn: Mutex::new(conn),
            damaged: AtomicBool::new(false),
            leases: Mutex::new(Vec::new()),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Makes `data_dir` (mode 0700) when missing, as [`SessionStore::open`] does first.
    pub fn create_data_dir(data_dir: &Path) -> Result<(), StoreError> {
        create_private_dir(data_dir)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a new session (no entries yet, no title until the first user message).
    pub fn create_session(&self, id: &str, project_dir: &Path, model: &str) -> Result<(), StoreError> {
        self.check_not_damaged()?;
        let project = project_key(project_dir);
        let now = now_micros();
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err("creating a session", e))?;
        let inserted = tx.execute(
            &format!(
                "INSERT INTO sessions (id, project_dir, created_at, updated_at, model, title) \
                 VALUES (?3, ?2, ?1, {NEXT_UPDATED_AT}, ?4, NULL)"
            ),
            params![now, project, id, model],
        );
        match inserted {
            Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation) => {
                return Err(StoreError::SessionExists {
                    path: self.path.clone(),
                    id: id.to_string(),
                });
            }
            other => other.map_err(|e| self.err("creating a session", e))?,
        };
        tx.commit().map_err(|e| self.err("creating a session", e))
    }

    /// Records the model a session continues with (`-c --model …`).
    pub fn set_model(&self, id: &str, model: &str) -> Result<(), StoreError> {
        self.check_not_damaged()?;
        let changed = self
            .lock()
            .execute("UPDATE sessions SET model = ?1 WHERE id = ?2", params![model, id])
            .map_err(|e| self.err("changing a session's model", e))?;
        match changed {
            0 => Err(self.no_such_session(id)),
            _ => Ok(()),
        }
    }

    /// Appends one entry in its own transaction and returns its `seq` (its index in the
    /// transcript). Also bumps the session's `updated_at`, and takes the title from the first user
    /// message.
    pub fn append(&self, session_id: &str, entry: &Entry) -> Result<u64, StoreError> {
        const ACTION: &str = "appending to a session";
        self.check_not_damaged()?;
        let body = serde_json::to_string(entry).map_err(|source| StoreError::Encode {
            path: self.path.clone(),
            id: session_id.to_string(),
            source,
        })?;
        let (kind, title) = match entry {
            Entry::Message { message } => ("message", title_of(message)),
            Entry::Summary { .. } => ("summary", None),
            Entry::PromptReplaced { .. } => ("promptReplaced", None),
        };
        let now = now_micros();
        let mut conn = self.lock();
        // IMMEDIATE: take the write lock before reading MAX(seq), so two processes appending to
        // the same session wait for each other instead of failing with SQLITE_BUSY_SNAPSHOT.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(ACTION, e))?;
        let project: Option<String> = tx
            .prepare_cached("SELECT project_dir FROM sessions WHERE id = ?1")
            .and_then(|mut s| s.query_row([session_id], |row| row.get(0)).optional())
            .map_err(|e| self.err(ACTION, e))?;
        let Some(project) = project else {
            return Err(self.no_such_session(session_id));
        };
        tx.prepare_cached(&format!(
            "UPDATE sessions SET updated_at = {NEXT_UPDATED_AT}, title = COALESCE(title, ?4) \
             WHERE id = ?3"
        ))
        .and_then(|mut s| s.execute(params![now, project, session_id, title]))
        .map_err(|e| self.err(ACTION, e))?;
        let seq: i64 = tx
            .prepare_cached("SELECT COALESCE(MAX(seq) + 1, 0) FROM entries WHERE session_id = ?1")
            .and_then(|mut s| s.query_row([session_id], |row| row.get(0)))
            .map_err(|e| self.err(ACTION, e))?;
        tx.prepare_cached(
            "INSERT INTO entries (session_id, seq, kind, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut s| s.execute(params![session_id, seq, kind, body, now]))
        .map_err(|e| self.err(ACTION, e))?;
        // The entry that follows a streamed answer (the answer itself) supersedes its draft.
        tx.prepare_cached("DELETE FROM drafts WHERE session_id = ?1")
            .and_then(|mut s| s.execute([session_id]))
            .map_err(|e| self.err(ACTION, e))?;
        tx.commit().map_err(|e| self.err(ACTION, e))?;
        Ok(seq as u64)
    }

    /// Records the text of an answer as it streams (replacing the previous draft of the session).
    pub fn save_draft(&self, session_id: &str, text: &str) -> Result<(), StoreError> {
        self.check_not_damaged()?;
        self.lock()
            .prepare_cached(
                "INSERT INTO drafts (session_id, text, updated_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (session_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
            )
            .and_then(|mut s| s.execute(params![session_id, text, now_micros()]))
            .map(|_| ())
            .map_err(|e| self.err("saving a streaming answer", e))
    }

    /// The answer that was streaming when the session's last process stopped without storing it
    /// (a crash or kill -9), if any.
    pub fn draft(&self, session_id: &str) -> Result<Option<String>, StoreError> {
        self.lock()
            .prepare_cached("SELECT text FROM drafts WHERE session_id = ?1")
            .and_then(|mut s| s.query_row([session_id], |row| row.get(0)).optional())
            .map_err(|e| self.err("reading a streaming answer", e))
    }

    /// Every entry of a session, in order. An unknown id is an error (`--session` with a typo).
    pub fn load_entries(&self, id: &str) -> Result<Vec<Entry>, StoreError> {
        const ACTION: &str = "loading a session";
        let mut conn = self.lock();
        // One read transaction: the existence check and the rows come from the same snapshot.
        let tx = conn.transaction().map_err(|e| self.err(ACTION, e))?;
        let exists = tx
            .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")
            .and_then(|mut s| s.exists([id]))
            .map_err(|e| self.err(ACTION, e))?;
        if !exists {
            return Err(self.no_such_session(id));
        }
        let mut statement = tx
            .prepare_cached("SELECT seq, body FROM entries WHERE session_id = ?1 ORDER BY seq")
            .map_err(|e| self.err(ACTION, e))?;
        let mut rows = statement.query([id]).map_err(|e| self.err(ACTION, e))?;
        let mut entries = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(ACTION, e))? {
            let seq: i64 = row.get(0).map_err(|e| self.err(ACTION, e))?;
            let body: String = row.get(1).map_err(|e| self.err(ACTION, e))?;
            let entry = serde_json::from_str(&body).map_err(|source| StoreError::BadEntry {
                path: self.path.clone(),
                id: id.to_string(),
                seq,
                source,
            })?;
            entries.push(entry);
        }
        Ok(entries)
    }

    /// A transcript for the session: its stored entries, with every new entry appended here.
    pub fn transcript(self: &Arc<Self>, id: &str) -> Result<Transcript, StoreError> {
        let entries = self.load_entries(id)?;
        let sink = SessionSink::new(Arc::clone(self), id);
        Ok(Transcript::resume(entries, Some(Arc::new(sink))))
    }

    pub fn session(&self, id: &str) -> Result<Option<SessionInfo>, StoreError> {
        self.lock()
            .prepare_cached(&format!("SELECT {INFO_COLUMNS} FROM sessions WHERE id = ?1"))
            .and_then(|mut s| s.query_row([id], info_from_row).optional())
            .map_err(|e| self.err("reading a session", e))
    }

    /// The most recently updated session of the project (`elph -c`).
    pub fn last_session(&self, project_dir: &Path) -> Result<Option<SessionInfo>, StoreError> {
        self.lock()
            .prepare_cached(&format!(
                "SELECT {INFO_COLUMNS} FROM sessions WHERE project_dir = ?1 \
                 ORDER BY updated_at DESC, id DESC LIMIT 1"
            ))
            .and_then(|mut s| s.query_row([project_key(project_dir)], info_from_row).optional())
            .map_err(|e| self.err("finding the last session", e))
    }

    /// The project's sessions, most recently updated first.
    pub fn list(&self, project_dir: &Path) -> Result<Vec<SessionInfo>, StoreError> {
        self.lock()
            .prepare_cached(&format!(
                "SELECT {INFO_COLUMNS} FROM sessions WHERE project_dir = ?1 \
                 ORDER BY updated_at DESC, id DESC"
            ))
            .and_then(|mut s| {
                s.query_map([project_key(project_dir)], info_from_row)?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| self.err("listing sessions", e))
    }

    /// Every project's sessions, most recently updated first (ACP `session/list` without `cwd`).
    pub fn list_all(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.lock()
            .prepare_cached(&format!(
                "SELECT {INFO_COLUMNS} FROM sessions ORDER BY updated_at DESC, id DESC"
            ))
            .and_then(|mut s| s.query_map([], info_from_row)?.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err("listing sessions", e))
    }

    /// Deletes session `id` with its transcript and draft (ACP `session/delete`). It is taken
    /// first, so a session another process has open is refused (`InUse`) and never deleted under
    /// it; an unknown id is `NoSuchSession`.
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        self.check_not_damaged()?;
        if self.session(id)?.is_none() {
            return Err(self.no_such_session(id));
        }
        self.take(id)?;
        // Entries and the draft go with the row (ON DELETE CASCADE).
        self.lock()
            .execute("DELETE FROM sessions WHERE id = ?1", [id])
            .map_err(|e| self.err("deleting a session", e))?;
        Ok(())
    }

    /// Runs SQLite's full `PRAGMA integrity_check` (for `elph doctor`): `Corrupt` unless it
    /// reports "ok".
    pub fn integrity_check(&self) -> Result<(), StoreError> {
        const ACTION: &str = "checking the database";
        let conn = self.lock();
        let problems: Vec<String> = conn
            .prepare("PRAGMA integrity_check")
            .and_then(|mut s| s.query_map([], |row| row.get(0))?.collect())
            .map_err(|e| self.err(ACTION, e))?;
        if problems == ["ok"] {
            return Ok(());
        }
        Err(StoreError::Corrupt {
            path: self.path.clone(),
            source: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                Some(problems.join("; ")),
            ),
        })
    }

    /// Creates the schema in a fresh file, or checks the version of an existing one.
    fn migrate(&mut self) -> Result<(), StoreError> {
        const ACTION: &str = "creating the schema";
        let path = self.path.clone();
        let err = |e| StoreError::sqlite(&path, ACTION, e);
        let conn = self.conn.get_mut().unwrap_or_else(PoisonError::into_inner);
        if user_version(conn).map_err(err)? == SCHEMA_VERSION {
            return Ok(());
        }
        // Re-read under the write lock: another process may be creating the schema right now.
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err)?;
        match user_version(&tx).map_err(err)? {
            0 => {
                tx.execute_batch(SCHEMA_V1).map_err(err)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                    .map_err(err)?;
                tx.commit().map_err(err)
            }
            SCHEMA_VERSION => Ok(()),
            found => Err(StoreError::TooNew {
                path: path.clone(),
                found,
                supported: SCHEMA_VERSION,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no open transaction behind (the guard rolled it
        // back on unwind), so the connection is still good.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn err(&self, action: &'static str, source: rusqlite::Error) -> StoreError {
        let error = StoreError::sqlite(&self.path, action, source);
        if error.is_corrupt() {
            self.damaged.store(true, Ordering::SeqCst);
        }
        error
    }

    fn check_not_damaged(&self) -> Result<(), StoreError> {
        if self.damaged.load(Ordering::SeqCst) {
            return Err(StoreError::StoppedWriting {
                path: self.path.clone(),
            });
        }
        Ok(())
    }

    fn data_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Takes session `id` for this process until the store is dropped; fails naming the holder
    /// when another process has it. Taking a session this store already holds is a no-op.
    pub fn take(&self, id: &str) -> Result<(), StoreError> {
        let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
        if leases.iter().any(|(held, _)| held == id) {
            return Ok(());
        }
        match lease::claim(self.data_dir(), id)? {
            Claim::Held(lease) => {
                leases.push((id.to_string(), lease));
                Ok(())
            }
            Claim::InUse(holder) => Err(StoreError::InUse {
                id: id.to_string(),
                holder,
            }),
        }
    }

    /// `-c`: the most recently updated session of the project that no other process has open,
    /// taken for this process; `None` when the project has no session. When every one is in use
    /// the error names the holder of the most recent.
    pub(crate) fn take_latest_free(&self, project_dir: &Path) -> Result<Option<SessionInfo>, StoreError> {
        let sessions = self.list(project_dir)?;
        let mut first_holder = None;
        for session in sessions {
            match self.take(&session.id) {
                Ok(()) => return Ok(Some(session)),
                Err(StoreError::InUse { holder, .. }) => {
                    first_holder.get_or_insert(holder);
                }
                Err(other) => return Err(other),
            }
        }
        match first_holder {
            None => Ok(None),
            Some(holder) => Err(StoreError::AllInUse {
                project: project_dir.to_path_buf(),
                holder,
            }),
        }
    }

    /// `--session ID` / ACP `session/load`: the session, if it belongs to `project_dir`, taken for
    /// this process.
    pub(crate) fn take_of_project(&self, id: &str, project_dir: &Path) -> Result<SessionInfo, StoreError> {
        let session = self.session(id)?.ok_or_else(|| self.no_such_session(id))?;
        if session.project_dir != project_dir {
            return Err(StoreError::OtherProject {
                id: id.to_string(),
                owner: session.project_dir,
                project: project_dir.to_path_buf(),
            });
        }
        self.take(id)?;
        Ok(session)
    }

    fn no_such_session(&self, id: &str) -> StoreError {
        StoreError::NoSuchSession {
            path: self.path.clone(),
            id: id.to_string(),
        }
    }
}

fn configure(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let err = |e| StoreError::sqlite(path, "configuring it", e);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    // The first statement that reads the file: a file that is not a database fails here.
    // On a file system without shared memory SQLite keeps its rollback journal; everything still
    // works, only concurrent readers wait for writers.
    let mode = switch_to_wal(conn).map_err(err)?;
    if mode.eq_ignore_ascii_case("wal") {
        // Keep the -wal file (and its -shm index) when the last connection closes; it is still
        // checkpointed into the main file. Without this, the next `elph` recreates the -wal on its
        // first write (the new session, before the first model request) and SQLite syncs the new
        // WAL header and the folder: two fsyncs on the path to the first request, milliseconds
        // on a busy disk. With it, the next run recovers the kept frames at open and appends.
        let mut persist = 1;
        conn.file_control(
            Some(rusqlite::MAIN_DB),
            rusqlite::FileControl::PersistWal(&mut persist),
        )
        .map_err(err)?;
        // The kept frames are read back (recovered) at every open, so keep them few: checkpoint
        // and restart the WAL after 100 pages (400 KiB) instead of SQLite's 1,000. With 1,000 the
        // recovery of a WAL near its limit cost more at start than the fsyncs it saves.
        conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)
            .map_err(err)?;
    }
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(err)?;
    conn.pragma_update(None, "foreign_keys", true).map_err(err)?;
    Ok(())
}

/// `PRAGMA journal_mode = WAL`, waiting like every other statement for another process to let go.
///
/// SQLite answers a journal-mode switch with `SQLITE_BUSY` at once, without calling the busy
/// handler, when another connection holds a lock on the file: two `elph` starting together on a
/// new `sessions.db` both switch it, and one of them would fail to start. So the switch is retried
/// here, for up to [`BUSY_TIMEOUT`] like any write.
fn switch_to_wal(conn: &Connection) -> rusqlite::Result<String> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(error)
                if matches!(
                    error.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                ) && std::time::Instant::now() + pause < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            result => return result,
        }
    }
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

fn info_from_row(row: &Row<'_>) -> rusqlite::Result<SessionInfo> {
    let entry_count: i64 = row.get(6)?;
    Ok(SessionInfo {
        id: row.get(0)?,
        project_dir: PathBuf::from(row.get::<_, String>(1)?),
        created_at: from_micros(row.get(2)?),
        updated_at: from_micros(row.get(3)?),
        model: row.get(4)?,
        title: row.get(5)?,
        entry_count: entry_count.max(0) as u64,
    })
}

/// How a project folder is keyed: its path as text (PROJECT_DIR is already canonical). A path
/// that is not UTF-8 is stored lossily, the same way every time.
fn project_key(project_dir: &Path) -> String {
    project_dir.to_string_lossy().into_owned()
}

/// The session title a message gives, if it is a user message with text: on one line, control
/// characters removed, at most [`TITLE_CHARS`] characters.
pub(crate) fn title_of(message: &Message) -> Option<String> {
    let Message::User { content } = message else {
        return None;
    };
    let title = one_line(&content.text(), TITLE_CHARS);
    (!title.is_empty()).then_some(title)
}

/// `text` on one line with whitespace runs and control characters collapsed to one space, cut to
/// `max` characters (the last one an ellipsis when cut).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let joined = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

fn now_micros() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000) as i64
}

fn from_micros(micros: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn is_read_only(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

fn create_private_dir(dir: &Path) -> Result<(), StoreError> {
    elph_config::private::create_private_dir_all(dir).map_err(|source| {
        if is_read_only(&source) {
            // The first folder that could not be made is under a read-only one.
            let blocked = dir.ancestors().skip(1).find(|a| a.exists()).unwrap_or(dir);
            return StoreError::ReadOnly {
                dir: blocked.to_path_buf(),
            };
        }
        StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        }
    })
}

/// Creates an empty database file readable by its owner only (transcripts hold code and command
/// output; SQLite gives its `-wal` and `-shm` files the same mode), and says in one sentence what
/// is wrong when the file cannot be written: a folder in its place, or a read-only folder (SQLite
/// itself would only say "unable to open database file"). An existing file is left alone.
fn check_writable(dir: &Path, path: &Path) -> Result<(), StoreError> {
    if path.is_dir() {
        return Err(StoreError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) if is_read_only(&error) => {
            return Err(StoreError::ReadOnly {
                dir: dir.to_path_buf(),
            });
        }
        Err(error) if error.raw_os_error() == Some(libc::ENOSPC) => {
            return Err(StoreError::DiskFull {
                path: path.to_path_buf(),
            });
        }
        // Resurfaces, with its cause, when SQLite opens the path.
        Err(_) => {}
    }
    // The journal files are created beside the database: the folder must be writable too.
    refuse_read_only(dir, nix::unistd::AccessFlags::W_OK)
}

/// `StoreError::ReadOnly` when `dir` refuses `access` because it or its file system is read-only
/// or not ours; any other answer is left for the open to report with its cause.
pub(crate) fn refuse_read_only(dir: &Path, access: nix::unistd::AccessFlags) -> Result<(), StoreError> {
    if nix::unistd::access(dir, access)
        .is_err_and(|e| e == nix::errno::Errno::EROFS || e == nix::errno::Errno::EACCES)
    {
        return Err(StoreError::ReadOnly {
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_one_short_line() {
        assert_eq!(one_line("  fix\n\tthe\x1b[31m bug  ", 80), "fix the [31m bug");
        let long = "word ".repeat(40);
        let cut = one_line(&long, 20);
        assert_eq!(cut.chars().count(), 20);
        assert_eq!(cut, "word word word word…");
        assert_eq!(one_line("ééé", 3), "ééé");
        assert_eq!(one_line("éééé", 3), "éé…");
    }

    #[test]
    fn only_user_text_makes_a_title() {
        assert_eq!(title_of(&Message::user(" hi ")), Some("hi".into()));
        assert_eq!(title_of(&Message::user(" \n ")), None);
        assert_eq!(title_of(&Message::assistant("hello", vec![])), None);
    }

    #[test]
    fn times_round_trip_through_microseconds() {
        let now = now_micros();
        let back = from_micros(now);
        assert_eq!((back.unix_timestamp_nanos() / 1_000) as i64, now);
    }
}
