//! `grep`: search file contents with a regular expression, recursively, as `path:line:text`.

use std::io::{BufRead, BufReader};
use std::os::fd::AsFd as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use regex::bytes::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::beneath::{self, OpenError, Place};
use super::bounded::{self, Budget, Ended};
use super::paths::{self, Shown};
use super::walk::{self, Flow, Kind, PathGlob};
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
         line, in path order. Skips binary files, special files (FIFOs, sockets, devices), the \
         .git, target and node_modules folders, and /proc, /sys and /dev unless the search starts \
         there. Use `glob` to limit the files searched (for example \"*.rs\" or \"src/**/*.ts\"). \
         A search that runs past the read tools' deadline returns what it found by then."
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
        let regex = match RegexBuilder::new(&args.pattern)
            .case_insensitive(args.case_insensitive)
            .build()
        {
            Ok(regex) => regex,
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
        let place = match paths::place_for_read(ctx, self.name(), &shown) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
        let search = Search {
            regex,
            glob,
            max_results,
            found: Arc::new(Mutex::new(Found {
                max_results,
                ..Found::default()
            })),
        };
        let found = search.found.clone();
        let task_shown = shown.clone();
        let ended = bounded::run(ctx.read_deadline, move |budget| {
            search.run(&place, &task_shown, budget)
        })
        .await;
        let found = std::mem::take(&mut *bounded::lock(&found));
        match ended {
            Ok(Ended::Finished) => found.into_output(None),
            Ok(Ended::Deadline) => found.into_output(Some(ctx.read_deadline)),
            Err(message) => ToolOutput::error(message),
        }
    }
}

struct Search {
    regex: Regex,
    glob: Option<PathGlob>,
    max_results: usize,
    /// Shared with the caller, which takes what is there when the deadline passes.
    found: Arc<Mutex<Found>>,
}

#[derive(Default)]
struct Found {
    text: String,
    matches: usize,
    files: usize,
    /// Stopped at max_results.
    hit_max: bool,
    /// Stopped at the output cap.
    hit_cap: bool,
    unreadable: usize,
    /// FIFOs, sockets and devices passed over.
    special: usize,
    max_results: usize,
}

/// Lines read between two looks at the budget.
const LINES_PER_CHECK: u64 = 256;

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
                        self.search_file(opened, shown, budget);
                        Ok(())
                    }
                };
            }
            Ok(None) => {
                let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
                return Err(paths::describe_io("search", shown, &missing));
            }
            Err(error) => return Err(paths::describe_io("search", shown, &error)),
        }
        let dir = beneath::open_dir(place).map_err(|error| paths::describe_io("search", shown, &error))?;
        let show = Shown::new(shown);
        let unreadable = walk::walk(place.real(), dir, budget, &mut |entry| {
            if entry.kind == Kind::Other {
                bounded::lock(&self.found).special += 1;
                return Flow::Continue;
            }
            if entry.kind != Kind::File || self.glob.as_ref().is_some_and(|glob| !glob.matches(entry)) {
                return Flow::Continue;
            }
            let opened = beneath::open_regular_in(entry.parent.as_fd(), Some(entry.file_name.as_os_str()));
            if self.search_file(opened, &show.show(&entry.relative), budget) {
                Flow::Continue
            } else {
                Flow::Stop
            }
        });
        bounded::lock(&self.found).unreadable += unreadable;
        Ok(())
    }

    /// Appends the matching lines of one opened file; false once no more results are wanted.
    fn search_file(&self, opened: Result<std::fs::File, OpenError>, shown: &str, budget: &Budget) -> bool {
        let file = match opened {
            Ok(file) => file,
            Err(OpenError::Special) => {
                bounded::lock(&self.found).special += 1;
                return true;
            }
            Err(OpenError::Directory) => return true,
            Err(OpenError::Io(_)) => {
                bounded::lock(&self.found).unreadable += 1;
                return true;
            }
        };
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        match reader.fill_buf() {
            Ok(head) if paths::looks_binary(head) => return true,
            Ok(_) => {}
            Err(_) => {
                bounded::lock(&self.found).unreadable += 1;
                return true;
            }
        }
        let mut line = Vec::new();
        let mut number = 0u64;
        let mut matched_here = false;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
            number += 1;
            if number.is_multiple_of(LINES_PER_CHECK) && budget.exhausted() {
                return false;
            }
            let content = trim_line_end(&line);
            if !self.regex.is_match(content) {
                continue;
            }
            let mut found = bounded::lock(&self.found);
            if found.matches >= self.max_results {
                found.hit_max = true;
                return false;
            }
            let mut text = String::from_utf8_lossy(content).into_owned();
            if truncate_at_boundary(&mut text, MAX_LINE_BYTES) {
                text.push_str(" […]");
            }
            let entry = format!("{shown}:{number}:{text}\n");
            if found.text.len() + entry.len() > OUTPUT_CAP {
                found.hit_cap = true;
                return false;
            }
            found.text.push_str(&entry);
            found.matches += 1;
            if !matched_here {
                matched_here = true;
                found.files += 1;
            }
            drop(found);
            if budget.cancel().is_set() {
                return false;
            }
        }
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl Found {
    /// The result; `deadline` when it passed before the search finished.
    fn into_output(mut self, deadline: Option<Duration>) -> ToolOutput {
        let truncated = self.hit_max || self.hit_cap || deadline.is_some();
        if let Some(deadline) = deadline {
            if self.matches == 0 {
                self.text.push_str("No matches found before the deadline.\n");
            }
            self.text.push_str(&bounded::deadline_note(deadline));
        } else if self.matches == 0 {
            self.text.push_str("No matches found.");
        } else if self.hit_max {
            self.text.push_str(&format!(
                "[stopped after {} matches; narrow the pattern, path or glob, or raise max_results]",
                self.max_results
            ));
        } else if self.hit_cap {
            self.text.push_str(&format!(
                "[output truncated at 64 KiB after {} matches; narrow the pattern, path or glob]",
                self.matches
            ));
        } else {
            self.text.pop();
        }
        if self.unreadable > 0 {
            self.text.push_str(&format!(
                "\n[{} files or folders could not be read]",
                self.unreadable
            ));
        }
        if self.special > 0 {
            self.text.push_str(&format!(
                "\n[{} special files (FIFOs, sockets, devices) were skipped]",
                self.special
            ));
        }
        bounded::mark_deadline(
            ToolOutput::text(self.text).with_details(json!({
                "matches": self.matches,
                "files": self.files,
                "truncated": truncated,
            })),
            deadline.is_some(),
        )
    }
}
