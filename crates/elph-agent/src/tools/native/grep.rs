//! `grep`: search file contents with a regular expression, recursively, as `path:line:text`.

use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::beneath::{self, OpenError, Place};
use super::bounded::{self, Budget, Ended};
use super::paths::{self, Shown};
use super::walk::{self, Filters, FirstInOrder, PathGlob, Tally};
use super::{OUTPUT_CAP, truncate_at_boundary};
use crate::tools::{PathAccess, ToolContext, ToolKind, ToolOutput, TypedTool, one_line};

pub struct Grep;

const DEFAULT_MAX_RESULTS: usize = 200;
const MAX_MAX_RESULTS: u64 = 5000;
/// Longer matching lines are cut to this many bytes.
const MAX_LINE_BYTES: usize = 400;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The regular expression to search for (Rust regex syntax; escape literal characters such as
    /// ( [ . * with a backslash).
    #[schemars(length(min = 1))]
    pattern: String,
    /// The folder to search recursively, or a single file: relative to the project folder, or
    /// absolute. Default: "." (the project folder).
    #[serde(default)]
    #[schemars(length(min = 1))]
    path: Option<String>,
    /// Only search files whose name matches this glob ("*.rs"), or, if it contains '/', whose
    /// path from `path` matches it ("src/**/*.rs").
    #[serde(default)]
    #[schemars(length(min = 1))]
    glob: Option<String>,
    /// Ignore letter case. Default: false.
    #[serde(default)]
    case_insensitive: bool,
    /// Stop after this many matching lines. Default: 200.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_MAX_RESULTS))]
    max_results: Option<u64>,
    /// Also search files that .gitignore, .ignore or .git/info/exclude leave out (build output,
    /// virtual environments, dependencies). Default: false.
    #[serde(default)]
    include_ignored: bool,
    /// Also search hidden files and folders (names starting with '.'); .git itself is never
    /// searched. Default: false.
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
impl TypedTool for Grep {
    type Args = Args;

    fn name(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        "Search file contents for a regular expression (Rust regex syntax, like ripgrep), \
         recursively from a folder or in one file. Prints one `path:line:text` line per matching \
         line, in path order. Like ripgrep, it skips what .gitignore, .ignore and \
         .git/info/exclude leave out, hidden files and folders, and binary files; set \
         `include_ignored` or `include_hidden` to search those too. Never searches .git, special \
         files (FIFOs, sockets, devices), or /proc, /sys and /dev unless the search starts there. \
         Use `glob` to limit the files searched (for example \"*.rs\" or \"src/**/*.ts\"). A \
         search that runs past the read tools' deadline returns what it found by then."
    }

    fn mutates(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn title(&self, args: &Args) -> String {
        format!("Search for {}", one_line(&args.pattern))
    }

    fn accesses(&self, args: &Args) -> Vec<PathAccess> {
        vec![PathAccess::read(args.path())]
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> ToolOutput {
        // As ripgrep builds it: a line never contains its terminator, which lets the search
        // look for the pattern's literals first and confirm only the lines that hold them.
        let matcher = match RegexMatcherBuilder::new()
            .case_insensitive(args.case_insensitive)
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
        {
            Ok(matcher) => matcher,
            Err(error) => return ToolOutput::error(format!("invalid regular expression: {error}")),
        };
        let glob = match args.glob.as_deref().map(PathGlob::new).transpose() {
            Ok(glob) => glob,
            Err(message) => return ToolOutput::error(message),
        };
        let max_results = args
            .max_results
            .map_or(DEFAULT_MAX_RESULTS, |max| max.clamp(1, MAX_MAX_RESULTS) as usize);
        let shown = args.path().to_string();
        let place = match paths::place_for_read(ctx, TypedTool::name(self), &shown) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
        let search = Arc::new(Search {
            matcher,
            glob,
            filters: Filters {
                include_ignored: args.include_ignored,
                include_hidden: args.include_hidden,
            },
            // One more than shown, to know that there were more.
            found: FirstInOrder::new(max_results + 1),
            tally: Tally::default(),
        });
        let task = search.clone();
        let task_shown = shown.clone();
        let ended = bounded::run(ctx.read_deadline, move |budget| {
            task.run(&place, &task_shown, budget)
        })
        .await;
        let found = Found {
            lines: search.found.take(),
            counts: search.tally.counts(),
            max_results,
        };
        match ended {
            Ok(Ended::Finished) => found.into_output(&shown, None),
            Ok(Ended::Deadline) => found.into_output(&shown, Some(ctx.read_deadline)),
            Err(message) => ToolOutput::error(message),
        }
    }
}

/// One matching line: its number and its text (cut, lossily decoded).
type Line = (u64, String);

struct Search {
    matcher: RegexMatcher,
    glob: Option<PathGlob>,
    filters: Filters,
    /// The matching lines by path below the root (the empty path for a single file): shared with
    /// the caller, which takes what is there when the deadline passes.
    found: FirstInOrder<Line>,
    tally: Tally,
}

impl Search {
    fn run(&self, place: &Place, shown: &str, budget: &Budget) -> Result<(), String> {
        match beneath::is_dir(place) {
            Ok(Some(true)) => {}
            Ok(Some(false)) => {
                return match beneath::open_regular(place) {
                    Err(OpenError::Special) => Err(format!(
                        "cannot search {shown}: it is a special file (a FIFO, socket or device), \
                         neither a regular file nor a directory"
                    )),
                    Err(OpenError::Io(error)) => Err(paths::describe_io("search", shown, &error)),
                    opened => {
                        self.search_file(&mut searcher(), opened, PathBuf::new(), budget);
                        Ok(())
                    }
                };
            }
            Ok(None) => {
                let missing = io::Error::from(io::ErrorKind::NotFound);
                return Err(paths::describe_io("search", shown, &missing));
            }
            Err(error) => return Err(paths::describe_io("search", shown, &error)),
        }
        let root = place.real();
        walk::walker(root, self.filters).run(|| {
            let mut searcher = searcher();
            Box::new(move |entry| {
                if budget.exhausted() {
                    return WalkState::Quit;
                }
                let (kind, relative) =
                    match walk::below_root(&entry, root, &self.tally, |relative| self.found.beyond(relative))
                    {
                        Ok(admitted) => admitted,
                        Err(state) => return state,
                    };
                if kind.is_dir() || kind.is_symlink() {
                    return WalkState::Continue;
                }
                if !kind.is_file() {
                    self.tally.special();
                    return WalkState::Continue;
                }
                if self.glob.as_ref().is_some_and(|glob| !glob.matches(relative)) {
                    return WalkState::Continue;
                }
                // Opened beneath the judged root, never by the walk's path: a link swapped in
                // anywhere on the way makes the open fail instead of leading elsewhere.
                let opened = beneath::open_found_file(&place.below(relative));
                self.search_file(&mut searcher, opened, relative.to_path_buf(), budget);
                WalkState::Continue
            })
        });
        Ok(())
    }

    /// Searches one opened file and keeps its matching lines under `relative`.
    fn search_file(
        &self,
        searcher: &mut Searcher,
        opened: Result<std::fs::File, OpenError>,
        relative: PathBuf,
        budget: &Budget,
    ) {
        let file = match opened {
            Ok(file) => file,
            Err(OpenError::Special) => return self.tally.special(),
            Err(OpenError::Directory) => return,
            Err(OpenError::Io(_)) => return self.tally.unreadable(),
        };
        let mut lines = Lines {
            lines: Vec::new(),
            // No file needs more lines than can be shown, plus one to know there were more.
            limit: self.found.limit(),
            binary: false,
            budget,
        };
        let searched = searcher.search_reader(&self.matcher, Budgeted { file, budget }, &mut lines);
        if searched.is_err() && !budget.exhausted() {
            self.tally.unreadable();
        }
        if !lines.binary {
            self.found.add(relative, lines.lines);
        }
    }
}

/// A searcher as ripgrep sets one up for a recursive search: line numbers, and a file with a NUL
/// byte is binary and left (its lines are not reported).
fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\0'))
        .build()
}

/// A file read under the budget: a read after the deadline or a cancellation fails, which ends
/// the search of one huge file as it ends the walk.
struct Budgeted<'a> {
    file: std::fs::File,
    budget: &'a Budget,
}

impl Read for Budgeted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.budget.exhausted() {
            return Err(io::Error::other("the search was stopped"));
        }
        self.file.read(buf)
    }
}

