//! The HTTP client of the OAuth flow (discovery, registration, token requests): Elph's own reqwest
//! client, with the same TLS set-up as every other request Elph makes (`elph_ai::http_client_builder`:
//! rustls with the platform's verifier). rmcp's default client cannot be used here: the workspace's
//! reqwest has no built-in crypto provider, so a plain `reqwest::Client::builder()` has no TLS.

use std::time::Duration;

use futures::StreamExt as _;
use rmcp::transport::auth::{
    AuthError, OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

/// Each OAuth request's limit when rmcp suggests none.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest metadata or token response read: far above any real one.
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Redirects followed where rmcp allows them (discovery documents).
const MAX_REDIRECTS: usize = 10;

#[derive(Debug, thiserror::Error)]
enum ResponseError {
    #[error("the response is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
}

/// Two clients of one set-up: one follows redirects, one returns them (token requests must not be
/// redirected with their code or refresh token).
pub(crate) struct ElphOAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

impl ElphOAuthHttp {
    pub(crate) fn new() -> Result<ElphOAuthHttp, AuthError> {
        let build = |policy: reqwest::redirect::Policy| {
            elph_ai::http_client_builder()
                .map_err(|error| AuthError::InternalError(format!("TLS set-up failed: {error}")))?
                .timeout(REQUEST_TIMEOUT)
                .redirect(policy)
                .build()
                .map_err(|error| AuthError::InternalError(format!("HTTP client set-up failed: {error}")))
        };
        Ok(ElphOAuthHttp {
            follow: build(reqwest::redirect::Policy::limited(MAX_REDIRECTS))?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

impl OAuthHttpClient for ElphOAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let boxed = |error: reqwest::Error| Box::new(error) as OAuthHttpClientError;
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let mut outgoing = reqwest::Request::try_from(request.request).map_err(boxed)?;
            if let Some(timeout) = request.timeout {
                *outgoing.timeout_mut() = Some(timeout);
            }
            let response = client.execute(outgoing).await.map_err(boxed)?;
            let mut builder = hyper::http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(boxed)?;
                if chunk.len() > MAX_BODY_BYTES.saturating_sub(body.len()) {
                    return Err(Box::new(ResponseError::TooLarge) as OAuthHttpClientError);
                }
                body.extend_from_slice(&chunk);
            }
            builder
                .body(body)
                .map_err(|error| Box::new(error) as OAuthHttpClientError)
        })
    }
}
