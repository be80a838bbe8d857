//! One streamed HTTP exchange with a model server: POST a JSON body, read the reply as server-sent
//! events, feed them to a wire-format decoder, and retry what [`RetryPolicy`] allows.
//!
//! The API key lives here and nowhere else: it is sent as a sensitive header, never logged, and
//! every error leaving this module has it redacted.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use serde_json::Value;
use tokio::time::Instant;

use crate::error::{ProviderError, redact_text};
use crate::limits::{self, Limit, StreamLimits};
use crate::provider::{DEFAULT_CONTEXT_WINDOW, StreamEvent, Turn};
use crate::retry::{RetryPolicy, parse_retry_after};
use crate::sse::{SseError, SseEvent, SseParser};

/// Longest server error message kept in an error.
const MAX_MESSAGE_CHARS: usize = 2_000;
/// Most of an error reply's body that is read: enough for any server's error message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

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
    /// Timeouts and size caps of each call.
    pub limits: StreamLimits,
    /// Headers sent with every request besides the key (a provider file's `headers`).
    pub headers: Vec<ExtraHeader>,
    /// The provider file this came from, named in errors about its settings.
    pub config_file: Option<PathBuf>,
}

/// A header a provider file asks for. A value taken from the environment is a secret: it is sent
/// as a sensitive header and redacted from every error; no value is ever shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct ExtraHeader {
    /// The header's name.
    pub name: String,
    value: ApiKey,
    secret: bool,
}

impl ExtraHeader {
    /// A header; `secret` when its value came from the environment.
    pub fn new(name: impl Into<String>, value: impl Into<String>, secret: bool) -> Self {
        ExtraHeader {
            name: name.into(),
            value: ApiKey::new(value),
            secret,
        }
    }
}

