//! Which MCP revision Elph speaks with a server: 2026-07-28 (stateless: no `initialize`,
//! `server/discover`, the protocol version and client capabilities in `_meta` on every request)
//! when the server offers it, else the `initialize` handshake of 2025-11-25.
//!
//! Elph's first message is `server/discover`, and it waits for the answer as long as the server's
//! start budget lasts. On stdio a server that starts slowly reads the question when it is ready
//! and answers it before anything else, since stdio keeps the order. Over streamable HTTP the
//! question is one POST and its response the answer: rmcp's HTTP client turns a 4xx other than
//! 401 and 403 (a server of an earlier revision wants a session, or does not know the method)
//! into a JSON-RPC error answering the question; a 401 or 403, a 5xx, or no connection at all
//! fails the sending ([`ProbeError::NotSent`]), so that a login is still asked for and a broken
//! server is not taken for an old one. A discover result that lists 2026-07-28 means that
//! revision. Two errors come only from a server of that revision that refused the request
//! (-32020, its headers and body disagree; -32021, a client capability it requires is missing):
//! they fail the start, as the handshake would not help. Any other error or answer means the
//! handshake, on the same transport (-32022, the server does not speak 2026-07-28, included).
//!
//! rmcp's `ClientLifecycleMode::Auto` is not used because it gives the probe a fixed 10 s and then
//! sends `initialize` with the probe still unanswered: a server that takes longer to start answers
//! both, and the late answer to the probe breaks the handshake.

use rmcp::ErrorData;
use rmcp::model::{
    ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, DiscoverRequestParams, ErrorCode,
    JsonRpcMessage, NumberOrString, ProtocolVersion, RequestMetaObject, ServerResult,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt as _, RoleClient, RunningService,
};
use rmcp::transport::Transport;

use super::client::ElphClient;

/// The id of the probe: a string, so that it can never be taken for one of rmcp's numbered
/// requests.
const PROBE_ID: &str = "elph-discover";

/// The revision a server and Elph agreed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Revision {
    /// MCP 2026-07-28.
    Stateless,
    /// MCP 2025-11-25 (or the earlier revision the server answers `initialize` with).
    Handshake,
}

impl Revision {
    /// How rmcp opens the connection for this revision. On 2026-07-28 rmcp asks
    /// `server/discover` again (one more round trip) to learn the server's capabilities, and from
    /// then on puts `_meta` on every request.
    fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Revision::Stateless => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Revision::Handshake => ClientLifecycleMode::Initialize,
        }
    }
}

/// Why a server's revision could not be learnt.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProbeError<E> {
    /// The transport could not send `server/discover` (over HTTP: the server refused the request,
    /// for instance with a 401 asking for a login).
    #[error("could not be sent server/discover: {0}")]
    NotSent(E),
    #[error("closed its output before it answered server/discover")]
    Closed,
    /// The server speaks MCP 2026-07-28 and refused the question (see the module's comment).
    #[error("refused server/discover: {0}")]
    Refused(ErrorData),
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError<E> {
    #[error(transparent)]
    Probe(ProbeError<E>),
    #[error("failed to initialize: {0}")]
    Handshake(ClientInitializeError),
    #[error("failed to open MCP 2026-07-28 (server/discover): {0}")]
    Stateless(ClientInitializeError),
}

/// Opens the connection to the server behind `transport` in the revision it speaks, as `client`
/// (which offers 2025-11-25 in `initialize`, should it come to that).
pub(crate) async fn open<T>(
    client: ElphClient,
    mut transport: T,
    server: &str,
) -> Result<RunningService<RoleClient, ElphClient>, OpenError<T::Error>>
where
    T: Transport<RoleClient> + 'static,
{
    let client = client.offering(ProtocolVersion::V_2025_11_25);
    let revision = probe(&mut transport, &rmcp::ClientHandler::get_info(&client))
        .await
        .map_err(OpenError::Probe)?;
    tracing::debug!(server, ?revision, "mcp revision");
    client
        .serve_with_lifecycle(transport, revision.lifecycle())
        .await
        .map_err(|error| match revision {
            Revision::Handshake => OpenError::Handshake(error),
            Revision::Stateless => OpenError::Stateless(error),
        })
}

/// Asks the server behind `transport` which revisions it speaks. It waits for the answer without
/// a deadline of its own: the caller bounds the whole start. Messages the server sends before
/// answering (a log notification, say) are not for this question and are passed over.
async fn probe<T>(transport: &mut T, client: &ClientConfig) -> Result<Revision, ProbeError<T::Error>>
where
    T: Transport<RoleClient>,
{
    let meta = RequestMetaObject::with_client_context(
        ProtocolVersion::V_2026_07_28,
        client.client_info.clone(),
        client.capabilities.clone(),
    );
    let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
    discover.extensions.insert(meta);
    let id = NumberOrString::String(PROBE_ID.into());
    transport
        .send(ClientJsonRpcMessage::request(
            ClientRequest::DiscoverRequest(discover),
            id.clone(),
        ))
        .await
        .map_err(ProbeError::NotSent)?;
    loop {
        let Some(message) = transport.receive().await else {
            return Err(ProbeError::Closed);
        };
        match message {
            JsonRpcMessage::Response(response) if response.id == id => {
                return Ok(match response.result {
                    ServerResult::DiscoverResult(result)
                        if result.supported_versions.contains(&ProtocolVersion::V_2026_07_28) =>
                    {
                        Revision::Stateless
                    }
                    _ => Revision::Handshake,
                });
            }
            // An error without an id answers the only request there is.
            JsonRpcMessage::Error(error) if error.id.as_ref().is_none_or(|answered| *answered == id) => {
                let refused = [
                    ErrorCode::HEADER_MISMATCH,
                    ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                ];
                if refused.contains(&error.error.code) {
                    return Err(ProbeError::Refused(error.error));
                }
                return Ok(Revision::Handshake);
            }
            _ => {}
        }
    }
}
