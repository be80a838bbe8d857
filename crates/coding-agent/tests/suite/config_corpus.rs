//! The hooks.json corpus: for each case, exactly which hooks load and the diagnostic text.

use std::path::Path;

use coding_agent::hooks::discover;
use coding_agent::paths::Paths;
use pretty_assertions::assert_eq;

/// A home and a project folder with optional hooks.json contents.
struct Layout {
    _root: tempfile::TempDir,
    paths: Paths,
}

impl Layout {
    fn new(home: Option<&str>, project: Option<&str>) -> Self {
        let root = tempfile::tempdir().unwrap();
        let config_dir = root.path().join("config");
        let project_dir = root.path().join("project");
        std::fs::create_dir_all(&config_dir).unwrap();
        std::fs::create_dir_all(project_dir.join(".elph")).unwrap();
        if let Some(text) = home {
            std::fs::write(config_dir.join("hooks.json"), text).unwrap();
        }
        if let Some(text) = project {
            std::fs::write(project_dir.join(".elph/hooks.json"), text).unwrap();
        }
        let paths = Paths {
            config_dir,
            data_dir: root.path().join("data"),
            project_dir: std::fs::canonicalize(project_dir).unwrap(),
        };
        Layout { _root: root, paths }
    }

    /// Loaded ids (disabled marked with a leading '-') and diagnostics with the temp paths replaced.
    fn load(&self) -> (Vec<String>, Vec<String>) {
        let set = discover(&self.paths, true);
        let ids = set
            .hooks
            .iter()
            .map(|h| {
                if h.enabled {
                    h.id.clone()
                } else {
                    format!("-{}", h.id)
                }
            })
            .collect();
        let diagnostics = set
            .diagnostics
            .iter()
            .map(|d| self.scrub(&d.to_string()))
            .collect();
        (ids, diagnostics)
    }

    fn scrub(&self, text: &str) -> String {
        text.replace(&self.paths.home_hooks_file().display().to_string(), "HOME")
            .replace(&self.paths.project_hooks_file().display().to_string(), "PROJECT")
    }
}

