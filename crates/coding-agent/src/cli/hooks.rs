//! `elph hooks list`, `elph hooks validate` and (in `hooks_test`) `elph hooks test`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;

use super::exit;
use super::hooks_test;
use crate::diagnostics::Diagnostic;
use crate::hooks::HookSet;
use crate::hooks::config::check_file;
use crate::hooks::discovery::{FileLoad, HookScope, merge};
use crate::paths::Paths;

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// List the hooks in the order they run (disabled ones too), then every diagnostic.
    List {
        /// Print one JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Check hook files against the schema (no FILE: the home and project files).
    ///
    /// Exits 0 when every file is valid, 1 with one line per problem otherwise.
    Validate {
        /// Files to check.
        files: Vec<PathBuf>,
        /// Print one JSON document: each file's state and every problem with its JSON pointer.
        #[arg(long)]
        json: bool,
    },
    /// Fire one synthetic event through the configured hooks and show what each did.
    ///
    /// Exits 0 when the chain ran, whatever the hooks decided; 1 on a usage or configuration error.
    Test(hooks_test::TestArgs),
    /// Turn Claude Code settings (.claude/settings.json, .claude/settings.local.json,
    /// ~/.claude/settings.json) into Elph hooks with "protocol": "claude-code".
    ///
    /// Prints the hooks files it would write, with a line on stderr for each thing it could not
    /// translate; --write adds the hooks to them.
    Import(super::hooks_import::ImportArgs),
    /// Prove that every tool path fires its hooks: each native tool, the shell in the sandbox, an
    /// MCP tool, the ACP and headless front ends, a call a hook rewrites, and a session that
    /// compacts (by /compact, and when its context fills up).
    ///
    /// Each path is a real session of this elph with a scripted model, in scratch folders of its
    /// own (HOME, CONFIG_DIR, DATA_DIR and a project trusted for the run; yours are not read or
    /// touched, and the folders are removed at the end, also on Ctrl+C). A probe hook listens on
    /// every event; a fail-closed guard blocks one call of each path, whose side effect must then be
    /// missing on disk. The report says per path which events fired and whether the block held.
    ///
    /// Exits 0 when every path fired every event it must and every block held, 1 otherwise.
    #[command(after_long_help = super::hooks_coverage::AFTER_HELP)]
    Coverage(super::hooks_coverage::CoverageArgs),
    /// A probe hook of `elph hooks coverage` (reads a payload, writes what it heard).
    #[command(hide = true)]
    CoverageProbe(super::hooks_coverage_probe::ProbeArgs),
    /// The stdio MCP server of `elph hooks coverage`.
    #[command(hide = true)]
    CoverageMcpServer,
}

pub(super) fn run(cwd: Option<&Path>, command: HooksCommand) -> anyhow::Result<u8> {
    match command {
        HooksCommand::List { json } => {
            let paths = Paths::from_env(cwd)?;
            let set = load(&paths);
            let mut out = std::io::stdout().lock();
            if json {
                serde_json::to_writer_pretty(&mut out, &set)?;
                writeln!(out)?;
            } else {
                print_list(&mut crate::terminal_text::Escaping::new(out), &set)?;
            }
            Ok(exit::SUCCESS)
        }
        HooksCommand::Validate { files, json } => validate(cwd, files, json),
        HooksCommand::Test(args) => hooks_test::run(cwd, args),
        HooksCommand::Import(args) => super::hooks_import::run(cwd, args),
        HooksCommand::Coverage(args) => super::hooks_coverage::run(args),
        HooksCommand::CoverageProbe(args) => super::hooks_coverage_probe::run_probe(args),
        HooksCommand::CoverageMcpServer => super::hooks_coverage_probe::run_mcp_server(),
    }
}

/// The hook set for `paths`, honouring the project's trust.
pub(super) fn load(paths: &Paths) -> HookSet {
    crate::hooks::reload::HookLoader::new(paths.clone()).load().1
}

