//! Which MCP revision Elph speaks with a stdio server: 2026-07-28 (stateless: no `initialize`,
//! `server/discover`, the protocol version and client capabilities in `_meta` on every request)
//! when the server offers it, else the `initialize` handshake of 2025-11-25.
//!
//! Elph asks with `server/discover` on the server's own pipes and waits for the answer as long as
//! the server's start budget lasts: a server that starts slowly reads the question when it is
//! ready and answers it before anything else, since stdio keeps the order. A discover result that
//! lists 2026-07-28 means that revision. An error (a server of an earlier revision does not know
//! the method), or any other answer, means the handshake, on the same connection.
//!
//! rmcp's `ClientLifecycleMode::Auto` is not used because it gives the probe a fixed 10 s and then
//! sends `initialize` with the probe still unanswered: a server that takes longer to start answers
//! both, and the late answer to the probe breaks the handshake.

use rmcp::model::{
    ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, DiscoverRequestParams,
    JsonRpcMessage, NumberOrString, ProtocolVersion, RequestMetaObject, ServerResult,
};
use rmcp::service::{ClientLifecycleMode, RoleClient};
use rmcp::transport::Transport;

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
    pub(crate) fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Revision::Stateless => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Revision::Handshake => ClientLifecycleMode::Initialize,
        }
    }
}

/// Asks the server behind `transport` which revisions it speaks. It waits for the answer without
/// a deadline of its own: the caller bounds the whole start. Messages the server sends before
/// answering (a log notification, say) are not for this question and are passed over.
pub(crate) async fn probe<T>(transport: &mut T, client: &ClientConfig) -> Result<Revision, String>
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
        .map_err(|error| format!("could not be sent server/discover: {error}"))?;
    loop {
        let Some(message) = transport.receive().await else {
            return Err("closed its output before it answered server/discover".into());
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
                return Ok(Revision::Handshake);
            }
            _ => {}
        }
    }
}
