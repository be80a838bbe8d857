//! The line protocol of persistent hooks (docs/hooks.md, "The line protocol"): each payload goes
//! out as one line whose first field is its request id, `{"requestId":7,"event":…}`, and the answer
//! is one line, a JSON object that echoes it: `{"requestId":7,"block":true}`; `{"requestId":7}` is
//! "no change".
//!
//! The id is what keeps an answer on the event it was meant for. Without it, a hook that printed
//! one line too many answered every later event with the previous event's answer: a guard's block
//! landed on the next tool call, and the one it meant to stop ran. So anything but the answer to
//! the request just sent — another id, no id, a line that is not a JSON object, a line left over
//! from before — is a [`ProtocolError`]: the process is out of step, and no answer of it can be
//! trusted until it starts again.

use elph_agent::hooks::outcome::json_kind;
use serde_json::{Map, Value};

/// The field that carries the request id, in the payload and in the answer.
pub(crate) const REQUEST_ID: &str = "requestId";
/// How much of an offending line a message quotes.
const PREVIEW_CHARS: usize = 80;

/// How a persistent hook broke the line protocol. The text says what it printed and what it
/// should have printed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error(
        "it answered request {request} with an empty line; \"no change\" is {{\"requestId\":{request}}} \
         (an answer echoes the payload's requestId)"
    )]
    Empty { request: u64 },
    #[error(
        "its answer to request {request} is not JSON: {preview}; print only answers on stdout, \
         anything else on stderr"
    )]
    NotJson { request: u64, preview: String },
    #[error("its answer to request {request} is {kind}, not a JSON object")]
    NotAnObject { request: u64, kind: &'static str },
    #[error(
        "its answer to request {request} has no \"requestId\"; each answer must echo the requestId \
         of the payload it answers (hooks written before request ids answered without one: add it)"
    )]
    NoRequestId { request: u64 },
    #[error(
        "it answered request {answered} when request {request} was asked; its answers are out of \
         step with the events"
    )]
    WrongRequestId { request: u64, answered: String },
    #[error(
        "it printed more than one line for a payload (found before request {request} was sent: \
         {preview}); print one answer line per payload, anything else on stderr"
    )]
    ExtraLine { request: u64, preview: String },
}

/// The line sent for request `request`: `payload` (one JSON object and its newline) with the
/// request id as its first field, so that a hook can find it without a JSON parser.
pub(crate) fn request_line(payload: &[u8], request: u64) -> Vec<u8> {
    let id = request.to_string();
    let mut line = Vec::with_capacity(payload.len() + REQUEST_ID.len() + id.len() + 5);
    line.extend_from_slice(b"{\"");
    line.extend_from_slice(REQUEST_ID.as_bytes());
    line.extend_from_slice(b"\":");
    line.extend_from_slice(id.as_bytes());
    let rest = payload.strip_prefix(b"{").unwrap_or(payload);
    if !rest.starts_with(b"}") {
        line.push(b',');
    }
    line.extend_from_slice(rest);
    line
}

/// Reads the answer line (without its newline) to request `request`: the outcome object with
/// the request id taken out (empty: no change).
pub(crate) fn read_answer(line: &[u8], request: u64) -> Result<Map<String, Value>, ProtocolError> {
    if line.trim_ascii().is_empty() {
        return Err(ProtocolError::Empty { request });
    }
    let value: Value = serde_json::from_slice(line).map_err(|_| ProtocolError::NotJson {
        request,
        preview: preview(line),
    })?;
    let Value::Object(mut answer) = value else {
        return Err(ProtocolError::NotAnObject {
            request,
            kind: json_kind(&value),
        });
    };
    match answer.remove(REQUEST_ID) {
        None => Err(ProtocolError::NoRequestId { request }),
        Some(Value::Number(id)) if id.as_u64() == Some(request) => Ok(answer),
        Some(other) => Err(ProtocolError::WrongRequestId {
            request,
            answered: other.to_string(),
        }),
    }
}

/// Up to [`PREVIEW_CHARS`] characters of `bytes`, quoted, with control characters escaped.
pub(crate) fn preview(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    let mut shown: String = text.chars().take(PREVIEW_CHARS).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    format!("\"{}\"", shown.escape_debug())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_id_is_the_first_field_of_the_payload_line() {
        let line = request_line(b"{\"event\":\"stop\"}\n", 42);
        assert_eq!(line, b"{\"requestId\":42,\"event\":\"stop\"}\n");
        let parsed: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(parsed, json!({"requestId": 42, "event": "stop"}));
        assert_eq!(request_line(b"{}\n", 1), b"{\"requestId\":1}\n");
    }

    #[test]
    fn an_answer_that_echoes_the_id_is_the_outcome_without_it() {
        let answer = read_answer(br#"{"requestId": 7, "block": true}"#, 7).unwrap();
        assert_eq!(Value::Object(answer), json!({"block": true}));
        assert!(read_answer(b"{\"requestId\":7}\r", 7).unwrap().is_empty());
    }

    #[test]
    fn anything_else_is_a_protocol_error() {
        let cases: [(&[u8], ProtocolError); 7] = [
            (b"", ProtocolError::Empty { request: 7 }),
            (b"  ", ProtocolError::Empty { request: 7 }),
            (
                b"ok then",
                ProtocolError::NotJson {
                    request: 7,
                    preview: "\"ok then\"".into(),
                },
            ),
            (
                b"[1]",
                ProtocolError::NotAnObject {
                    request: 7,
                    kind: "an array",
                },
            ),
            (b"{\"block\": true}", ProtocolError::NoRequestId { request: 7 }),
            (
                b"{\"requestId\": 6}",
                ProtocolError::WrongRequestId {
                    request: 7,
                    answered: "6".into(),
                },
            ),
            (
                b"{\"requestId\": \"7\"}",
                ProtocolError::WrongRequestId {
                    request: 7,
                    answered: "\"7\"".into(),
                },
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(
                read_answer(line, 7),
                Err(expected),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn a_preview_is_short_and_escaped() {
        assert_eq!(preview(b"a\tb\n"), "\"a\\tb\"");
        let long = preview(&[b'x'; 200]);
        assert_eq!(long.chars().count(), PREVIEW_CHARS + 3);
    }

    #[test]
    fn messages_say_what_to_print_instead() {
        let text = ProtocolError::Empty { request: 3 }.to_string();
        assert!(text.contains(r#"{"requestId":3}"#), "{text}");
        let text = ProtocolError::NoRequestId { request: 3 }.to_string();
        assert!(text.contains("must echo the requestId"), "{text}");
    }
}
