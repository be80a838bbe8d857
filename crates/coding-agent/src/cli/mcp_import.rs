//! `elph mcp import FILE [--write]`: another client's MCP servers (VS Code, Cursor, Claude Desktop,
//! Claude Code, Codex; see `mcp::import`) added to Elph's mcp.json. A FILE inside the project goes
//! to the project's `.elph/mcp.json`, any other to `CONFIG_DIR/mcp.json`. Without `--write` it
//! prints the file it would write; with it, it adds the servers (and inputs) the file does not have
//! yet, so a second import changes nothing. What is not carried over is said on stderr, one line
//! each.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{Map, Value, json};

use super::exit;
use crate::mcp::config::{Context, McpScope, home_file, parse, project_file};
use crate::mcp::file::SCHEMA_ID;
use crate::mcp::inputs::McpInputs;
use crate::paths::Paths;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The other client's file.
    pub file: PathBuf,
    /// Add the servers to the mcp.json instead of printing it.
    #[arg(long)]
    pub write: bool,
}

pub(super) fn run(cwd: Option<&Path>, args: ImportArgs) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    let shown = args.file.display().to_string();
    let text = match elph_config::read_config(&args.file) {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        Ok(None) => {
            eprintln!("elph mcp import: {shown} does not exist");
            return Ok(exit::ERROR);
        }
        Err(err) => {
            eprintln!("elph mcp import: {shown} {}; nothing was imported", err.reason());
            return Ok(exit::ERROR);
        }
    };
    let name = args.file.to_string_lossy();
    let imported = match crate::mcp::import::import(&name, &text) {
        Ok(imported) => imported,
        Err(why) => {
            eprintln!("elph mcp import: {shown} {why}; nothing was imported");
            return Ok(exit::ERROR);
        }
    };
    for note in &imported.notes {
        eprintln!("! {shown}: {note}");
    }
    let in_project = args
        .file
        .canonicalize()
        .is_ok_and(|file| file.starts_with(&paths.project_dir));
    let (target, scope) = if in_project {
        (project_file(&paths), McpScope::Project)
    } else {
        (home_file(&paths), McpScope::Home)
    };
    let existing = match elph_config::read_config(&target) {
        Ok(Some(bytes)) => match crate::mcp::file::parse_jsonc(&bytes) {
            // The file is written back whole, as plain JSON: its comments would be lost.
            Ok(Value::Object(_)) if args.write && has_comments(&bytes) => {
                eprintln!(
                    "elph mcp import: {} has comments, which writing it again would lose; nothing \
                     was imported. Run without --write to see the servers, and add them by hand",
                    target.display()
                );
                return Ok(exit::ERROR);
            }
            Ok(Value::Object(fields)) => fields,
            _ => {
                eprintln!(
                    "elph mcp import: {} is not a JSON object; fix it first, nothing was imported",
                    target.display()
                );
                return Ok(exit::ERROR);
            }
        },
        Ok(None) => Map::new(),
        Err(err) => {
            eprintln!(
                "elph mcp import: {} {}; nothing was imported",
                target.display(),
                err.reason()
            );
            return Ok(exit::ERROR);
        }
    };
    let merged = merge(existing, &imported, &shown);
    for note in &merged.notes {
        eprintln!("! {note}");
    }
    let text = serde_json::to_string_pretty(&Value::Object(merged.file))? + "\n";
    // Checked as Elph will read it (variables stand for empty texts) before it replaces anything.
    let inputs = McpInputs::placeholders();
    let path_var = std::env::var("PATH").unwrap_or_default();
    let context = Context {
        env: &|_| Some(String::new()),
        project_dir: &paths.project_dir,
        home: None,
        inputs: &inputs,
        path_var: &path_var,
    };
    let folder = target.parent().unwrap_or(Path::new("/"));
    if let Err(error) = parse(text.as_bytes(), &target, folder, scope, &context) {
        eprintln!(
            "elph mcp import: the result would not load ({}{}); nothing was written",
            error.pointer.map(|p| format!("{p}: ")).unwrap_or_default(),
            error.message
        );
        return Ok(exit::ERROR);
    }
    let mut out = std::io::stdout().lock();
    if !args.write {
        eprintln!(
            "{}: {} new server(s) from {} ({}); with --write the file becomes:",
            target.display(),
            merged.added,
            shown,
            imported.client
        );
        write!(out, "{text}")?;
        return Ok(exit::SUCCESS);
    }
    if merged.added == 0 && merged.inputs_added == 0 {
        writeln!(out, "{}: nothing new to add", target.display())?;
        return Ok(exit::SUCCESS);
    }
    super::hooks_import::write_atomically(&target, &text)?;
    writeln!(
        out,
        "{}: added {} server(s) from {} ({})",
        target.display(),
        merged.added,
        shown,
        imported.client
    )?;
    if in_project {
        writeln!(
            out,
            "The project's servers start once it is trusted (`elph trust`); trusting pins them."
        )?;
    }
    Ok(exit::SUCCESS)
}

/// Whether an MCP file has comments or trailing commas (text VS Code's reader drops).
fn has_comments(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| crate::mcp::file::without_comments(text).map(|plain| plain != text))
        .unwrap_or(false)
}

struct Merged {
    file: Map<String, Value>,
    added: usize,
    inputs_added: usize,
    notes: Vec<String>,
}

/// `existing` (an mcp.json's fields) with the imported servers and inputs it lacks.
fn merge(mut file: Map<String, Value>, imported: &crate::mcp::import::Imported, source: &str) -> Merged {
    let key = if file.contains_key("servers") && !file.contains_key("mcpServers") {
        "servers"
    } else {
        "mcpServers"
    };
    if file.is_empty() {
        file.insert("$schema".into(), json!(SCHEMA_ID));
    }
    let mut notes = Vec::new();
    let mut added = 0;
    let servers = file.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(servers) = servers {
        for (name, server) in &imported.servers {
            match servers.get(name) {
                Some(known) if known == server => {}
                Some(_) => notes.push(format!(
                    "{source}: server '{name}' is already in the mcp.json, defined otherwise; it is left as it is"
                )),
                None => {
                    servers.insert(name.clone(), server.clone());
                    added += 1;
                }
            }
        }
    }
    let mut inputs_added = 0;
    if !imported.inputs.is_empty() {
        let inputs = file.entry("inputs").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(inputs) = inputs {
            for input in &imported.inputs {
                let id = input.get("id");
                match inputs.iter().find(|known| known.get("id") == id) {
                    Some(known) if known == input => {}
                    Some(_) => notes.push(format!(
                        "{source}: input {} is already in the mcp.json, defined otherwise; it is left as it is",
                        id.cloned().unwrap_or(Value::Null)
                    )),
                    None => {
                        inputs.push(input.clone());
                        inputs_added += 1;
                    }
                }
            }
        }
    }
    Merged {
        file,
        added,
        inputs_added,
        notes,
    }
}
