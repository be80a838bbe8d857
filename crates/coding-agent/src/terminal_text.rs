//! The one function that makes user- or project-controlled text safe to show on a terminal.
//!
//! A folder name, a hook id, a field name in a hooks.json, a hook's reason or stderr: any of them can
//! hold escape sequences that retitle the window, erase the line that named the real path, or write to
//! the clipboard (OSC 52). Everything such text passes through [`escape`] (one line) or
//! [`escape_lines`] (keeps line breaks) before it reaches a terminal; control characters become visible
//! escapes such as `\e`, `\a`, `\x07` or `\u{202e}`. JSON output is never escaped: it is exact data.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` for one line of a terminal: every control character (C0, DEL, C1), line breaks included,
/// and every bidirectional-override character is written as a visible escape.
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    escape_keeping(text, |_| false)
}

/// Like [`escape`], but `\n` stays a line break (for stderr tails and multi-line messages).
pub(crate) fn escape_lines(text: &str) -> Cow<'_, str> {
    escape_keeping(text, |c| c == '\n')
}

/// A model's answer for a terminal: like [`escape_lines`], and tabs stay tabs (code in an answer
/// is indented with them). The answer is as untrusted as a hook's stderr: a prompt injection can
/// make the model write OSC 52 (the clipboard), a new window title, or a screen clear.
pub(crate) fn escape_answer(text: &str) -> Cow<'_, str> {
    escape_keeping(text, |c| c == '\n' || c == '\t')
}

/// [`escape`] of a path's display form.
pub(crate) fn escape_path(path: &std::path::Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

/// A writer for human-readable output that passes everything through [`escape_lines`]: the report
/// of `hooks list`, `hooks validate`, `hooks test`, `doctor` and `trust --status` is built from hook
/// ids, commands, args, reasons, stderr tails and paths, and this makes sure none of them reaches
/// the terminal raw, whichever line printed it.
pub(crate) struct Escaping<W: std::io::Write> {
    inner: W,
}

impl<W: std::io::Write> Escaping<W> {
    pub(crate) fn new(inner: W) -> Self {
        Escaping { inner }
    }
}

impl<W: std::io::Write> std::io::Write for Escaping<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // `write!` hands over whole `str` pieces, so a chunk never splits a character; bytes that are
        // not UTF-8 are shown as U+FFFD rather than passed on.
        let text = String::from_utf8_lossy(buf);
        self.inner.write_all(escape_lines(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `eprintln!` for text that may hold project-controlled parts: the line goes through [`escape_lines`].
pub(crate) fn eprint_line(text: &str) {
    use std::io::Write as _;
    // Never a panic when stderr is gone (a closed terminal after SIGHUP).
    let _ = writeln!(std::io::stderr().lock(), "{}", escape_lines(text));
}

fn escape_keeping(text: &str, keep: fn(char) -> bool) -> Cow<'_, str> {
    let escaped = |c: char| needs_escape(c) && !keep(c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !escaped(c) {
            out.push(c);
            continue;
        }
        match c {
            '\x1b' => out.push_str("\\e"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        // Bidirectional embeddings, overrides and isolates reorder what is shown ("Trojan Source").
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(escape("/home/me/code/shop ünï"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_become_visible() {
        let name = "repo\x1b]0;title\x07\x1b[2K\rSAFE-NAME";
        assert_eq!(escape(name), "repo\\e]0;title\\a\\e[2K\\rSAFE-NAME");
        assert_eq!(escape("a\x1b]52;c;ZXZpbA==\x07"), "a\\e]52;c;ZXZpbA==\\a");
        assert_eq!(escape("\u{9b}31m"), "\\x9b31m", "8-bit CSI");
        assert_eq!(escape("x\x7fy"), "x\\x7fy");
        assert_eq!(escape("abc\u{202e}fdp.exe"), "abc\\u{202e}fdp.exe");
    }

    #[test]
    fn the_writer_escapes_whatever_is_written() {
        use std::io::Write as _;
        let mut out = Escaping::new(Vec::new());
        let (id, reason) = ("a\x1b[2Jb", "reason\x07");
        writeln!(out, "hook {id}: {reason}").unwrap();
        assert_eq!(
            String::from_utf8(out.inner).unwrap(),
            "hook a\\e[2Jb: reason\\a\n"
        );
    }

    #[test]
    fn lines_keep_their_breaks_only_when_asked() {
        assert_eq!(escape("a\nb"), "a\\nb");
        assert_eq!(escape_lines("a\nb\x1b[31m"), "a\nb\\e[31m");
        assert_eq!(escape_lines("a\r\nb"), "a\\r\nb");
        assert_eq!(
            escape_answer("a\n\tb\x1b]0;t\x07\u{9b}2J"),
            "a\n\tb\\e]0;t\\a\\x9b2J"
        );
    }
}
