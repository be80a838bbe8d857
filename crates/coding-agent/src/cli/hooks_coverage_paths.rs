//! The tool paths `elph hooks coverage` runs, and what each must show: one native tool each (as
//! the tool registry lists them), the shell in the sandbox, an MCP tool, the ACP front end, a
//! call a hook rewrites, and the two ways a session compacts (`/compact`, and the context filling
//! up). Each path is a session of a scripted model that makes a call that must run (and leave its
//! mark on disk) and a call the guard must block (and that must leave none).

use elph_agent::hooks::HookEvent;
use elph_agent::tools::ToolCatalog;
use serde::Serialize;
use serde_json::{Value, json};

use super::hooks_coverage_probe::{BLOCK_MARK, MCP_TOOL, REWRITE_MARK, REWRITE_TO_BLOCK_MARK, rewritten};

/// The MCP server's name in the scratch project's mcp.json.
pub(super) const MCP_SERVER: &str = "coverage";

/// Which front end drives the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum FrontEnd {
    /// `elph run --output-format stream-json`.
    Headless,
    /// `elph acp`, driven over stdio by a small JSON-RPC client that approves what it is asked.
    Acp,
}

/// What kind of path it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum PathKind {
    NativeTool,
    SandboxedShell,
    McpTool,
    Acp,
    Rewritten,
    Compaction,
}

/// How a compaction path compacts, as preCompact's and postCompact's `trigger` say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) enum Compaction {
    /// `/compact` in an editor: two prompts, then `/compact` (a compaction needs a turn before the
    /// one it keeps).
    Manual,
    /// The context fills up: `elph run --continue` of the session, with a model whose window the
    /// conversation already fills, compacts before its first request.
    Auto,
}

impl Compaction {
    pub(super) fn trigger(self) -> &'static str {
        match self {
            Compaction::Manual => "manual",
            Compaction::Auto => "auto",
        }
    }
}

/// The prompt of every path's (first) session.
pub(super) const PROMPT: &str = "Make the hooks coverage calls.";
/// The prompt after it, on a compaction path.
pub(super) const NEXT_PROMPT: &str = "Keep going.";
/// What a manual compaction path types last.
pub(super) const COMPACT_COMMAND: &str = "/compact keep the file names";
/// The model window of the `--continue` run of the automatic compaction path: the system prompt
/// alone fills it, so the run compacts before its first request.
const FULL_WINDOW: u64 = 64;

/// What a call leaves on disk, relative to the project: present after the call that must run,
/// absent after the one that must be blocked.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Effect {
    /// Nothing on disk (a read): the call's events and the front end tell whether it ran.
    Nothing,
    /// This file exists.
    Creates(String),
    /// This file holds this text.
    Holds(String, String),
}

/// What a call is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Intent {
    /// Must run and succeed: preToolUse, then postToolUse, and its effect.
    Runs,
    /// Must run and fail: preToolUse, then postToolUseFailure.
    Fails,
    /// Must be blocked by the guard: preToolUse only, and no effect.
    Blocked,
    /// Waits for the MCP servers; not judged.
    Setup,
}

#[derive(Clone, Debug)]
pub(super) struct Call {
    pub tool: String,
    pub input: Value,
    pub intent: Intent,
    pub effect: Effect,
}

impl Call {
    fn new(tool: &str, input: Value, intent: Intent, effect: Effect) -> Self {
        Call {
            tool: tool.to_string(),
            input,
            intent,
            effect,
        }
    }

    /// The input the tool runs with, after the rewriter.
    pub(super) fn runs_with(&self) -> Value {
        rewritten(&self.input)
    }
}

/// One tool path.
#[derive(Clone, Debug)]
pub(super) struct PathSpec {
    pub id: String,
    pub kind: PathKind,
    pub front_end: FrontEnd,
    pub tool: String,
    /// `--sandbox` of the session.
    pub sandbox: &'static str,
    pub calls: Vec<Call>,
    /// Whether the project has the coverage MCP server.
    pub mcp: bool,
    /// A file beside the project that a sandboxed command tries to make and must not.
    pub outside: Option<String>,
    /// Why the path cannot run (a native tool without a call here).
    pub missing_call: Option<String>,
    /// Whether, and how, the session compacts after the calls.
    pub compaction: Option<Compaction>,
}

