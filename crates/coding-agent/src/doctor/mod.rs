//! `elph doctor` (docs/cli.md, "`elph doctor`"): where Elph looks, what it trusts, which hook files and hooks it
//! loaded, every diagnostic, and how each hook has been doing lately, with what to do about each
//! problem. One [`Report`] serves the human output (`render`) and `--json`.
//!
//! Gathering only reads: trust.json, the two hook files, file metadata (and the first line of a
//! hook script), and the run log. It never runs a hook and never writes anything, inside the project
//! or anywhere else.

mod checks;
mod handlers;
mod providers;
mod render;
mod runstats;
mod safety;
mod sandbox;

use std::path::{Path, PathBuf};

use elph_agent::hooks::{HookEvent, ToolPattern};
use serde::Serialize;

pub(crate) use checks::{CommandReport, Finding, Level};
pub(crate) use render::render;
pub(crate) use runstats::RunStats;
pub(crate) use sandbox::SandboxReport;

use crate::diagnostics::Diagnostic;
use crate::diagnostics::shell_quote;
use crate::hooks::reload::HookLoader;
use crate::hooks::runlog;
use crate::hooks::{FileState, HookDefinition, HookFile, HookScope};
use crate::mcp::{McpOverview, describe_servers};
use crate::paths::Paths;
use crate::trust::{DecisionSource, DefaultTrust, TrustDecision};
use runstats::LogRead;

