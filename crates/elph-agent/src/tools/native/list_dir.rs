//! `list_dir`: the entries of one folder, sorted, folders marked with a trailing '/'.

use std::os::fd::AsFd as _;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::beneath::{self, EntryKind, Place};
use super::bounded::{self, Budget, Ended};
use super::{OUTPUT_CAP, paths};
use crate::tools::{PathAccess, ToolContext, ToolKind, ToolOutput, TypedTool};

pub struct ListDir;

/// The most entries one call shows.
const MAX_ENTRIES: usize = 2000;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The folder to list: relative to the project folder, or absolute. Default: "." (the project
    /// folder).
    #[serde(default)]
    #[schemars(length(min = 1))]
    path: Option<String>,
}

impl Args {
    /// The folder listed: the project folder unless given.
    fn path(&self) -> &str {
        self.path.as_deref().unwrap_or(".")
    }
}

#[async_trait::async_trait]
impl TypedTool for ListDir {
    type Args = Args;

    fn name(&self) -> &str {
        "list_dir"
    }

    fn description(&self) -> &str {
        "List the entries of one folder (not recursive), one per line, sorted by name, with a \
         trailing '/' on folders. Hidden entries are included; special files (FIFOs, sockets, \
         devices) are left out and counted. Use find_path to search a whole tree by name."
    }

    fn mutates(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn title(&self, args: &Args) -> String {
        format!("List {}", args.path())
    }

    fn accesses(&self, args: &Args) -> Vec<PathAccess> {
        vec![PathAccess::read(args.path())]
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> ToolOutput {
        let shown = args.path().to_string();
        let place = match paths::place_for_read(ctx, self.name(), &shown) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
        let shown_for_task = shown.clone();
        let state = Arc::new(Mutex::new(Listed::default()));
        let task_state = state.clone();
        let ended = bounded::run(ctx.read_deadline, move |budget| {
            list(&place, &shown_for_task, budget, &task_state)
        })
        .await;
        let Listed { mut entries, special } = std::mem::take(&mut *bounded::lock(&state));
        let deadline_reached = match ended {
            Ok(ended) => ended == Ended::Deadline,
            Err(message) => return ToolOutput::error(message),
        };
        entries.sort();
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
        let truncated = included < total || deadline_reached;
        if deadline_reached {
            text.push_str(&bounded::deadline_note(ctx.read_deadline));
        } else if total == 0 && special == 0 {
            text.push_str("[empty directory]");
        } else if truncated {
            text.push_str(&format!(
                "[showing {included} of {total} entries; use find_path or shell_exec to narrow the listing]"
            ));
        } else {
            text.pop();
        }
        if special > 0 {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "[{special} special files (FIFOs, sockets, devices) not listed]"
            ));
        }
        bounded::mark_deadline(
            ToolOutput::text(text).with_details(json!({
                "path": shown,
                "entries": total,
                "truncated": truncated,
            })),
            deadline_reached,
        )
    }
}

/// What the listing found so far (shared with the caller for the deadline).
#[derive(Default)]
struct Listed {
    entries: Vec<String>,
    special: usize,
}

/// The entry names of the folder at `place`, folders (and links to folders) with a trailing '/',
/// special files only counted.
fn list(place: &Place, shown: &str, budget: &Budget, state: &Mutex<Listed>) -> Result<(), String> {
    match beneath::is_dir(place) {
        Ok(Some(true)) => {}
        Ok(Some(false)) => {
            return Err(format!(
                "cannot list {shown}: it is a file, not a directory (use read_file to read it)"
            ));
        }
        Ok(None) => {
            let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
            return Err(paths::describe_io("list", shown, &missing));
        }
        Err(error) => return Err(paths::describe_io("list", shown, &error)),
    }
    let dir = beneath::open_dir(place).map_err(|error| paths::describe_io("list", shown, &error))?;
    let entries = beneath::entries(&dir).map_err(|error| paths::describe_io("list", shown, &error))?;
    for (name, kind) in entries {
        if budget.exhausted() {
            break;
        }
        if kind == EntryKind::Other {
            bounded::lock(state).special += 1;
            continue;
        }
        let mut shown_name = name.to_string_lossy().into_owned();
        // A link to a folder is shown as a folder.
        if kind == EntryKind::Dir || (kind == EntryKind::Link && beneath::leads_to_dir(dir.as_fd(), &name)) {
            shown_name.push('/');
        }
        bounded::lock(state).entries.push(shown_name);
    }
    Ok(())
}