fn print_list(out: &mut impl Write, set: &HookSet) -> std::io::Result<()> {
    let active = set.active().count();
    let disabled = set.hooks.len() - active;
    writeln!(out, "{active} active hook(s), {disabled} disabled")?;
    if !set.hooks.is_empty() {
        let rows: Vec<[String; 8]> = set
            .hooks
            .iter()
            .map(|hook| {
                let mut command = hook.handler.describe();
                if !hook.args.is_empty() {
                    command = format!("{command} {}", hook.args.join(" "));
                }
                if hook.command().is_some_and(|command| !command.executable) {
                    command.push_str("  (not found or not executable)");
                }
                if let Some(budget) = hook.budget {
                    command.push_str(&format!("  (budget {} ms)", budget.as_millis()));
                }
                match hook.protocol {
                    crate::hooks::config::Protocol::Elph => {}
                    crate::hooks::config::Protocol::ClaudeCode => {
                        command.push_str("  (protocol: claude-code)")
                    }
                    crate::hooks::config::Protocol::GeminiCli => command.push_str("  (protocol: gemini-cli)"),
                }
                if hook.fail_closed {
                    command.push_str("  (fail-closed)");
                }
                if !hook.env.is_empty() {
                    // Names only: a value may be a secret.
                    let names: Vec<&str> = hook.env.keys().map(String::as_str).collect();
                    command.push_str(&format!("  (env: {})", names.join(", ")));
                }
                let escape = |text: &str| crate::terminal_text::escape(text).into_owned();
                [
                    escape(&hook.id),
                    hook.event.to_string(),
                    if hook.event.is_tool_event() {
                        escape(&hook.matcher.to_string())
                    } else {
                        "-".into()
                    },
                    match (hook.persistent, hook.run_async) {
                        (true, _) => format!("{}ms persistent", hook.timeout.as_millis()),
                        (false, true) => format!("{}ms async", hook.timeout.as_millis()),
                        (false, false) => format!("{}ms", hook.timeout.as_millis()),
                    },
                    if hook.enabled { "yes".into() } else { "no".into() },
                    hook.sandbox.map_or("-".into(), |mode| mode.to_string()),
                    escape(&hook.source.display().to_string()),
                    escape(&command),
                ]
            })
            .collect();
        let header = [
            "ID", "EVENT", "MATCHER", "TIMEOUT", "ENABLED", "SANDBOX", "SOURCE", "COMMAND",
        ];
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.len());
            }
        }
        let line = |cells: &[String]| {
            let last = cells.len() - 1;
            cells
                .iter()
                .enumerate()
                .map(|(i, cell)| {
                    if i == last {
                        cell.clone()
                    } else {
                        format!("{cell:<w$}", w = widths[i])
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        writeln!(out, "{}", line(&header.map(String::from)))?;
        for row in &rows {
            writeln!(out, "{}", line(row))?;
        }
    }
    for file in &set.files {
        let scope = match file.scope {
            HookScope::Home => "home",
            HookScope::Project => "project",
        };
        let state = match &file.state {
            crate::hooks::FileState::Loaded { hooks } => format!("loaded, {hooks} hook(s)"),
            crate::hooks::FileState::Missing => "not present".into(),
            // Trust only matters for a file that is there.
            crate::hooks::FileState::SkippedUntrusted if !file.path.exists() => "not present".into(),
            crate::hooks::FileState::SkippedUntrusted => "skipped: project not trusted".into(),
            crate::hooks::FileState::Malformed { .. } => "malformed, ignored".into(),
        };
        writeln!(out, "{scope} file {}: {state}", file.path.display())?;
    }
    if !set.diagnostics.is_empty() {
        writeln!(out, "diagnostics:")?;
        for diagnostic in &set.diagnostics {
            writeln!(out, "  {diagnostic}")?;
        }
    }
    Ok(())
}

/// What `elph hooks validate` found in one file.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct FileCheck {
    path: PathBuf,
    /// `ok`, `missing` (fine for the two discovered files) or `invalid`.
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    hooks: Option<usize>,
}

fn validate(cwd: Option<&Path>, files: Vec<PathBuf>, json: bool) -> anyhow::Result<u8> {
    let explicit = !files.is_empty();
    let files = if explicit {
        files
    } else {
        let paths = Paths::from_env(cwd).context("cannot find the hook files to validate")?;
        vec![paths.home_hooks_file(), paths.project_hooks_file()]
    };
    let mut problems: Vec<Diagnostic> = Vec::new();
    let mut warnings: Vec<Diagnostic> = Vec::new();
    let mut checks = Vec::new();
    let mut loads = Vec::new();
    for (index, path) in files.iter().enumerate() {
        let scope = if index == 0 && !explicit {
            HookScope::Home
        } else {
            HookScope::Project
        };
        let (state, hooks) = match check_file(path) {
            Ok(None) if explicit => {
                problems.push(Diagnostic::new("no such file").in_file(path));
                ("invalid", None)
            }
            Ok(None) => ("missing", None),
            Ok(Some(file)) => {
                let count = file.hooks.len();
                warnings.extend(matcher_warnings(path, &file));
                loads.push(FileLoad {
                    path: path.clone(),
                    scope,
                    result: Ok(Some(file)),
                });
                ("ok", Some(count))
            }
            Err(errors) => {
                problems.extend(errors.into_iter().map(|error| error.into_diagnostic(path)));
                ("invalid", None)
            }
        };
        checks.push(FileCheck {
            path: path.clone(),
            state,
            hooks,
        });
    }
    // Ids must be unique across the files checked together.
    problems.extend(merge(loads, None).diagnostics);
    let valid = problems.is_empty();
    let mut out = std::io::stdout().lock();
    if json {
        let document = serde_json::json!({
            "valid": valid,
            "files": checks,
            "problems": problems,
            "warnings": warnings,
        });
        serde_json::to_writer_pretty(&mut out, &document)?;
        writeln!(out)?;
    } else {
        let mut out = crate::terminal_text::Escaping::new(out);
        for check in &checks {
            match (check.state, check.hooks) {
                ("ok", Some(count)) => writeln!(out, "{}: ok, {count} hook(s)", check.path.display())?,
                ("missing", _) => writeln!(out, "{}: not present (nothing to check)", check.path.display())?,
                _ => {}
            }
        }
        drop(out);
        for problem in &problems {
            eprintln!("{problem}");
        }
        for warning in &warnings {
            eprintln!("warning: {warning}");
        }
    }
    Ok(if valid { exit::SUCCESS } else { exit::ERROR })
}

/// What is valid but cannot be what was meant: matcher patterns that name no tool. They do not
/// make the file invalid (it loads), so they do not change the exit status.
fn matcher_warnings(path: &Path, file: &crate::hooks::config::HooksFile) -> Vec<Diagnostic> {
    file.hooks
        .iter()
        .enumerate()
        .filter_map(|(index, hook)| {
            let names = hook.matcher.as_ref()?.tool_names.as_ref()?;
            let matcher = elph_agent::hooks::Matcher::parse(names).ok()?;
            Some(
                crate::hooks::tool_names::unknown_tools(hook.event, &matcher)
                    .into_iter()
                    .map(move |unknown| {
                        Diagnostic::new(unknown.message)
                            .in_file(path)
                            .at(format!("/hooks/{index}/matcher/toolNames/{}", unknown.index))
                    }),
            )
        })
        .flatten()
        .collect()
}