impl PathSpec {
    fn headless(id: &str, kind: PathKind, tool: &str, sandbox: &'static str, calls: Vec<Call>) -> Self {
        PathSpec {
            id: id.to_string(),
            kind,
            front_end: FrontEnd::Headless,
            tool: tool.to_string(),
            sandbox,
            calls,
            mcp: false,
            outside: None,
            missing_call: None,
            compaction: None,
        }
    }

    /// The events the path must fire.
    pub(super) fn expected(&self) -> Vec<HookEvent> {
        let mut events = vec![
            HookEvent::SessionStart,
            HookEvent::UserPromptSubmit,
            HookEvent::BeforeAgent,
            HookEvent::Context,
            HookEvent::PreToolUse,
        ];
        if self.front_end == FrontEnd::Acp {
            events.push(HookEvent::PermissionRequest);
        }
        if self.calls.iter().any(|call| call.intent == Intent::Runs) {
            events.push(HookEvent::PostToolUse);
        }
        if self.calls.iter().any(|call| call.intent == Intent::Fails) {
            events.push(HookEvent::PostToolUseFailure);
        }
        if self.compaction.is_some() {
            events.extend([HookEvent::PreCompact, HookEvent::PostCompact]);
        }
        // settings.json of the scratch sets hooks.notifyTurnAfterMs to 0: every turn's end notifies.
        events.extend([HookEvent::Stop, HookEvent::Notification, HookEvent::SessionEnd]);
        events.sort();
        events
    }

    /// The scripted model's file: one call per model request, then a closing answer.
    pub(super) fn script(&self) -> Value {
        let mut turns: Vec<Value> = self
            .calls
            .iter()
            .map(|call| json!({"toolCalls": [{"name": call.tool, "input": call.input}]}))
            .collect();
        turns.push(json!({"text": "hooks coverage: done"}));
        if self.compaction == Some(Compaction::Manual) {
            turns.push(json!({"text": "hooks coverage: going on"}));
            turns.push(json!({"text": "hooks coverage: the summary of the calls"}));
        }
        json!({"turns": turns})
    }

    /// The model of the `elph run --continue` of the automatic compaction path: the summary it
    /// is asked for first, then the answer to the prompt.
    pub(super) fn continuation_script(&self) -> Option<Value> {
        (self.compaction == Some(Compaction::Auto)).then(|| {
            json!({
                "contextWindow": FULL_WINDOW,
                "turns": [
                    {"text": "hooks coverage: the summary of the calls"},
                    {"text": "hooks coverage: going on"},
                ],
            })
        })
    }
}

/// The files every project starts with: what the reads find and the edits change.
pub(super) fn project_files() -> Vec<(String, String)> {
    vec![
        ("notes.txt".into(), "hello coverage\nsecond line\n".into()),
        (
            format!("{BLOCK_MARK}.txt"),
            "read me only if the guard failed\n".into(),
        ),
        (
            format!("{BLOCK_MARK}-dir/inside.txt"),
            "listed only if the guard failed\n".into(),
        ),
    ]
}

