//! Claude Code settings (`.claude/settings.json`, `.claude/settings.local.json`,
//! `~/.claude/settings.json`) turned into Elph hooks that behave the same: each command hook becomes
//! the program and its arguments when the command is a plain one (see [`super::plain`]), else
//! `/bin/sh -c CMD`, with `"protocol": "claude-code"`, its matcher in Elph's tool names, its timeout
//! in milliseconds. What cannot be translated is reported, one line each, never dropped silently.

use std::path::Path;

use elph_agent::hooks::limits::MAX_TIMEOUT_MS;
use elph_agent::hooks::{HookEvent, SessionSource};
use serde_json::Value;

use super::condition;
use super::payload::claude_event;
use super::plain::{self, Target};
use super::tools::elph_name;
use std::collections::BTreeMap;

use crate::hooks::config::{HookConfig, MatcherConfig, McpToolConfig, Protocol};

/// Claude Code's default hook timeout, in seconds (10 minutes since Claude Code 2.1).
const CLAUDE_DEFAULT_TIMEOUT_S: u64 = 600;

/// The variables a plugin's hook commands use to find the plugin's folder.
const PLUGIN_ROOT_VARS: [&str; 2] = ["${CLAUDE_PLUGIN_ROOT}", "$CLAUDE_PLUGIN_ROOT"];

/// The hooks of one settings file, and what could not be translated.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Imported {
    pub hooks: Vec<HookConfig>,
    pub skipped: Vec<String>,
}

/// Where the file's hooks go and what its variables stand for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Options<'a> {
    pub target: Target,
    /// The plugin folder, when the file is a plugin's `hooks/hooks.json`: `${CLAUDE_PLUGIN_ROOT}`
    /// becomes it.
    pub plugin_root: Option<&'a Path>,
    /// The home folder, for `~/` in `if` rules.
    pub home: Option<&'a Path>,
}

impl Options<'_> {
    /// For a settings file with no plugin around it.
    #[cfg(test)]
    pub(crate) fn settings(target: Target) -> Self {
        Options {
            target,
            plugin_root: None,
            home: None,
        }
    }
}

/// The Elph event Claude Code calls `claude`: the inverse of [`claude_event`], so the names are
/// listed once.
fn elph_event(claude: &str) -> Option<HookEvent> {
    HookEvent::ALL
        .into_iter()
        .find(|event| claude_event(*event) == Some(claude))
}

