//! `find_path`: the paths below a folder that match a glob, sorted and capped.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::OUTPUT_CAP;
use super::beneath::{self, Place};
use super::bounded::{self, Budget, Ended};
use super::paths::{self, Shown};
use super::walk::{self, Flow, Kind, PathGlob};
use crate::tools::{PathAccess, ToolContext, ToolKind, ToolOutput, TypedTool};

pub struct FindPath;

/// The most paths one call returns.
const MAX_PATHS: usize = 1000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The pattern: * ? [abc] {a,b} and ** are supported.
    #[schemars(length(min = 1))]
    glob: String,
    /// The folder to search: relative to the project folder, or absolute. Default: "." (the
    /// project folder).
    #[serde(default)]
    #[schemars(length(min = 1))]
    path: Option<String>,
}

impl Args {
    /// The folder (or file) searched: the project folder unless given.
    fn path(&self) -> &str {
        self.path.as_deref().unwrap_or(".")
    }
}

#[async_trait::async_trait]
impl TypedTool for FindPath {
    type Args = Args;

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

    fn mutates(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn title(&self, args: &Args) -> String {
        format!("Find {}", args.glob)
    }

    fn accesses(&self, args: &Args) -> Vec<PathAccess> {
        vec![PathAccess::read(args.path())]
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> ToolOutput {
        let glob = match PathGlob::new(&args.glob) {
            Ok(glob) => glob,
            Err(message) => return ToolOutput::error(message),
        };
        let shown = args.path().to_string();
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
