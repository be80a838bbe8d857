//! The validation of what a hook printed on stdout. Each event's outcome type is in its module
//! under `events/`.
//!
//! A hook's stdout is one JSON object. Fields the event honours are parsed into the event's outcome
//! type; other fields are ignored with a note; a field of the wrong type, an invalid message list,
//! invalid content blocks or an over-limit string reject the whole outcome.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::HookEvent;
use super::limits::MAX_RETURNED_CONTEXT_BYTES;
use crate::messages::{Content, ContentBlock, Message};

pub use super::events::HookOutcome;
// Each event's outcome, where callers found them before the events had modules of their own.
pub use super::events::before_agent::BeforeAgentOutcome;
pub use super::events::context::ContextOutcome;
pub use super::events::post_tool_use::PostToolUseOutcome;
pub use super::events::pre_compact::PreCompactOutcome;
pub use super::events::pre_tool_use::{Decision, PreToolUseOutcome};

/// An accepted outcome and the notes about fields that were ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedOutcome {
    /// The outcome, holding only the fields the event honours.
    pub outcome: HookOutcome,
    /// One note per field that was dropped, for the run's diagnostics.
    pub ignored: Vec<String>,
}

/// Why a hook's stdout was rejected as an outcome; the run then counts as failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "each variant's fields are the words of its #[error] message"
)]
pub enum OutcomeError {
    /// Stdout is not text.
    #[error("stdout is not valid UTF-8")]
    InvalidUtf8,
    /// Stdout is not JSON; the parser's message says where.
    #[error("stdout is not valid JSON: {0}")]
    InvalidJson(String),
    #[error(
        "stdout is JSON but not an object (got {0}); print an object such as {{\"block\": true}} or nothing"
    )]
    /// Stdout is JSON of another kind than an object.
    NotAnObject(&'static str),
    /// A field the event honours has the wrong type or value.
    #[error("invalid outcome for {event}: {reason}")]
    InvalidField { event: HookEvent, reason: String },
    /// A message list that the provider could not send.
    #[error("invalid messages: {0}")]
    InvalidMessages(String),
    /// A field that would put more than the outcome limit in front of the model.
    #[error("{field} is {bytes} bytes; at most {limit} bytes may reach the model from one outcome", limit = MAX_RETURNED_CONTEXT_BYTES)]
    TooLarge { field: String, bytes: usize },
    /// An image content block with a bad media type or data.
    #[error("{at} is not a valid image block: {reason}")]
    InvalidImage { at: String, reason: String },
}

/// The image types every provider accepts in a content block.
pub const IMAGE_MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The fields an event honours, as written in JSON: the fields of its outcome type.
pub fn honoured_fields(event: HookEvent) -> &'static [&'static str] {
    event.honoured_fields()
}

/// Parses and validates a hook's stdout for `event`. Empty (or all-whitespace) stdout is "no change"
/// and yields `Ok(None)`.
pub fn parse_stdout(event: HookEvent, stdout: &[u8]) -> Result<Option<ParsedOutcome>, OutcomeError> {
    let text = std::str::from_utf8(stdout).map_err(|_| OutcomeError::InvalidUtf8)?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let value: Value =
        serde_json::from_str(text).map_err(|err| OutcomeError::InvalidJson(err.to_string()))?;
    parse_outcome(event, &value).map(Some)
}