/// Reads the `hooks` of a settings document (or a plugin's hooks.json). `taken` holds ids already
/// in use (they are avoided). Every other field of the document is reported on a line of its own.
pub(crate) fn import(settings: &Value, taken: &[String], options: Options<'_>) -> Result<Imported, String> {
    let mut out = Imported::default();
    let env = env_block(settings, &mut out.skipped)?;
    if let Value::Object(fields) = settings {
        for (key, value) in fields {
            match key.as_str() {
                // env becomes each hook's env (below); permissions become rules, translated and
                // reported by `permissions::import`.
                "hooks" | "$schema" | "env" | "permissions" => {}
                "description" => out.skipped.push(format!(
                    "description: {value} describes the plugin; Elph's hooks.json has no place for it"
                )),
                "disableAllHooks" if value == &Value::Bool(true) => out.skipped.push(
                    "disableAllHooks: true turns every Claude Code hook off; the hooks are imported \
                     enabled (set \"enabled\": false on the ones to keep off)"
                        .into(),
                ),
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
        let Some(event) = elph_event(event_name) else {
            out.skipped.push(format!(
                "{event_name}: Elph has no such event; its hooks are left out"
            ));
            continue;
        };
        let groups = event_groups(event_name, groups)?;
        for (group_index, group) in groups.iter().enumerate() {
            let place = format!("{event_name}[{group_index}]");
            let matcher = group_matcher(group, &place)?;
            if let Value::Object(fields) = group {
                for key in fields
                    .keys()
                    .filter(|k| !["matcher", "hooks"].contains(&k.as_str()))
                {
                    out.skipped
                        .push(format!("{place}.{key}: not a field Elph knows; left out"));
                }
            }
            let Some(matcher) = translate_matcher(event, &matcher, &place, &mut out.skipped) else {
                continue;
            };
            let entries = group
                .get("hooks")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{place}.hooks is not an array"))?;
            for (index, entry) in entries.iter().enumerate() {
                let place = format!("{place}.hooks[{index}]");
                if let Some(mut hook) = import_entry(
                    event,
                    entry,
                    &matcher,
                    &place,
                    options,
                    &mut used,
                    &mut out.skipped,
                )? {
                    // The file's env is for processes: only a command hook has one.
                    if hook.command.is_some() {
                        hook.env = env.clone();
                    }
                    out.hooks.push(hook);
                }
            }
        }
    }
    Ok(out)
}

/// What one Claude Code hook runs, as Elph's fields.
#[derive(Default)]
struct Translated {
    /// As written: the caller makes it a program and arguments.
    command: Option<String>,
    url: Option<String>,
    headers: BTreeMap<String, String>,
    allowed_env_vars: Vec<String>,
    prompt: Option<String>,
    model: Option<String>,
    mcp_tool: Option<McpToolConfig>,
    protocol: Protocol,
}

/// A Claude Code hook's `type` and its fields: `command` (a program, or `/bin/sh -c`), `http` (a
/// url hook), `prompt` (a prompt hook, answered in Elph's outcome format) and `mcp_tool` (an
/// mcpTool hook). `None` (with a line in `skipped`) for what cannot run the same in Elph.
fn translate_handler(
    entry: &Value,
    place: &str,
    skipped: &mut Vec<String>,
) -> Result<Option<Translated>, String> {
    let text = |field: &str| -> Result<String, String> {
        entry
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("{place}.{field} is missing or not a string"))
    };
    let kind = entry.get("type").and_then(Value::as_str);
    let translated = match kind {
        // Split into a program and its arguments by the caller, after the plugin root is resolved.
        Some("command") => Translated {
            command: Some(text("command")?),
            protocol: Protocol::ClaudeCode,
            ..Translated::default()
        },
        Some("http") => {
            let allowed_env_vars = strings(entry.get("allowedEnvVars"));
            let mut headers = BTreeMap::new();
            for (name, value) in entry
                .get("headers")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let Some(value) = value.as_str() else {
                    return Err(format!("{place}.headers.{name} is not a string"));
                };
                headers.insert(name.clone(), braced_variables(value, &allowed_env_vars));
            }
            Translated {
                url: Some(text("url")?),
                headers,
                allowed_env_vars,
                protocol: Protocol::ClaudeCode,
                ..Translated::default()
            }
        }
        Some("prompt") => {
            let prompt = text("prompt")?.replace("$ARGUMENTS", "the event's payload (the user's message)");
            let model = entry.get("model").and_then(Value::as_str).map(|model| {
                if model.contains('/') {
                    model.to_string()
                } else {
                    format!("anthropic/{model}")
                }
            });
            if model.is_none() {
                skipped.push(format!(
                    "{place}: a prompt hook without a model asks your session's model in Elph (Claude \
                     Code asked a small fast one); give it \"model\" to choose"
                ));
            }
            Translated {
                prompt: Some(prompt),
                model,
                ..Translated::default()
            }
        }
        Some("mcp_tool") => {
            if entry.get("input").is_some() {
                skipped.push(format!(
                    "{place}: an mcp_tool hook with \"input\" (arguments made from the payload) cannot \
                     run the same in Elph, whose mcpTool hook sends the whole payload as the tool's \
                     arguments; left out"
                ));
                return Ok(None);
            }
            Translated {
                mcp_tool: Some(McpToolConfig {
                    server: text("server")?,
                    tool: text("tool")?,
                }),
                protocol: Protocol::ClaudeCode,
                ..Translated::default()
            }
        }
        other => {
            skipped.push(format!(
                "{place}: a hook of type {} cannot run in Elph (command, http, prompt and mcp_tool \
                 hooks can); left out",
                other.unwrap_or("(none)")
            ));
            return Ok(None);
        }
    };
    Ok(Some(translated))
}

