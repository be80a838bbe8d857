//! The editor's file system for the native file tools: when the client's `initialize` offers
//! `fs.readTextFile` / `fs.writeTextFile`, `read_file`, `write_file` and `edit_file` read and
//! write through `fs/read_text_file` and `fs/write_text_file`, so the model sees unsaved buffers
//! and the editor sees every change. The tools apply Elph's file policy and approval first and
//! name the real path they judged ([`elph_agent::tools::EditorFiles`]); this only carries the bytes.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, SessionId, WriteTextFileRequest,
};
use elph_agent::tools::EditorFiles;

/// What the connection's client offered in `initialize`; every session opened later reads it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Offered(Arc<Mutex<FileSystemCapabilities>>);

impl Offered {
    /// Remembers the client's file system capabilities (a second `initialize` replaces them).
    pub(crate) fn set(&self, fs: FileSystemCapabilities) {
        *super::session::lock(&self.0) = fs;
    }

    /// The file system of one session's client, or none when the client offers neither method.
    pub(crate) fn for_session(&self, cx: &ConnectionTo<Client>) -> Option<Arc<ClientFiles>> {
        let fs = super::session::lock(&self.0).clone();
        if !fs.read_text_file && !fs.write_text_file {
            return None;
        }
        Some(Arc::new(ClientFiles {
            cx: cx.clone(),
            session_id: OnceLock::new(),
            reads: fs.read_text_file,
            writes: fs.write_text_file,
        }))
    }
}

/// One session's view of the client's file system.
pub(crate) struct ClientFiles {
    cx: ConnectionTo<Client>,
    /// Known once the session is open, before any tool runs.
    session_id: OnceLock<SessionId>,
    reads: bool,
    writes: bool,
}

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("session_id", &self.session_id.get())
            .field("reads", &self.reads)
            .field("writes", &self.writes)
            .finish_non_exhaustive()
    }
}

impl ClientFiles {
    /// The session the requests name, once it is open.
    pub(crate) fn opened(&self, session_id: &str) {
        let _ = self.session_id.set(SessionId::new(session_id.to_string()));
    }

    fn session(&self) -> Result<SessionId, String> {
        self.session_id
            .get()
            .cloned()
            .ok_or_else(|| "the session is not open yet".to_string())
    }
}

#[async_trait::async_trait]
impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.reads
    }

    fn writes(&self) -> bool {
        self.writes
    }

    async fn read_text(&self, path: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session()?, path);
        match self.cx.send_request(request).block_task().await {
            Ok(response) => Ok(response.content),
            Err(error) => Err(error.message),
        }
    }

    async fn write_text(&self, path: &Path, content: &str) -> Result<(), String> {
        let request = WriteTextFileRequest::new(self.session()?, path, content);
        match self.cx.send_request(request).block_task().await {
            Ok(_) => Ok(()),
            Err(error) => Err(error.message),
        }
    }
}