/// Validates one outcome object for `event`.
pub fn parse_outcome(event: HookEvent, value: &Value) -> Result<ParsedOutcome, OutcomeError> {
    let object = value
        .as_object()
        .ok_or(OutcomeError::NotAnObject(json_kind(value)))?;
    let honoured = honoured_fields(event);
    let mut kept = Map::new();
    let mut ignored = Vec::new();
    for (key, field) in object {
        if honoured.contains(&key.as_str()) {
            kept.insert(key.clone(), field.clone());
        } else if key == "addedToolNames" {
            ignored.push(
                "addedToolNames is rejected: hooks cannot add tools (use MCP for dynamic tools)".into(),
            );
        } else if honoured.is_empty() {
            ignored.push(format!(
                "field '{key}' is ignored: {event} is observation-only{}",
                works_on(key)
            ));
        } else {
            ignored.push(format!(
                "field '{key}' is not honoured by {event} and was ignored (it honours: {}){}",
                honoured.join(", "),
                works_on(key)
            ));
        }
    }
    let outcome = event.parse_outcome(kept)?;
    Ok(ParsedOutcome { outcome, ignored })
}

/// Where an ignored field does work, from the events' outcome types: "; it works on beforeAgent".
fn works_on(field: &str) -> String {
    let events: Vec<&str> = HookEvent::ALL
        .into_iter()
        .filter(|event| event.honoured_fields().contains(&field))
        .map(HookEvent::as_str)
        .collect();
    match events.as_slice() {
        [] => String::new(),
        [one] => format!("; it works on {one}"),
        [rest @ .., last] => format!("; it works on {} and {last}", rest.join(", ")),
    }
}

/// Checks a message list that a hook returned: tool messages must answer a tool call made earlier in
/// the same list. (Roles and blocks are already checked by deserialization.)
pub fn validate_messages(messages: &[Message]) -> Result<(), String> {
    let mut calls = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Assistant { tool_calls, .. } => {
                for call in tool_calls {
                    if call.id.is_empty() || call.name.is_empty() {
                        return Err(format!(
                            "message {index}: a tool call needs a non-empty id and name"
                        ));
                    }
                    calls.insert(call.id.as_str());
                }
            }
            Message::Tool { tool_call_id, .. } => {
                if !calls.contains(tool_call_id.as_str()) {
                    return Err(format!(
                        "message {index}: tool message answers '{tool_call_id}', but no earlier assistant message made that tool call"
                    ));
                }
            }
            Message::User { .. } => {}
        }
    }
    Ok(())
}

/// A string an outcome puts into the model's context must fit the limit.
pub(crate) fn check_len(field: &str, text: Option<&str>) -> Result<(), OutcomeError> {
    match text {
        Some(text) if text.len() > MAX_RETURNED_CONTEXT_BYTES => Err(OutcomeError::TooLarge {
            field: field.to_string(),
            bytes: text.len(),
        }),
        _ => Ok(()),
    }
}

fn blocks_text_len(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Image { .. } => 0,
        })
        .sum()
}

/// Content blocks an outcome puts into the model's context: every image valid, the text within the
/// limit.
pub(crate) fn check_blocks(field: &str, blocks: &[ContentBlock]) -> Result<(), OutcomeError> {
    check_images(field, blocks)?;
    check_blocks_len(field, blocks)
}

/// Every image block carries a known image type and standard base64 data: a provider would reject
/// the whole request for a bad one (or the model would get garbage), so the outcome is invalid.
fn check_images(field: &str, blocks: &[ContentBlock]) -> Result<(), OutcomeError> {
    for (index, block) in blocks.iter().enumerate() {
        let ContentBlock::Image { data, mime_type } = block else {
            continue;
        };
        let invalid = |reason: String| OutcomeError::InvalidImage {
            at: format!("{field}[{index}]"),
            reason,
        };
        if !IMAGE_MIME_TYPES.contains(&mime_type.as_str()) {
            return Err(invalid(format!(
                "mime_type '{mime_type}' is not one of {}",
                IMAGE_MIME_TYPES.join(", ")
            )));
        }
        if let Err(reason) = check_base64(data) {
            return Err(invalid(format!("data is not base64 ({reason})")));
        }
    }
    Ok(())
}

