//! `elph mcp logout NAME` at the authorization server: token revocation (RFC 7009), when the
//! server's metadata (RFC 8414) names a `revocation_endpoint`. The refresh token goes first (an
//! authorization server may then drop the whole grant, and a leaked access token expires soon on
//! its own), then the access token, each with its `token_type_hint` and the client id (Elph is a
//! public client). What was stored is removed locally whatever the server says; this only says
//! how the server took it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::auth::{AuthorizationManager, StoredCredentials};
use serde_json::Value;

use super::http::ElphOAuthHttp;
use super::login::secure_enough;

/// Each revocation request's limit.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How the authorization server took the logout.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Revocation {
    /// Every stored token was revoked.
    Revoked,
    /// There was nothing to revoke: no token is stored.
    NothingStored,
    /// The server names no revocation endpoint: its tokens stay valid until they expire.
    NotOffered,
    /// Revocation was tried and failed, in words; the tokens may stay valid until they expire.
    Failed(String),
}

/// Revokes the tokens of `credentials`, issued for the server at `url`, at its authorization
/// server. Never stores or removes anything.
pub(crate) async fn revoke(url: &str, credentials: &StoredCredentials) -> Revocation {
    // Read through the wire form: the token type is oauth2's, which Elph does not depend on.
    let token = serde_json::to_value(&credentials.token_response).unwrap_or_default();
    let tokens: Vec<(&str, &str)> = [
        ("refresh_token", "refresh_token"),
        ("access_token", "access_token"),
    ]
    .into_iter()
    .filter_map(|(field, hint)| {
        token
            .get(field)
            .and_then(Value::as_str)
            .map(|value| (hint, value))
    })
    .collect();
    if tokens.is_empty() {
        return Revocation::NothingStored;
    }
    let endpoint = match revocation_endpoint(url).await {
        Ok(Some(endpoint)) => endpoint,
        Ok(None) => return Revocation::NotOffered,
        Err(why) => return Revocation::Failed(why),
    };
    let client = elph_ai::http_client_builder()
        .map_err(|error| error.to_string())
        .and_then(|builder| {
            builder
                .timeout(REQUEST_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|error| error.to_string())
        });
    let client = match client {
        Ok(client) => client,
        Err(error) => return Revocation::Failed(format!("HTTP client set-up failed: {error}")),
    };
    for (hint, value) in &tokens {
        let form = form_body(&[
            ("token", value),
            ("token_type_hint", hint),
            ("client_id", credentials.client_id.as_str()),
        ]);
        let what = hint.replace('_', " ");
        let request = client
            .post(endpoint.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form);
        match request.send().await {
            // RFC 7009 §2.2: 200 whether or not the token was still valid.
            Ok(response) if response.status() == reqwest::StatusCode::OK => {}
            Ok(response) => {
                return Revocation::Failed(format!(
                    "{endpoint} answered the revocation of the {what} with {}",
                    response.status()
                ));
            }
            Err(error) => {
                return Revocation::Failed(format!(
                    "the revocation of the {what} at {endpoint} failed: {}",
                    without_url(&error)
                ));
            }
        }
    }
    Revocation::Revoked
}

/// The `revocation_endpoint` of the authorization server of the server at `url`, if its metadata
/// names one; an error when the metadata cannot be read or the endpoint is not a place a token may
/// be sent.
async fn revocation_endpoint(url: &str) -> Result<Option<reqwest::Url>, String> {
    let http = ElphOAuthHttp::new().map_err(|error| error.to_string())?;
    let manager = AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
        .await
        .map_err(|error| format!("{url} is not a valid URL: {error}"))?;
    let resolution = manager
        .resolve_metadata()
        .await
        .map_err(|error| format!("its authorization server's metadata could not be read: {error}"))?;
    if !resolution.source.is_discovered() {
        return Ok(None);
    }
    let Some(endpoint) = resolution
        .metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(Value::as_str)
    else {
        return Ok(None);
    };
    let parsed = reqwest::Url::parse(endpoint)
        .map_err(|error| format!("its revocation endpoint {endpoint} is not a valid URL: {error}"))?;
    if !secure_enough(&parsed) {
        return Err(format!(
            "its revocation endpoint {endpoint} is not an https address; a token is sent only over \
             https (or to this machine's loopback address)"
        ));
    }
    Ok(Some(parsed))
}

/// `pairs` as an `application/x-www-form-urlencoded` body (the encoding of a URL's query, which
/// is that format).
fn form_body(pairs: &[(&str, &str)]) -> String {
    let Ok(mut url) = reqwest::Url::parse("http://form.invalid/") else {
        return String::new();
    };
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_string()
}

/// A request's error without the URL reqwest adds (the message names the endpoint already).
fn without_url(error: &reqwest::Error) -> String {
    let mut error_text = error.to_string();
    if let Some(url) = error.url() {
        error_text = error_text.replace(&format!(" ({url})"), "");
    }
    error_text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_is_url_encoded() {
        assert_eq!(
            form_body(&[("token", "a+b/c= d&e"), ("client_id", "x")]),
            "token=a%2Bb%2Fc%3D+d%26e&client_id=x"
        );
    }
}
