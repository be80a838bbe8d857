//! Claude Code settings (`.claude/settings.json`, `.claude/settings.local.json`,
//! `~/.claude/settings.json`) turned into Elph hooks that behave the same: each command hook becomes
//! the program and its arguments when the command is a plain one (see [`super::plain`]), else
//! `/bin/sh -c CMD`, with `"protocol": "claude-code"`, its matcher in Elph's tool names, its timeout
//! in milliseconds. What cannot be translated is reported, one line each, never dropped silently.

use elph_agent::hooks::HookEvent;
use elph_agent::hooks::limits::MAX_TIMEOUT_MS;
use serde_json::Value;

use super::payload::claude_event;
use super::plain::{self, Target};
use super::tools::elph_name;
use crate::hooks::config::{HookConfig, MatcherConfig, Protocol};

/// Claude Code's default hook timeout, in seconds.
const CLAUDE_DEFAULT_TIMEOUT_S: u64 = 60;

/// The hooks of one settings file, and what could not be translated.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Imported {
    pub hooks: Vec<HookConfig>,
    pub skipped: Vec<String>,
}

/// The Elph event Claude Code calls `claude`: the inverse of [`claude_event`], so the names are
/// listed once.
fn elph_event(claude: &str) -> Option<HookEvent> {
    HookEvent::ALL
        .into_iter()
        .find(|event| claude_event(*event) == Some(claude))
}

