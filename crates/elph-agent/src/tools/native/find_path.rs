//! `find_path`: the paths below a folder that match a glob, sorted and capped.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::{self, Shown};
use super::walk::{self, Cancel, Flow, Kind, PathGlob};
use super::{OUTPUT_CAP, parse_args};
use crate::tools::{PathAccess, Tool, ToolContext, ToolOutput};

pub struct FindPath;

/// The most paths one call returns.
const MAX_PATHS: usize = 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    glob: String,
    #[serde(default)]
    path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for FindPath {
    fn name(&self) -> &str {
        "find_path"
    }

    fn description(&self) -> &str {
        "Find files and folders by name or path pattern, recursively. A glob without '/' matches \
         names at any depth (\"*.rs\", \"Cargo.toml\"); a glob with '/' matches the whole path from \
         `path` (\"src/**/*.rs\"), where `*` stays inside one folder and `**` crosses folders. \
         Returns sorted paths, folders with a trailing '/', at most 1000. Skips the .git, target \
         and node_modules folders."
    }

    fn input_schema(&self) -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "glob": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The pattern: * ? [abc] {a,b} and ** are supported."
                },
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The folder to search: relative to the project folder, or absolute. Default: \".\" (the project folder)."
                }
            },
            "required": ["glob"],
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
        let glob = match PathGlob::new(&args.glob) {
            Ok(glob) => glob,
            Err(message) => return ToolOutput::error(message),
        };
        let shown = args.path.unwrap_or_else(|| ".".to_string());
        let root = paths::resolve(ctx, &shown);
        let cancel = Cancel::default();
        let _stop_on_drop = cancel.on_drop();
        let task_shown = shown.clone();
        let found = tokio::task::spawn_blocking(move || find(&root, &task_shown, &glob, &cancel)).await;
        let (mut found, unreadable) = match found {
            Ok(Ok(found)) => found,
            Ok(Err(message)) => return ToolOutput::error(message),
            Err(error) => return ToolOutput::error(format!("searching {shown} failed: {error}")),
        };
        found.sort();
        let mut truncated = found.len() > MAX_PATHS;
        found.truncate(MAX_PATHS);
        let mut text = String::new();
        let mut count = 0;
        for path in &found {
            if text.len() + path.len() + 1 > OUTPUT_CAP {
                truncated = true;
                break;
            }
            text.push_str(path);
            text.push('\n');
            count += 1;
        }
        if count == 0 {
            let place = if shown == "." {
                "the project folder".to_string()
            } else {
                shown.clone()
            };
            text.push_str(&format!("No paths match {:?} in {place}.", args.glob));
        } else if truncated {
            text.push_str(&format!(
                "[stopped at {count} paths; narrow the glob or path to see the rest]"
            ));
        } else {
            text.pop();
        }
        if unreadable > 0 {
            text.push_str(&format!("\n[{unreadable} folders could not be read]"));
        }
        ToolOutput::text(text).with_details(json!({
            "path": shown,
            "matches": count,
            "truncated": truncated,
        }))
    }
}

/// Up to MAX_PATHS + 1 matching paths, as shown to the model, and how many folders were unreadable.
fn find(root: &Path, shown: &str, glob: &PathGlob, cancel: &Cancel) -> Result<(Vec<String>, usize), String> {
    let metadata = std::fs::metadata(root).map_err(|error| paths::describe_io("search", shown, &error))?;
    if !metadata.is_dir() {
        return Err(format!("cannot search {shown}: it is a file, not a directory"));
    }
    let show = Shown::new(shown);
    let mut found = Vec::new();
    let unreadable = walk::walk(root, cancel, &mut |entry| {
        if glob.matches(entry) {
            let mut path = show.show(&entry.relative);
            if entry.kind == Kind::Dir {
                path.push('/');
            }
            found.push(path);
            if found.len() > MAX_PATHS {
                return Flow::Stop;
            }
        }
        Flow::Continue
    });
    Ok((found, unreadable))
}