/// Claude Code's `$NAME` in a header as Elph's `${NAME}`, for the names it may take.
fn braced_variables(value: &str, allowed: &[String]) -> String {
    let mut out = value.to_string();
    // Longest first, so `$TOKEN_2` is not read as `$TOKEN` followed by `_2`.
    let mut names: Vec<&String> = allowed.iter().collect();
    names.sort_by_key(|name| std::cmp::Reverse(name.len()));
    for name in names {
        out = out.replace(&format!("${name}"), &format!("${{{name}}}"));
    }
    out
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

/// One handler of a group; `Ok(None)` when it is left out (with a line in `skipped`).
fn import_entry(
    event: HookEvent,
    entry: &Value,
    matcher: &Option<MatcherConfig>,
    place: &str,
    options: Options<'_>,
    used: &mut Vec<String>,
    skipped: &mut Vec<String>,
) -> Result<Option<HookConfig>, String> {
    let Some(handler) = translate_handler(entry, place, skipped)? else {
        return Ok(None);
    };
    let timeout_ms = match entry.get("timeout") {
        None | Some(Value::Null) => {
            skipped.push(format!(
                "{place}: no timeout, so Claude Code's default of {CLAUDE_DEFAULT_TIMEOUT_S} s; Elph's \
                 limit is {} s, so it becomes {} s",
                MAX_TIMEOUT_MS / 1000,
                MAX_TIMEOUT_MS / 1000
            ));
            MAX_TIMEOUT_MS
        }
        Some(value) => {
            let seconds = value
                .as_f64()
                .filter(|s| *s > 0.0)
                .ok_or_else(|| format!("{place}.timeout is not a positive number of seconds"))?;
            let timeout_ms = (seconds * 1000.0).round() as u64;
            if timeout_ms > MAX_TIMEOUT_MS {
                skipped.push(format!(
                    "{place}: timeout {} s is over Elph's limit; it becomes {} s",
                    timeout_ms / 1000,
                    MAX_TIMEOUT_MS / 1000
                ));
                MAX_TIMEOUT_MS
            } else {
                timeout_ms.max(1)
            }
        }
    };
    let mut matcher = matcher.clone();
    let mut run_async = false;
    if let Value::Object(fields) = entry {
        for (key, value) in fields {
            match key.as_str() {
                "type" | "command" | "timeout" | "url" | "headers" | "allowedEnvVars" | "prompt"
                | "model" | "server" | "tool" | "input" => {}
                "if" => {
                    let Some(rule) = value.as_str() else {
                        return Err(format!("{place}.if is not a string"));
                    };
                    if !event.is_tool_event() {
                        skipped.push(format!(
                            "{place}: \"if\" applies only to tool events, not {event}; the hook runs every time"
                        ));
                        continue;
                    }
                    match narrow(matcher.take(), rule, options.home) {
                        Ok(narrowed) => matcher = Some(narrowed),
                        Err(why) => {
                            skipped.push(format!(
                                "{place}: \"if\": \"{rule}\" cannot be expressed ({why}); the hook is left out"
                            ));
                            return Ok(None);
                        }
                    }
                }
                "async" | "asyncRewake" if value == &Value::Bool(false) => {}
                // Claude Code's `"async": true` (run in the background, the answer unused) is
                // Elph's async hook.
                "async" => run_async = value == &Value::Bool(true),
                "asyncRewake" => skipped.push(format!(
                    "{place}: {key}: Claude Code runs it in the background and wakes the model when \
                     it exits with 2; Elph runs it in the foreground, and the event waits for it (up \
                     to its timeout)"
                )),
                "rewakeMessage" | "rewakeSummary" => skipped.push(format!(
                    "{place}: {key} goes with asyncRewake, which Elph does not have; left out"
                )),
                "statusMessage" => skipped.push(format!(
                    "{place}: statusMessage: Elph shows the hook's id while it runs; left out"
                )),
                "once" => skipped.push(format!(
                    "{place}: once: Elph runs the hook every time its event comes"
                )),
                other => skipped.push(format!("{place}.{other}: not a field Elph knows; left out")),
            }
        }
    }
    let (command, args) = match &handler.command {
        Some(command) => match resolve_plugin_root(command, options.plugin_root) {
            Ok(command) => {
                let (program, args) = plain::split(&command, options.target)
                    .unwrap_or_else(|| ("/bin/sh".into(), vec!["-c".into(), command.clone()]));
                (Some(program), args)
            }
            Err(why) => {
                skipped.push(format!("{place}: {why}; left out"));
                return Ok(None);
            }
        },
        None => (None, Vec::new()),
    };
    let id = unique_id(event, used);
    Ok(Some(HookConfig {
        id,
        event,
        matcher,
        command,
        url: handler.url,
        headers: handler.headers,
        allowed_env_vars: handler.allowed_env_vars,
        prompt: handler.prompt,
        model: handler.model,
        mcp_tool: handler.mcp_tool,
        args,
        timeout_ms,
        budget_ms: None,
        enabled: true,
        protocol: handler.protocol,
        // Claude Code hooks run unconfined there; an import keeps that.
        sandbox: None,
        persistent: false,
        run_async,
        fail_closed: false,
        max_input_bytes: None,
        max_output_bytes: None,
        // The settings file's env block, set by the caller for every hook of the file.
        env: std::collections::BTreeMap::new(),
    }))
}

/// The group's matcher narrowed by a handler's `if` rule: the rule's one tool (which the group
/// must cover) and its input condition.
fn narrow(group: Option<MatcherConfig>, rule: &str, home: Option<&Path>) -> Result<MatcherConfig, String> {
    let condition = condition::translate(rule, home)?;
    if let Some(names) = group.as_ref().and_then(|m| m.tool_names.as_ref())
        && !names.iter().any(|name| name == &condition.tool || name == "*")
    {
        return Err(format!(
            "it names {}, which the group's matcher ({}) never selects, so the hook would never run",
            condition.tool,
            names.join(", ")
        ));
    }
    Ok(MatcherConfig {
        tool_names: Some(vec![condition.tool]),
        input: condition.input,
        source: None,
    })
}

/// `command` with the plugin's folder in place of `${CLAUDE_PLUGIN_ROOT}`, or why it cannot be.
fn resolve_plugin_root(command: &str, root: Option<&Path>) -> Result<String, String> {
    if !PLUGIN_ROOT_VARS.iter().any(|var| command.contains(var)) {
        return Ok(command.to_string());
    }
    let Some(root) = root else {
        return Err(
            "it uses ${CLAUDE_PLUGIN_ROOT}, which only a plugin's hooks have: import the plugin's \
             hooks/hooks.json (its plugin folder holds .claude-plugin/plugin.json)"
                .to_string(),
        );
    };
    let text = root.display().to_string();
    // Written into a command line: a folder a shell would split or expand cannot go in unquoted.
    if !text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+@%,:".contains(c))
    {
        return Err(format!(
            "the plugin folder {text} has characters a shell would read (spaces, quotes, $…); move the \
             plugin to a plain path and import again"
        ));
    }
    let mut resolved = command.to_string();
    for var in PLUGIN_ROOT_VARS {
        resolved = resolved.replace(var, &text);
    }
    Ok(resolved)
}

/// The Claude Code SessionStart matcher (`startup`, `resume`, `clear`, `compact`, or `A|B`) as a
/// `source` condition.
pub(super) fn session_sources(
    matcher: &str,
    place: &str,
    skipped: &mut Vec<String>,
) -> Option<Option<MatcherConfig>> {
    let mut sources = Vec::new();
    for alternative in matcher.split('|').map(str::trim) {
        match alternative {
            "startup" | "clear" => sources.push(SessionSource::New),
            "resume" => sources.push(SessionSource::Resume),
            "compact" => skipped.push(format!(
                "{place}: matcher 'compact': Elph starts no session after compacting (its postCompact \
                 event comes then); that part is left out"
            )),
            other => skipped.push(format!(
                "{place}: '{other}' is not a session source Claude Code has (startup, resume, clear, compact); \
                 that part is left out"
            )),
        }
    }
    sources.dedup();
    if sources.is_empty() {
        skipped.push(format!(
            "{place}: no source of matcher '{matcher}' exists in Elph; the group is left out"
        ));
        return None;
    }
    if sources.contains(&SessionSource::New) && sources.contains(&SessionSource::Resume) {
        return Some(None);
    }
    Some(Some(MatcherConfig {
        source: Some(sources),
        ..MatcherConfig::default()
    }))
}

fn unique_id(event: HookEvent, used: &mut Vec<String>) -> String {
    unique_id_from(&format!("claude-{}", kebab(event.as_str())), used)
}

/// `STEM-N` for the first N not in `used`, which it joins.
#[expect(clippy::expect_used, reason = "an invariant of the function")]
pub(super) fn unique_id_from(stem: &str, used: &mut Vec<String>) -> String {
    let id = (1..)
        .map(|n| format!("{stem}-{n}"))
        .find(|id| !used.contains(id))
        .expect("an unused id");
    used.push(id.clone());
    id
}

pub(super) fn kebab(camel: &str) -> String {
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

/// The `hooks` object of a Claude Code or Gemini CLI settings file (`None`: the file has none).
pub(super) fn hook_events(settings: &Value) -> Result<Option<&serde_json::Map<String, Value>>, String> {
    match settings.get("hooks") {
        None => Ok(None),
        Some(Value::Object(events)) => Ok(Some(events)),
        Some(_) => Err("\"hooks\" is not an object of events".into()),
    }
}

/// One event's matcher groups.
pub(super) fn event_groups<'a>(event_name: &str, groups: &'a Value) -> Result<&'a [Value], String> {
    match groups {
        Value::Array(groups) => Ok(groups),
        _ => Err(format!("hooks.{event_name} is not an array")),
    }
}

