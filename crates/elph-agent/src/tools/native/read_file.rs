//! `read_file`: a text file's contents, or a window of its lines, bounded to `OUTPUT_CAP` bytes.

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::OUTPUT_CAP;
use super::beneath::{self, OpenError, Place};
use super::bounded::{self, Budget, Ended};
use super::paths::{self, BINARY_SNIFF_BYTES};
use crate::tools::{PathAccess, ToolContext, ToolKind, ToolOutput, TypedTool};

pub struct ReadFile;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to read: relative to the project folder, or absolute.
    #[schemars(length(min = 1))]
    path: String,
    /// The first line to return, counting from 1. Default: 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// The most lines to return. Default: as many as fit in 64 KiB.
    #[serde(default)]
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

#[async_trait::async_trait]
impl TypedTool for ReadFile {
    type Args = Args;

    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read a text file and return its contents exactly as they are (no line numbers added). \
         Use `offset` and `limit` to read a window of lines from a long file. At most 64 KiB is \
         returned per call; when more remains, a final bracketed note says which `offset` to \
         continue from. Binary files, directories and special files (FIFOs, sockets, devices) are \
         refused (use list_dir for directories)."
    }

    fn mutates(&self) -> bool {
        false
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, args: &Args) -> String {
        format!("Read {}", args.path)
    }

    fn accesses(&self, args: &Args) -> Vec<PathAccess> {
        vec![PathAccess::read(&args.path)]
    }

    async fn run(&self, args: Args, ctx: &ToolContext) -> ToolOutput {
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.map(|limit| limit.max(1));
        let place = match paths::place_for_read(ctx, self.name(), &args.path) {
            Ok(place) => place,
            Err(refusal) => return ToolOutput::error(refusal),
        };
        if let Some(editor) = ctx.editor.as_ref().filter(|editor| editor.reads()) {
            return match editor.read_text(place.real()).await {
                Ok(text) => from_editor(&args.path, &text, offset, limit),
                Err(error) => {
                    ToolOutput::error(format!("cannot read {}: the editor says: {error}", args.path))
                }
            };
        }
        let shown = args.path.clone();
        let window = Arc::new(Mutex::new(Window::new(offset, limit, OUTPUT_CAP)));
        let task_window = window.clone();
        let ended = bounded::run(ctx.read_deadline, move |budget| {
            read_window(&place, &shown, offset, budget, &task_window)
        })
        .await;
        let window = std::mem::take(&mut *bounded::lock(&window));
        match ended {
            Ok(Ended::Finished) => window.into_output(&args.path, offset, None),
            Ok(Ended::Deadline) => window.into_output(&args.path, offset, Some(ctx.read_deadline)),
            Err(message) => ToolOutput::error(message),
        }
    }
}

/// The window of a file's text as the editor has it, bounded and noted as a read from the disk is.
fn from_editor(path: &str, text: &str, offset: u64, limit: Option<u64>) -> ToolOutput {
    if paths::looks_binary(text.as_bytes()) {
        return ToolOutput::error(format!(
            "cannot read {path}: it looks like a binary file ({} bytes); read_file only shows text",
            text.len()
        ));
    }
    let mut window = Window::new(offset, limit, OUTPUT_CAP);
    window.feed(text.as_bytes());
    window.into_output(path, offset, None)
}

/// The lines of one file selected by offset and limit, as far as they fit in the cap.
#[derive(Debug, Default)]
struct Window {
    offset: u64,
    limit: Option<u64>,
    cap: usize,
    /// The line the next byte belongs to (1-based).
    line: u64,
    /// Whether bytes of `line` have been seen.
    in_line: bool,
    /// Where the current line begins in `out`.
    line_start: usize,
    out: Vec<u8>,
    /// Lines (whole or, for a single line over the cap, partial) in `out`.
    shown: u64,
    /// The cap cut the output.
    cut: bool,
    /// No more bytes are wanted; `next_offset` says where the rest begins.
    done: bool,
    next_offset: Option<u64>,
}

impl Window {
    fn new(offset: u64, limit: Option<u64>, cap: usize) -> Self {
        Window {
            offset,
            limit,
            cap,
            line: 1,
            ..Window::default()
        }
    }

    fn feed(&mut self, mut chunk: &[u8]) {
        while !chunk.is_empty() && !self.done {
            let (piece, rest, ends_line) = match chunk.iter().position(|&byte| byte == b'\n') {
                Some(at) => (&chunk[..=at], &chunk[at + 1..], true),
                None => (chunk, &[][..], false),
            };
            if self.line >= self.offset {
                if !self.in_line {
                    if self.limit.is_some_and(|limit| self.shown >= limit) {
                        self.done = true;
                        self.next_offset = Some(self.line);
                        return;
                    }
                    self.shown += 1;
                    self.line_start = self.out.len();
                }
                let room = self.cap - self.out.len();
                if piece.len() > room {
                    self.cut = true;
                    self.done = true;
                    if self.shown > 1 {
                        // Keep whole lines only: the cut line is where the next call begins.
                        self.out.truncate(self.line_start);
                        self.shown -= 1;
                        self.next_offset = Some(self.line);
                    } else {
                        // A single line longer than the cap: show its beginning.
                        self.out.extend_from_slice(&piece[..room]);
                        self.next_offset = Some(self.line + 1);
                    }
                    return;
                }
                self.out.extend_from_slice(piece);
            }
            self.in_line = !ends_line;
            if ends_line {
                self.line += 1;
            }
            chunk = rest;
        }
    }

