//! `elph hooks import [FILE] [--write]`: Claude Code settings (or a Claude Code plugin's
//! `hooks/hooks.json`) and Gemini CLI settings (or an extension's `hooks/hooks.json`) turned into
//! Elph hooks.
//!
//! Without FILE it reads the project's `.claude/settings.json`, `.claude/settings.local.json` and
//! `.gemini/settings.json` (their hooks go to the project's `.elph/hooks.json`) and
//! `~/.claude/settings.json` and `~/.gemini/settings.json` (to `CONFIG_DIR/hooks.json`). It prints the hooks files it would write; `--write` adds the hooks to
//! them, skipping any hook that is already there (so a second import changes nothing).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde_json::Value;

use super::exit;
use crate::hooks::claude_code::gemini;
use crate::hooks::claude_code::plain::Target;
use crate::hooks::claude_code::settings::{Options, import};
use crate::hooks::config::{HookConfig, HooksFile, read_file};
use crate::paths::Paths;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A Claude Code or Gemini CLI settings file, or a plugin's or extension's hooks/hooks.json
    /// (default: the project's .claude/settings.json, .claude/settings.local.json and
    /// .gemini/settings.json, and ~/.claude/settings.json and ~/.gemini/settings.json).
    pub file: Option<PathBuf>,
    /// Add the hooks to the right hooks.json instead of printing them.
    #[arg(long)]
    pub write: bool,
}

/// One settings file and the hooks.json its hooks belong in.
struct Source {
    settings: PathBuf,
    target: PathBuf,
}

