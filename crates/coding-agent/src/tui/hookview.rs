//! What the TUI knows about hooks: the active set with its sources (from the host's `HookSet`), the
//! trust state, and the recent runs it saw; and the `/hooks` panel built from them.

use crate::session::FrontEnd;
use crate::session::HookState;
use crate::session::route::Known;
use crate::workflows::WorkflowCommand;
use elph_agent::hooks::{HookEvent, HookRun, RunStatus};

use super::app::{Panel, PanelLine, Tone};
use crate::hooks::discovery::{FileState, HookScope, HookSet};
use crate::trust::{TrustDecision, TrustSlashCommand};

/// How many runs `/hooks` remembers.
pub(crate) const RECENT_RUNS: usize = 12;

#[derive(Clone, Debug, PartialEq)]
pub struct HookInfo {
    pub id: String,
    pub event: HookEvent,
    /// The tool patterns, for tool events.
    pub matcher: Option<String>,
    /// The command as written, with its arguments.
    pub command: String,
    /// The resolved command does not exist or is not executable.
    pub missing: bool,
    pub timeout_ms: u64,
    pub enabled: bool,
    /// `home` or `project`.
    pub scope: &'static str,
    pub source: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FileInfo {
    pub path: String,
    pub scope: &'static str,
    pub state: String,
}

/// The trust state and the hook set, as the UI shows them.
#[derive(Clone, Debug, PartialEq)]
pub struct HooksView {
    pub trusted: bool,
    pub offered: TrustSlashCommand,
    /// Why the project is (not) trusted.
    pub trust_reason: String,
    pub hooks: Vec<HookInfo>,
    pub files: Vec<FileInfo>,
    pub diagnostics: Vec<String>,
    /// The template and skill commands (`review`, `skill:pdf`), offered after the built-ins.
    pub workflows: Vec<WorkflowCommand>,
    /// The session's MCP servers: `/server:prompt` goes to the session even before the server
    /// has listed its prompts.
    pub mcp_servers: Vec<String>,
}

impl Default for HooksView {
    fn default() -> Self {
        HooksView {
            trusted: false,
            offered: TrustSlashCommand::Trust,
            trust_reason: String::new(),
            hooks: Vec::new(),
            files: Vec::new(),
            diagnostics: Vec::new(),
            workflows: Vec::new(),
            mcp_servers: Vec::new(),
        }
    }
}

fn scope_name(scope: HookScope) -> &'static str {
    match scope {
        HookScope::Home => "home",
        HookScope::Project => "project",
    }
}

impl HooksView {
    pub(crate) fn from_set(trust: &TrustDecision, set: &HookSet) -> Self {
        let hooks = set
            .hooks
            .iter()
            .map(|hook| {
                let mut command = match hook.command() {
                    Some(command) => command.written.clone(),
                    None => hook.handler.describe(),
                };
                for arg in &hook.args {
                    command.push(' ');
                    command.push_str(arg);
                }
                HookInfo {
                    id: hook.id.clone(),
                    event: hook.event,
                    matcher: hook.event.is_tool_event().then(|| hook.matcher.to_string()),
                    command,
                    missing: hook.command().is_some_and(|command| !command.executable),
                    timeout_ms: hook.timeout.as_millis() as u64,
                    enabled: hook.enabled,
                    scope: scope_name(hook.scope),
                    source: hook.source.display().to_string(),
                }
            })
            .collect();
        let files = set
            .files
            .iter()
            .map(|file| FileInfo {
                path: file.path.display().to_string(),
                scope: scope_name(file.scope),
                state: match &file.state {
                    FileState::Loaded { hooks } => format!("loaded, {hooks} hook(s)"),
                    FileState::Missing => "missing".into(),
                    FileState::SkippedUntrusted => "skipped: the project is not trusted".into(),
                    FileState::Malformed { pointer, reason } => match pointer {
                        Some(pointer) => format!("malformed at {pointer}: {reason}"),
                        None => format!("malformed: {reason}"),
                    },
                },
            })
            .collect();
        HooksView {
            trusted: trust.trusted,
            offered: trust.offered_command(),
            trust_reason: trust.explanation(),
            hooks,
            files,
            diagnostics: set.diagnostics.iter().map(ToString::to_string).collect(),
            workflows: Vec::new(),
            mcp_servers: Vec::new(),
        }
    }