    /// The number of lines in the file, once it was read to the end.
    fn total_lines(&self) -> u64 {
        if self.in_line { self.line } else { self.line - 1 }
    }

    /// The result; `deadline` when it passed before the read finished.
    fn into_output(self, path: &str, offset: u64, deadline: Option<Duration>) -> ToolOutput {
        let mut text = String::from_utf8_lossy(&self.out).into_owned();
        let next_line = if self.in_line { self.line + 1 } else { self.line };
        let note = match (self.next_offset, self.cut) {
            _ if deadline.is_some() => Some(format!(
                "{}\n[continue with offset={}]",
                bounded::deadline_note(deadline.unwrap_or_default()),
                next_line.max(offset)
            )),
            (Some(next), true) if self.shown == 1 && next == offset + 1 => Some(format!(
                "[line {offset} alone is longer than 64 KiB and was cut; continue with offset={next}, \
                 or use shell_exec (e.g. `cut -c`) to see the rest of that line]"
            )),
            (Some(next), true) => Some(format!(
                "[output truncated at 64 KiB; continue with offset={next}]"
            )),
            (Some(next), false) => Some(format!("[more lines follow; continue with offset={next}]")),
            (None, _) if text.is_empty() => Some("[empty file]".to_string()),
            (None, _) => None,
        };
        if let Some(note) = note {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&note);
        }
        bounded::mark_deadline(
            ToolOutput::text(text).with_details(json!({
                "path": path,
                "offset": offset,
                "lines": self.shown,
                "truncated": self.cut || deadline.is_some(),
                "nextOffset": self.next_offset,
            })),
            deadline.is_some(),
        )
    }
}

/// Reads the window into `shared` until it is complete, the file ends, or the budget is spent.
fn read_window(
    place: &Place,
    shown: &str,
    offset: u64,
    budget: &Budget,
    shared: &Mutex<Window>,
) -> Result<(), String> {
    let mut file = match beneath::open_regular(place) {
        Ok(file) => file,
        Err(OpenError::Io(error)) => return Err(paths::describe_io("read", shown, &error)),
        Err(OpenError::Directory) => {
            return Err(format!(
                "cannot read {shown}: it is a directory (use list_dir to see its entries)"
            ));
        }
        Err(OpenError::Special) => {
            return Err(format!(
                "cannot read {shown}: it is a special file (a FIFO, socket or device), not a regular \
                 file; reading it could block or never end"
            ));
        }
    };
    let size = file.metadata().map(|metadata| metadata.len()).unwrap_or(0);
    let mut buf = vec![0u8; 64 * 1024];
    let mut first = true;
    loop {
        if budget.exhausted() {
            return Ok(());
        }
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(format!(
                    "cannot read {shown}: it has nothing to read now and would wait for more (a \
                     kernel or device file); read_file never waits"
                ));
            }
            Err(error) => return Err(paths::describe_io("read", shown, &error)),
        };
        if first {
            first = false;
            if paths::looks_binary(&buf[..n.min(BINARY_SNIFF_BYTES)]) {
                return Err(format!(
                    "cannot read {shown}: it looks like a binary file ({size} bytes); read_file only shows text"
                ));
            }
        }
        let mut window = bounded::lock(shared);
        window.feed(&buf[..n]);
        if window.done {
            return Ok(());
        }
    }
    let window = bounded::lock(shared);
    let total = window.total_lines();
    if offset > 1 && offset > total {
        return Err(format!(
            "offset {offset} is past the end of {shown}, which has {total} lines"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(text: &str, offset: u64, limit: Option<u64>, cap: usize, chunk: usize) -> Window {
        let mut window = Window::new(offset, limit, cap);
        for piece in text.as_bytes().chunks(chunk) {
            window.feed(piece);
        }
        window
    }

    #[test]
    fn whole_file_in_any_chunking() {
        for chunk in [1, 2, 3, 100] {
            let w = window("a\nbb\nccc\n", 1, None, 1000, chunk);
            assert_eq!(w.out, b"a\nbb\nccc\n");
            assert_eq!((w.shown, w.total_lines(), w.next_offset), (3, 3, None));
        }
    }

    #[test]
    fn offset_and_limit_select_lines() {
        for chunk in [1, 4, 100] {
            let w = window("1\n2\n3\n4\n5", 2, Some(2), 1000, chunk);
            assert_eq!(w.out, b"2\n3\n");
            assert_eq!((w.shown, w.next_offset), (2, Some(4)));
            let tail = window("1\n2\n3\n4\n5", 4, Some(10), 1000, chunk);
            assert_eq!(tail.out, b"4\n5");
            assert_eq!((tail.shown, tail.total_lines(), tail.next_offset), (2, 5, None));
        }
    }

    #[test]
    fn limit_exactly_at_the_end_has_no_next_offset() {
        let w = window("1\n2\n", 1, Some(2), 1000, 100);
        assert_eq!((w.shown, w.next_offset), (2, None));
    }

    #[test]
    fn the_cap_keeps_whole_lines() {
        let w = window("aaaa\nbbbb\ncccc\n", 1, None, 12, 3);
        assert_eq!(w.out, b"aaaa\nbbbb\n");
        assert!(w.cut);
        assert_eq!((w.shown, w.next_offset), (2, Some(3)));
    }

    #[test]
    fn a_single_long_line_is_cut() {
        let w = window("xxxxxxxxxx\nshort\n", 1, None, 4, 100);
        assert_eq!(w.out, b"xxxx");
        assert!(w.cut);
        assert_eq!((w.shown, w.next_offset), (1, Some(2)));
    }
}
