//! `find_path`: the paths below a folder that match a glob, sorted and capped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::OUTPUT_CAP;
use super::beneath::{self, Place};
use super::bounded::{self, Budget, Ended};
use super::paths::{self, Shown};
use super::walk::{self, Filters, FirstInOrder, PathGlob, Tally};
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
    /// Also find what .gitignore, .ignore or .git/info/exclude leave out (build output, virtual
    /// environments, dependencies). Default: false.
    #[serde(default)]
    include_ignored: bool,
    /// Also find hidden files and folders (names starting with '.'); nothing inside .git is ever
    /// found. Default: false.
    #[serde(default)]
    include_hidden: bool,
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
         Returns sorted paths, folders with a trailing '/', at most 1000. Like ripgrep, it leaves \
         out what .gitignore, .ignore and .git/info/exclude ignore, and hidden files and folders; \
         set `include_ignored` or `include_hidden` to find those too. Never lists .git's contents \
         or special files (FIFOs, sockets, devices), and enters /proc, /sys and /dev only when the \
         search starts there. A search that runs past the read tools' deadline returns what it \
         found by then."
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
        let walked = Arc::new(Walked {
            glob,
            filters: Filters {
                include_ignored: args.include_ignored,
                include_hidden: args.include_hidden,
            },
            // One more than shown, to know that there were more.
            paths: FirstInOrder::new(MAX_PATHS + 1),
            tally: Tally::default(),
            checked: AtomicBool::new(false),
        });
        let task = walked.clone();
        let task_shown = shown.clone();
        let ended = bounded::run(ctx.read_deadline, move |budget| {
            task.find(&place, &task_shown, budget)
        })
        .await;
        let deadline_reached = match ended {
            Ok(ended) => ended == Ended::Deadline,
            Err(message) => return ToolOutput::error(message),
        };
        let (unreadable, special) = walked.tally.counts();
        let show = Shown::new(&shown);
        // Paths not yet checked beneath the root (a walk stuck past the deadline) are not shown.
        let checked = walked.checked.load(Ordering::Relaxed);
        let mut found: Vec<String> = walked
            .paths
            .take()
            .into_iter()
            .filter(|_| checked)
            .map(|(relative, is_dir)| {
                let mut path = show.show(&walk::shown_relative(&relative));
                if is_dir.first().copied().unwrap_or(false) {
                    path.push('/');
                }
                path
            })
            .collect();
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

/// One walk's question and what it found so far (shared with the caller for the deadline).
struct Walked {
    glob: PathGlob,
    filters: Filters,
    /// The first matching paths below the root, each with whether it is a folder.
    paths: FirstInOrder<bool>,
    tally: Tally,
    /// Set once every path kept was checked to be there beneath the judged root.
    checked: AtomicBool,
}

impl Walked {
    fn find(&self, place: &Place, shown: &str, budget: &Budget) -> Result<(), String> {
        match beneath::is_dir(place) {
            Ok(Some(true)) => {}
            Ok(Some(false)) => return Err(format!("cannot search {shown}: it is a file, not a directory")),
            Ok(None) => {
                let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
                return Err(paths::describe_io("search", shown, &missing));
            }
            Err(error) => return Err(paths::describe_io("search", shown, &error)),
        }
        let root = place.real();
        walk::walker(root, self.filters).run(|| {
            Box::new(move |entry| {
                if budget.exhausted() {
                    return WalkState::Quit;
                }
                let (kind, relative) =
                    match walk::below_root(&entry, root, &self.tally, |relative| self.paths.beyond(relative))
                    {
                        Ok(admitted) => admitted,
                        Err(state) => return state,
                    };
                if !self.glob.matches(relative) {
                    return WalkState::Continue;
                }
                if !(kind.is_dir() || kind.is_file() || kind.is_symlink()) {
                    self.tally.special();
                    return WalkState::Continue;
                }
                self.paths.add(relative.to_path_buf(), vec![kind.is_dir()]);
                WalkState::Continue
            })
        });
        // The walk lists folders by their paths; a folder swapped for a link during it could have
        // listed names from elsewhere. Only paths that are there beneath the judged root, with no
        // link on the way, are shown.
        self.paths.retain(|relative| {
            let there = matches!(beneath::is_dir(&place.below(relative)), Ok(Some(_)));
            if !there {
                self.tally.unreadable();
            }
            there
        });
        self.checked.store(true, Ordering::Relaxed);
        Ok(())
    }
}