impl fmt::Debug for ExtraHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ExtraHeader({}: [REDACTED])", self.name)
    }
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
            limits: StreamLimits::default(),
            headers: Vec::new(),
            config_file: None,
        }
    }

    /// Sets the timeouts and size caps.
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sends these headers with every request.
    pub fn with_headers(mut self, headers: Vec<ExtraHeader>) -> Self {
        self.headers = headers;
        self
    }

    /// Names the provider file this came from (errors about limits say where to change them).
    pub fn with_config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_file = Some(path.into());
        self
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
    /// The key and every header value from the environment: redacted from every error.
    secrets: Vec<String>,
    key_hint: String,
    retry: RetryPolicy,
    limits: StreamLimits,
    /// Where the limits can be changed, for errors: "; set in FILE" or "".
    limits_hint: String,
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
        let mut secrets: Vec<String> = Vec::new();
        if !secret.is_empty() {
            secrets.push(secret.clone());
        }
        for header in config
            .headers
            .iter()
            .filter(|h| h.secret && !h.value.0.is_empty())
        {
            secrets.push(header.value.0.clone());
        }
        let redact_all = |text: String| secrets.iter().fold(text, |text, s| redact_text(&text, s));
        // Read first so that the key and a provider file's own headers win over them.
        for header in &config.headers {
            let name = HeaderName::from_bytes(header.name.as_bytes())
                .map_err(|_| client_error(format!("{:?} is not a valid header name", header.name)))?;
            let mut value = HeaderValue::from_str(header.value.expose()).map_err(|_| {
                client_error(format!(
                    "the value of header {:?} contains characters not allowed in a header",
                    header.name
                ))
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if !secret.is_empty() {
            let (name, value) = auth(&secret);
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                client_error("the API key contains characters not allowed in a header".into())
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let tls = crate::tls::client_config().map_err(|e| client_error(e.to_string()))?;
        // The response and idle timeouts are kept by `attempt` itself, so that each has its own
        // error; reqwest keeps only the connect timeout.
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(config.limits.connect_timeout)
            .build()
            .map_err(|e| client_error(redact_all(error_chain(&e))))?;
        Ok(SseEndpoint {
            provider,
            url: format!("{}{}", config.base_url.trim_end_matches('/'), path),
            headers,
            secrets,
            key_hint: config
                .api_key_env
                .as_ref()
                .map(|v| format!(" in {v}"))
                .unwrap_or_default(),
            retry: config.retry,
            limits: config.limits,
            limits_hint: config
                .config_file
                .as_ref()
                .map(|path| format!(", set under \"limits\" in {}", path.display()))
                .unwrap_or_default(),
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
                Err(error) => self
                    .secrets
                    .iter()
                    .fold(error, |error, secret| error.redact(secret)),
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
        let request = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .json(body)
            .send();
        let response = match tokio::time::timeout(self.limits.response_timeout, request).await {
            Err(_) => return Err(self.limit_error(Limit::ResponseTimeout)),
            Ok(Err(e)) if e.is_connect() && e.is_timeout() => {
                return Err(self.limit_error(Limit::ConnectTimeout));
            }
            Ok(Err(e)) => return Err(self.connection_error(e, "could not reach the server")),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            let text = self.error_body(response).await;
            return Err(self.status_error(status, &text, retry_after));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if !content_type.is_empty() && !content_type.starts_with("text/event-stream") {
            let text = self.error_body(response).await;
            return Err(self.bad_stream(format!(
                "expected an event stream (text/event-stream) but got {content_type}: {}",
                truncate(&text)
            )));
        }

        let mut body = response.bytes_stream();
        let mut parser = SseParser::new(self.limits.max_event_bytes);
        let mut received: u64 = 0;
        let mut deadline = Instant::now() + self.limits.idle_timeout;
        let mut events: Vec<SseEvent> = Vec::new();
        loop {
            let chunk = match tokio::time::timeout_at(deadline, body.next()).await {
                Err(_) => return Err(self.limit_error(Limit::IdleTimeout)),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(
                        self.connection_error(e, "the connection dropped before the reply was complete")
                    );
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            received = received.saturating_add(chunk.len() as u64);
            if received > self.limits.max_response_bytes {
                return Err(self.limit_error(Limit::MaxResponseBytes));
            }
            let lines = parser
                .push(&chunk, &mut |event| events.push(event))
                .map_err(|e| match e {
                    SseError::EventTooLarge { .. } => self.limit_error(Limit::MaxEventBytes),
                    SseError::InvalidUtf8 { .. } => self.bad_stream(e.to_string()),
                })?;
            if lines > 0 {
                deadline = Instant::now() + self.limits.idle_timeout;
            }
            for event in events.drain(..) {
                match decoder.on_event(&event.event, &event.data, emit) {
                    Ok(true) => return decoder.finish(emit).map_err(|e| self.decode_error(e)),
                    Ok(false) => {}
                    Err(e) => return Err(self.decode_error(e)),
                }
            }
        }
        decoder.finish(emit).map_err(|e| self.decode_error(e))
    }

    /// An error reply's body as text: at most [`MAX_ERROR_BODY_BYTES`], read under the idle
    /// timeout, so a server that never ends its error page cannot hold the call.
    async fn error_body(&self, response: reqwest::Response) -> String {
        let mut body = response.bytes_stream();
        let mut text = Vec::new();
        while text.len() < MAX_ERROR_BODY_BYTES {
            match tokio::time::timeout(self.limits.idle_timeout, body.next()).await {
                Ok(Some(Ok(chunk))) => text.extend_from_slice(&chunk),
                Ok(Some(Err(_)) | None) | Err(_) => break,
            }
        }
        text.truncate(MAX_ERROR_BODY_BYTES);
        String::from_utf8_lossy(&text).into_owned()
    }

    fn limit_error(&self, limit: Limit) -> ProviderError {
        let value = match limit {
            Limit::ConnectTimeout => limits::seconds(self.limits.connect_timeout),
            Limit::ResponseTimeout => limits::seconds(self.limits.response_timeout),
            Limit::IdleTimeout => limits::seconds(self.limits.idle_timeout),
            Limit::MaxEventBytes => limits::bytes(self.limits.max_event_bytes as u64),
            Limit::MaxResponseBytes => limits::bytes(self.limits.max_response_bytes),
        };
        ProviderError::StreamLimit {
            provider: self.provider.clone(),
            url: self.url.clone(),
            limit,
            message: limit.describe(&value),
            hint: self.limits_hint.clone(),
        }
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

pub(crate) fn truncate(text: &str) -> String {
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
        let config = HttpProviderConfig::new("openai", "m", "http://x")
            .with_api_key("sk-very-secret")
            .with_headers(vec![ExtraHeader::new("X-Gateway", "gw-secret", true)]);
        assert!(!format!("{config:?}").contains("sk-very-secret"));
        assert!(!format!("{config:?}").contains("gw-secret"));
    }
}
