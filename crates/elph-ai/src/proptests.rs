//! Property tests for what a model server sends (issue 28): any bytes, cut into any chunks, through
//! the SSE parser and both wire decoders give events or an error, never a panic, and never more
//! than they were given. Generated inputs lean towards the shapes servers really send (field names,
//! line endings, JSON of the right keys with values of the wrong kind and size), where bugs live.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::anthropic::MessagesDecoder;
use crate::http::{DecodeError, SseDecoder};
use crate::openai::ChatDecoder;
use crate::provider::StreamEvent;
use crate::sse::{SseError, SseEvent, SseParser};

/// Cases per property: enough to find the shapes above within a few seconds of a debug build.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Pieces of an event stream: field names, separators, line endings of every kind, a BOM, and
/// arbitrary text and bytes between them.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"event: ".to_vec()),
        Just(b": keep-alive".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b"retry: 10".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        Just(b"\xEF\xBB\xBF".to_vec()),
        Just(b"[DONE]".to_vec()),
        ".{0,12}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..6),
    ];
    proptest::collection::vec(piece, 0..64).prop_map(|pieces| pieces.concat())
}

/// Where to cut the bytes into chunks (positions, in any order, any number).
fn cuts() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0usize..512, 0..12)
}

fn chunked<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.push(0);
    points.push(bytes.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| bytes.get(w[0]..w[1]).unwrap())
        .collect()
}

fn parse(bytes: &[u8], cuts: &[usize], max: usize) -> Result<Vec<SseEvent>, SseError> {
    let mut parser = SseParser::new(max);
    let mut events = Vec::new();
    for chunk in chunked(bytes, cuts) {
        parser.push(chunk, &mut |event| events.push(event))?;
    }
    Ok(events)
}

/// JSON with the keys both wire formats use, and values of every kind: huge and negative numbers,
/// strings where objects belong, deep nesting.
fn wire_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        prop_oneof![Just(0u64), Just(1), Just(u64::MAX / 2 + 1)].prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just("text"),
            Just("tool_use"),
            Just("text_delta"),
            Just("input_json_delta"),
            Just("message_start"),
            Just("content_block_start"),
            Just("content_block_delta"),
            Just("content_block_stop"),
            Just("message_delta"),
            Just("message_stop"),
            Just("error"),
            Just("stop"),
            Just("tool_calls"),
            Just("{\"a\":"),
        ]
        .prop_map(Value::from),
        ".{0,16}".prop_map(Value::from),
    ];
    let keys = prop_oneof![
        Just("type"),
        Just("index"),
        Just("delta"),
        Just("content"),
        Just("text"),
        Just("choices"),
        Just("tool_calls"),
        Just("id"),
        Just("function"),
        Just("name"),
        Just("arguments"),
        Just("partial_json"),
        Just("finish_reason"),
        Just("stop_reason"),
        Just("usage"),
        Just("prompt_tokens"),
        Just("completion_tokens"),
        Just("input_tokens"),
        Just("output_tokens"),
        Just("cache_creation_input_tokens"),
        Just("cache_read_input_tokens"),
        Just("message"),
        Just("content_block"),
        Just("input"),
        Just("error"),
        Just("refusal"),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((keys.clone(), inner), 0..6).prop_map(|fields| {
                let map: Map<String, Value> = fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                Value::Object(map)
            }),
        ]
    })
}

/// One event's data: JSON of the wire's shape, the end marker, or any text.
fn event_data() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => wire_json().prop_map(|value| value.to_string()),
        1 => Just("[DONE]".to_string()),
        1 => ".{0,24}",
    ]
}

/// Feeds `events` to `decoder` until it says the reply is complete or fails, then finishes it.
/// Returns the bytes of text it emitted.
fn decode<D: SseDecoder>(mut decoder: D, events: &[(String, String)]) -> (usize, Result<(), DecodeError>) {
    let mut text = 0;
    let mut emit = |event: StreamEvent| {
        if let StreamEvent::TextDelta(delta) = event {
            text += delta.len();
        }
    };
    for (name, data) in events {
        match decoder.on_event(name, data, &mut emit) {
            Ok(false) => {}
            Ok(true) => break,
            Err(error) => return (text, Err(error)),
        }
    }
    let result = decoder.finish(&mut emit).map(|_| ());
    (text, result)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_parser_gives_the_same_events_however_the_bytes_are_cut(
        bytes in sse_bytes(),
        cuts in cuts(),
    ) {
        let whole = parse(&bytes, &[], 256);
        let cut = parse(&bytes, &cuts, 256);
        prop_assert_eq!(&whole, &cut);
        if let Ok(events) = whole {
            let data: usize = events.iter().map(|e| e.data.len()).sum();
            prop_assert!(data <= bytes.len(), "never more out than in");
            prop_assert!(events.iter().all(|e| e.data.len() <= 256));
        }
    }

    #[test]
    fn a_stream_past_the_event_cap_is_an_error_not_a_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        cuts in cuts(),
        max in 1usize..64,
    ) {
        match parse(&bytes, &cuts, max) {
            Ok(events) => prop_assert!(events.iter().all(|e| e.data.len() <= max)),
            Err(SseError::EventTooLarge { limit }) => prop_assert_eq!(limit, max),
            Err(SseError::InvalidUtf8 { line }) => prop_assert!(line >= 1),
        }
    }

    #[test]
    fn the_chat_completions_decoder_gives_a_turn_or_an_error(
        events in proptest::collection::vec((Just("message".to_string()), event_data()), 0..24),
    ) {
        let input: usize = events.iter().map(|(_, d)| d.len()).sum();
        let (text, _) = decode(ChatDecoder::default(), &events);
        prop_assert!(text <= input);
    }

    #[test]
    fn the_messages_decoder_gives_a_turn_or_an_error(
        events in proptest::collection::vec((".{0,8}", event_data()), 0..24),
    ) {
        let input: usize = events.iter().map(|(_, d)| d.len()).sum();
        let (text, _) = decode(MessagesDecoder::default(), &events);
        prop_assert!(text <= input);
    }

    #[test]
    fn any_retry_after_header_is_a_wait_or_none(value in prop_oneof![
        ".{0,12}",
        any::<f64>().prop_map(|f| f.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        "[0-9]{1,3}e[0-9]{1,3}",
    ]) {
        let _ = crate::retry::parse_retry_after(&value);
    }
}
