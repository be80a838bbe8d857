//! OAuth 2.1 for HTTP MCP servers, as MCP's authorization spec (2025-11-25) describes it
//! (docs/mcp.md, "Servers that need a login").
//!
//! The protocol work is rmcp's (`auth` feature): discovery of the protected resource metadata
//! (RFC 9728) and of the authorization server's metadata (RFC 8414 / OpenID), dynamic client
//! registration (RFC 7591), PKCE with S256, the `resource` indicator (RFC 8707), the token
//! exchange, refresh before expiry and once on a 401. What Elph adds:
//!
//! - [`store`]: where the tokens live (a 0600 file under CONFIG_DIR, bound to the server's URL);
//! - [`http`]: Elph's HTTP client for the OAuth requests (its TLS set-up);
//! - [`login`] and [`callback`]: `elph mcp login NAME`, with the loopback redirect;
//! - [`revoke`]: `elph mcp logout NAME` revokes the tokens (RFC 7009) where the server offers it;
//! - [`connect_http`]: a server's HTTP connection, sending its stored token, and "run
//!   `elph mcp login NAME`" when the server asks for a login.
//!
//! Tokens never reach a log, a diagnostic or the model: rmcp's types print them redacted, and no
//! message here quotes one.

pub(crate) mod callback;
pub(crate) mod http;
pub(crate) mod login;
pub(crate) mod revoke;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmcp::service::{ClientInitializeError, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthError, AuthorizationManager};
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};

pub use store::{CredentialsError, CredentialsFile};

use super::revision::{OpenError, ProbeError};

/// The transport of an HTTP server: rmcp's streamable HTTP client behind its OAuth client, which
/// adds the stored token (refreshed when it is about to expire) and retries once with a refreshed
/// token when the server answers 401.
type HttpTransport = StreamableHttpClientTransport<AuthClient<reqwest::Client>>;

/// Connects to HTTP server `name` at `url` in the revision it speaks (see
/// [`super::revision`]): with its configured `headers` and, when `credentials` are given, the
/// OAuth token stored for it.
pub(crate) async fn connect_http(
    client: super::client::ElphClient,
    name: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    credentials: Option<&CredentialsFile>,
) -> Result<RunningService<RoleClient, super::client::ElphClient>, String> {
    let transport = http_transport(name, url, headers, credentials).await?;
    super::revision::open(client, transport, name)
        .await
        .map_err(|error| explain_start_failure(name, url, credentials, &error))
}

/// Whether the configured headers already authorize (an `Authorization` header of the user's):
/// then no OAuth token is sent.
fn has_authorization_header(headers: &BTreeMap<String, String>) -> bool {
    headers
        .keys()
        .any(|name| name.eq_ignore_ascii_case("authorization"))
}

/// The transport of server `name` at `url`, with its configured `headers` and, unless those carry
/// an `Authorization` header, the token stored for it in `credentials` (for this URL only).
///
/// With a stored token this reads the server's OAuth metadata (a refresh needs the token
/// endpoint); when that fails, the token is still sent and only a refresh would fail.
async fn http_transport(
    name: &str,
    url: &str,
    headers: &BTreeMap<String, String>,
    credentials: Option<&CredentialsFile>,
) -> Result<HttpTransport, String> {
    let mut custom = HashMap::new();
    for (header, value) in headers {
        let header_name = reqwest::header::HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| format!("header name '{header}' is not valid"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header '{header}' is not valid"))?;
        custom.insert(header_name, value);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(custom);
    let client = elph_ai::http_client_builder()
        .map_err(|err| format!("TLS set-up failed: {err}"))?
        .build()
        .map_err(|err| format!("HTTP client set-up failed: {err}"))?;
    let oauth_http = http::ElphOAuthHttp::new().map_err(|error| error.to_string())?;
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, Arc::new(oauth_http))
        .await
        .map_err(|error| format!("its URL is not valid: {error}"))?;
    if let Some(credentials) = credentials.filter(|_| !has_authorization_header(headers)) {
        manager.set_credential_store(credentials.for_server(name, url));
        match manager.initialize_from_store().await {
            Ok(_) => {}
            Err(AuthError::CredentialStoreError(reason)) => {
                return Err(format!("its stored login could not be read: {reason}"));
            }
            Err(error) => {
                tracing::warn!(
                    server = name,
                    "OAuth metadata of the MCP server not read: {error}"
                );
            }
        }
    }
    Ok(StreamableHttpClientTransport::with_client(
        AuthClient::new(client, manager),
        config,
    ))
}

/// Whether the server's answer to the opening was "log in first" (401, or 403 for a scope): to
/// `server/discover`, or to `initialize` after it.
fn asks_for_login(error: &OpenError<StreamableHttpError<reqwest::Error>>) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = match error {
        OpenError::Probe(ProbeError::NotSent(error)) => Some(error),
        OpenError::Probe(ProbeError::Closed | ProbeError::Refused(_)) => None,
        OpenError::Handshake(error) | OpenError::Stateless(error) => match error {
            ClientInitializeError::TransportError { error, .. } => Some(error.error.as_ref()),
            _ => None,
        },
    };
    while let Some(cause) = current {
        if let Some(
            StreamableHttpError::AuthRequired(_)
            | StreamableHttpError::InsufficientScope(_)
            | StreamableHttpError::Auth(AuthError::AuthorizationRequired),
        ) = cause.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return true;
        }
        current = cause.source();
    }
    false
}

/// Why server `name` at `url` did not start, for the session's diagnostics: the command to run
/// when it asks for a login, otherwise the transport's error.
fn explain_start_failure(
    name: &str,
    url: &str,
    credentials: Option<&CredentialsFile>,
    error: &OpenError<StreamableHttpError<reqwest::Error>>,
) -> String {
    if !asks_for_login(error) {
        return format!("{error} (over HTTP, {url})");
    }
    let command = format!(
        "elph mcp login {}",
        crate::diagnostics::shell_quote(std::path::Path::new(name))
    );
    match credentials.map(|credentials| credentials.load(name, url)) {
        Some(Ok(Some(_))) => format!(
            "needs you to log in again (its login expired or was refused): run `{command}`; \
             its tools are left out of this session"
        ),
        _ => format!("needs you to log in: run `{command}`; its tools are left out of this session"),
    }
}
