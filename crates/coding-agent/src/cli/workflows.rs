//! `elph skills list` and `elph prompts list`: the skills and prompt templates a session here
//! would load, with their sources and problems.

use std::io::Write;
use std::path::Path;

use clap::{Args, Subcommand};

use super::exit;
use crate::paths::Paths;
use crate::terminal_text::Escaping;
use crate::trust::TrustStore;
use crate::workflows::Workflows;

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List the skills a session would offer the model, and what is wrong with the others.
    List(ListArgs),
}

#[derive(Debug, Subcommand)]
pub enum PromptsCommand {
    /// List the prompt templates (/NAME commands), and what is wrong with the others.
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn load(cwd: Option<&Path>) -> anyhow::Result<Workflows> {
    let paths = Paths::from_env(cwd)?;
    let trusted = TrustStore::new(&paths.config_dir)
        .decide(&paths.project_dir)
        .trusted;
    Ok(Workflows::for_project(&paths, trusted))
}

pub(crate) fn run_skills(cwd: Option<&Path>, command: SkillsCommand) -> anyhow::Result<u8> {
    let SkillsCommand::List(args) = command;
    let workflows = load(cwd)?;
    let mut json_out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(
            &mut json_out,
            &serde_json::json!({"skills": workflows.skills, "diagnostics": workflows.diagnostics}),
        )?;
        writeln!(json_out)?;
        return Ok(exit::SUCCESS);
    }
    // Names, descriptions and paths come from files a project controls.
    let mut out = Escaping::new(json_out);
    if workflows.skills.is_empty() {
        writeln!(
            out,
            "no skills (add folders with a SKILL.md to CONFIG_DIR/skills/ or .elph/skills/)"
        )?;
    }
    for skill in &workflows.skills {
        writeln!(
            out,
            "{}  [{}]  {}",
            skill.name,
            skill.source.label(),
            skill.file.display()
        )?;
        writeln!(out, "    {}", skill.description)?;
    }
    write_diagnostics(&mut out, &workflows)?;
    Ok(exit::SUCCESS)
}

pub(crate) fn run_prompts(cwd: Option<&Path>, command: PromptsCommand) -> anyhow::Result<u8> {
    let PromptsCommand::List(args) = command;
    let workflows = load(cwd)?;
    let mut json_out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(
            &mut json_out,
            &serde_json::json!({"prompts": workflows.prompts, "diagnostics": workflows.diagnostics}),
        )?;
        writeln!(json_out)?;
        return Ok(exit::SUCCESS);
    }
    // Names, descriptions and paths come from files a project controls.
    let mut out = Escaping::new(json_out);
    if workflows.prompts.is_empty() {
        writeln!(
            out,
            "no prompt templates (add NAME.md files to CONFIG_DIR/prompts/ or .elph/prompts/)"
        )?;
    }
    for template in &workflows.prompts {
        let hint = template
            .argument_hint
            .as_deref()
            .map(|hint| format!(" {hint}"))
            .unwrap_or_default();
        writeln!(
            out,
            "/{}{hint}  [{}]  {}",
            template.name,
            template.source.label(),
            template.file.display()
        )?;
        writeln!(out, "    {}", template.description)?;
    }
    write_diagnostics(&mut out, &workflows)?;
    Ok(exit::SUCCESS)
}

fn write_diagnostics(out: &mut impl Write, workflows: &Workflows) -> std::io::Result<()> {
    for diagnostic in &workflows.diagnostics {
        writeln!(out, "! {diagnostic}")?;
    }
    Ok(())
}
