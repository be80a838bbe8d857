//! One streamed HTTP exchange with a model server: POST a JSON body, read the reply as server-sent
//! events, feed them to a wire-format decoder, and retry what [`RetryPolicy`] allows.
//!
//! The API key lives here and nowhere else: it is sent as a sensitive header, never logged, and
//! every error leaving this module has it redacted.

use std::fmt;
use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;

use crate::error::{ProviderError, redact_text};
use crate::provider::{DEFAULT_CONTEXT_WINDOW, StreamEvent, Turn};
use crate::retry::{RetryPolicy, parse_retry_after};

/// How long the server may stay silent mid-stream before the call fails.
const READ_TIMEOUT: Duration = Duration::from_secs(300);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest server error message kept in an error.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// An API key. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key (kept out of `Debug`).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([REDACTED])")
    }
}

/// Everything an HTTP adapter (OpenAI or Anthropic wire) needs to know.
#[derive(Clone, Debug)]
pub struct HttpProviderConfig {
    /// "openai", "anthropic", or a catalog name.
    pub provider_name: String,
    /// The model id sent with each request.
    pub model: String,
    /// For OpenAI-compatible servers, the URL up to and including `/v1`; for Anthropic, the host.
    pub base_url: String,
    /// The key, if the server needs one.
    pub api_key: Option<ApiKey>,
    /// Where the key came from, named in authentication errors ("check the API key in …").
    pub api_key_env: Option<String>,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// When and how long to retry.
    pub retry: RetryPolicy,
}

impl HttpProviderConfig {
    /// A config with no key, the default context window and the default retries.
    pub fn new(
        provider_name: impl Into<String>,
        model: impl Into<String>,
        base_url: impl Into<String>,
    ) -> Self {
        HttpProviderConfig {
            provider_name: provider_name.into(),
            model: model.into(),
            base_url: base_url.into(),
            api_key: None,
            api_key_env: None,
            context_window: DEFAULT_CONTEXT_WINDOW,
            retry: RetryPolicy::default(),
        }
    }

    /// Sends this key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }

    /// Names the variable the key came from (for error messages).
    pub fn with_api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Sets the context window in tokens.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = tokens;
        self
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// What a wire-format decoder can report besides events.
#[derive(Debug, PartialEq)]
pub(crate) enum DecodeError {
    /// Data that does not parse or make sense.
    BadData(String),
    /// The stream ended before the format's end marker.
    Truncated,
    /// The server sent an error inside the stream.
    Remote { kind: String, message: String },
}

/// Turns one wire format's server-sent events into stream events and a finished turn.
pub(crate) trait SseDecoder: Send {
    /// Handles one event; returns `true` once the reply is complete.
    fn on_event(
        &mut self,
        event: &str,
        data: &str,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, DecodeError>;

    /// Called at the end of the stream: emits what is still pending and assembles the turn.
    fn finish(self, emit: &mut dyn FnMut(StreamEvent)) -> Result<Turn, DecodeError>;
}

/// A model endpoint that answers with server-sent events.
pub(crate) struct SseEndpoint {
    provider: String,
    url: String,
    headers: HeaderMap,
    secret: String,
    key_hint: String,
    retry: RetryPolicy,
    client: reqwest::Client,
}

impl fmt::Debug for SseEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseEndpoint")
            .field("provider", &self.provider)
            .field("url", &self.url)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

impl SseEndpoint {
    /// `path` is appended to the base URL; `auth` turns the key into its header.
    pub(crate) fn new(
        config: &HttpProviderConfig,
        path: &str,
        auth: fn(&str) -> (HeaderName, String),
        extra_headers: &[(HeaderName, &str)],
    ) -> Result<Self, ProviderError> {
        let provider = config.provider_name.clone();
        let client_error = |message: String| ProviderError::Client {
            provider: provider.clone(),
            message,
        };
        let mut headers = HeaderMap::new();
        for (name, value) in extra_headers {
            headers.insert(
                name.clone(),
                HeaderValue::from_str(value).map_err(|e| client_error(e.to_string()))?,
            );
        }
        let secret = config
            .api_key
            .as_ref()
            .map(|k| k.expose().to_string())
            .unwrap_or_default();
        if !secret.is_empty() {
            let (name, value) = auth(&secret);
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                client_error("the API key contains characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let tls = crate::tls::client_config().map_err(|e| client_error(e.to_string()))?;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|e| client_error(redact_text(&error_chain(&e), &secret)))?;
        Ok(SseEndpoint {
            provider,
            url: format!("{}{}", config.base_url.trim_end_matches('/'), path),
            headers,
            secret,
            key_hint: config
                .api_key_env
                .as_ref()
                .map(|v| format!(" in {v}"))
                .unwrap_or_default(),
            retry: config.retry,
            client,
        })
    }

    /// Streams one turn, retrying while the policy allows and nothing has reached `on_event`.
    pub(crate) async fn stream<D: SseDecoder>(
        &self,
        body: &Value,
        new_decoder: impl Fn() -> D + Send + Sync,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, ProviderError> {
        let mut attempt = 1;
        loop {
            let mut emitted = false;
            let mut emit = |event: StreamEvent| {
                emitted = true;
                on_event(event);
            };
            let result = self.attempt(body, new_decoder(), &mut emit).await;
            let error = match result {
                Ok(turn) => return Ok(turn),
                Err(error) => error.redact(&self.secret),
            };
            if !self.retry.should_retry(attempt, &error, emitted) {
                return Err(error);
            }
            let delay = self.retry.delay(attempt, error.retry_after());
            tracing::warn!(provider = %self.provider, attempt, ?delay, %error, "model call failed; retrying");
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    async fn attempt<D: SseDecoder>(
        &self,
        body: &Value,
        mut decoder: D,
        emit: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, ProviderError> {
        tracing::debug!(provider = %self.provider, url = %self.url, "model request");
        let response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .json(body)
            .send()
            .await
            .map_err(|e| self.connection_error(e, "could not reach the server"))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let text = response.text().await.unwrap_or_default();
            return Err(self.status_error(status, &text, retry_after));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if !content_type.is_empty() && !content_type.starts_with("text/event-stream") {
            let text = response.text().await.unwrap_or_default();
            return Err(self.bad_stream(format!(
                "expected an event stream (text/event-stream) but got {content_type}: {}",
                truncate(&text)
            )));
        }

        let mut events = response.bytes_stream().eventsource();
        while let Some(item) = events.next().await {
            let event = match item {
                Ok(event) => event,
                Err(EventStreamError::Transport(e)) => {
                    return Err(
                        self.connection_error(e, "the connection dropped before the reply was complete")
                    );
                }
                Err(EventStreamError::Utf8(e)) => return Err(self.bad_stream(format!("invalid UTF-8: {e}"))),
                Err(EventStreamError::Parser(e)) => {
                    return Err(self.bad_stream(format!("invalid event: {e}")));
                }
            };
            match decoder.on_event(&event.event, &event.data, emit) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return Err(self.decode_error(e)),
            }
        }
        decoder.finish(emit).map_err(|e| self.decode_error(e))
    }

    fn connection_error(&self, error: reqwest::Error, what: &str) -> ProviderError {
        // The URL is part of the error already; reqwest's own text would repeat it.
        let message = if error.is_timeout() {
            format!("{what}: no answer from the server in time")
        } else {
            format!("{what}: {}", error_chain(&error.without_url()))
        };
        ProviderError::Connection {
            provider: self.provider.clone(),
            url: self.url.clone(),
            message,
        }
    }

    fn bad_stream(&self, message: String) -> ProviderError {
        ProviderError::BadStream {
            provider: self.provider.clone(),
            message,
        }
    }

    fn decode_error(&self, error: DecodeError) -> ProviderError {
        match error {
            DecodeError::BadData(message) => self.bad_stream(message),
            DecodeError::Truncated => ProviderError::Connection {
                provider: self.provider.clone(),
                url: self.url.clone(),
                message: "the stream ended before the reply was complete".into(),
            },
            DecodeError::Remote { kind, message } => ProviderError::StreamError {
                provider: self.provider.clone(),
                kind,
                message,
            },
        }
    }

    fn status_error(
        &self,
        status: reqwest::StatusCode,
        body: &str,
        retry_after: Option<Duration>,
    ) -> ProviderError {
        let message = server_message(body).unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("no message from the server")
                .to_string()
        });
        let provider = self.provider.clone();
        match status.as_u16() {
            code @ (401 | 403) => ProviderError::Authentication {
                provider,
                status: code,
                message,
                key_hint: self.key_hint.clone(),
            },
            code => ProviderError::Http {
                provider,
                status: code,
                message,
                retry_after,
            },
        }
    }
}

/// The human message inside an error body: `error.message` (OpenAI and Anthropic), `message`,
/// `error` or `detail` as a string; else the body itself, shortened.
fn server_message(body: &str) -> Option<String> {
    let body = body.trim();
    if body.is_empty() {
        return None;
    }
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let candidates = [
            value.pointer("/error/message"),
            value.get("message"),
            value.get("error"),
            value.get("detail"),
        ];
        if let Some(text) = candidates.into_iter().flatten().find_map(Value::as_str) {
            return Some(truncate(text));
        }
    }
    Some(truncate(body))
}

fn truncate(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text.to_string();
    }
    let mut short: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    short.push('…');
    short
}

/// An error and its causes, joined by ": ".
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Parses a tool call's accumulated JSON arguments; empty means `{}`, and text that is not JSON is
/// kept as a JSON string so the call still reaches the harness (which reports it to the model).
pub(crate) fn parse_tool_input(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_messages_are_found_in_both_formats() {
        let openai = r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#;
        let anthropic =
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(server_message(openai).as_deref(), Some("Incorrect API key"));
        assert_eq!(server_message(anthropic).as_deref(), Some("invalid x-api-key"));
        assert_eq!(server_message("upstream down").as_deref(), Some("upstream down"));
        assert_eq!(server_message("  "), None);
    }

    #[test]
    fn tool_input_falls_back_to_the_raw_string() {
        assert_eq!(parse_tool_input(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(parse_tool_input(""), json!({}));
        assert_eq!(parse_tool_input("{\"a\":"), json!("{\"a\":"));
    }

    #[test]
    fn api_key_debug_is_redacted() {
        let config = HttpProviderConfig::new("openai", "m", "http://x").with_api_key("sk-very-secret");
        assert!(!format!("{config:?}").contains("sk-very-secret"));
    }
}
