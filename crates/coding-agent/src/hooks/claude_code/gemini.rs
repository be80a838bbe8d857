//! Gemini CLI hook settings (`.gemini/settings.json`, `~/.gemini/settings.json`, an extension's
//! `hooks/hooks.json`) turned into Elph hooks with `"protocol": "gemini-cli"`: the hook reads
//! Gemini CLI's payload and answers as it would there. Events and tool names are mapped, timeouts
//! are already in milliseconds; what cannot be translated is reported, one line each.

use std::path::Path;

use elph_agent::hooks::HookEvent;
use elph_agent::hooks::limits::MAX_TIMEOUT_MS;
use serde_json::Value;

use super::plain;
use super::settings::{
    Imported, MatcherStart, Options, event_groups, group_matcher, has_regex, hook_events, kebab,
    matcher_before_tool_names, strings, unique_id_from,
};
use super::tools::elph_name_of_gemini;
use crate::hooks::config::{HookConfig, MatcherConfig, Protocol};

/// Gemini CLI's default hook timeout, in milliseconds.
const GEMINI_DEFAULT_TIMEOUT_MS: u64 = 60_000;

/// The events Gemini CLI names only (a file with one of them is a Gemini CLI file).
pub(crate) const GEMINI_ONLY_EVENTS: [&str; 8] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "PreCompress",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
];

/// The Elph events a Gemini CLI event becomes; `Err` says why it has none.
fn elph_events(gemini: &str) -> Result<&'static [HookEvent], &'static str> {
    match gemini {
        "BeforeTool" => Ok(&[HookEvent::PreToolUse]),
        // Gemini CLI's AfterTool follows failed calls too, which Elph tells apart.
        "AfterTool" => Ok(&[HookEvent::PostToolUse, HookEvent::PostToolUseFailure]),
        "BeforeAgent" => Ok(&[HookEvent::UserPromptSubmit]),
        "AfterAgent" => Ok(&[HookEvent::Stop]),
        "PreCompress" => Ok(&[HookEvent::PreCompact]),
        "SessionStart" => Ok(&[HookEvent::SessionStart]),
        "SessionEnd" => Ok(&[HookEvent::SessionEnd]),
        "BeforeModel" | "AfterModel" => Err("Elph has no hook on each model request or response chunk"),
        "BeforeToolSelection" => Err("Elph has no hook that narrows the tools offered"),
        // Observation only in both: Gemini CLI fires it when a tool waits for permission, Elph's
        // `notification` then and when a long turn ends or fails.
        "Notification" => Ok(&[HookEvent::Notification]),
        _ => Err("Gemini CLI has no such event"),
    }
}

/// Whether `settings` is a Gemini CLI hooks file rather than Claude Code's: it names an event only
/// Gemini CLI has, or its path is in a `.gemini` folder or an extension.
pub(crate) fn is_gemini(settings: &Value, path: &Path, extension_root: Option<&Path>) -> bool {
    let gemini_event = settings
        .get("hooks")
        .and_then(Value::as_object)
        .is_some_and(|events| {
            events
                .keys()
                .any(|key| GEMINI_ONLY_EVENTS.contains(&key.as_str()))
        });
    gemini_event || extension_root.is_some() || path.components().any(|part| part.as_os_str() == ".gemini")
}