fn hook(id: &str, event: &str) -> String {
    format!(r#"{{"id": "{id}", "event": "{event}", "command": "/bin/true"}}"#)
}

fn file(hooks: &[String]) -> String {
    format!(r#"{{"hooks": [{}]}}"#, hooks.join(", "))
}

/// One malformed home file: nothing loads, and the one diagnostic is `HOME at POINTER: MESSAGE`.
fn malformed(text: &str, expected: &str) {
    let layout = Layout::new(Some(text), None);
    let (ids, diagnostics) = layout.load();
    assert_eq!(
        ids,
        Vec::<String>::new(),
        "no hook of a malformed file loads: {text}"
    );
    assert_eq!(diagnostics, vec![expected.to_string()], "for {text}");
}

fn malformed_hook(hook_json: &str, expected: &str) {
    malformed(&format!(r#"{{"hooks": [{hook_json}]}}"#), expected);
}

#[test]
fn valid_file_loads_in_order() {
    let layout = Layout::new(Some(&file(&[hook("a", "stop"), hook("b", "sessionStart")])), None);
    assert_eq!(layout.load(), (vec!["a".into(), "b".into()], vec![]));
}

#[test]
fn unknown_field_at_top_level() {
    malformed(
        r#"{"hooks": [], "extra": 1}"#,
        "HOME at /extra: unknown field 'extra'; file ignored",
    );
}

#[test]
fn unknown_field_in_a_hook() {
    malformed_hook(
        r#"{"id": "a", "event": "stop", "command": "x", "timeout": 5}"#,
        "HOME at /hooks/0/timeout: unknown field 'timeout'; did you mean 'timeoutMs'?; file ignored",
    );
}

#[test]
fn unknown_field_in_a_matcher() {
    malformed_hook(
        r#"{"id": "a", "event": "preToolUse", "command": "x", "matcher": {"tools": ["x"]}}"#,
        "HOME at /hooks/0/matcher/tools: unknown field 'tools'; file ignored",
    );
}

#[test]
fn bad_event_spellings() {
    let names = "sessionStart, userPromptSubmit, beforeAgent, context, preToolUse, permissionRequest, postToolUse, postToolUseFailure, preCompact, postCompact, stop, notification, sessionEnd";
    for (bad, meant) in [
        ("PreToolUse", Some("preToolUse")),
        ("pretooluse", Some("preToolUse")),
        ("pre_tool_use", Some("preToolUse")),
        ("", None),
        ("PRE_TOOL_USE", Some("preToolUse")),
        ("preToolUse ", Some("preToolUse")),
        ("onStop", None),
        ("SessionStart", Some("sessionStart")),
    ] {
        let expected = match meant {
            Some(event) => format!(
                "HOME at /hooks/0/event: unknown event \"{bad}\"; did you mean '{event}'? (event names are camelCase: {names}); file ignored"
            ),
            None => format!(
                "HOME at /hooks/0/event: unknown event \"{bad}\"; expected one of: {names}; file ignored"
            ),
        };
        malformed_hook(
            &format!(r#"{{"id": "a", "event": "{bad}", "command": "x"}}"#),
            &expected,
        );
    }
    malformed_hook(
        r#"{"id": "a", "event": 3, "command": "x"}"#,
        "HOME at /hooks/0/event: 3 is not of type \"string\"; file ignored",
    );
}

#[test]
fn missing_required_fields() {
    malformed_hook(
        r#"{"id": "a", "command": "x"}"#,
        "HOME at /hooks/0: missing required field \"event\"; file ignored",
    );
    malformed_hook(
        r#"{"id": "a", "event": "stop"}"#,
        "HOME at /hooks/0: missing what the hook runs: give exactly one of command (a program), url (an \
         HTTP endpoint), prompt (a model judges) or mcpTool (a tool of an MCP server); file ignored",
    );
    malformed_hook(
        r#"{"event": "stop", "command": "x"}"#,
        "HOME at /hooks/0: missing required field \"id\"; file ignored",
    );
}

#[test]
fn bad_ids() {
    let rule = "an id starts with a letter or digit and holds only letters, digits, '.', '_' and '-'";
    malformed_hook(
        r#"{"id": "", "event": "stop", "command": "x"}"#,
        &format!("HOME at /hooks/0/id: invalid id \"\": {rule}; file ignored"),
    );
    malformed_hook(
        r#"{"id": "my hook", "event": "stop", "command": "x"}"#,
        &format!("HOME at /hooks/0/id: invalid id \"my hook\": {rule}; file ignored"),
    );
    malformed_hook(
        r#"{"id": ".hidden", "event": "stop", "command": "x"}"#,
        &format!("HOME at /hooks/0/id: invalid id \".hidden\": {rule}; file ignored"),
    );
}

#[test]
fn empty_command() {
    malformed_hook(
        r#"{"id": "a", "event": "stop", "command": ""}"#,
        "HOME at /hooks/0/command: command must not be empty; file ignored",
    );
}

#[test]
fn bad_timeouts() {
    for (value, shown) in [("0", "0"), ("60001", "60001"), ("-5", "-5")] {
        malformed_hook(
            &format!(r#"{{"id": "a", "event": "stop", "command": "x", "timeoutMs": {value}}}"#),
            &format!(
                "HOME at /hooks/0/timeoutMs: timeoutMs is {shown}; it must be between 1 and 60000; file ignored"
            ),
        );
    }
    for value in ["1.5", "\"10\"", "true"] {
        malformed_hook(
            &format!(r#"{{"id": "a", "event": "stop", "command": "x", "timeoutMs": {value}}}"#),
            &format!(
                "HOME at /hooks/0/timeoutMs: timeoutMs is {value}; it must be a whole number of milliseconds between 1 and 60000; file ignored"
            ),
        );
    }
    let layout = Layout::new(
        Some(r#"{"hooks": [{"id": "a", "event": "stop", "command": "x", "timeoutMs": 60000}]}"#),
        None,
    );
    assert_eq!(
        layout.load().0,
        vec!["a".to_string()],
        "60000 is the largest allowed"
    );
}

#[test]
fn matcher_on_each_non_tool_event() {
    malformed_hook(
        r#"{"id": "a", "event": "sessionStart", "command": "x", "matcher": {"toolNames": ["x"]}}"#,
        "HOME at /hooks/0/matcher/toolNames: on sessionStart a matcher holds only \"source\" (toolNames and input are for tool events); file ignored",
    );
    for event in [
        "userPromptSubmit",
        "beforeAgent",
        "context",
        "preCompact",
        "postCompact",
        "stop",
        "notification",
        "sessionEnd",
    ] {
        malformed_hook(
            &format!(
                r#"{{"id": "a", "event": "{event}", "command": "x", "matcher": {{"toolNames": ["x"]}}}}"#
            ),
            "HOME at /hooks/0/matcher: a matcher is only allowed on the events about a tool call (preToolUse, permissionRequest, postToolUse, postToolUseFailure) (and, with only \"source\", on sessionStart); file ignored",
        );
    }
}

#[test]
fn matchers_on_tool_events() {
    let layout = Layout::new(
        Some(
            r#"{"hooks": [
            {"id": "a", "event": "preToolUse", "command": "x", "matcher": {}},
            {"id": "b", "event": "postToolUse", "command": "x", "matcher": {"toolNames": ["mcp_*", "*_file", "grep", "*"]}},
            {"id": "c", "event": "postToolUseFailure", "command": "x"}
        ]}"#,
        ),
        None,
    );
    assert_eq!(layout.load(), (vec!["a".into(), "b".into(), "c".into()], vec![]));
}

#[test]
fn empty_tool_names_and_bad_patterns() {
    malformed_hook(
        r#"{"id": "a", "event": "preToolUse", "command": "x", "matcher": {"toolNames": []}}"#,
        "HOME at /hooks/0/matcher/toolNames: toolNames must list at least one pattern (omit the matcher to match every tool); file ignored",
    );
    malformed_hook(
        r#"{"id": "a", "event": "preToolUse", "command": "x", "matcher": {"toolNames": ["a*b"]}}"#,
        "HOME at /hooks/0/matcher/toolNames/0: invalid tool name pattern \"a*b\": use an exact name, 'prefix*', '*suffix', or '*'; file ignored",
    );
    malformed_hook(
        r#"{"id": "a", "event": "preToolUse", "command": "x", "matcher": {"toolNames": [""]}}"#,
        "HOME at /hooks/0/matcher/toolNames/0: invalid tool name pattern \"\": use an exact name, 'prefix*', '*suffix', or '*'; file ignored",
    );
}

#[test]
fn duplicate_ids_in_one_file() {
    let layout = Layout::new(
        Some(&file(&[
            hook("a", "stop"),
            hook("b", "stop"),
            hook("a", "sessionStart"),
        ])),
        None,
    );
    assert_eq!(
        layout.load(),
        (
            vec!["a".into(), "b".into()],
            vec!["HOME: hook 'a': duplicate hook id 'a' in HOME (first defined in HOME)".into()]
        )
    );
}

#[test]
fn duplicate_ids_across_files_first_wins() {
    let layout = Layout::new(
        Some(&file(&[hook("shared", "stop")])),
        Some(&file(&[hook("shared", "sessionStart"), hook("p", "stop")])),
    );
    let set = discover(&layout.paths, true);
    assert_eq!(set.hooks[0].event.as_str(), "stop", "the home definition wins");
    assert_eq!(
        layout.load(),
        (
            vec!["shared".into(), "p".into()],
            vec![
                "PROJECT: hook 'shared': duplicate hook id 'shared' in PROJECT (first defined in HOME)"
                    .into()
            ]
        )
    );
}

#[test]
fn a_disabled_hook_claims_its_id() {
    let disabled = r#"{"id": "a", "event": "stop", "command": "x", "enabled": false}"#.to_string();
    let layout = Layout::new(Some(&file(&[disabled])), Some(&file(&[hook("a", "stop")])));
    let (ids, diagnostics) = layout.load();
    assert_eq!(ids, vec!["-a".to_string()]);
    assert_eq!(
        diagnostics,
        vec!["PROJECT: hook 'a': duplicate hook id 'a' in PROJECT (first defined in HOME)".to_string()]
    );
    let set = discover(&layout.paths, true);
    assert_eq!(set.active().count(), 0);
}

#[test]
fn invalid_json() {
    malformed(
        r#"{"hooks": [}"#,
        "HOME: is not valid JSON: expected value at line 1 column 12; ignored",
    );
    malformed(
        "{\"hooks\": []",
        "HOME: is not valid JSON: EOF while parsing an object at line 1 column 12; ignored",
    );
    malformed(
        "// comment\n{\"hooks\": []}",
        "HOME: is not valid JSON: expected value at line 1 column 1; ignored",
    );
}

#[test]
fn a_utf8_bom_is_accepted() {
    let text = format!("\u{feff}{}", file(&[hook("a", "stop")]));
    let layout = Layout::new(Some(&text), None);
    assert_eq!(layout.load(), (vec!["a".into()], vec![]));
}

#[test]
fn invalid_utf8() {
    let layout = Layout::new(None, None);
    std::fs::write(layout.paths.home_hooks_file(), b"{\"hooks\": [\xff]}").unwrap();
    assert_eq!(
        layout.load(),
        (
            vec![],
            vec!["HOME: is not valid UTF-8 (at byte 11); ignored".into()]
        )
    );
}

#[test]
fn empty_file_and_wrong_top_level_shapes() {
    malformed(
        "",
        "HOME: is empty; expected an object such as {\"hooks\": []}; ignored",
    );
    malformed(
        "  \n",
        "HOME: is empty; expected an object such as {\"hooks\": []}; ignored",
    );
    malformed(
        "{}",
        "HOME at (root): missing required field \"hooks\"; file ignored",
    );
    malformed("[]", "HOME at (root): [] is not of type \"object\"; file ignored");
    malformed(
        "null",
        "HOME at (root): null is not of type \"object\"; file ignored",
    );
    malformed(
        r#"{"hooks": {}}"#,
        "HOME at /hooks: {} is not of type \"array\"; file ignored",
    );
    malformed(
        r#"{"hooks": ["x"]}"#,
        "HOME at /hooks/0: \"x\" is not of type \"object\"; file ignored",
    );
}

#[test]
fn empty_hooks_array_is_valid() {
    let layout = Layout::new(
        Some(r#"{"$schema": "https://elph.space/hooks-schema.json", "hooks": []}"#),
        None,
    );
    assert_eq!(layout.load(), (vec![], vec![]));
}

#[test]
fn a_directory_where_the_file_should_be() {
    let layout = Layout::new(None, None);
    std::fs::create_dir(layout.paths.home_hooks_file()).unwrap();
    assert_eq!(
        layout.load(),
        (vec![], vec!["HOME: is a directory, not a file; ignored".into()])
    );
}

#[test]
fn an_unreadable_file() {
    use std::os::unix::fs::PermissionsExt;
    let layout = Layout::new(Some(&file(&[hook("a", "stop")])), None);
    let path = layout.paths.home_hooks_file();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&path).is_ok() {
        // Running as root: permission bits do not stop reads. A dangling symlink to a folder we cannot
        // enter is not possible either, so make it a FIFO-free unreadable case: a symlink loop.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&path, &path).unwrap();
    }
    let (ids, diagnostics) = layout.load();
    assert_eq!(ids, Vec::<String>::new());
    assert_eq!(diagnostics.len(), 1);
    assert!(
        diagnostics[0].starts_with("HOME: cannot be read: "),
        "{diagnostics:?}"
    );
    assert!(diagnostics[0].ends_with("; ignored"), "{diagnostics:?}");
}

#[test]
fn missing_files_are_not_errors() {
    let layout = Layout::new(None, None);
    assert_eq!(layout.load(), (vec![], vec![]));
}

#[test]
fn home_then_project_order() {
    let layout = Layout::new(
        Some(&file(&[hook("h1", "stop"), hook("h2", "stop")])),
        Some(&file(&[hook("p1", "stop"), hook("p2", "stop")])),
    );
    assert_eq!(layout.load().0, vec!["h1", "h2", "p1", "p2"]);
}

#[test]
fn malformed_project_file_keeps_home_hooks_and_the_reverse() {
    let layout = Layout::new(Some(&file(&[hook("h", "stop")])), Some("{broken"));
    let (ids, diagnostics) = layout.load();
    assert_eq!(ids, vec!["h"]);
    assert_eq!(diagnostics.len(), 1);
    assert!(
        diagnostics[0].starts_with("PROJECT: is not valid JSON"),
        "{diagnostics:?}"
    );

    let layout = Layout::new(Some("{broken"), Some(&file(&[hook("p", "stop")])));
    let (ids, diagnostics) = layout.load();
    assert_eq!(ids, vec!["p"]);
    assert!(
        diagnostics[0].starts_with("HOME: is not valid JSON"),
        "{diagnostics:?}"
    );
}

#[test]
fn untrusted_project_hooks_are_skipped() {
    let layout = Layout::new(
        Some(&file(&[hook("h", "stop")])),
        Some(&file(&[hook("p", "stop")])),
    );
    let set = discover(&layout.paths, false);
    let ids: Vec<_> = set.hooks.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["h"]);
    let diagnostics: Vec<_> = set
        .diagnostics
        .iter()
        .map(|d| layout.scrub(&d.to_string()))
        .collect();
    assert_eq!(
        diagnostics,
        [format!(
            "PROJECT: project hooks skipped until {} is trusted (run `elph trust` there, or /trust in the app); off: p (stop)",
            layout.paths.project_dir.display()
        )]
    );
}

#[test]
fn command_resolution() {
    let layout = Layout::new(
        Some(
            r#"{"hooks": [
            {"id": "rel", "event": "stop", "command": "hooks/x.sh"},
            {"id": "dot", "event": "stop", "command": "./y"},
            {"id": "bare", "event": "stop", "command": "sh"},
            {"id": "abs", "event": "stop", "command": "/bin/true"},
            {"id": "nowhere", "event": "stop", "command": "no-such-command-elph"}
        ]}"#,
        ),
        Some(r#"{"hooks": [{"id": "prel", "event": "stop", "command": "hooks/audit.sh"}]}"#),
    );
    let set = discover(&layout.paths, true);
    let by_id = |id: &str| {
        set.hooks
            .iter()
            .find(|h| h.id == id)
            .unwrap()
            .command()
            .unwrap()
            .clone()
    };
    assert_eq!(by_id("rel").path, layout.paths.config_dir.join("hooks/x.sh"));
    assert_eq!(by_id("dot").path, layout.paths.config_dir.join("./y"));
    let sh = by_id("bare");
    assert!(
        sh.path.is_absolute() && sh.path.ends_with("sh") && sh.executable,
        "{sh:?}"
    );
    assert_eq!(by_id("abs").path, Path::new("/bin/true"));
    let nowhere = by_id("nowhere");
    assert_eq!(
        (nowhere.path.as_path(), nowhere.executable),
        (Path::new("no-such-command-elph"), false)
    );
    assert_eq!(
        by_id("prel").path,
        layout.paths.project_dir.join(".elph/hooks/audit.sh")
    );
}

#[test]
fn matching_honours_event_matcher_and_enabled() {
    let layout = Layout::new(
        Some(
            r#"{"hooks": [
            {"id": "all", "event": "preToolUse", "command": "x"},
            {"id": "shell", "event": "preToolUse", "command": "x", "matcher": {"toolNames": ["shell_exec"]}},
            {"id": "off", "event": "preToolUse", "command": "x", "enabled": false},
            {"id": "post", "event": "postToolUse", "command": "x"},
            {"id": "commit", "event": "preToolUse", "command": "x",
             "matcher": {"toolNames": ["shell_exec"], "input": {"command": "git commit*"}}},
            {"id": "src", "event": "preToolUse", "command": "x", "matcher": {"input": {"path": "src/**"}}}
        ]}"#,
        ),
        None,
    );
    let set = discover(&layout.paths, true);
    assert!(set.diagnostics.is_empty(), "{:?}", set.diagnostics);
    let ids = |tool: &str, input: serde_json::Value| -> Vec<String> {
        let payload = elph_agent::hooks::HookPayload::PreToolUse(elph_agent::hooks::PreToolUsePayload {
            base: elph_agent::hooks::PayloadBase::new("s", &layout.paths.project_dir),
            tool_name: tool.into(),
            tool_call_id: "c".into(),
            tool_input: input,
        });
        set.matching(&payload).iter().map(|h| h.id.clone()).collect()
    };
    assert_eq!(
        ids("shell_exec", serde_json::json!({"command": "ls"})),
        ["all", "shell"]
    );
    assert_eq!(
        ids("shell_exec", serde_json::json!({"command": "git commit -m x"})),
        ["all", "shell", "commit"]
    );
    assert_eq!(
        ids("read_file", serde_json::json!({"path": "README.md"})),
        ["all"]
    );
    assert_eq!(
        ids("read_file", serde_json::json!({"path": "src/main.rs"})),
        ["all", "src"]
    );
}

#[test]
fn matcher_conditions_are_checked_where_they_apply() {
    for (hook, expected) in [
        (
            r#"{"id": "a", "event": "preToolUse", "command": "x", "matcher": {"input": {"command": "[oops"}}}"#,
            "/hooks/0/matcher/input/command",
        ),
        (
            r#"{"id": "a", "event": "preToolUse", "command": "x", "matcher": {"source": ["resume"]}}"#,
            "/hooks/0/matcher/source",
        ),
        (
            r#"{"id": "a", "event": "sessionStart", "command": "x", "matcher": {"toolNames": ["x"]}}"#,
            "/hooks/0/matcher/toolNames",
        ),
        (
            r#"{"id": "a", "event": "sessionStart", "command": "x", "matcher": {"source": ["startup"]}}"#,
            "/hooks/0/matcher/source/0",
        ),
    ] {
        let text = format!(r#"{{"hooks": [{hook}]}}"#);
        let problems = coding_agent::hooks::config::check(text.as_bytes()).unwrap_err();
        assert!(
            problems.iter().any(|p| p.pointer.as_deref() == Some(expected)),
            "{hook}: {problems:?}"
        );
    }
    let ok = r#"{"hooks": [{"id": "a", "event": "sessionStart", "command": "x", "matcher": {"source": ["resume"]}}]}"#;
    let file = coding_agent::hooks::config::check(ok.as_bytes()).unwrap();
    assert_eq!(file.hooks.len(), 1);
}
