//! `find_path`: the paths below a folder that match a glob, sorted and capped.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::beneath::{self, Place};
use super::bounded::{self, Budget, Ended};
use super::paths::{self, Shown};
use super::walk::{self, Flow, Kind, PathGlob};
use super::{OUTPUT_CAP, parse_args};
use crate::tools::{PathAccess, Tool, ToolContext, ToolKind, ToolOutput};

pub struct FindPath;

/// The most paths one call returns.
const MAX_PATHS: usize = 1000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The pattern: * ? [abc] {a,b} and ** are supported.
    #[schemars(length(min = 1))]
    glob: String,
    /// The folder to search: relative to the project folder, or absolute. Default: "." (the
    /// project folder).
    #[serde(default)]
    #[schemars(length(min = 1))]
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
         Returns sorted paths, folders with a trailing '/', at most 1000. Skips special files \
         (FIFOs, sockets, devices), the .git, target and node_modules folders, and /proc, /sys and \
         /dev unless the search starts there. A search that runs past the read tools' deadline \
         returns what it found by then."
    }

    fn input_schema(&self) -> Value {
        crate::tools::schema::input_schema::<Args>()
    }

    fn mutates(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn title(&self, input: &Value) -> String {
        format!("Find {}", input.get("glob").and_then(Value::as_str).unwrap_or(""))
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
        let place = match paths::place_for_read(ctx, self.name(), &shown) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
        let state = Arc::new(Mutex::new(Walked::default()));
        let task_state = state.clone();
        let task_shown = shown.clone();
        let ended = bounded::run(ctx.read_deadline, move |budget| {
            find(&place, &task_shown, &glob, budget, &task_state)
        })
        .await;
        let Walked {
            paths: mut found,
            unreadable,
            special,
        } = std::mem::take(&mut *bounded::lock(&state));
        let deadline_reached = match ended {
            Ok(ended) => ended == Ended::Deadline,
            Err(message) => return ToolOutput::error(message),
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
        if deadline_reached {
            if count == 0 {
                text.push_str("No matching paths found before the deadline.\n");
            }
            text.push_str(&bounded::deadline_note(ctx.read_deadline));
            truncated = true;
        } else if count == 0 {
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
        if special > 0 {
            text.push_str(&format!(
                "\n[{special} special files (FIFOs, sockets, devices) were left out]"
            ));
        }
        bounded::mark_deadline(
            ToolOutput::text(text).with_details(json!({
                "path": shown,
                "matches": count,
                "truncated": truncated,
            })),
            deadline_reached,
        )
    }
}

/// What the walk found so far (shared with the caller for the deadline).
#[derive(Default)]
struct Walked {
    /// Up to MAX_PATHS + 1 matching paths, as shown to the model.
    paths: Vec<String>,
    unreadable: usize,
    special: usize,
}

fn find(
    place: &Place,
    shown: &str,
    glob: &PathGlob,
    budget: &Budget,
    state: &Mutex<Walked>,
) -> Result<(), String> {
    match beneath::is_dir(place) {
        Ok(Some(true)) => {}
        Ok(Some(false)) => return Err(format!("cannot search {shown}: it is a file, not a directory")),
        Ok(None) => {
            let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
            return Err(paths::describe_io("search", shown, &missing));
        }
        Err(error) => return Err(paths::describe_io("search", shown, &error)),
    }
    let dir = beneath::open_dir(place).map_err(|error| paths::describe_io("search", shown, &error))?;
    let show = Shown::new(shown);
    let unreadable = walk::walk(place.real(), dir, budget, &mut |entry| {
        if !glob.matches(entry) {
            return Flow::Continue;
        }
        let mut walked = bounded::lock(state);
        if entry.kind == Kind::Other {
            walked.special += 1;
            return Flow::Continue;
        }
        let mut path = show.show(&entry.relative);
        if entry.kind == Kind::Dir {
            path.push('/');
        }
        walked.paths.push(path);
        if walked.paths.len() > MAX_PATHS {
            return Flow::Stop;
        }
        Flow::Continue
    });
    bounded::lock(state).unreadable = unreadable;
    Ok(())
}