/// The strings of a JSON array (none when it is missing or not an array; other items skipped).
pub(super) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// A group's matcher as written (empty when it has none).
pub(super) fn group_matcher(group: &Value, place: &str) -> Result<String, String> {
    match group.get("matcher") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err(format!("{place}.matcher is not a string: {other}")),
    }
}

/// What Claude Code's and Gemini CLI's matchers share before their tool-name syntaxes differ:
/// empty, `*` and `.*` match every tool, SessionStart's matcher is the session's source, and on
/// other lifecycle events a matcher cannot be expressed (said, and the hook runs every time).
pub(super) enum MatcherStart<'a> {
    /// The translation, as `translate_matcher` returns it.
    Decided(Option<Option<MatcherConfig>>),
    /// A tool event's matcher, trimmed, for the dialect's own tool-name rules.
    ToolNames(&'a str),
}

pub(super) fn matcher_before_tool_names<'a>(
    event: HookEvent,
    matcher: &'a str,
    place: &str,
    skipped: &mut Vec<String>,
) -> MatcherStart<'a> {
    let matcher = matcher.trim();
    if matcher.is_empty() || matcher == "*" || matcher == ".*" {
        return MatcherStart::Decided(Some(None));
    }
    if event == HookEvent::SessionStart {
        return MatcherStart::Decided(session_sources(matcher, place, skipped));
    }
    if !event.is_tool_event() {
        skipped.push(format!(
            "{place}: matcher '{matcher}' on {event} cannot be expressed in Elph; the hook runs every time"
        ));
        return MatcherStart::Decided(Some(None));
    }
    MatcherStart::ToolNames(matcher)
}