/// Standard base64 (RFC 4648 §4) with padding, as the providers take it: no line breaks, no
/// URL-safe alphabet, no data: URL prefix.
fn check_base64(data: &str) -> Result<(), String> {
    if data.is_empty() {
        return Err("it is empty".into());
    }
    if !data.len().is_multiple_of(4) {
        return Err(format!("its length {} is not a multiple of 4", data.len()));
    }
    let body = data.trim_end_matches('=');
    if data.len() - body.len() > 2 {
        return Err("more than two '=' at the end".into());
    }
    match body
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '+' || *c == '/'))
    {
        Some((at, c)) => Err(format!("{c:?} at byte {at}")),
        None => Ok(()),
    }
}

/// Content blocks an outcome puts into the model's context must fit the limit.
fn check_blocks_len(field: &str, blocks: &[ContentBlock]) -> Result<(), OutcomeError> {
    let bytes = blocks_text_len(blocks);
    if bytes > MAX_RETURNED_CONTEXT_BYTES {
        return Err(OutcomeError::TooLarge {
            field: field.to_string(),
            bytes,
        });
    }
    Ok(())
}

/// A message list an outcome returns: well formed, and within the limit.
pub(crate) fn check_messages(messages: &[Message]) -> Result<(), OutcomeError> {
    check_message_shapes(messages)?;
    check_messages_len(messages)
}

/// A message list that replaces the request's messages: well formed. Its size is bounded by the
/// hook's `maxOutputBytes`, not by the limit on context a hook adds (see docs/hooks.md, Limits).
pub(crate) fn check_message_shapes(messages: &[Message]) -> Result<(), OutcomeError> {
    validate_messages(messages).map_err(OutcomeError::InvalidMessages)?;
    for (index, message) in messages.iter().enumerate() {
        if let Content::Blocks(blocks) = message.content() {
            check_images(&format!("messages[{index}].content"), blocks)?;
        }
    }
    Ok(())
}

fn check_messages_len(messages: &[Message]) -> Result<(), OutcomeError> {
    let bytes: usize = messages
        .iter()
        .map(|message| match message.content() {
            Content::Text(text) => text.len(),
            Content::Blocks(blocks) => blocks_text_len(blocks),
        })
        .sum();
    if bytes > MAX_RETURNED_CONTEXT_BYTES {
        return Err(OutcomeError::TooLarge {
            field: "messages".into(),
            bytes,
        });
    }
    Ok(())
}

