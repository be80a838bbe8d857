//! When a failed model call is tried again, and how long to wait first.
//!
//! A call is retried only while nothing of it has reached the caller: once a delta was passed to
//! `on_event`, a retry would show the user the same words twice, so the error is returned instead.

use std::time::Duration;

use crate::error::ProviderError;

/// Bounded retries with exponential backoff, honouring `Retry-After`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first one included (1 = no retries).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubled for each further one.
    pub base_delay: Duration,
    /// No wait is longer than this, whatever the server's `Retry-After` says.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// The default attempts with the given base delay (tests use a few milliseconds).
    pub fn with_base_delay(base_delay: Duration) -> Self {
        RetryPolicy {
            base_delay,
            ..RetryPolicy::default()
        }
    }

    /// Whether `attempt` (1-based) failing with `error`, after `emitted` events had reached the caller,
    /// should be followed by another attempt.
    pub fn should_retry(&self, attempt: u32, error: &ProviderError, emitted: bool) -> bool {
        !emitted && attempt < self.max_attempts && error.is_retryable()
    }

    /// How long to wait after failed `attempt` (1-based): the server's `Retry-After` when given,
    /// else `base_delay * 2^(attempt-1)`; never more than `max_delay`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        retry_after.unwrap_or(backoff).min(self.max_delay)
    }
}

/// Parses a `Retry-After` header given in seconds (the HTTP-date form is not used by model APIs).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    // `try_`: a huge or odd value ("1e300") is no wait at all rather than a panic.
    value
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy::with_base_delay(Duration::from_millis(100));
        assert_eq!(policy.delay(1, None), Duration::from_millis(100));
        assert_eq!(policy.delay(2, None), Duration::from_millis(200));
        assert_eq!(policy.delay(3, None), Duration::from_millis(400));
        assert_eq!(policy.delay(40, None), Duration::from_secs(30));
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600))),
            Duration::from_secs(30)
        );
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        // Found by the stream property tests: these panicked in Duration::from_secs_f64.
        assert_eq!(parse_retry_after("1e300"), None);
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("NaN"), None);
    }

    #[test]
    fn nothing_is_retried_once_events_were_emitted() {
        let policy = RetryPolicy::default();
        let error = ProviderError::Connection {
            provider: "p".into(),
            url: "u".into(),
            message: "m".into(),
        };
        assert!(policy.should_retry(1, &error, false));
        assert!(!policy.should_retry(1, &error, true));
        assert!(!policy.should_retry(4, &error, false));
    }
}
