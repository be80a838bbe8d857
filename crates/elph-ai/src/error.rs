//! `ProviderError`: every way a model call or a model selection can fail, worded for people.
//!
//! No variant ever holds an API key: adapters build their messages through [`ProviderError::redact`]
//! with the key they used, so a server that echoes the key back cannot leak it into logs or screens.

use std::path::PathBuf;
use std::time::Duration;

/// What replaces a secret wherever one would have appeared.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Every way a model call or a model selection can fail; the message names the provider and the cause.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
#[expect(
    missing_docs,
    reason = "each variant's fields are the words of its #[error] message"
)]
pub enum ProviderError {
    /// The environment variable that should hold the API key is unset or empty.
    #[error("{var} is not set; export it, or use --model scripted/PATH to run offline")]
    MissingApiKey { var: String },

    /// 401 or 403: the key was refused.
    #[error("{provider}: authentication failed (HTTP {status}): {message}; check the API key{key_hint}")]
    Authentication {
        provider: String,
        status: u16,
        message: String,
        key_hint: String,
    },

    /// Any other unsuccessful HTTP status, with the server's own error message.
    #[error("{provider}: HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },

    /// The server could not be reached, or the connection dropped before the reply was complete.
    #[error("{provider}: {message} ({url})")]
    Connection {
        provider: String,
        url: String,
        message: String,
    },

    /// A bound of the provider's [`crate::StreamLimits`] was reached: the server was too slow or
    /// sent too much. `limit` names the setting, `hint` where it is set.
    #[error("{provider}: {message} (limit \"{limit}\"{hint}; {url})")]
    StreamLimit {
        provider: String,
        url: String,
        limit: crate::limits::Limit,
        message: String,
        hint: String,
    },

    /// The server answered, but not with a stream we understand.
    #[error("{provider}: bad stream data: {message}")]
    BadStream { provider: String, message: String },

    /// The server reported an error inside the stream (for example Anthropic's `overloaded_error`).
    #[error("{provider}: the model reported an error mid-stream ({kind}): {message}")]
    StreamError {
        provider: String,
        kind: String,
        message: String,
    },

    /// A `scripted/PATH` script could not be read, is invalid, or has run out of turns.
    #[error("script {path}: {message}")]
    Script { path: PathBuf, message: String },

    /// A script has no turn left for this call.
    #[error("script {path} has {turns} turns; turn {requested} was requested")]
    ScriptExhausted {
        path: PathBuf,
        turns: usize,
        requested: usize,
    },

    /// A scripted turn that is written to fail (`"error": "..."`).
    #[error("script {path}, turn {turn}: {message}")]
    ScriptedFailure {
        path: PathBuf,
        turn: usize,
        message: String,
    },

    /// No model was chosen anywhere.
    #[error(
        "no model configured: pass --model PROVIDER/MODEL, set ELPH_MODEL, or set \"model\" in {settings} \
         (scripted/PATH runs offline)"
    )]
    NoModel { settings: PathBuf },

    /// A model string that is not `PROVIDER/MODEL`.
    #[error(
        "invalid model {spec:?} (from {origin}): expected PROVIDER/MODEL, for example openai/gpt-4.1, \
         anthropic/claude-sonnet-4-5, or scripted/PATH"
    )]
    InvalidModel { spec: String, origin: String },

    /// A provider name that is neither built in nor defined under CONFIG_DIR/providers.
    #[error(
        "unknown provider {name:?} (from {origin}): the built-in providers are openai, anthropic and \
         scripted; custom ones are read from {providers_dir}/*.json{known}"
    )]
    UnknownProvider {
        name: String,
        origin: String,
        providers_dir: PathBuf,
        known: String,
    },

    /// A custom provider file (CONFIG_DIR/providers/*.json) that cannot be used.
    #[error("provider file {path}: {message}")]
    Catalog { path: PathBuf, message: String },

    /// The HTTP client could not be set up.
    #[error("{provider}: could not set up the HTTP client: {message}")]
    Client { provider: String, message: String },
}

impl ProviderError {
    /// Whether trying the same request again may succeed: rate limits, server errors, overloads and
    /// connection failures.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
            ProviderError::Connection { .. } => true,
            ProviderError::StreamLimit { limit, .. } => limit.is_retryable(),
            ProviderError::StreamError { kind, .. } => {
                matches!(
                    kind.as_str(),
                    "overloaded_error" | "api_error" | "rate_limit_error"
                )
            }
            _ => false,
        }
    }

    /// The server's `Retry-After`, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status, for errors that carry one.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Http { status, .. } | ProviderError::Authentication { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// Replaces every occurrence of `secret` in the error's text with `[REDACTED]`.
    pub fn redact(self, secret: &str) -> Self {
        if secret.is_empty() {
            return self;
        }
        let r = |text: String| redact_text(&text, secret);
        match self {
            ProviderError::Authentication {
                provider,
                status,
                message,
                key_hint,
            } => ProviderError::Authentication {
                provider: r(provider),
                status,
                message: r(message),
                key_hint: r(key_hint),
            },
            ProviderError::Http {
                provider,
                status,
                message,
                retry_after,
            } => ProviderError::Http {
                provider: r(provider),
                status,
                message: r(message),
                retry_after,
            },
            ProviderError::Connection {
                provider,
                url,
                message,
            } => ProviderError::Connection {
                provider: r(provider),
                url: r(url),
                message: r(message),
            },
            ProviderError::StreamLimit {
                provider,
                url,
                limit,
                message,
                hint,
            } => ProviderError::StreamLimit {
                provider: r(provider),
                url: r(url),
                limit,
                message: r(message),
                hint: r(hint),
            },
            ProviderError::BadStream { provider, message } => ProviderError::BadStream {
                provider: r(provider),
                message: r(message),
            },
            ProviderError::StreamError {
                provider,
                kind,
                message,
            } => ProviderError::StreamError {
                provider: r(provider),
                kind: r(kind),
                message: r(message),
            },
            ProviderError::Client { provider, message } => ProviderError::Client {
                provider: r(provider),
                message: r(message),
            },
            other => other,
        }
    }
}

/// `text` with every occurrence of `secret` replaced by `[REDACTED]`.
pub(crate) fn redact_text(text: &str, secret: &str) -> String {
    if secret.is_empty() {
        text.to_string()
    } else {
        text.replace(secret, REDACTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_reaches_display_and_debug() {
        let error = ProviderError::Http {
            provider: "openai".into(),
            status: 400,
            message: "bad key sk-secret-123 in header".into(),
            retry_after: None,
        }
        .redact("sk-secret-123");
        assert!(!error.to_string().contains("sk-secret-123"));
        assert!(!format!("{error:?}").contains("sk-secret-123"));
        assert!(error.to_string().contains(REDACTED));
    }

    #[test]
    fn retryable_statuses() {
        let http = |status| ProviderError::Http {
            provider: "p".into(),
            status,
            message: String::new(),
            retry_after: None,
        };
        assert!(http(429).is_retryable());
        assert!(http(503).is_retryable());
        assert!(!http(400).is_retryable());
        assert!(!ProviderError::MissingApiKey { var: "X".into() }.is_retryable());
    }
}
