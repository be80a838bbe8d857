//! `elph trust [DIR] [--status [--json]]` and `elph untrust [DIR]`: the CLI twins of /trust and
//! /untrust (docs/trust.md).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde_json::json;

use super::exit;
use crate::paths::Paths;
use crate::trust::{DecisionSource, TrustDecision, TrustError, TrustStore};

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The project folder (default: PROJECT_DIR, i.e. --cwd, $ELPH_PROJECT_DIR or the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Show whether DIR is trusted and which entry of trust.json decided it; change nothing.
    #[arg(long)]
    pub status: bool,

    /// With --status: print one JSON document {projectDir, trusted, source, default, trustFile}.
    #[arg(long, requires = "status")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct UntrustArgs {
    /// The project folder (default: PROJECT_DIR).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The project a trust command is about: DIR made canonical, or PROJECT_DIR.
fn target(cwd: Option<&Path>, dir: Option<&Path>) -> anyhow::Result<(Paths, TrustStore)> {
    let mut paths = Paths::from_env(cwd)?;
    if let Some(dir) = dir {
        paths = paths.with_project(dir)?;
    }
    let store = TrustStore::new(&paths.config_dir).announcing_waits();
    Ok((paths, store))
}

pub(crate) fn run_trust(cwd: Option<&Path>, args: TrustArgs) -> anyhow::Result<u8> {
    let (paths, store) = target(cwd, args.dir.as_deref())?;
    let project = &paths.project_dir;
    if args.status {
        let decision = store.decide(project);
        let mut out = std::io::stdout().lock();
        if args.json {
            serde_json::to_writer_pretty(&mut out, &status_json(&decision, &store))?;
            writeln!(out)?;
        } else {
            write_status(
                &mut crate::terminal_text::Escaping::new(&mut out),
                &decision,
                &store,
            )?;
        }
        if let Some(error) = decision.error() {
            crate::terminal_text::eprint_line(&format!("elph: warning: {error}"));
        }
        return Ok(exit::SUCCESS);
    }
    let before = store.decide(project);
    let decision = store
        .trust(project)
        .with_context(|| format!("cannot trust {}", project.display()))?;
    let mut out = crate::terminal_text::Escaping::new(std::io::stdout().lock());
    // An entry whose pinned content changed no longer trusts the project: this trusts it anew.
    let already = before.trusted
        && matches!(&before.source, DecisionSource::Entry { path, trusted: true } if path == project);
    if already {
        writeln!(out, "{} was already trusted.", project.display())?;
    } else if let Some(changes) = before.changes() {
        writeln!(
            out,
            "Trusted {} again, as it is now: it had changed since you trusted it ({}).",
            project.display(),
            changes.summary()
        )?;
    } else {
        writeln!(out, "Trusted {}.", project.display())?;
    }
    writeln!(
        out,
        "Its hooks in {} will load from the next session on.",
        paths.project_hooks_file().display()
    )?;
    writeln!(out, "{}", recorded(&decision, &store))?;
    Ok(exit::SUCCESS)
}

pub(crate) fn run_untrust(cwd: Option<&Path>, args: UntrustArgs) -> anyhow::Result<u8> {
    let (paths, store) = target(cwd, args.dir.as_deref())?;
    let project = &paths.project_dir;
    let before = store.decide(project);
    match store.untrust(project) {
        Ok(decision) => {
            let mut out = crate::terminal_text::Escaping::new(std::io::stdout().lock());
            writeln!(
                out,
                "Untrusted {}: its hooks and MCP servers are off.",
                project.display()
            )?;
            writeln!(out, "{}", crate::gate::next_start(decision.default))?;
            if let DecisionSource::Entry { path, trusted: true } = &before.source
                && path != project
            {
                writeln!(
                    out,
                    "It no longer inherits trust from {}, which stays trusted.",
                    path.display()
                )?;
            }
            writeln!(out, "{}", recorded(&decision, &store))?;
            Ok(exit::SUCCESS)
        }
        Err(TrustError::NotTrusted { project, because }) => {
            crate::terminal_text::eprint_line(&format!(
                "elph: {} is not trusted ({because}), so there is nothing to untrust.\n\
                 Check with `elph trust --status`; `elph trust` trusts it.",
                project.display()
            ));
            Ok(exit::ERROR)
        }
        Err(err) => Err(anyhow::Error::new(err).context(format!("cannot untrust {}", project.display()))),
    }
}

fn recorded(decision: &TrustDecision, store: &TrustStore) -> String {
    match &decision.source {
        DecisionSource::Entry { path, trusted } => format!(
            "Recorded {} = {trusted} in {}.",
            path.display(),
            store.path().display()
        ),
        _ => format!("Recorded in {}.", store.path().display()),
    }
}

fn write_status(out: &mut impl Write, decision: &TrustDecision, store: &TrustStore) -> std::io::Result<()> {
    let verdict = if decision.trusted {
        "trusted"
    } else {
        "not trusted"
    };
    writeln!(out, "{}: {verdict}", decision.project_dir.display())?;
    writeln!(out, "{}", decision.explanation())?;
    match &decision.pin {
        crate::trust::PinState::Changed { changes } => {
            writeln!(out, "changed since trusted (its hooks and MCP servers stay off):")?;
            for line in changes.lines() {
                writeln!(out, "  {line}")?;
            }
            writeln!(out, "run `elph trust` to trust the new content")?;
        }
        crate::trust::PinState::Matches => writeln!(out, "pinned: unchanged since trusted")?,
        crate::trust::PinState::Off => writeln!(out, "pinning: off (\"trustPinning\": false)")?,
        // Trusted through a parent folder's entry, the default, or an entry older than pinning.
        crate::trust::PinState::Unpinned if decision.trusted => writeln!(
            out,
            "not pinned: trusted by path only, so a change to its hooks would run without a question; \
             run `elph trust` here to pin what is there now"
        )?,
        crate::trust::PinState::Unpinned => {}
    }
    if matches!(
        decision.pin,
        crate::trust::PinState::Matches | crate::trust::PinState::Changed { .. }
    ) {
        let unseen = crate::trust::pins::not_pinned(&decision.project_dir);
        if !unseen.is_empty() {
            writeln!(out, "not pinned (Elph cannot see them from the command lines):")?;
            for line in unseen {
                writeln!(out, "  {line}")?;
            }
        }
    }
    if decision.error().is_none() {
        writeln!(out, "default: {}", decision.default.as_str())?;
    }
    writeln!(out, "trust file: {}", store.path().display())?;
    for warning in key_warnings(store) {
        writeln!(out, "warning: {warning}")?;
    }
    Ok(())
}

/// What is wrong with trust.json's keys (not canonical, missing folders, clashes); none when it
/// cannot be read (that error is reported on its own).
fn key_warnings(store: &TrustStore) -> Vec<String> {
    store.load().map(|file| file.key_warnings).unwrap_or_default()
}

/// `{projectDir, trusted, source, default, trustFile}`; `default` is null when trust.json cannot be read.
fn status_json(decision: &TrustDecision, store: &TrustStore) -> serde_json::Value {
    let default = match decision.error() {
        Some(_) => serde_json::Value::Null,
        None => json!(decision.default),
    };
    let mut status = json!({
        "projectDir": decision.project_dir,
        "trusted": decision.trusted,
        "source": decision.source,
        "default": default,
        "trustFile": store.path(),
    });
    if !decision.pin.is_unpinned() {
        status["pin"] = json!(decision.pin);
        let unseen = crate::trust::pins::not_pinned(&decision.project_dir);
        if !unseen.is_empty() {
            status["notPinned"] = json!(unseen);
        }
    }
    // Only when there is something to say, so the common document stays as it was.
    let warnings = key_warnings(store);
    if !warnings.is_empty() {
        status["warnings"] = json!(warnings);
    }
    status
}