/// Reads the `hooks` of a settings document for the hooks file `target`. `taken` holds ids already
/// in use (they are avoided).
pub(crate) fn import(settings: &Value, taken: &[String], target: Target) -> Result<Imported, String> {
    let mut out = Imported::default();
    let env = env_block(settings, &mut out.skipped)?;
    let Some(hooks) = settings.get("hooks") else {
        return Ok(out);
    };
    let Value::Object(events) = hooks else {
        return Err("\"hooks\" is not an object of events".into());
    };
    let mut used: Vec<String> = taken.to_vec();
    for (event_name, groups) in events {
        let Some(event) = elph_event(event_name) else {
            out.skipped.push(format!(
                "{event_name}: Elph has no such event; its hooks are left out"
            ));
            continue;
        };
        let Value::Array(groups) = groups else {
            return Err(format!("hooks.{event_name} is not an array"));
        };
        for (group_index, group) in groups.iter().enumerate() {
            let place = format!("{event_name}[{group_index}]");
            let matcher = match group.get("matcher") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(text)) => text.clone(),
                Some(other) => return Err(format!("{place}.matcher is not a string: {other}")),
            };
            let Some(matcher) = translate_matcher(event, &matcher, &place, &mut out.skipped) else {
                continue;
            };
            let entries = group
                .get("hooks")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{place}.hooks is not an array"))?;
            for (index, entry) in entries.iter().enumerate() {
                let place = format!("{place}.hooks[{index}]");
                match entry.get("type").and_then(Value::as_str) {
                    Some("command") => {}
                    other => {
                        out.skipped.push(format!(
                            "{place}: a hook of type {} cannot run in Elph (only command hooks can); left out",
                            other.unwrap_or("(none)")
                        ));
                        continue;
                    }
                }
                let Some(command) = entry.get("command").and_then(Value::as_str) else {
                    return Err(format!("{place}.command is missing or not a string"));
                };
                let timeout_ms = match entry.get("timeout") {
                    None | Some(Value::Null) => CLAUDE_DEFAULT_TIMEOUT_S * 1000,
                    Some(value) => {
                        let seconds = value
                            .as_f64()
                            .filter(|s| *s > 0.0)
                            .ok_or_else(|| format!("{place}.timeout is not a positive number of seconds"))?;
                        (seconds * 1000.0).round() as u64
                    }
                };
                let timeout_ms = if timeout_ms > MAX_TIMEOUT_MS {
                    out.skipped.push(format!(
                        "{place}: timeout {} s is over Elph's limit; it becomes {} s",
                        timeout_ms / 1000,
                        MAX_TIMEOUT_MS / 1000
                    ));
                    MAX_TIMEOUT_MS
                } else {
                    timeout_ms.max(1)
                };
                let id = unique_id(event, &mut used);
                let (program, args) = plain::split(command, target)
                    .unwrap_or_else(|| ("/bin/sh".into(), vec!["-c".into(), command.to_string()]));
                out.hooks.push(HookConfig {
                    id,
                    event,
                    matcher: matcher.clone(),
                    command: program,
                    args,
                    timeout_ms,
                    enabled: true,
                    protocol: Protocol::ClaudeCode,
                    // Claude Code hooks run unconfined there; an import keeps that.
                    sandbox: None,
                    persistent: false,
                    fail_closed: false,
                    max_input_bytes: None,
                    max_output_bytes: None,
                    env: env.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// The settings file's `env` block: Claude Code sets it for the whole session, so every hook of
/// the file gets it as its own `env`. Its shell commands got it too; in Elph that is
/// `shellEnvironment.set` of settings.json, which an import does not write (said in `skipped`).
fn env_block(
    settings: &Value,
    skipped: &mut Vec<String>,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let mut env = std::collections::BTreeMap::new();
    let Some(block) = settings.get("env") else {
        return Ok(env);
    };
    let Value::Object(block) = block else {
        return Err("\"env\" is not an object of variables".into());
    };
    for (name, value) in block {
        let valid_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Number(number) => number.to_string(),
            Value::Bool(flag) => flag.to_string(),
            other => {
                skipped.push(format!("env.{name}: {other} is not a string; left out"));
                continue;
            }
        };
        if !valid_name {
            skipped.push(format!("env.{name}: not a variable name Elph can set; left out"));
            continue;
        }
        env.insert(name.clone(), text);
    }
    if !env.is_empty() {
        let names: Vec<&str> = env.keys().map(String::as_str).collect();
        skipped.push(format!(
            "env ({}): given to each hook imported from this file as its \"env\"; Claude Code also \
             gave it to its shell commands, which in Elph is \"shellEnvironment\": {{\"set\": …}} \
             in your settings.json (not written by the import)",
            names.join(", ")
        ));
    }
    Ok(env)
}

#[expect(clippy::expect_used, reason = "an invariant of the function")]
fn unique_id(event: HookEvent, used: &mut Vec<String>) -> String {
    let stem = format!("claude-{}", kebab(event.as_str()));
    let id = (1..)
        .map(|n| format!("{stem}-{n}"))
        .find(|id| !used.contains(id))
        .expect("an unused id");
    used.push(id.clone());
    id
}

fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Claude Code's matcher (a tool name, `A|B`, a regex, `*` or empty) as an Elph matcher.
/// `Some(None)`: every tool. `None`: the group cannot be expressed and is left out (with a line).
fn translate_matcher(
    event: HookEvent,
    matcher: &str,
    place: &str,
    skipped: &mut Vec<String>,
) -> Option<Option<MatcherConfig>> {
    let matcher = matcher.trim();
    if matcher.is_empty() || matcher == "*" || matcher == ".*" {
        return Some(None);
    }
    if !event.is_tool_event() {
        skipped.push(format!(
            "{place}: matcher '{matcher}' on {event} cannot be expressed in Elph; the hook runs every time"
        ));
        return Some(None);
    }
    let mut names = Vec::new();
    for alternative in matcher.split('|') {
        let alternative = alternative.trim();
        let pattern = if let Some(prefix) = alternative.strip_suffix(".*") {
            (!has_regex(prefix)).then(|| format!("{prefix}*"))
        } else {
            (!has_regex(alternative)).then(|| alternative.to_string())
        };
        let Some(pattern) = pattern else {
            skipped.push(format!(
                "{place}: matcher '{matcher}' is a regular expression Elph's tool patterns cannot express (exact names, 'A|B', 'prefix.*'); left out"
            ));
            return None;
        };
        let translated = match pattern.strip_suffix('*') {
            Some(prefix) => prefix
                .strip_prefix("mcp__")
                .map(|server| format!("mcp_{server}*")),
            None => elph_name(&pattern),
        };
        match translated {
            Some(name) => names.push(name),
            None => skipped.push(format!(
                "{place}: Elph has no tool like Claude Code's '{alternative}'; that part of the matcher is left out"
            )),
        }
    }
    if names.is_empty() {
        skipped.push(format!(
            "{place}: no tool of matcher '{matcher}' exists in Elph; the group is left out"
        ));
        return None;
    }
    names.dedup();
    Some(Some(MatcherConfig {
        tool_names: Some(names),
    }))
}

fn has_regex(text: &str) -> bool {
    text.chars().any(|c| "^$.*+?()[]{}\\".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_real_shaped_settings_file_translates() {
        let settings = json!({
            "permissions": {"allow": ["Bash(npm run test:*)"]},
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/v.py"}]},
                    {"matcher": "Write|Edit|MultiEdit", "hooks": [{"type": "command", "command": "g.sh", "timeout": 5}]},
                    {"matcher": "mcp__github__.*", "hooks": [{"type": "command", "command": "m.sh"}]},
                    {"matcher": "^Bash$", "hooks": [{"type": "command", "command": "x.sh"}]},
                    {"matcher": "WebFetch", "hooks": [{"type": "command", "command": "w.sh"}]}
                ],
                "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "ctx.sh"}]}],
                "Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}]
            }
        });
        let imported = import(&settings, &["claude-pre-tool-use-1".to_string()], Target::Project).unwrap();
        let summary: Vec<(String, Option<Vec<String>>, String, u64)> = imported
            .hooks
            .iter()
            .map(|h| {
                (
                    h.id.clone(),
                    h.matcher.as_ref().and_then(|m| m.tool_names.clone()),
                    std::iter::once(h.command.clone())
                        .chain(h.args.clone())
                        .collect::<Vec<_>>()
                        .join(" "),
                    h.timeout_ms,
                )
            })
            .collect();
        let names = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            summary,
            vec![
                (
                    "claude-pre-tool-use-2".into(),
                    names(&["shell_exec"]),
                    "python3 .claude/hooks/v.py".into(),
                    60_000
                ),
                (
                    "claude-pre-tool-use-3".into(),
                    names(&["write_file", "edit_file"]),
                    "g.sh".into(),
                    5_000
                ),
                (
                    "claude-pre-tool-use-4".into(),
                    names(&["mcp_github__*"]),
                    "m.sh".into(),
                    60_000
                ),
                ("claude-session-start-1".into(), None, "ctx.sh".into(), 60_000),
            ]
        );
        assert!(
            imported
                .hooks
                .iter()
                .all(|h| h.protocol == Protocol::ClaudeCode && h.command != "/bin/sh")
        );
        let shell = import(
            &json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a.sh | tee log"}]}]}}),
            &[],
            Target::Project,
        )
        .unwrap();
        assert_eq!(shell.hooks[0].command, "/bin/sh");
        assert_eq!(shell.hooks[0].args, ["-c", "a.sh | tee log"]);
        let skipped = imported.skipped.join("\n");
        for expected in [
            "'MultiEdit'",
            "'^Bash$'",
            "'WebFetch'",
            "'startup'",
            "type prompt",
            "Notification",
        ] {
            assert!(skipped.contains(expected), "{expected} in:\n{skipped}");
        }
    }

    #[test]
    fn the_env_block_becomes_each_hooks_env_and_what_it_cannot_carry_is_said() {
        let settings = json!({
            "env": {"HOOK_MODE": "ask", "RETRIES": 3, "LIST": ["a"], "BAD-NAME": "x"},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "a.sh"},
                {"type": "command", "command": "b.sh"}
            ]}]}
        });
        let imported = import(&settings, &[], Target::Project).unwrap();
        for hook in &imported.hooks {
            assert_eq!(
                hook.env,
                [("HOOK_MODE", "ask"), ("RETRIES", "3")]
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .into()
            );
        }
        let skipped = imported.skipped.join("\n");
        for expected in ["env.LIST", "env.BAD-NAME", "shellEnvironment"] {
            assert!(skipped.contains(expected), "{expected} in:\n{skipped}");
        }
        assert!(
            import(&json!({"env": "x"}), &[], Target::Project)
                .unwrap_err()
                .contains("\"env\" is not an object")
        );
    }

    #[test]
    fn broken_shapes_are_errors_that_say_where() {
        assert!(
            import(&json!({"hooks": []}), &[], Target::Project)
                .unwrap_err()
                .contains("not an object")
        );
        let error = import(
            &json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}),
            &[],
            Target::Project,
        )
        .unwrap_err();
        assert!(error.contains("PreToolUse[0].hooks[0].command"), "{error}");
        assert_eq!(
            import(&json!({"model": "x"}), &[], Target::Home).unwrap(),
            Imported::default()
        );
    }
}
