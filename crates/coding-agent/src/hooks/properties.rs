//! Property tests of the parsers that read what a user, a project or a hook wrote (issue 28):
//! hooks.json, settings.json, Claude Code answers and Claude Code settings to import. Each gives a
//! value or an error for any input, never a panic; inputs are bounded, so time and memory are too.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use elph_agent::hooks::events::Sample;
use elph_agent::hooks::{HookEvent, Matcher};

/// Field names of hooks.json, settings.json and Claude Code's answers and settings, so generated
/// objects reach the checks behind them instead of stopping at "unknown field".
const FIELDS: &[&str] = &[
    "hooks",
    "id",
    "event",
    "command",
    "args",
    "matcher",
    "toolNames",
    "timeoutMs",
    "enabled",
    "failClosed",
    "sandbox",
    "persistent",
    "protocol",
    "maxInputBytes",
    "$schema",
    "model",
    "compactionThreshold",
    "readTools",
    "deadlineSeconds",
    "trustPinning",
    "projectHooks",
    "shellEnvironment",
    "inherit",
    "exclude",
    "include",
    "set",
    "mode",
    "network",
    "writableRoots",
    "maxAddedContextBytes",
    "permissions",
    "allow",
    "ask",
    "deny",
    "env",
    "continue",
    "stopReason",
    "suppressOutput",
    "decision",
    "reason",
    "systemMessage",
    "hookSpecificOutput",
    "hookEventName",
    "permissionDecision",
    "permissionDecisionReason",
    "updatedInput",
    "additionalContext",
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "SessionStart",
    "Stop",
    "SessionEnd",
    "type",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(&[
            "preToolUse", "postToolUse", "beforeAgent", "stop", "sessionStart", "context",
            "claude-code", "elph", "workspace", "read-only", "off", "*", "read_*", "*_file", "a*b",
            "**", "", "block", "approve", "allow", "deny", "ask", "hooks/x.sh", "é日🎉",
            "\u{0}\u{1b}]52;c;eA==\u{7}",
        ][..])
        .prop_map(String::from),
        2 => ".{0,12}",
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => prop::sample::select(FIELDS).prop_map(String::from),
        1 => ".{0,8}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..7)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A hooks.json-like document: mostly `{"hooks": [{...}, ...]}` with hook-shaped entries.
fn hooks_document() -> impl Strategy<Value = Value> {
    let hook = prop::collection::vec((key(), json_value()), 0..8)
        .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>()));
    let good_hook = (text(), text(), prop::collection::vec(text(), 0..3)).prop_map(|(id, event, names)| {
        json!({"id": format!("h{}", id.len()), "event": event, "command": "/bin/true",
               "matcher": {"toolNames": names}})
    });
    prop_oneof![
        3 => prop::collection::vec(prop_oneof![hook, good_hook], 0..4).prop_map(|hooks| json!({"hooks": hooks})),
        1 => json_value(),
    ]
}

/// Bytes of a document: the JSON text, its cut-off start, or any bytes.
fn bytes_of(document: impl Strategy<Value = Value>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => document.prop_map(|value| value.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..48),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// hooks.json: `parse` and `check` agree, and every pattern a file that passes may hold is one
    /// the matcher parses (discovery `expect`s that the schema already checked it).
    #[test]
    fn any_hooks_json_is_a_file_or_errors(bytes in bytes_of(hooks_document())) {
        let parsed = super::config::parse(&bytes);
        let checked = super::config::check(&bytes);
        prop_assert_eq!(parsed.is_ok(), checked.is_ok());
        if let Ok(file) = parsed {
            for hook in &file.hooks {
                if let Some(names) = hook.matcher.as_ref().and_then(|m| m.tool_names.as_ref()) {
                    prop_assert!(Matcher::parse(names).is_ok(), "{names:?}");
                }
            }
        }
    }

    #[test]
    fn any_settings_json_is_settings_or_an_error(bytes in bytes_of(json_value())) {
        let _ = crate::settings::Settings::parse("settings.json".into(), &bytes);
    }

    /// Claude Code answers on every event: exit 0 with any stdout, exit 2 with any stderr.
    #[test]
    fn any_claude_code_answer_is_a_translation_or_an_error(answer in json_value(), raw in ".{0,40}") {
        let input = json!({"command": "ls"});
        let sample = Sample { session_id: "s", prompt: "p", tool_name: "shell_exec", tool_input: &input };
        let stdout = answer.to_string();
        for event in HookEvent::ALL {
            let payload = event.sample(&sample, std::path::Path::new("/p"));
            let _ = super::claude_code::answer::exit_zero(event, &payload, &stdout, super::claude_code::Dialect::Claude);
            let _ = super::claude_code::answer::exit_zero(event, &payload, &raw, super::claude_code::Dialect::Claude);
            let _ = super::claude_code::answer::exit_two(event, &payload, &raw);
        }
    }

    /// `elph hooks import`: any Claude Code settings document is imported or refused in words.
    #[test]
    fn any_claude_code_settings_import_or_refuse(settings in json_value()) {
        use super::claude_code::plain::Target;
        let _ = super::claude_code::settings::import(&settings, &["taken".to_string()], super::claude_code::settings::Options::settings(Target::Project));
        let _ = super::claude_code::settings::import(&json!({"hooks": settings}), &[], super::claude_code::settings::Options::settings(Target::Home));
    }
}