/// The version of the `--json` document; bumped when a field changes meaning or goes away.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Everything doctor found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Report {
    pub(crate) schema_version: u32,
    pub(crate) elph_version: &'static str,
    pub paths: PathsReport,
    pub trust: TrustReport,
    pub files: Vec<FileReport>,
    pub hooks: Vec<HookReport>,
    pub(crate) run_log: RunLogReport,
    /// MCP servers from CONFIG_DIR/mcp.json and (when trusted) PROJECT_DIR/.elph/mcp.json; doctor
    /// does not start them.
    pub mcp: McpOverview,
    /// The built-in providers, each custom provider file and each one skipped (with why).
    pub(crate) providers: providers::ProvidersReport,
    /// trust.json keys that do not say what they seem to, and files others can write.
    pub(crate) safety: Vec<Finding>,
    /// Skills and prompt templates from CONFIG_DIR and (when trusted) PROJECT_DIR/.elph/.
    pub workflows: crate::workflows::Workflows,
    /// The kernel's Landlock, what the configured sandbox allows, and the shell's variables.
    pub sandbox: SandboxReport,
    pub diagnostics: Vec<Diagnostic>,
    /// Every warning and error above in one list, each with what to do next.
    pub problems: Vec<Problem>,
    pub summary: Summary,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PathsReport {
    pub config_dir: PathReport,
    pub data_dir: PathReport,
    pub project_dir: PathReport,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PathReport {
    pub path: PathBuf,
    /// Where the path came from: `$ELPH_HOME`, `$HOME/.config/elph`, `--cwd`...
    pub from: String,
    pub exists: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TrustReport {
    pub project_dir: PathBuf,
    pub trusted: bool,
    /// Which entry (or the default) made the decision, for people.
    pub explanation: String,
    /// The same, as data: `{"kind": "entry", "path", "trusted"}`, `{"kind": "default"}` or
    /// `{"kind": "error", "message"}`.
    pub source: DecisionSource,
    pub default_project_trust: DefaultTrust,
    pub trust_file: PathBuf,
    pub(crate) trust_file_exists: bool,
    /// Why trust.json cannot be used (corrupt, unreadable), if so.
    pub error: Option<String>,
    pub finding: Finding,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileReport {
    pub path: PathBuf,
    pub scope: HookScope,
    /// `loaded`, `missing`, `skippedUntrusted` or `malformed`.
    pub state: &'static str,
    /// For `loaded`: how many hooks it contributed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<usize>,
    /// For `malformed`: the JSON pointer of the first error (when the file is JSON) and the reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub exists: bool,
    pub finding: Finding,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HookReport {
    pub id: String,
    pub event: HookEvent,
    /// The `toolNames` patterns; `null` when the hook has no matcher (every tool, or not a tool event).
    pub matcher: Option<Vec<String>>,
    /// What it runs, in one line: the command, `POST URL`, `prompt (MODEL)`, `mcp SERVER/TOOL`.
    pub handler: String,
    /// `command`, `url`, `prompt` or `mcpTool`.
    pub kind: &'static str,
    /// A command hook's program; absent for the other kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandReport>,
    pub args: Vec<String>,
    pub timeout_ms: u64,
    /// How long a run should take; a longer one is a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_ms: Option<u64>,
    /// One process for the session, one JSON line per event.
    pub persistent: bool,
    /// Runs in the background, its outcome ignored; its runs are counted like the others.
    #[serde(rename = "async")]
    pub run_async: bool,
    pub source: PathBuf,
    pub scope: HookScope,
    pub enabled: bool,
    /// The sandbox the hook runs in; absent: unconfined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<elph_process::sandbox::SandboxMode>,
    /// A guard: when it fails, what it guards does not go on.
    pub fail_closed: bool,
    pub max_input_bytes: usize,
    pub max_output_bytes: usize,
    /// The worst of `findings`: `ok`, `info` (disabled), `warning` or `error`.
    pub status: Level,
    pub findings: Vec<Finding>,
    /// From the run log: `null` when it holds no run of this hook.
    pub recent_runs: Option<RunStats>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunLogReport {
    pub path: PathBuf,
    pub exists: bool,
    /// Why it could not be read, if it exists and could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Runs read (of any hook).
    pub runs: usize,
    /// Lines skipped because they did not hold a run.
    pub(crate) skipped_lines: usize,
    /// Runs of hooks that are no longer configured.
    pub(crate) unknown_hook_runs: usize,
    /// At most this many of each hook's latest runs are summed up.
    pub window: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Problem {
    pub level: Level,
    /// What it is about: `trust`, `file PATH`, `hook 'ID'`.
    pub subject: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Summary {
    pub hooks: usize,
    pub enabled: usize,
    pub errors: usize,
    pub warnings: usize,
    /// Recent runs (in each hook's window) of hooks on guarding events that failed while what
    /// they guard went on (no `failClosed`).
    pub failed_open_runs: usize,
}

/// Where each of the three paths came from, named as the user would set it.
#[derive(Clone, Debug)]
pub(crate) struct PathSources {
    pub config_dir: String,
    pub data_dir: String,
    pub project_dir: String,
}

impl PathSources {
    /// Names the source of each path with the precedence of `Paths::resolve` (docs/cli.md, "Paths").
    pub(crate) fn resolve(cwd_flag: bool, env: &dyn Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| crate::paths::absolute_variable(env, name).is_some();
        let pick = |first: &str, xdg: &str, fallback: &str| {
            if set(first) {
                format!("${first}")
            } else if set(xdg) {
                format!("${xdg}/elph")
            } else {
                fallback.to_string()
            }
        };
        PathSources {
            config_dir: pick("ELPH_HOME", "XDG_CONFIG_HOME", "$HOME/.config/elph"),
            data_dir: pick("ELPH_DATA_DIR", "XDG_DATA_HOME", "$HOME/.local/share/elph"),
            project_dir: if cwd_flag {
                "--cwd".into()
            } else if set("ELPH_PROJECT_DIR") {
                "$ELPH_PROJECT_DIR".into()
            } else {
                "the current directory".into()
            },
        }
    }
}

/// Gathers the report for `paths`. `path_var` is the PATH hooks run with (bare command names and
/// `#!/usr/bin/env NAME` are looked up on it).
pub(crate) fn gather(paths: &Paths, sources: &PathSources, path_var: &str) -> Report {
    let (decision, set) = HookLoader::new(paths.clone()).load();
    let path_report = |path: &Path, from: &str| PathReport {
        path: path.to_path_buf(),
        from: from.to_string(),
        exists: path.is_dir(),
    };
    let paths_report = PathsReport {
        config_dir: path_report(&paths.config_dir, &sources.config_dir),
        data_dir: path_report(&paths.data_dir, &sources.data_dir),
        project_dir: path_report(&paths.project_dir, &sources.project_dir),
    };
    let trust_error = decision.error().is_some();
    let mcp = describe_servers(paths, decision.trusted);
    let workflows = crate::workflows::Workflows::for_project(paths, decision.trusted);
    let trust = trust_report(paths, decision);
    let providers = providers::gather(paths, &|name| std::env::var(name).ok());
    let files: Vec<FileReport> = set
        .files
        .iter()
        .map(|file| file_report(paths, file, trust_error))
        .collect();

    let log_path = paths.logs_dir().join(runlog::FILE_NAME);
    let log = LogRead::read(&log_path, set.hooks.iter().map(|hook| hook.id.as_str()));
    // A malformed settings.json is reported on its own; here it only means no allowedUrls.
    let settings = crate::settings::Settings::load(&paths.config_dir).ok();
    let context = handlers::HandlerContext {
        allowed_urls: settings
            .as_ref()
            .and_then(|settings| settings.hooks.allowed_urls.as_deref()),
        mcp_servers: mcp
            .servers
            .iter()
            .filter(|server| server.definition.enabled)
            .map(|server| server.definition.name.as_str())
            .collect(),
    };
    let hooks: Vec<HookReport> = set
        .hooks
        .iter()
        .map(|hook| hook_report(hook, &log, path_var, &context))
        .collect();

    let mut problems = Vec::new();
    let mut add = |subject: String, finding: &Finding| {
        if finding.level >= Level::Warning {
            problems.push(Problem {
                level: finding.level,
                subject,
                message: finding.message.clone(),
                fix: finding.fix.clone(),
            });
        }
    };
    add("trust".into(), &trust.finding);
    let sandbox = sandbox::gather(paths);
    for finding in &sandbox.findings {
        add("sandbox".into(), finding);
    }
    for file in &files {
        add(format!("file {}", file.path.display()), &file.finding);
    }
    for hook in &hooks {
        for finding in &hook.findings {
            add(format!("hook '{}'", hook.id), finding);
        }
    }
    let safety: Vec<Finding> = safety::findings(paths, &set)
        .into_iter()
        .map(|(subject, finding)| {
            add(subject, &finding);
            finding
        })
        .collect();
    for diagnostic in &mcp.diagnostics {
        add(
            "MCP".into(),
            &Finding::new(Level::Warning, diagnostic.to_string())
                .fix("fix the mcp.json named above; `elph doctor` shows the result".to_string()),
        );
    }
    for problem in &providers.problems {
        add(
            format!("provider file {}", problem.file.display()),
            &problem.finding,
        );
    }
    for diagnostic in &workflows.diagnostics {
        add(
            "skills and templates".into(),
            &Finding::new(Level::Warning, diagnostic.to_string()).fix(
                "fix the file named above (see docs/skills.md); `elph skills list` and `elph prompts list` show the result"
                    .to_string(),
            ),
        );
    }
    let summary = Summary {
        hooks: hooks.len(),
        enabled: hooks.iter().filter(|hook| hook.enabled).count(),
        errors: problems.iter().filter(|p| p.level == Level::Error).count(),
        warnings: problems.iter().filter(|p| p.level == Level::Warning).count(),
        failed_open_runs: hooks
            .iter()
            .filter_map(|hook| hook.recent_runs.as_ref())
            .map(|stats| stats.failed_open)
            .sum(),
    };
    Report {
        schema_version: SCHEMA_VERSION,
        elph_version: env!("CARGO_PKG_VERSION"),
        paths: paths_report,
        trust,
        files,
        hooks,
        run_log: RunLogReport {
            path: log_path,
            exists: log.exists,
            error: log.error.clone(),
            runs: log.runs,
            skipped_lines: log.bad_lines,
            unknown_hook_runs: log.unknown_hook_runs,
            window: runstats::WINDOW,
        },
        mcp,
        providers,
        safety,
        workflows,
        sandbox,
        diagnostics: set.diagnostics,
        problems,
        summary,
    }
}

fn trust_report(paths: &Paths, decision: TrustDecision) -> TrustReport {
    let trust_file = paths.trust_file();
    let project = &paths.project_dir;
    let project_q = shell_quote(project);
    let explanation = decision.explanation();
    let project_file_exists = paths.project_hooks_file().exists();
    let finding = if let Some(error) = decision.error() {
        Finding::new(
            Level::Error,
            format!("trust cannot be decided, so project hooks stay off: {error}"),
        )
        .fix(format!(
            "fix the JSON in {0}, or move it away (e.g. mv {0} {0}.bad) and trust projects again with `elph trust`",
            shell_quote(&trust_file)
        ))
    } else if decision.trusted {
        Finding::new(
            Level::Ok,
            format!("{} is trusted ({explanation})", project.display()),
        )
    } else if project_file_exists {
        Finding::new(
            Level::Warning,
            format!(
                "{} is not trusted ({explanation}), so its .elph/hooks.json is skipped",
                project.display()
            ),
        )
        .fix(format!(
            "if you trust this project's hooks: elph trust {project_q} (or /trust in the app)"
        ))
    } else {
        Finding::new(
            Level::Info,
            format!(
                "{} is not trusted ({explanation}); it has no .elph/hooks.json, so nothing is skipped",
                project.display()
            ),
        )
    };
    TrustReport {
        project_dir: project.clone(),
        trusted: decision.trusted,
        explanation,
        error: decision.error().map(str::to_string),
        source: decision.source,
        default_project_trust: decision.default,
        trust_file_exists: trust_file.exists(),
        trust_file,
        finding,
    }
}

fn file_report(paths: &Paths, file: &HookFile, trust_error: bool) -> FileReport {
    let exists = file.path.exists();
    let path_q = shell_quote(&file.path);
    let (state, hooks, pointer, reason, finding) = match &file.state {
        FileState::Loaded { hooks } => (
            "loaded",
            Some(*hooks),
            None,
            None,
            Finding::new(Level::Ok, format!("loaded {hooks} hook(s)")),
        ),
        FileState::Missing => (
            "missing",
            None,
            None,
            None,
            Finding::new(Level::Info, "not present (optional)"),
        ),
        FileState::SkippedUntrusted if exists && trust_error => (
            "skippedUntrusted",
            None,
            None,
            None,
            Finding::new(
                Level::Warning,
                "skipped: trust.json cannot be used, so no project is trusted",
            )
            .fix("fix trust.json first (see Trust above)"),
        ),
        FileState::SkippedUntrusted if exists => (
            "skippedUntrusted",
            None,
            None,
            None,
            Finding::new(Level::Warning, "skipped: the project is not trusted").fix(format!(
                "elph trust {} (or /trust in the app), after reading the file",
                shell_quote(&paths.project_dir)
            )),
        ),
        FileState::SkippedUntrusted => (
            "skippedUntrusted",
            None,
            None,
            None,
            Finding::new(Level::Info, "not present (and the project is not trusted)"),
        ),
        FileState::Malformed { pointer, reason } => {
            let at = match pointer.as_deref() {
                Some("") => " at (root)".to_string(),
                Some(pointer) => format!(" at {pointer}"),
                None => String::new(),
            };
            (
                "malformed",
                None,
                pointer.clone(),
                Some(reason.clone()),
                Finding::new(Level::Error, format!("malformed{at}: {reason}")).fix(format!(
                    "fix it, then check it with: elph hooks validate {path_q}"
                )),
            )
        }
    };
    FileReport {
        path: file.path.clone(),
        scope: file.scope,
        state,
        hooks,
        pointer,
        reason,
        exists,
        finding,
    }
}

fn hook_report(
    hook: &HookDefinition,
    log: &LogRead,
    path_var: &str,
    context: &handlers::HandlerContext<'_>,
) -> HookReport {
    let (command, mut findings) = match checks::check_command(hook, path_var) {
        Some((command, findings)) => (Some(command), findings),
        None => (None, Vec::new()),
    };
    findings.extend(handlers::check_handler(hook, context));
    findings.extend(checks::check_matcher(hook));
    let recent_runs = log.stats(&hook.id);
    if let Some(stats) = &recent_runs {
        findings.extend(checks::check_runs(hook, stats));
    }
    if !hook.enabled {
        findings.push(
            Finding::new(Level::Info, "disabled: listed, never run").fix(format!(
                "set \"enabled\": true in {} to run it",
                hook.source.display()
            )),
        );
    }
    let status = findings
        .iter()
        .map(|finding| finding.level)
        .max()
        .unwrap_or(Level::Ok);
    let matcher = (!hook.matcher.is_any()).then(|| {
        hook.matcher
            .patterns()
            .iter()
            .map(ToolPattern::to_string)
            .collect()
    });
    HookReport {
        id: hook.id.clone(),
        event: hook.event,
        matcher,
        handler: hook.handler.describe(),
        kind: hook.handler.kind(),
        command,
        args: hook.args.clone(),
        timeout_ms: hook.timeout.as_millis() as u64,
        budget_ms: hook.budget.map(|budget| budget.as_millis() as u64),
        persistent: hook.persistent,
        run_async: hook.run_async,
        source: hook.source.clone(),
        scope: hook.scope,
        enabled: hook.enabled,
        sandbox: hook.sandbox,
        fail_closed: hook.fail_closed,
        max_input_bytes: hook.max_input_bytes,
        max_output_bytes: hook.max_output_bytes,
        status,
        findings,
        recent_runs,
    }
}