    /// The view of a session's hook state, its template and skill commands included.
    pub(crate) fn from_state(state: &HookState) -> Self {
        HooksView {
            workflows: state.workflows.clone(),
            mcp_servers: state.mcp_servers.clone(),
            ..HooksView::from_set(&state.trust, &state.set)
        }
    }

    /// What the terminal UI knows of commands, to route a line (`session::route`).
    pub(crate) fn known(&self) -> Known<'_> {
        Known {
            front_end: FrontEnd::Terminal,
            workflows: &self.workflows,
            servers: &self.mcp_servers,
        }
    }

    pub fn active(&self) -> usize {
        self.hooks.iter().filter(|hook| hook.enabled).count()
    }
}

/// One hook run, as `/hooks` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    pub hook_id: String,
    pub event: HookEvent,
    pub ok: bool,
    pub duration_ms: u64,
    /// How it ended: `ok`, `no change`, or the cause of the failure.
    pub summary: String,
}

impl RunInfo {
    pub(crate) fn from_run(run: &HookRun) -> Self {
        let summary = match run.status {
            RunStatus::Ok if run.outcome.is_some() => "ok, with an outcome".to_string(),
            RunStatus::Ok => "ok, no change".to_string(),
            RunStatus::Failed | RunStatus::Skipped => run.cause.clone().unwrap_or_else(|| "failed".into()),
        };
        RunInfo {
            hook_id: run.hook_id.clone(),
            event: run.event,
            ok: run.status == RunStatus::Ok,
            duration_ms: run.duration_ms,
            summary,
        }
    }
}

/// The `/hooks` panel.
pub fn panel(view: &HooksView, recent: &[RunInfo]) -> Panel {
    let mut lines = Vec::new();
    let line = |tone: Tone, text: String| PanelLine { tone, text };
    lines.push(line(
        if view.trusted { Tone::Good } else { Tone::Warn },
        format!(
            "project {} ({}); /{} to change",
            crate::session::wording::trust_word(view.trusted),
            view.trust_reason,
            view.offered.name()
        ),
    ));
    lines.push(line(Tone::Heading, format!("Active hooks ({})", view.active())));
    if view.hooks.is_empty() {
        lines.push(line(Tone::Dim, "  none".into()));
    }
    for hook in &view.hooks {
        let matcher = hook
            .matcher
            .as_deref()
            .map(|m| format!(" [{m}]"))
            .unwrap_or_default();
        let disabled = if hook.enabled { "" } else { " (disabled)" };
        lines.push(line(
            if hook.enabled { Tone::Normal } else { Tone::Dim },
            format!("  {} · {}{}{}", hook.id, hook.event, matcher, disabled),
        ));
        let missing = if hook.missing {
            " (not found or not executable)"
        } else {
            ""
        };
        lines.push(line(
            if hook.missing { Tone::Warn } else { Tone::Dim },
            format!(
                "    {}{} · {} ms · {}",
                hook.command, missing, hook.timeout_ms, hook.scope
            ),
        ));
    }
    lines.push(line(Tone::Heading, "Files".into()));
    for file in &view.files {
        let tone = if file.state.starts_with("malformed") {
            Tone::Warn
        } else {
            Tone::Dim
        };
        lines.push(line(
            tone,
            format!("  {} ({}): {}", file.path, file.scope, file.state),
        ));
    }
    lines.push(line(Tone::Heading, format!("Recent runs ({})", recent.len())));
    if recent.is_empty() {
        lines.push(line(Tone::Dim, "  none yet".into()));
    }
    for run in recent {
        lines.push(line(
            if run.ok { Tone::Normal } else { Tone::Warn },
            format!(
                "  {} {} · {} · {} ms · {}",
                if run.ok { "✓" } else { "✗" },
                run.hook_id,
                run.event,
                run.duration_ms,
                run.summary
            ),
        ));
    }
    lines.push(line(
        Tone::Heading,
        format!("Diagnostics ({})", view.diagnostics.len()),
    ));
    if view.diagnostics.is_empty() {
        lines.push(line(Tone::Dim, "  none".into()));
    }
    for diagnostic in &view.diagnostics {
        lines.push(line(Tone::Warn, format!("  {diagnostic}")));
    }
    Panel {
        title: "Hooks".into(),
        lines,
    }
}