/// Reads the `hooks` of a Gemini CLI settings document; `options.plugin_root` is the extension's
/// folder (`${extensionPath}`).
pub(crate) fn import(settings: &Value, taken: &[String], options: Options<'_>) -> Result<Imported, String> {
    let mut out = Imported::default();
    let mut disabled: Vec<String> = Vec::new();
    if let Value::Object(fields) = settings {
        for (key, value) in fields {
            match key.as_str() {
                "hooks" | "$schema" => {}
                "hooksConfig" => {
                    if value.get("enabled") == Some(&Value::Bool(false)) {
                        out.skipped.push(
                            "hooksConfig.enabled: false turns Gemini CLI's hooks off; they are imported \
                             enabled (set \"enabled\": false on the ones to keep off)"
                                .into(),
                        );
                    }
                    disabled = strings(value.get("disabled"));
                    if let Value::Object(config) = value {
                        for other in config
                            .keys()
                            .filter(|k| !["enabled", "disabled"].contains(&k.as_str()))
                        {
                            out.skipped
                                .push(format!("hooksConfig.{other}: not a field Elph knows; left out"));
                        }
                    }
                }
                other => out.skipped.push(format!(
                    "{other}: not a hook setting; `elph hooks import` leaves it out"
                )),
            }
        }
    }
    let Some(events) = hook_events(settings)? else {
        return Ok(out);
    };
    let mut used: Vec<String> = taken.to_vec();
    for (event_name, groups) in events {
        let targets = match elph_events(event_name) {
            Ok(targets) => targets,
            Err(why) => {
                out.skipped
                    .push(format!("{event_name}: {why}; its hooks are left out"));
                continue;
            }
        };
        let groups = event_groups(event_name, groups)?;
        for (group_index, group) in groups.iter().enumerate() {
            let place = format!("{event_name}[{group_index}]");
            let matcher = group_matcher(group, &place)?;
            if let Value::Object(fields) = group {
                for (key, value) in fields {
                    match key.as_str() {
                        "matcher" | "hooks" => {}
                        "sequential" if value == &Value::Bool(false) => out.skipped.push(format!(
                            "{place}.sequential: false runs the group's hooks in parallel in Gemini CLI; \
                             Elph runs them in order"
                        )),
                        "sequential" => {}
                        other => out
                            .skipped
                            .push(format!("{place}.{other}: not a field Elph knows; left out")),
                    }
                }
            }
            let Some(matcher) = translate_matcher(targets[0], &matcher, &place, &mut out.skipped) else {
                continue;
            };
            let entries = group
                .get("hooks")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{place}.hooks is not an array"))?;
            for (index, entry) in entries.iter().enumerate() {
                let place = format!("{place}.hooks[{index}]");
                let Some((command, timeout_ms, name)) = read_entry(entry, &place, options, &mut out.skipped)?
                else {
                    continue;
                };
                let enabled = !name.as_ref().is_some_and(|name| disabled.contains(name));
                let (program, args) = plain::split(&command, options.target)
                    .unwrap_or_else(|| ("/bin/sh".into(), vec!["-c".into(), command.clone()]));
                for event in targets {
                    let stem = match &name {
                        Some(name) if is_id(name) => format!("gemini-{name}"),
                        _ => format!("gemini-{}", kebab(event.as_str())),
                    };
                    out.hooks.push(HookConfig {
                        id: unique_id_from(&stem, &mut used),
                        event: *event,
                        matcher: matcher.clone(),
                        command: Some(program.clone()),
                        url: None,
                        headers: Default::default(),
                        allowed_env_vars: Vec::new(),
                        prompt: None,
                        model: None,
                        mcp_tool: None,
                        args: args.clone(),
                        timeout_ms,
                        budget_ms: None,
                        enabled,
                        protocol: Protocol::GeminiCli,
                        // Gemini CLI runs hooks unconfined; an import keeps that.
                        sandbox: None,
                        persistent: false,
                        run_async: false,
                        fail_closed: false,
                        max_input_bytes: None,
                        max_output_bytes: None,
                        // Gemini CLI's hook entries carry no environment of their own.
                        env: std::collections::BTreeMap::new(),
                    });
                }
            }
        }
    }
    Ok(out)
}

/// A hook entry's command (variables resolved), timeout and name; `Ok(None)` when it is left out.
fn read_entry(
    entry: &Value,
    place: &str,
    options: Options<'_>,
    skipped: &mut Vec<String>,
) -> Result<Option<(String, u64, Option<String>)>, String> {
    match entry.get("type").and_then(Value::as_str) {
        Some("command") => {}
        other => {
            skipped.push(format!(
                "{place}: a hook of type {} cannot run in Elph (only command hooks can); left out",
                other.unwrap_or("(none)")
            ));
            return Ok(None);
        }
    }
    let Some(command) = entry.get("command").and_then(Value::as_str) else {
        return Err(format!("{place}.command is missing or not a string"));
    };
    let timeout_ms = match entry.get("timeout") {
        None | Some(Value::Null) => GEMINI_DEFAULT_TIMEOUT_MS,
        Some(value) => value
            .as_f64()
            .filter(|ms| *ms > 0.0)
            .map(|ms| ms.round() as u64)
            .ok_or_else(|| format!("{place}.timeout is not a positive number of milliseconds"))?,
    };
    let timeout_ms = if timeout_ms > MAX_TIMEOUT_MS {
        skipped.push(format!(
            "{place}: timeout {timeout_ms} ms is over Elph's limit; it becomes {MAX_TIMEOUT_MS} ms"
        ));
        MAX_TIMEOUT_MS
    } else {
        timeout_ms.max(1)
    };
    let name = entry.get("name").and_then(Value::as_str).map(str::to_string);
    if let Value::Object(fields) = entry {
        for key in fields.keys() {
            match key.as_str() {
                "type" | "command" | "timeout" | "name" => {}
                "description" => skipped.push(format!(
                    "{place}.description: Elph's hooks.json has no place for it; left out"
                )),
                other => skipped.push(format!("{place}.{other}: not a field Elph knows; left out")),
            }
        }
    }
    match resolve_variables(command, options.plugin_root) {
        Ok(command) => Ok(Some((command, timeout_ms, name))),
        Err(why) => {
            skipped.push(format!("{place}: {why}; left out"));
            Ok(None)
        }
    }
}

