//! Property tests of the outcome parser (issue 28): for any stdout a hook can print, on any event,
//! `parse_stdout` gives an outcome or an error, never a panic, and folding what it accepts into a
//! chain's result (`Reducer::apply`, then the words of `explain`) does not panic either.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::events::Sample;
use super::{HookEvent, Reducer, parse_stdout};

/// Field names that outcomes, messages and content blocks use, so that generated objects reach
/// the checks behind them rather than stopping at "unknown field".
const FIELDS: &[&str] = &[
    "block",
    "reason",
    "ask",
    "decision",
    "toolInput",
    "systemPrompt",
    "additionalContext",
    "messages",
    "role",
    "content",
    "type",
    "text",
    "data",
    "mimeType",
    "isError",
    "details",
    "terminate",
    "cancel",
    "instructions",
    "toolCallId",
    "toolName",
    "input",
    "id",
    "name",
];

/// Text values, with the ones the parser gives meaning to.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(&[
            "user", "assistant", "toolResult", "text", "image", "allow", "deny", "ask", "",
            "é日🎉", "\u{0}\u{1b}[2J",
        ][..])
        .prop_map(String::from),
        2 => ".{0,16}",
        // Around the 32 KiB limit on one outcome's text.
        1 => (32_700usize..33_000).prop_map(|n| "x".repeat(n)),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(FIELDS).prop_map(String::from),
        1 => ".{0,8}",
    ]
}

/// An outcome object: mostly the event's own fields, with values of any shape.
fn outcome_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), json_value()), 0..6)
        .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>()))
}

/// What a hook prints: a JSON object, its cut-off start, or any bytes.
fn stdout() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => outcome_object().prop_map(|value| value.to_string().into_bytes()),
        1 => (outcome_object(), any::<prop::sample::Index>()).prop_map(|(value, cut)| {
            let bytes = value.to_string().into_bytes();
            let end = cut.index(bytes.len() + 1);
            bytes.get(..end).unwrap_or_default().to_vec()
        }),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_stdout_is_an_outcome_or_an_error_on_every_event(stdout in stdout()) {
        let input = serde_json::json!({"command": "ls"});
        let sample = Sample { session_id: "s", prompt: "p", tool_name: "shell_exec", tool_input: &input };
        for event in HookEvent::ALL {
            if let Ok(Some(parsed)) = parse_stdout(event, &stdout) {
                let mut chain = Reducer::new(event.sample(&sample, std::path::Path::new("/p")));
                chain.apply("h", &parsed.outcome);
                let _ = chain.finish().explain();
            }
        }
    }
}
