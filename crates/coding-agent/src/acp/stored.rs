//! `session/list` and `session/delete`: the sessions in `DATA_DIR/sessions.db`, whichever process
//! wrote them. Neither needs a live session; both open the store for the one request.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    DeleteSessionRequest, DeleteSessionResponse, ListSessionsRequest, ListSessionsResponse, SessionInfo,
};
use agent_client_protocol::{Error, ErrorCode};
use time::format_description::well_known::Rfc3339;

use crate::store::{SessionStore, StoreError};

/// Sessions per page of `session/list`; the rest follow with `nextCursor`.
pub(super) const PAGE: usize = 50;

/// `session/list`: newest first, of the project at `cwd` when given (every project's otherwise),
/// [`PAGE`] at a time. The cursor is the position of the next page, as Elph wrote it.
pub(super) fn list(data_dir: &Path, request: &ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
    let start = match &request.cursor {
        None => 0,
        Some(cursor) => cursor.parse::<usize>().map_err(|_| {
            Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "not a cursor this agent gave: {cursor:?} (send the nextCursor of a session/list answer)"
                ),
            )
        })?,
    };
    let store = open(data_dir)?;
    let sessions = match &request.cwd {
        Some(cwd) if !cwd.is_absolute() => {
            return Err(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("cwd must be an absolute path, not {}", cwd.display()),
            ));
        }
        // Sessions are stored under the project's canonical path, as `session/new` makes it.
        Some(cwd) => match std::fs::canonicalize(cwd) {
            Ok(project) => store.list(&project),
            Err(_) => Ok(Vec::new()),
        },
        None => store.list_all(),
    }
    .map_err(internal)?;
    let page: Vec<SessionInfo> = sessions.iter().skip(start).take(PAGE).map(info).collect();
    let next = start + page.len();
    let response = ListSessionsResponse::new(page);
    Ok(if next < sessions.len() {
        response.next_cursor(next.to_string())
    } else {
        response
    })
}

/// `session/delete`: removes a stored session that no process has open. `open_here` says whether
/// this connection has it open (it must be closed first).
pub(super) fn delete(
    data_dir: &Path,
    request: &DeleteSessionRequest,
    open_here: bool,
) -> Result<DeleteSessionResponse, Error> {
    let id = &*request.session_id.0;
    if open_here {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("session {id} is open on this connection: close it (session/close) before deleting it"),
        )
        .data(serde_json::json!({ "sessionId": id })));
    }
    match open(data_dir)?.delete(id) {
        Ok(()) => Ok(DeleteSessionResponse::new()),
        Err(err @ StoreError::NoSuchSession { .. }) => {
            Err(Error::new(ErrorCode::RESOURCE_NOT_FOUND, err.to_string())
                .data(serde_json::json!({ "sessionId": id })))
        }
        Err(err) if err.is_about_the_request() => Err(Error::new(ErrorCode::INVALID_PARAMS, err.to_string())),
        Err(err) => Err(internal(err)),
    }
}

fn open(data_dir: &Path) -> Result<SessionStore, Error> {
    SessionStore::open(data_dir).map_err(internal)
}

fn internal(err: StoreError) -> Error {
    Error::new(ErrorCode::INTERNAL_ERROR, err.to_string())
}

fn info(session: &crate::store::SessionInfo) -> SessionInfo {
    let info = SessionInfo::new(session.id.clone(), session.project_dir.clone());
    let info = match &session.title {
        Some(title) => info.title(title.clone()),
        None => info,
    };
    match session.updated_at.format(&Rfc3339) {
        Ok(updated) => info.updated_at(updated),
        Err(_) => info,
    }
}