/// A JSON value's kind in words ("a string", "an object"), for messages that say what came instead.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn honoured_fields_are_the_fields_of_each_outcome_type() {
        let fields = |event| honoured_fields(event).to_vec();
        assert_eq!(
            fields(HookEvent::BeforeAgent),
            ["systemPrompt", "additionalContext", "messages"]
        );
        assert_eq!(fields(HookEvent::Context), ["messages"]);
        assert_eq!(
            fields(HookEvent::PreToolUse),
            ["block", "reason", "decision", "toolInput"]
        );
        for event in [HookEvent::PostToolUse, HookEvent::PostToolUseFailure] {
            assert_eq!(fields(event), ["content", "details", "isError", "terminate"]);
        }
        assert_eq!(fields(HookEvent::PreCompact), ["cancel", "customInstructions"]);
        assert_eq!(fields(HookEvent::Stop), ["continue"]);
        assert_eq!(fields(HookEvent::UserPromptSubmit), ["prompt"]);
        assert_eq!(fields(HookEvent::PermissionRequest), ["decision", "reason"]);
        for event in [
            HookEvent::SessionStart,
            HookEvent::PostCompact,
            HookEvent::Notification,
            HookEvent::SessionEnd,
        ] {
            assert!(fields(event).is_empty(), "{event}");
        }
    }

    #[test]
    fn post_tool_image_blocks_need_a_known_type_and_base64_data() {
        let outcome = |data: &str, mime: &str| json!({"content": [{"type": "text", "text": "see"}, {"type": "image", "data": data, "mime_type": mime}]});
        for mime in IMAGE_MIME_TYPES {
            assert!(parse_outcome(HookEvent::PostToolUse, &outcome("iVBORw0KGgo=", mime)).is_ok());
        }
        let rejected = |data: &str, mime: &str| {
            parse_outcome(HookEvent::PostToolUse, &outcome(data, mime))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            rejected("iVBORw0KGgo=", "image/bmp"),
            "content[1] is not a valid image block: mime_type 'image/bmp' is not one of image/png, \
             image/jpeg, image/gif, image/webp"
        );
        assert!(rejected("iVBORw0KGgo=", "text/plain").contains("'text/plain'"));
        assert!(rejected("not base64!", "image/png").contains("data is not base64"));
        assert!(rejected("", "image/png").contains("it is empty"));
        assert!(rejected("abc", "image/png").contains("not a multiple of 4"));
        assert!(rejected("ab-_", "image/png").contains("'-' at byte 2"));
        assert!(rejected("a===", "image/png").contains("more than two '='"));
        assert!(rejected("ab=c", "image/png").contains("'=' at byte 2"));
        // The same check on images in messages a context hook returns.
        let messages = json!({"messages": [{"role": "user", "content": [
            {"type": "image", "data": "%%%%", "mime_type": "image/png"}
        ]}]});
        let error = parse_outcome(HookEvent::Context, &messages)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("messages[0].content[0] is not a valid image block"),
            "{error}"
        );
    }

    #[test]
    fn empty_stdout_is_no_change() {
        assert_eq!(parse_stdout(HookEvent::PreToolUse, b"").unwrap(), None);
        assert_eq!(parse_stdout(HookEvent::PreToolUse, b" \n").unwrap(), None);
    }

    #[test]
    fn block_outcome_parses() {
        let parsed = parse_stdout(HookEvent::PreToolUse, br#"{"block": true, "reason": "no"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(
            parsed.outcome,
            HookOutcome::PreToolUse(PreToolUseOutcome {
                block: Some(true),
                reason: Some("no".into()),
                ..Default::default()
            })
        );
        assert!(parsed.ignored.is_empty());
    }

    #[test]
    fn garbage_is_rejected_with_a_reason() {
        assert_eq!(
            parse_stdout(HookEvent::Stop, &[0xff, 0xfe]),
            Err(OutcomeError::InvalidUtf8)
        );
        assert!(matches!(
            parse_stdout(HookEvent::Stop, b"hello"),
            Err(OutcomeError::InvalidJson(_))
        ));
        assert_eq!(
            parse_stdout(HookEvent::Stop, b"[1]"),
            Err(OutcomeError::NotAnObject("an array"))
        );
        assert_eq!(
            parse_stdout(HookEvent::Stop, b"42"),
            Err(OutcomeError::NotAnObject("a number"))
        );
    }

    #[test]
    fn an_ignored_field_says_where_it_works() {
        let parsed = parse_outcome(
            HookEvent::SessionStart,
            &json!({"additionalContext": "x", "content": [], "nonsense": 1}),
        )
        .unwrap();
        assert_eq!(
            parsed.ignored,
            [
                "field 'additionalContext' is ignored: sessionStart is observation-only; it works on beforeAgent",
                "field 'content' is ignored: sessionStart is observation-only; it works on postToolUse and \
                 postToolUseFailure",
                "field 'nonsense' is ignored: sessionStart is observation-only",
            ]
        );
    }

    #[test]
    fn unhonoured_fields_are_ignored_with_a_note() {
        let parsed = parse_outcome(HookEvent::PostCompact, &json!({"block": true})).unwrap();
        assert_eq!(
            parsed.ignored,
            ["field 'block' is ignored: postCompact is observation-only; it works on preToolUse"]
        );
        let parsed = parse_outcome(HookEvent::Stop, &json!({"continue": "go on", "block": true})).unwrap();
        assert_eq!(
            parsed.outcome,
            HookOutcome::Stop(crate::hooks::StopOutcome {
                continue_with: Some("go on".into())
            })
        );

        let parsed = parse_outcome(HookEvent::Context, &json!({"systemPrompt": "x"})).unwrap();
        assert_eq!(parsed.outcome, HookOutcome::Context(ContextOutcome::default()));
        assert!(parsed.ignored[0].contains("'systemPrompt' is not honoured by context"));
    }

    #[test]
    fn added_tool_names_is_rejected() {
        let parsed = parse_outcome(HookEvent::PostToolUse, &json!({"addedToolNames": ["x"]})).unwrap();
        assert!(parsed.ignored[0].contains("hooks cannot add tools"));
    }

    #[test]
    fn wrong_types_reject_the_outcome() {
        let err = parse_outcome(HookEvent::PreToolUse, &json!({"block": "yes"})).unwrap_err();
        assert!(matches!(err, OutcomeError::InvalidField { .. }), "{err}");
        let err = parse_outcome(HookEvent::PreToolUse, &json!({"decision": "maybe"})).unwrap_err();
        assert!(matches!(err, OutcomeError::InvalidField { .. }), "{err}");
    }

    #[test]
    fn post_tool_content_must_be_text_or_image_blocks() {
        for bad in [
            json!({"content": "plain string"}),
            json!({"content": [{"type": "video", "data": "x"}]}),
            json!({"content": [{"type": "text"}]}),
            json!({"content": [{"type": "text", "text": "x", "extra": 1}]}),
        ] {
            let err = parse_outcome(HookEvent::PostToolUse, &bad).unwrap_err();
            assert!(err.to_string().contains("content must be an array"), "{err}");
        }
        let ok = parse_outcome(
            HookEvent::PostToolUseFailure,
            &json!({"content": [{"type": "text", "text": "x"}, {"type": "image", "data": "AA==", "mime_type": "image/png"}], "isError": false}),
        );
        assert!(ok.is_ok());
    }

    #[test]
    fn strings_over_32_kib_are_rejected() {
        let big = "x".repeat(MAX_RETURNED_CONTEXT_BYTES + 1);
        let err = parse_outcome(HookEvent::BeforeAgent, &json!({"additionalContext": big})).unwrap_err();
        assert_eq!(
            err,
            OutcomeError::TooLarge {
                field: "additionalContext".into(),
                bytes: big.len()
            }
        );
        let err = parse_outcome(HookEvent::PreToolUse, &json!({"block": true, "reason": big})).unwrap_err();
        assert!(matches!(err, OutcomeError::TooLarge { .. }));
        let err = parse_outcome(
            HookEvent::PostToolUse,
            &json!({"content": [{"type":"text","text": big}]}),
        )
        .unwrap_err();
        assert!(matches!(err, OutcomeError::TooLarge { .. }));
        let exactly = "x".repeat(MAX_RETURNED_CONTEXT_BYTES);
        assert!(parse_outcome(HookEvent::PreCompact, &json!({"customInstructions": exactly})).is_ok());
    }

    #[test]
    fn message_lists_are_checked() {
        let ok = json!({"messages": [{"role": "user", "content": "Redacted context"}]});
        assert!(parse_outcome(HookEvent::Context, &ok).is_ok());

        let orphan = json!({"messages": [{"role": "tool", "toolCallId": "c1", "content": "x"}]});
        let err = parse_outcome(HookEvent::Context, &orphan).unwrap_err();
        assert!(matches!(err, OutcomeError::InvalidMessages(_)), "{err}");

        let answered = json!({"messages": [
            {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "grep", "input": {}}]},
            {"role": "tool", "toolCallId": "c1", "content": [{"type": "text", "text": "found"}]}
        ]});
        assert!(parse_outcome(HookEvent::Context, &answered).is_ok());

        let bad_role = json!({"messages": [{"role": "system", "content": "x"}]});
        assert!(parse_outcome(HookEvent::Context, &bad_role).is_err());
    }
}
