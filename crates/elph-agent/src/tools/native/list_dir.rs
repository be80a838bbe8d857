//! `list_dir`: the entries of one folder, sorted, folders marked with a trailing '/'.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{OUTPUT_CAP, parse_args, paths};
use crate::tools::{PathAccess, Tool, ToolContext, ToolOutput};

pub struct ListDir;

/// The most entries one call shows.
const MAX_ENTRIES: usize = 2000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for ListDir {
    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "List the entries of one folder (not recursive), one per line, sorted by name, with a \
         trailing '/' on folders. Hidden entries are included. Use find_path to search a whole \
         tree by name."
    }

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The folder to list: relative to the project folder, or absolute. Default: \".\" (the project folder)."
                }
            },
            "required": [],
            "additionalProperties": false
        })
    }

    fn mutates(&self) -> bool {
        false
    }

    fn accesses(&self, input: &Value) -> Vec<PathAccess> {
        vec![PathAccess::read(input["path"].as_str().unwrap_or("."))]
    }

    async fn execute(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let args: Args = match parse_args(self.name(), input) {
            Ok(args) => args,
            Err(error) => return error,
        };
        let shown = args.path.unwrap_or_else(|| ".".to_string());
        let full = paths::resolve(ctx, &shown);
        let shown_for_task = shown.clone();
        let listed = tokio::task::spawn_blocking(move || list(&full, &shown_for_task)).await;
        let mut entries = match listed {
            Ok(Ok(entries)) => entries,
            Ok(Err(message)) => return ToolOutput::error(message),
            Err(error) => return ToolOutput::error(format!("listing {shown} failed: {error}")),
        };
        let total = entries.len();
        entries.truncate(MAX_ENTRIES);
        let mut text = String::new();
        let mut included = 0;
        for entry in &entries {
            if text.len() + entry.len() + 1 > OUTPUT_CAP {
                break;
            }
            text.push_str(entry);
            text.push('\n');
            included += 1;
        }
        let truncated = included < total;
        if total == 0 {
            text.push_str("[empty directory]");
        } else if truncated {
            text.push_str(&format!(
                "[showing {included} of {total} entries; use find_path or shell_exec to narrow the listing]"
            ));
        } else {
            text.pop();
        }
        ToolOutput::text(text).with_details(json!({
            "path": shown,
            "entries": total,
            "truncated": truncated,
        }))
    }
}

/// The entry names of `dir`, sorted, folders (and links to folders) with a trailing '/'.
fn list(dir: &Path, shown: &str) -> Result<Vec<String>, String> {
    let metadata = std::fs::metadata(dir).map_err(|error| paths::describe_io("list", shown, &error))?;
    if !metadata.is_dir() {
        return Err(format!(
            "cannot list {shown}: it is a file, not a directory (use read_file to read it)"
        ));
    }
    let reader = std::fs::read_dir(dir).map_err(|error| paths::describe_io("list", shown, &error))?;
    let mut entries = Vec::new();
    for entry in reader {
        let entry = entry.map_err(|error| paths::describe_io("list", shown, &error))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        // `metadata` follows links, so a link to a folder is shown as a folder.
        if std::fs::metadata(entry.path()).is_ok_and(|metadata| metadata.is_dir()) {
            name.push('/');
        }
        entries.push(name);
    }
    entries.sort();
    Ok(entries)
}