/// Claude Code's matcher (a tool name, `A|B`, a regex, `*` or empty) as an Elph matcher.
/// `Some(None)`: every tool. `None`: the group cannot be expressed and is left out (with a line).
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
        ..MatcherConfig::default()
    }))
}

pub(super) fn has_regex(text: &str) -> bool {
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
                "Stop": [{"hooks": [{"type": "agent", "prompt": "done?"}]}],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi", "async": true}]}],
                "SubagentStop": [{"hooks": [{"type": "command", "command": "sub.sh"}]}]
            }
        });
        let imported = import(
            &settings,
            &["claude-pre-tool-use-1".to_string()],
            Options::settings(Target::Project),
        )
        .unwrap();
        let summary: Vec<(String, Option<Vec<String>>, String, u64)> = imported
            .hooks
            .iter()
            .map(|h| {
                (
                    h.id.clone(),
                    h.matcher.as_ref().and_then(|m| m.tool_names.clone()),
                    h.command
                        .clone()
                        .into_iter()
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
                (
                    "claude-notification-1".into(),
                    None,
                    "notify-send hi".into(),
                    60_000
                ),
            ]
        );
        assert!(
            imported
                .hooks
                .iter()
                .all(|h| h.run_async == (h.id == "claude-notification-1")),
            "Claude Code's async carries over, and only where it was set"
        );
        assert!(
            imported
                .hooks
                .iter()
                .all(|h| h.protocol == Protocol::ClaudeCode && h.command.as_deref() != Some("/bin/sh"))
        );
        let shell = import(
            &json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "a.sh | tee log"}]}]}}),
            &[],
            Options::settings(Target::Project),
        )
        .unwrap();
        assert_eq!(shell.hooks[0].command.as_deref(), Some("/bin/sh"));
        assert_eq!(shell.hooks[0].args, ["-c", "a.sh | tee log"]);
        let skipped = imported.skipped.join("\n");
        for expected in [
            "'MultiEdit'",
            "'^Bash$'",
            "'WebFetch'",
            "type agent",
            "Claude Code's default of 600 s",
            "SubagentStop",
        ] {
            assert!(skipped.contains(expected), "{expected} in:\n{skipped}");
        }
        // Permissions become rules (permissions::import reports on them), not a line here.
        assert!(!skipped.contains("permissions"), "{skipped}");
    }

    #[test]
    fn http_prompt_and_mcp_tool_hooks_become_url_prompt_and_mcp_tool_hooks() {
        let settings = json!({
            "env": {"MODE": "x"},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "http", "url": "https://hooks.example.com/check", "timeout": 5,
                 "headers": {"Authorization": "Bearer $HOOK_TOKEN"}, "allowedEnvVars": ["HOOK_TOKEN"]},
                {"type": "prompt", "prompt": "Block deletes. Input: $ARGUMENTS", "model": "claude-haiku-4-5"},
                {"type": "prompt", "prompt": "Anything risky?"},
                {"type": "mcp_tool", "server": "guard", "tool": "check"},
                {"type": "mcp_tool", "server": "semgrep", "tool": "scan", "input": {"path": "${tool_input.file_path}"}}
            ]}]}
        });
        let imported = import(&settings, &[], Options::settings(Target::Project)).unwrap();
        let [http, prompt, plain_prompt, tool] = imported.hooks.as_slice() else {
            panic!("four hooks: {:?}", imported.hooks);
        };
        assert_eq!(http.url.as_deref(), Some("https://hooks.example.com/check"));
        assert_eq!(http.headers["Authorization"], "Bearer ${HOOK_TOKEN}");
        assert_eq!((http.protocol, http.timeout_ms), (Protocol::ClaudeCode, 5000));
        assert!(http.env.is_empty() && http.command.is_none());
        assert_eq!(prompt.model.as_deref(), Some("anthropic/claude-haiku-4-5"));
        assert_eq!(
            prompt.prompt.as_deref(),
            Some("Block deletes. Input: the event's payload (the user's message)")
        );
        assert_eq!(prompt.protocol, Protocol::Elph);
        assert_eq!(plain_prompt.model, None);
        let expected = McpToolConfig {
            server: "guard".into(),
            tool: "check".into(),
        };
        assert_eq!(tool.mcp_tool.as_ref(), Some(&expected));
        let skipped = imported.skipped.join("\n");
        assert!(skipped.contains("\"input\""), "{skipped}");
        assert!(skipped.contains("session's model"), "{skipped}");
        // What the import writes is a valid hooks.json.
        let file = json!({"hooks": imported.hooks});
        crate::hooks::config::parse(file.to_string().as_bytes()).unwrap();
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
        let imported = import(&settings, &[], Options::settings(Target::Project)).unwrap();
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
            import(&json!({"env": "x"}), &[], Options::settings(Target::Project))
                .unwrap_err()
                .contains("\"env\" is not an object")
        );
    }

    #[test]
    fn if_session_sources_and_plugin_roots_translate() {
        let settings = json!({
            "description": "a plugin",
            "hooks": {
                "PostToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "bash \"${CLAUDE_PLUGIN_ROOT}/hooks/r.sh\"", "if": "Bash(git commit:*)",
                     "asyncRewake": true, "rewakeMessage": "m", "timeout": 5},
                    {"type": "command", "command": "x.sh", "if": "Edit(src/**)", "timeout": 5}
                ]}],
                "PreToolUse": [{"hooks": [{"type": "command", "command": "y.sh", "if": "Write(src/**)", "timeout": 5}]}],
                "SessionStart": [
                    {"matcher": "resume", "hooks": [{"type": "command", "command": "r.sh", "timeout": 5}]},
                    {"matcher": "startup|clear", "hooks": [{"type": "command", "command": "s.sh", "timeout": 5}]},
                    {"matcher": "compact", "hooks": [{"type": "command", "command": "c.sh", "timeout": 5}]}
                ]
            }
        });
        let root = Path::new("/plugins/sec");
        let options = Options {
            target: Target::Project,
            plugin_root: Some(root),
            home: None,
        };
        let imported = import(&settings, &[], options).unwrap();
        let matchers: Vec<Value> = imported
            .hooks
            .iter()
            .map(|h| serde_json::to_value(&h.matcher).unwrap())
            .collect();
        assert_eq!(
            matchers,
            [
                json!({"toolNames": ["shell_exec"], "input": {"command": "git commit*"}}),
                json!({"toolNames": ["write_file"], "input": {"path": "src/**"}}),
                json!({"source": ["resume"]}),
                json!({"source": ["new"]}),
            ]
        );
        assert_eq!(imported.hooks[0].command.as_deref(), Some("bash"));
        assert_eq!(imported.hooks[0].args, ["/plugins/sec/hooks/r.sh"]);
        let skipped = imported.skipped.join("\n");
        for expected in [
            "description:",
            "asyncRewake",
            "rewakeMessage",
            "never selects",
            "matcher 'compact'",
            "no source of matcher 'compact'",
        ] {
            assert!(skipped.contains(expected), "{expected} in:\n{skipped}");
        }
        let without_root = import(&settings, &[], Options::settings(Target::Project)).unwrap();
        assert!(
            without_root
                .skipped
                .iter()
                .any(|l| l.contains("only a plugin's hooks have")),
            "{:?}",
            without_root.skipped
        );
        assert_eq!(without_root.hooks.len(), 3);
    }

    #[test]
    fn broken_shapes_are_errors_that_say_where() {
        assert!(
            import(&json!({"hooks": []}), &[], Options::settings(Target::Project))
                .unwrap_err()
                .contains("not an object")
        );
        let error = import(
            &json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}}),
            &[],
            Options::settings(Target::Project),
        )
        .unwrap_err();
        assert!(error.contains("PreToolUse[0].hooks[0].command"), "{error}");
        let other = import(&json!({"model": "x"}), &[], Options::settings(Target::Home)).unwrap();
        assert!(other.hooks.is_empty());
        assert_eq!(
            other.skipped,
            ["model: not a hook setting; `elph hooks import` leaves it out"]
        );
    }
}
