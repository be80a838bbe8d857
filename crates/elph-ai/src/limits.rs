//! How long a model server may take and how much it may send: the bounds that keep a broken or
//! hostile server from holding a run forever or filling memory.

use std::fmt;
use std::time::Duration;

/// The bounds on one streamed model call. A custom provider file sets them under `"limits"`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StreamLimits {
    /// Establishing the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// From sending the request to the response's status and headers.
    pub response_timeout: Duration,
    /// The longest the server may go, once the body has begun, without completing a line (an
    /// event's field or a keep-alive comment). A server that sends nothing, or trickles the bytes
    /// of a line that never ends, is stopped after this long.
    pub idle_timeout: Duration,
    /// One server-sent event, all its lines together.
    pub max_event_bytes: usize,
    /// The whole body of one answer.
    pub max_response_bytes: u64,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            connect_timeout: Duration::from_secs(30),
            response_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(120),
            max_event_bytes: 16 * 1024 * 1024,
            max_response_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Which bound a call ran into; each is named by its setting in a provider file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// `connectTimeout`.
    ConnectTimeout,
    /// `responseTimeout`.
    ResponseTimeout,
    /// `idleTimeout`.
    IdleTimeout,
    /// `maxEventBytes`.
    MaxEventBytes,
    /// `maxResponseBytes`.
    MaxResponseBytes,
}

impl Limit {
    /// The setting's name under `"limits"` in a provider file.
    pub fn setting(self) -> &'static str {
        match self {
            Limit::ConnectTimeout => "connectTimeout",
            Limit::ResponseTimeout => "responseTimeout",
            Limit::IdleTimeout => "idleTimeout",
            Limit::MaxEventBytes => "maxEventBytes",
            Limit::MaxResponseBytes => "maxResponseBytes",
        }
    }

    /// Whether another attempt may fare better: a slow server may answer the next time; one that
    /// sends too much will do it again.
    pub(crate) fn is_retryable(self) -> bool {
        matches!(
            self,
            Limit::ConnectTimeout | Limit::ResponseTimeout | Limit::IdleTimeout
        )
    }

    /// What happened, in words, with the limit's value (`value` is already worded: "30 s", "16 MiB").
    pub(crate) fn describe(self, value: &str) -> String {
        match self {
            Limit::ConnectTimeout => format!("could not connect within {value}"),
            Limit::ResponseTimeout => format!("no response from the server within {value}"),
            Limit::IdleTimeout => {
                format!("the server sent no complete line for {value} before the reply was complete")
            }
            Limit::MaxEventBytes => format!("one event of the stream is larger than {value}"),
            Limit::MaxResponseBytes => format!("the reply is larger than {value}"),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.setting())
    }
}

/// "30 s", "0.25 s".
pub(crate) fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{secs} s")
    }
}

/// "16 MiB", "1000 bytes".
pub(crate) fn bytes(count: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if count >= MIB && count.is_multiple_of(MIB) {
        format!("{} MiB", count / MIB)
    } else {
        format!("{count} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_worded() {
        assert_eq!(seconds(Duration::from_secs(30)), "30 s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
        assert_eq!(bytes(16 * 1024 * 1024), "16 MiB");
        assert_eq!(bytes(1000), "1000 bytes");
    }
}