/// Collects one file's matching lines.
struct Lines<'a> {
    lines: Vec<Line>,
    limit: usize,
    binary: bool,
    budget: &'a Budget,
}

impl Sink for Lines<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let content = trim_line_end(found.bytes());
        let mut text = String::from_utf8_lossy(content).into_owned();
        if truncate_at_boundary(&mut text, MAX_LINE_BYTES) {
            text.push_str(" […]");
        }
        self.lines.push((found.line_number().unwrap_or(0), text));
        Ok(self.lines.len() < self.limit && !self.budget.exhausted())
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// What the search found, in path order, and what it passed over.
struct Found {
    lines: Vec<(PathBuf, Vec<Line>)>,
    /// Unreadable files or folders, and special files.
    counts: (usize, usize),
    max_results: usize,
}

impl Found {
    /// The result; `deadline` when it passed before the search finished. `shown` is the searched
    /// path as the model gave it.
    fn into_output(self, shown: &str, deadline: Option<Duration>) -> ToolOutput {
        let show = Shown::new(shown);
        let mut text = String::new();
        let (mut matches, mut files) = (0, 0);
        let (mut hit_max, mut hit_cap) = (false, false);
        'files: for (relative, lines) in &self.lines {
            let path = if relative.as_os_str().is_empty() {
                shown.to_string()
            } else {
                show.show(&walk::shown_relative(relative))
            };
            let mut counted = false;
            for (number, line) in lines {
                if matches >= self.max_results {
                    hit_max = true;
                    break 'files;
                }
                let entry = format!("{path}:{number}:{line}\n");
                if text.len() + entry.len() > OUTPUT_CAP {
                    hit_cap = true;
                    break 'files;
                }
                text.push_str(&entry);
                matches += 1;
                if !counted {
                    counted = true;
                    files += 1;
                }
            }
        }
        let truncated = hit_max || hit_cap || deadline.is_some();
        if let Some(deadline) = deadline {
            if matches == 0 {
                text.push_str("No matches found before the deadline.\n");
            }
            text.push_str(&bounded::deadline_note(deadline));
        } else if matches == 0 {
            text.push_str("No matches found.");
        } else if hit_max {
            text.push_str(&format!(
                "[stopped after {} matches; narrow the pattern, path or glob, or raise max_results]",
                self.max_results
            ));
        } else if hit_cap {
            text.push_str(&format!(
                "[output truncated at 64 KiB after {matches} matches; narrow the pattern, path or glob]"
            ));
        } else {
            text.pop();
        }
        let (unreadable, special) = self.counts;
        if unreadable > 0 {
            text.push_str(&format!("\n[{unreadable} files or folders could not be read]"));
        }
        if special > 0 {
            text.push_str(&format!(
                "\n[{special} special files (FIFOs, sockets, devices) were skipped]"
            ));
        }
        bounded::mark_deadline(
            ToolOutput::text(text).with_details(json!({
                "matches": matches,
                "files": files,
                "truncated": truncated,
            })),
            deadline.is_some(),
        )
    }
}
