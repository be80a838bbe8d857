//! `elph mcp login NAME`: the authorization code flow with PKCE, for one HTTP server.
//!
//! 1. Ask the server without a token: its 401 names its protected resource metadata
//!    (`WWW-Authenticate: Bearer resource_metadata=...`). Discovery starts there, or at the
//!    well-known addresses when the server names none.
//! 2. rmcp reads the resource's metadata (RFC 9728), then its authorization server's (RFC 8414),
//!    registers Elph as a public client when the server offers registration (or uses the client
//!    id given with `--client-id`), and builds the authorization URL with an S256 challenge.
//! 3. The user opens the URL; the authorization server sends the browser back to the loopback
//!    redirect ([`super::callback`]) with a code, which rmcp exchanges with the PKCE verifier.
//!    The tokens are saved in the credentials file ([`super::store`]).

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession};

use super::callback::{CallbackError, Page, Redirect};
use super::http::ElphOAuthHttp;
use super::store::CredentialsFile;

/// How long the login waits for the browser.
pub(crate) const BROWSER_WAIT: Duration = Duration::from_secs(5 * 60);

/// The client name Elph registers under.
const CLIENT_NAME: &str = "Elph";

/// What the user chose on the command line.
#[derive(Debug, Default)]
pub(crate) struct LoginOptions {
    /// A client id registered with the authorization server beforehand (instead of dynamic
    /// registration).
    pub(crate) client_id: Option<String>,
    /// The scopes to ask for; none: what the server suggests.
    pub(crate) scopes: Vec<String>,
}

/// Why a login failed. Each message says what to do next where there is something to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoginError {
    #[error("{url} is not a valid URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error(
        "{url} is not an https address; a token is sent only over https (or to this machine's loopback address)"
    )]
    NotHttps { url: String },
    #[error("cannot listen for the browser's redirect on 127.0.0.1: {0}")]
    Listen(std::io::Error),
    #[error("{url} does not ask for a login and publishes no OAuth metadata: no login is needed")]
    NoOAuth { url: String },
    #[error(
        "the authorization server of {url} does not offer dynamic client registration; register Elph \
         with it (redirect URI http://127.0.0.1/callback, any port) and run `elph mcp login NAME --client-id ID`"
    )]
    NoRegistration { url: String },
    #[error("{0}")]
    OAuth(#[from] AuthError),
    #[error("{0}")]
    Callback(#[from] CallbackError),
}

/// Whether a token may be sent to `url`: https, or plain http to a loopback address (OAuth 2.1
/// §1.5 allows it there, and it is what a local server uses).
pub(super) fn secure_enough(url: &reqwest::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => {
            let host = url.host_str().unwrap_or_default();
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            match bare.parse::<std::net::IpAddr>() {
                Ok(ip) => ip.is_loopback(),
                Err(_) => host.eq_ignore_ascii_case("localhost"),
            }
        }
        _ => false,
    }
}

/// The `WWW-Authenticate` challenge of the server's answer to an unauthenticated `initialize`, if
/// it answered 401. Any other answer (or none) leaves discovery to the well-known addresses.
async fn challenge(url: &str) -> Option<String> {
    let client = elph_ai::http_client_builder()
        .ok()?
        .timeout(Duration::from_secs(30))
        .build()
        .ok()?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "elph", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let response = client
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()
        .map(str::to_string)
}

/// The value of `name` in `url`'s query.
fn query_value(url: &str, name: &str) -> Option<String> {
    reqwest::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// Logs in to server `name` at `url` and stores its tokens in `credentials`. `show` receives the
/// lines for the user (the authorization URL among them); the wait for the browser lasts at most
/// `wait`.
pub(crate) async fn login(
    name: &str,
    url: &str,
    credentials: &CredentialsFile,
    options: LoginOptions,
    wait: Duration,
    show: &mut (dyn FnMut(&str) + Send),
) -> Result<(), LoginError> {
    let parsed = reqwest::Url::parse(url).map_err(|error| LoginError::BadUrl {
        url: url.to_string(),
        reason: error.to_string(),
    })?;
    if !secure_enough(&parsed) {
        return Err(LoginError::NotHttps { url: url.to_string() });
    }
    let redirect = Redirect::bind().await.map_err(LoginError::Listen)?;
    let challenge = challenge(url).await;

    let mut manager =
        AuthorizationManager::new_with_oauth_http_client(url, Arc::new(ElphOAuthHttp::new()?)).await?;
    manager.set_credential_store(credentials.for_server(name, url));
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await?;
    if !resolution.source.is_discovered() && challenge.is_none() {
        return Err(LoginError::NoOAuth { url: url.to_string() });
    }
    if resolution.metadata.registration_endpoint.is_none() && options.client_id.is_none() {
        return Err(LoginError::NoRegistration { url: url.to_string() });
    }
    manager.set_metadata(resolution.metadata);

    let mut request = AuthorizationRequest::new(redirect.uri()).with_client_name(CLIENT_NAME);
    if let Some(client_id) = options.client_id {
        request = request.with_preregistered_client(client_id);
    }
    request = if options.scopes.is_empty() {
        request.with_initial_scope_selection()
    } else {
        request.with_scopes(options.scopes)
    };
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, error)| error)?;
    let authorization_url = session.get_authorization_url().to_string();
    let state = query_value(&authorization_url, "state").unwrap_or_default();
    show(&format!(
        "To log in to MCP server '{name}', open this address in your browser:\n\n  {authorization_url}\n"
    ));
    show(&format!(
        "Waiting for the browser to come back to {} (at most {} minutes; Ctrl+C stops)...",
        redirect.uri(),
        wait.as_secs() / 60
    ));
    let arrival = redirect.wait(&state, wait).await?;
    match session
        .handle_callback_with_issuer(&arrival.code, &state, arrival.issuer.as_deref())
        .await
    {
        Ok(_) => {
            arrival
                .answer(Page::success(format!(
                    "logged in to MCP server '{name}'. You can close this tab."
                )))
                .await;
            Ok(())
        }
        Err(error) => {
            arrival
                .answer(Page::failure(format!("the login to '{name}' failed: {error}")))
                .await;
            Err(error.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_go_only_over_https_or_to_loopback() {
        let secure = |url: &str| secure_enough(&reqwest::Url::parse(url).unwrap());
        assert!(secure("https://mcp.example.com/mcp"));
        assert!(secure("http://127.0.0.1:8080/mcp"));
        assert!(secure("http://[::1]:8080/mcp"));
        assert!(secure("http://localhost:8080/mcp"));
        assert!(!secure("http://mcp.example.com/mcp"));
        assert!(!secure("http://10.0.0.1/mcp"));
        assert!(!secure("ftp://127.0.0.1/mcp"));
    }
}