/// Gemini CLI's variables: `$GEMINI_PROJECT_DIR` and `${workspacePath}` become Claude Code's
/// project variable (which the import writes relative to the project, and which the hook gets
/// too), `${/}` a slash, `${extensionPath}` the extension's folder.
fn resolve_variables(command: &str, extension: Option<&Path>) -> Result<String, String> {
    let mut resolved = command
        .replace("${GEMINI_PROJECT_DIR}", "${CLAUDE_PROJECT_DIR}")
        .replace("$GEMINI_PROJECT_DIR", "$CLAUDE_PROJECT_DIR")
        .replace("${workspacePath}", "${CLAUDE_PROJECT_DIR}")
        .replace("${/}", "/");
    if resolved.contains("${extensionPath}") {
        let Some(root) = extension else {
            return Err(
                "it uses ${extensionPath}, which only an extension's hooks have: import the extension's \
                 hooks/hooks.json (its folder holds gemini-extension.json)"
                    .into(),
            );
        };
        let text = root.display().to_string();
        if !text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+@%,:".contains(c))
        {
            return Err(format!(
                "the extension folder {text} has characters a shell would read; move it to a plain path \
                 and import again"
            ));
        }
        resolved = resolved.replace("${extensionPath}", &text);
    }
    Ok(resolved)
}

