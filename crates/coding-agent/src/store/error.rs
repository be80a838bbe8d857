//! What can go wrong with the session database, each error naming the file and the cause.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data folder {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot open the session database {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    /// The file is not an SQLite database, or its pages are damaged. Elph never recreates it on
    /// its own: the user's sessions may still be recoverable from it.
    #[error(
        "the session database {path} is damaged or is not an SQLite database ({source}); \
         move it away (for example `mv {path} {path}.broken`) and Elph will start a new one, \
         leaving your old sessions in the moved file"
    )]
    Corrupt {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "the session database {path} has schema version {found}, but this Elph only knows \
         version {supported}: update Elph, or point ELPH_DATA_DIR at another folder"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },

    #[error(
        "the session database {path} stayed locked by another process for more than {seconds} s \
         while {action}; try again when the other `elph` is idle"
    )]
    Busy {
        path: PathBuf,
        action: &'static str,
        seconds: u64,
        #[source]
        source: rusqlite::Error,
    },

    #[error("session database {path}: error while {action}: {source}")]
    Sqlite {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "cannot write the session database in {dir}: the folder is read-only; make it writable \
         (for example `chmod u+w {dir}`) or point ELPH_DATA_DIR at a writable folder"
    )]
    ReadOnly { dir: PathBuf },

    #[error(
        "{path} is a folder, but Elph keeps its sessions in a file of that name; move the folder \
         away (for example `mv {path} {path}.old`) or point ELPH_DATA_DIR at another folder"
    )]
    NotAFile { path: PathBuf },

    #[error(
        "the disk that holds {path} is full, so the session could not be stored; free some space \
         (`df -h {dir}` shows how much is left) and run again",
        dir = path.parent().unwrap_or(path).display()
    )]
    DiskFull { path: PathBuf },

    #[error(
        "not stored: the session database {path} was found damaged earlier in this run, and Elph \
         does not write into a damaged file; move it away (for example `mv {path} {path}.broken`) \
         and Elph will start a new one"
    )]
    StoppedWriting { path: PathBuf },

    #[error("cannot use the session lock file {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "session {id} is in use by {holder}; one process writes a session at a time: wait for it \
         to finish, or start a new session (without --session)"
    )]
    InUse { id: String, holder: String },

    #[error(
        "every session of {project} is in use (the most recent by {holder}); wait for one to \
         finish, or start a new session (without -c)",
        project = project.display()
    )]
    AllInUse { project: PathBuf, holder: String },

    #[error(
        "session {id} belongs to the project {owner}, not to {project}; run Elph in {owner} to \
         continue it",
        owner = owner.display(),
        project = project.display()
    )]
    OtherProject {
        id: String,
        owner: PathBuf,
        project: PathBuf,
    },

    #[error("there is no session {id} in {path}")]
    NoSuchSession { path: PathBuf, id: String },

    #[error("a session {id} already exists in {path}")]
    SessionExists { path: PathBuf, id: String },

    #[error("entry {seq} of session {id} in {path} cannot be read: {source}")]
    BadEntry {
        path: PathBuf,
        id: String,
        seq: i64,
        #[source]
        source: serde_json::Error,
    },

    #[error("cannot encode an entry of session {id} for {path}: {source}")]
    Encode {
        path: PathBuf,
        id: String,
        #[source]
        source: serde_json::Error,
    },
}

impl StoreError {
    /// Classifies an SQLite error met while doing `action` on the database at `path`.
    pub(crate) fn sqlite(path: &Path, action: &'static str, source: rusqlite::Error) -> StoreError {
        let path = path.to_path_buf();
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                StoreError::Corrupt { path, source }
            }
            Some(ErrorCode::DiskFull) => StoreError::DiskFull { path },
            Some(ErrorCode::ReadOnly) => StoreError::ReadOnly {
                dir: path.parent().unwrap_or(&path).to_path_buf(),
            },
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy {
                path,
                action,
                seconds: super::db::BUSY_TIMEOUT.as_secs(),
                source,
            },
            _ => StoreError::Sqlite { path, action, source },
        }
    }

    /// True when the file itself is damaged (the user should move it away).
    pub fn is_corrupt(&self) -> bool {
        matches!(
            self,
            StoreError::Corrupt { .. } | StoreError::StoppedWriting { .. }
        )
    }

    /// True when the request named a session this process may not open (in use, another
    /// project's, unknown): the client's mistake, not Elph's.
    pub(crate) fn is_about_the_request(&self) -> bool {
        matches!(
            self,
            StoreError::InUse { .. }
                | StoreError::AllInUse { .. }
                | StoreError::OtherProject { .. }
                | StoreError::NoSuchSession { .. }
        )
    }
}