pub(super) fn run(cwd: Option<&Path>, args: ImportArgs) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    let project_target = project_target_of(&paths);
    let home_target = paths.config_dir.join("hooks.json");
    let home_dir = std::env::var_os("HOME").map(PathBuf::from);
    let home_claude = home_dir.as_ref().map(|home| home.join(".claude"));
    let sources: Vec<Source> = match &args.file {
        Some(file) => {
            let in_home = [".claude", ".gemini"].iter().any(|folder| {
                home_dir.as_ref().is_some_and(|home| {
                    file.canonicalize()
                        .is_ok_and(|f| f.starts_with(home.join(folder)))
                })
            });
            vec![Source {
                settings: file.clone(),
                target: if in_home { home_target } else { project_target },
            }]
        }
        None => {
            let claude = paths.project_dir.join(".claude");
            let mut sources = vec![
                Source {
                    settings: claude.join("settings.json"),
                    target: project_target.clone(),
                },
                Source {
                    settings: claude.join("settings.local.json"),
                    target: project_target.clone(),
                },
                Source {
                    settings: paths.project_dir.join(".gemini").join("settings.json"),
                    target: project_target,
                },
            ];
            if let Some(dir) = home_claude {
                sources.push(Source {
                    settings: dir.join("settings.json"),
                    target: home_target.clone(),
                });
            }
            if let Some(home) = &home_dir {
                sources.push(Source {
                    settings: home.join(".gemini").join("settings.json"),
                    target: home_target,
                });
            }
            sources.retain(|source| source.settings.is_file());
            sources
        }
    };
    if sources.is_empty() {
        eprintln!(
            "elph hooks import: no Claude Code or Gemini CLI settings found (looked for .claude/settings.json, .claude/settings.local.json and .gemini/settings.json in {} and ~/.claude/settings.json and ~/.gemini/settings.json); pass a FILE",
            paths.project_dir.display()
        );
        return Ok(exit::ERROR);
    }

    // Targets in the order first seen, each with the hooks it gets.
    let mut targets: Vec<(PathBuf, Vec<HookConfig>, HooksFile)> = Vec::new();
    let mut rule_targets = super::import_rules::RuleTargets::default();
    for source in &sources {
        // Bounded, and never blocked by a FIFO or a device in place of the file.
        let text = match elph_config::read_config(&source.settings) {
            Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(None) => {
                eprintln!("elph hooks import: {} does not exist", source.settings.display());
                return Ok(exit::ERROR);
            }
            Err(err) => {
                eprintln!(
                    "elph hooks import: {} {}; nothing was imported",
                    source.settings.display(),
                    err.reason()
                );
                return Ok(exit::ERROR);
            }
        };
        let settings: Value = match serde_json::from_str(&text) {
            Ok(value) => value,
            Err(err) => {
                eprintln!(
                    "elph hooks import: {} is not valid JSON: {err}; nothing was imported",
                    source.settings.display()
                );
                return Ok(exit::ERROR);
            }
        };
        let index = match targets.iter().position(|(path, _, _)| *path == source.target) {
            Some(index) => index,
            None => {
                let existing = match read_file(&source.target) {
                    Ok(file) => file.unwrap_or(HooksFile {
                        schema: Some(crate::hooks::config::SCHEMA_ID.to_string()),
                        hooks: Vec::new(),
                    }),
                    Err(error) => {
                        eprintln!(
                            "elph hooks import: {} is broken ({}); fix it first, nothing was imported",
                            source.target.display(),
                            error.message
                        );
                        return Ok(exit::ERROR);
                    }
                };
                targets.push((source.target.clone(), Vec::new(), existing));
                targets.len() - 1
            }
        };
        let (_, added, existing) = &mut targets[index];
        let taken: Vec<String> = existing
            .hooks
            .iter()
            .chain(added.iter())
            .map(|hook| hook.id.clone())
            .collect();
        let target = if source.target == project_target_of(&paths) {
            Target::Project
        } else {
            Target::Home
        };
        let extension_root = root_with(&source.settings, &["gemini-extension.json"]);
        let gemini = gemini::is_gemini(&settings, &source.settings, extension_root.as_deref());
        let plugin_root = if gemini {
            extension_root
        } else {
            root_with(&source.settings, &[".claude-plugin", "plugin.json"])
        };
        let options = Options {
            target,
            plugin_root: plugin_root.as_deref(),
            home: home_dir.as_deref(),
        };
        let imported = if gemini {
            gemini::import(&settings, &taken, options)
        } else {
            import(&settings, &taken, options)
        };
        let imported = match imported {
            Ok(imported) => imported,
            Err(why) => {
                eprintln!(
                    "elph hooks import: {}: {why}; nothing was imported",
                    source.settings.display()
                );
                return Ok(exit::ERROR);
            }
        };
        for line in &imported.skipped {
            eprintln!("! {}: {line}", source.settings.display());
        }
        // Gemini CLI has no permission rules of Claude Code's form; its files' other fields are
        // reported by its own import.
        let rules = if gemini {
            Ok(crate::hooks::claude_code::permissions::ImportedRules::default())
        } else {
            crate::hooks::claude_code::permissions::import(&settings, target)
        };
        match rules {
            Ok(imported) => {
                for line in &imported.skipped {
                    eprintln!("! {}: {line}", source.settings.display());
                }
                rule_targets.add(&paths, target, imported.rules);
            }
            Err(why) => {
                eprintln!(
                    "elph hooks import: {}: {why}; nothing was imported",
                    source.settings.display()
                );
                return Ok(exit::ERROR);
            }
        }
        for hook in imported.hooks {
            let same = |other: &HookConfig| {
                other.event == hook.event
                    && other.matcher == hook.matcher
                    && other.args == hook.args
                    && other.command == hook.command
                    && other.url == hook.url
                    && other.prompt == hook.prompt
                    && other.mcp_tool == hook.mcp_tool
            };
            if existing.hooks.iter().any(same) || added.iter().any(same) {
                continue;
            }
            added.push(hook);
        }
    }

    let mut out = std::io::stdout().lock();
    for (target, added, mut existing) in targets {
        let count = added.len();
        existing.hooks.extend(added);
        let text = serde_json::to_string_pretty(&existing)? + "\n";
        if !args.write {
            eprintln!(
                "{}: {count} new hook(s); with --write the file becomes:",
                target.display()
            );
            write!(out, "{text}")?;
            continue;
        }
        if count == 0 {
            writeln!(out, "{}: nothing new to add", target.display())?;
            continue;
        }
        // Checked against the schema before it replaces anything.
        crate::hooks::config::parse(text.as_bytes())
            .map_err(|error| anyhow::anyhow!("the imported hooks do not validate: {}", error.message))?;
        write_atomically(&target, &text)?;
        writeln!(out, "{}: added {count} hook(s)", target.display())?;
    }
    rule_targets.finish(&mut out, args.write)?;
    Ok(exit::SUCCESS)
}

/// The plugin or extension a hooks file belongs to: the nearest folder above it that holds
/// `marker` (`.claude-plugin/plugin.json`, Claude Code's `${CLAUDE_PLUGIN_ROOT}`, or
/// `gemini-extension.json`, Gemini CLI's `${extensionPath}`).
fn root_with(file: &Path, marker: &[&str]) -> Option<PathBuf> {
    let file = file.canonicalize().ok()?;
    file.ancestors()
        .skip(1)
        .find(|folder| {
            marker
                .iter()
                .fold(folder.to_path_buf(), |path, part| path.join(part))
                .is_file()
        })
        .map(Path::to_path_buf)
}

/// The project's hooks file, where hooks from the project's Claude Code settings go.
fn project_target_of(paths: &Paths) -> PathBuf {
    paths.project_dir.join(".elph").join("hooks.json")
}

/// Replaces `target` with `text` in one step (a temporary file in its folder, renamed).
pub(super) fn write_atomically(target: &Path, text: &str) -> anyhow::Result<()> {
    let folder = target.parent().context("the file has no folder")?;
    std::fs::create_dir_all(folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let mut file = tempfile::NamedTempFile::new_in(folder)
        .with_context(|| format!("cannot write in {}", folder.display()))?;
    file.write_all(text.as_bytes())?;
    file.persist(target)
        .with_context(|| format!("cannot replace {}", target.display()))?;
    Ok(())
}