/// Every path, the native ones in the registry's order. A native tool without a call here is
/// a path that fails, naming the tool, so a new tool cannot go unchecked.
pub(super) fn all_paths(wait_tool: Option<&str>) -> Vec<PathSpec> {
    let catalog = ToolCatalog::native();
    let mut paths: Vec<PathSpec> = catalog
        .names()
        .map(|name| match native_calls(name) {
            Some(calls) => {
                // The unconfined spawn path; the confined one is the sandboxed-shell path.
                let sandbox = if name == "shell_exec" {
                    "full-access"
                } else {
                    "workspace-write"
                };
                PathSpec::headless(name, PathKind::NativeTool, name, sandbox, calls)
            }
            None => PathSpec {
                missing_call: Some(format!(
                    "elph hooks coverage has no call for the native tool {name}: add one to \
                     native_calls in crates/coding-agent/src/cli/hooks_coverage_paths.rs"
                )),
                ..PathSpec::headless(name, PathKind::NativeTool, name, "workspace-write", Vec::new())
            },
        })
        .collect();
    paths.push(PathSpec {
        outside: Some("outside-the-sandbox".into()),
        ..PathSpec::headless(
            "sandboxed-shell",
            PathKind::SandboxedShell,
            "shell_exec",
            "workspace-write",
            vec![
                Call::new(
                    "shell_exec",
                    json!({"command": "echo coverage > shell.txt; touch ../outside-the-sandbox 2>/dev/null; true"}),
                    Intent::Runs,
                    Effect::Holds("shell.txt".into(), "coverage".into()),
                ),
                Call::new(
                    "shell_exec",
                    json!({"command": format!("touch {BLOCK_MARK}-sandboxed")}),
                    Intent::Blocked,
                    Effect::Creates(format!("{BLOCK_MARK}-sandboxed")),
                ),
            ],
        )
    });
    let mcp_tool = format!("mcp_{MCP_SERVER}__{MCP_TOOL}");
    let mut mcp_calls = Vec::new();
    if let Some(wait) = wait_tool {
        mcp_calls.push(Call::new(wait, json!({}), Intent::Setup, Effect::Nothing));
    }
    mcp_calls.extend([
        Call::new(
            &mcp_tool,
            json!({"name": "mcp-touched.txt"}),
            Intent::Runs,
            Effect::Creates("mcp-touched.txt".into()),
        ),
        Call::new(
            &mcp_tool,
            json!({"name": format!("{BLOCK_MARK}-mcp.txt")}),
            Intent::Blocked,
            Effect::Creates(format!("{BLOCK_MARK}-mcp.txt")),
        ),
    ]);
    paths.push(PathSpec {
        mcp: true,
        ..PathSpec::headless("mcp", PathKind::McpTool, &mcp_tool, "workspace-write", mcp_calls)
    });
    paths.push(PathSpec {
        front_end: FrontEnd::Acp,
        ..PathSpec::headless(
            "acp",
            PathKind::Acp,
            "write_file",
            "workspace-write",
            vec![
                Call::new(
                    "write_file",
                    json!({"path": "acp-written.txt", "content": "coverage\n"}),
                    Intent::Runs,
                    Effect::Holds("acp-written.txt".into(), "coverage".into()),
                ),
                Call::new(
                    "write_file",
                    json!({"path": format!("{BLOCK_MARK}-acp.txt"), "content": "must not exist\n"}),
                    Intent::Blocked,
                    Effect::Creates(format!("{BLOCK_MARK}-acp.txt")),
                ),
            ],
        )
    });
    let write_calls = || {
        vec![
            Call::new(
                "write_file",
                json!({"path": "before-compacting.txt", "content": "coverage\n"}),
                Intent::Runs,
                Effect::Holds("before-compacting.txt".into(), "coverage".into()),
            ),
            Call::new(
                "write_file",
                json!({"path": format!("{BLOCK_MARK}-compact.txt"), "content": "must not exist\n"}),
                Intent::Blocked,
                Effect::Creates(format!("{BLOCK_MARK}-compact.txt")),
            ),
        ]
    };
    paths.push(PathSpec {
        front_end: FrontEnd::Acp,
        compaction: Some(Compaction::Manual),
        ..PathSpec::headless(
            "compact",
            PathKind::Compaction,
            "write_file",
            "workspace-write",
            write_calls(),
        )
    });
    paths.push(PathSpec {
        compaction: Some(Compaction::Auto),
        ..PathSpec::headless(
            "auto-compact",
            PathKind::Compaction,
            "write_file",
            "workspace-write",
            write_calls(),
        )
    });
    paths.push(PathSpec::headless(
        "rewritten",
        PathKind::Rewritten,
        "shell_exec",
        "workspace-write",
        vec![
            // Runs as `echo elph-coverage-rewritten > rewritten.txt`.
            Call::new(
                "shell_exec",
                json!({"command": format!("echo {REWRITE_MARK} > rewritten.txt")}),
                Intent::Runs,
                Effect::Holds(
                    "rewritten.txt".into(),
                    super::hooks_coverage_probe::REWRITTEN.into(),
                ),
            ),
            // The guard lets this through; the rewriter makes it a call the guard must block.
            Call::new(
                "shell_exec",
                json!({"command": format!("touch {REWRITE_TO_BLOCK_MARK}-file")}),
                Intent::Blocked,
                Effect::Creates(format!("{BLOCK_MARK}-file")),
            ),
        ],
    ));
    paths
}