fn is_id(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// Gemini CLI's matcher: a regular expression over tool names on tool events (`write_file|replace`,
/// `*`, `.*`), an exact string on lifecycle events (SessionStart's `startup`, `resume`, `clear`).
fn translate_matcher(
    event: HookEvent,
    matcher: &str,
    place: &str,
    skipped: &mut Vec<String>,
) -> Option<Option<MatcherConfig>> {
    let matcher = match matcher_before_tool_names(event, matcher, place, skipped) {
        MatcherStart::Decided(decided) => return decided,
        MatcherStart::ToolNames(matcher) => matcher,
    };
    let mut names = Vec::new();
    for alternative in matcher.split('|').map(str::trim) {
        let alternative = alternative.strip_prefix('^').unwrap_or(alternative);
        let alternative = alternative.strip_suffix('$').unwrap_or(alternative);
        if let Some(prefix) = alternative.strip_suffix(".*")
            && !has_regex(prefix)
        {
            if prefix.starts_with("mcp_") || prefix == "mcp" {
                names.push("mcp_*".to_string());
                continue;
            }
            let matching: Vec<String> = super::tools::GEMINI_TOOL_NAMES
                .iter()
                .filter(|name| name.starts_with(prefix))
                .filter_map(|name| elph_name_of_gemini(name))
                .collect();
            if matching.is_empty() {
                skipped.push(format!(
                    "{place}: no Elph tool is like Gemini CLI's '{alternative}'; that part of the matcher is left out"
                ));
            }
            names.extend(matching);
            continue;
        }
        if has_regex(alternative) {
            skipped.push(format!(
                "{place}: matcher '{matcher}' is a regular expression Elph's tool patterns cannot express \
                 (exact names, 'A|B', 'prefix.*'); left out"
            ));
            return None;
        }
        match elph_name_of_gemini(alternative) {
            Some(name) => names.push(name),
            None => skipped.push(format!(
                "{place}: Elph has no tool like Gemini CLI's '{alternative}'; that part of the matcher is left out"
            )),
        }
    }
    names.sort();
    names.dedup();
    if names.is_empty() {
        skipped.push(format!(
            "{place}: no tool of matcher '{matcher}' exists in Elph; the group is left out"
        ));
        return None;
    }
    Some(Some(MatcherConfig {
        tool_names: Some(names),
        ..MatcherConfig::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::claude_code::plain::Target;
    use serde_json::json;

    #[test]
    fn a_notification_hook_becomes_an_elph_notification_hook() {
        let settings = json!({
            "hooks": {
                "BeforeTool": [{"hooks": [{"type": "command", "command": "g.sh"}]}],
                "Notification": [{"hooks": [{"name": "ping", "type": "command", "command": "notify.sh"}]}]
            }
        });
        let options = Options {
            target: Target::Project,
            plugin_root: None,
            home: None,
        };
        let imported = import(&settings, &[], options).unwrap();
        let events: Vec<HookEvent> = imported.hooks.iter().map(|hook| hook.event).collect();
        assert_eq!(events, [HookEvent::PreToolUse, HookEvent::Notification]);
        assert!(
            imported.skipped.iter().all(|line| !line.contains("Notification")),
            "{:?}",
            imported.skipped
        );
    }

    #[test]
    fn events_tools_and_milliseconds_translate() {
        let settings = json!({
            "hooksConfig": {"enabled": true, "disabled": ["noisy"]},
            "general": {"vimMode": true},
            "hooks": {
                "BeforeTool": [{"matcher": "run_shell_command", "sequential": true, "hooks": [
                    {"name": "no-rm", "type": "command", "command": "$GEMINI_PROJECT_DIR/.gemini/hooks/no-rm.sh", "timeout": 5000, "description": "d"}
                ]}],
                "AfterTool": [{"matcher": "write_file|replace", "hooks": [
                    {"name": "noisy", "type": "command", "command": "fmt.sh", "timeout": 120000}
                ]}],
                "AfterAgent": [{"hooks": [{"type": "command", "command": "${extensionPath}/retry.sh"}]}],
                "BeforeModel": [{"hooks": [{"type": "command", "command": "m.sh"}]}],
                "SessionStart": [{"matcher": "resume", "hooks": [{"type": "command", "command": "s.sh"}]}]
            }
        });
        let options = Options {
            target: Target::Project,
            plugin_root: Some(Path::new("/ext/guard")),
            home: None,
        };
        let imported = import(&settings, &[], options).unwrap();
        let summary: Vec<(String, HookEvent, Value, String, u64, bool)> = imported
            .hooks
            .iter()
            .map(|h| {
                (
                    h.id.clone(),
                    h.event,
                    serde_json::to_value(&h.matcher).unwrap(),
                    h.command
                        .clone()
                        .into_iter()
                        .chain(h.args.clone())
                        .collect::<Vec<_>>()
                        .join(" "),
                    h.timeout_ms,
                    h.enabled,
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "gemini-no-rm-1".into(),
                    HookEvent::PreToolUse,
                    json!({"toolNames": ["shell_exec"]}),
                    "../.gemini/hooks/no-rm.sh".into(),
                    5000,
                    true
                ),
                (
                    "gemini-noisy-1".into(),
                    HookEvent::PostToolUse,
                    json!({"toolNames": ["edit_file", "write_file"]}),
                    "fmt.sh".into(),
                    60_000,
                    false
                ),
                (
                    "gemini-noisy-2".into(),
                    HookEvent::PostToolUseFailure,
                    json!({"toolNames": ["edit_file", "write_file"]}),
                    "fmt.sh".into(),
                    60_000,
                    false
                ),
                (
                    "gemini-stop-1".into(),
                    HookEvent::Stop,
                    Value::Null,
                    "/ext/guard/retry.sh".into(),
                    60_000,
                    true
                ),
                (
                    "gemini-session-start-1".into(),
                    HookEvent::SessionStart,
                    json!({"source": ["resume"]}),
                    "s.sh".into(),
                    60_000,
                    true
                ),
            ]
        );
        assert!(imported.hooks.iter().all(|h| h.protocol == Protocol::GeminiCli));
        let skipped = imported.skipped.join("\n");
        for expected in ["general:", "description", "120000 ms", "BeforeModel"] {
            assert!(skipped.contains(expected), "{expected} in:\n{skipped}");
        }
        assert!(is_gemini(&settings, Path::new("x.json"), None));
        assert!(!is_gemini(
            &json!({"hooks": {"PreToolUse": []}}),
            Path::new("/p/.claude/settings.json"),
            None
        ));
        assert!(is_gemini(
            &json!({"hooks": {}}),
            Path::new("/p/.gemini/settings.json"),
            None
        ));
    }
}