/// The calls of one native tool's path; `None` for a tool this table does not know.
fn native_calls(tool: &str) -> Option<Vec<Call>> {
    let runs = |input: Value, effect: Effect| Call::new(tool, input, Intent::Runs, effect);
    let blocked = |input: Value, effect: Effect| Call::new(tool, input, Intent::Blocked, effect);
    let calls = match tool {
        "read_file" => vec![
            runs(json!({"path": "notes.txt"}), Effect::Nothing),
            Call::new(
                tool,
                json!({"path": "no-such-file.txt"}),
                Intent::Fails,
                Effect::Nothing,
            ),
            blocked(json!({"path": format!("{BLOCK_MARK}.txt")}), Effect::Nothing),
        ],
        "write_file" => vec![
            runs(
                json!({"path": "written.txt", "content": "coverage\n"}),
                Effect::Holds("written.txt".into(), "coverage".into()),
            ),
            blocked(
                json!({"path": format!("{BLOCK_MARK}-written.txt"), "content": "must not exist\n"}),
                Effect::Creates(format!("{BLOCK_MARK}-written.txt")),
            ),
        ],
        "edit_file" => vec![
            runs(
                json!({"path": "notes.txt", "old_text": "hello", "new_text": "edited"}),
                Effect::Holds("notes.txt".into(), "edited coverage".into()),
            ),
            blocked(
                json!({"path": "notes.txt", "old_text": "second line", "new_text": BLOCK_MARK}),
                Effect::Holds("notes.txt".into(), BLOCK_MARK.into()),
            ),
        ],
        "list_dir" => vec![
            runs(json!({"path": "."}), Effect::Nothing),
            blocked(json!({"path": format!("{BLOCK_MARK}-dir")}), Effect::Nothing),
        ],
        "grep" => vec![
            runs(json!({"pattern": "hello"}), Effect::Nothing),
            blocked(json!({"pattern": BLOCK_MARK}), Effect::Nothing),
        ],
        "find_path" => vec![
            runs(json!({"glob": "*.txt"}), Effect::Nothing),
            blocked(json!({"glob": format!("*{BLOCK_MARK}*")}), Effect::Nothing),
        ],
        "shell_exec" => vec![
            runs(
                json!({"command": "echo coverage > shell.txt"}),
                Effect::Holds("shell.txt".into(), "coverage".into()),
            ),
            blocked(
                json!({"command": format!("touch {BLOCK_MARK}-shell")}),
                Effect::Creates(format!("{BLOCK_MARK}-shell")),
            ),
        ],
        _ => return None,
    };
    Some(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_native_tool_has_a_path_with_a_call_that_runs_and_one_that_is_blocked() {
        let paths = all_paths(None);
        for name in ToolCatalog::native().names() {
            let path = paths
                .iter()
                .find(|path| path.id == name)
                .unwrap_or_else(|| panic!("no path for {name}"));
            assert_eq!(path.missing_call, None);
            assert!(
                path.calls.iter().any(|call| call.intent == Intent::Runs),
                "{name}"
            );
            assert!(
                path.calls.iter().any(|call| call.intent == Intent::Blocked),
                "{name}"
            );
        }
    }

    #[test]
    fn both_compaction_paths_expect_the_compaction_events_and_no_other_path_does() {
        let paths = all_paths(None);
        let compacting: Vec<(&str, Option<Compaction>)> = paths
            .iter()
            .filter(|path| path.expected().contains(&HookEvent::PreCompact))
            .map(|path| (path.id.as_str(), path.compaction))
            .collect();
        assert_eq!(
            compacting,
            [
                ("compact", Some(Compaction::Manual)),
                ("auto-compact", Some(Compaction::Auto))
            ]
        );
        for path in &paths {
            assert_eq!(
                path.expected().contains(&HookEvent::PostCompact),
                path.compaction.is_some(),
                "{}",
                path.id
            );
            assert_eq!(
                path.continuation_script().is_some(),
                path.compaction == Some(Compaction::Auto)
            );
        }
        let every: Vec<HookEvent> = HookEvent::ALL
            .into_iter()
            .filter(|event| paths.iter().any(|path| path.expected().contains(event)))
            .collect();
        assert_eq!(every, HookEvent::ALL, "some path expects every event");
    }

    #[test]
    fn a_tool_without_a_call_is_named() {
        assert!(native_calls("some_new_tool").is_none());
    }

    #[test]
    fn every_blocked_call_is_marked_for_the_guard_only_after_the_rewrite() {
        for path in all_paths(None) {
            for call in path.calls.iter().filter(|call| call.intent == Intent::Blocked) {
                assert!(
                    call.runs_with().to_string().contains(BLOCK_MARK),
                    "{}: {}",
                    path.id,
                    call.input
                );
            }
            for call in path.calls.iter().filter(|call| call.intent == Intent::Runs) {
                assert!(!call.runs_with().to_string().contains(BLOCK_MARK), "{}", path.id);
            }
        }
    }
}
