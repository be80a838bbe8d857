//! The trust question on the terminal: a small two-item select, drawn inline (no alternate screen).
//!
//! ```text
//! Do you trust the files in this folder?
//!
//!   /home/me/code/project
//!
//! Its .elph/ holds 2 hooks and 1 MCP server (no skills or prompt templates).
//! Trusting the folder lets Elph run its hooks and MCP servers as you, and load its skills and
//! prompt templates. Trust only folders whose contents you know.
//! "No" exits and records nothing: the next start here asks again.
//!
//! > 1. Yes, trust /home/me/code/project
//!   2. No, exit
//!
//! Up/Down to choose, Enter to confirm, Esc to exit
//! ```
//!
//! Every line is wrapped between words to the terminal's width, so the terminal never breaks one
//! in the middle of a word. Raw mode is on only while the question is asked, and a guard restores
//! the terminal on every way out: an answer, an error, or a panic.

use std::io::Write;
use std::path::Path;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::{Attribute, Print, SetAttribute};
use crossterm::{cursor, queue, terminal};

use super::Answer;
use crate::trust::contents::ProjectContents;

/// The select's state, apart from any terminal: which option is highlighted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TrustSelect {
    project: String,
    /// What changed since the project was trusted (escaped), when it is asked about again.
    changes: Vec<String>,
    /// 0: yes, 1: no.
    selected: usize,
}

impl TrustSelect {
    pub(crate) fn new(project: &Path) -> Self {
        TrustSelect {
            // A folder name can hold escape sequences that erase the line naming the real path.
            project: crate::terminal_text::escape_path(project),
            changes: Vec::new(),
            selected: 0,
        }
    }

    /// The question for a project that changed since it was trusted, listing what changed.
    pub(crate) fn with_changes(mut self, changes: &[String]) -> Self {
        self.changes = changes
            .iter()
            .map(|line| crate::terminal_text::escape(line).into_owned())
            .collect();
        self
    }

    pub(crate) fn options(&self) -> [String; 2] {
        [format!("Yes, trust {}", self.project), "No, exit".to_string()]
    }

    pub(crate) fn selected(&self) -> usize {
        self.selected
    }

    /// Applies one key; `Some` once the person has answered.
    pub(crate) fn handle(&mut self, key: KeyEvent) -> Option<Answer> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => Some(Answer::Interrupted),
            KeyCode::Char('d') if ctrl => Some(Answer::No),
            KeyCode::Esc => Some(Answer::No),
            KeyCode::Enter => Some(if self.selected == 0 {
                Answer::Yes
            } else {
                Answer::No
            }),
            KeyCode::Char('1' | 'y' | 'Y') => Some(Answer::Yes),
            KeyCode::Char('2' | 'n' | 'N' | 'q') => Some(Answer::No),
            KeyCode::Up | KeyCode::Char('k') | KeyCode::BackTab => {
                self.selected = (self.selected + 1) % 2;
                None
            }
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => {
                self.selected = (self.selected + 1) % 2;
                None
            }
            _ => None,
        }
    }

    /// The lines above the options, drawn once (before wrapping): the folder, what its `.elph/`
    /// holds, what changed since it was trusted (if it was), what trusting does, and what "No" does.
    pub(crate) fn header(&self, contents: &ProjectContents) -> Vec<String> {
        let mut lines = vec![
            "Do you trust the files in this folder?".to_string(),
            String::new(),
            format!("  {}", self.project),
            String::new(),
        ];
        if !self.changes.is_empty() {
            lines.push("It changed since you trusted it:".to_string());
            lines.extend(self.changes.iter().map(|change| format!("  - {change}")));
            lines.push("Its hooks and MCP servers stay off until you trust the new content.".to_string());
        }
        lines.push(crate::terminal_text::escape(&contents.sentence()).into_owned());
        if contents.is_empty() {
            lines.push(
                "Trusting it lets Elph run the hooks and MCP servers it gets later, as you; when they \
                 appear or change, Elph asks again first (unless \"trustPinning\" is false). Trust \
                 only folders whose contents you know."
                    .to_string(),
            );
        } else {
            lines.push(
                "Trusting it lets Elph run its hooks and MCP servers as you, and load its skills and \
                 prompt templates. Trust only folders whose contents you know."
                    .to_string(),
            );
        }
        if !contents.not_pinned.is_empty() {
            lines.push(
                "Trusting pins its hooks' and servers' files, so a change turns them off; it cannot pin:"
                    .to_string(),
            );
            lines.extend(
                contents
                    .not_pinned
                    .iter()
                    .map(|line| format!("  - {}", crate::terminal_text::escape(line))),
            );
        }
        lines.push("\"No\" exits and records nothing: the next start here asks again.".to_string());
        lines.push(String::new());
        lines
    }

    /// The options and the key help, redrawn on every change. Each line fits in `width` columns.
    pub(crate) fn body(&self, width: usize) -> Vec<String> {
        let mut lines: Vec<String> = self
            .options()
            .iter()
            .enumerate()
            .map(|(index, option)| {
                let marker = if index == self.selected { ">" } else { " " };
                fit(&format!("{marker} {}. {option}", index + 1), width)
            })
            .collect();
        lines.push(String::new());
        lines.extend(wrap_words(
            "Up/Down to choose, Enter to confirm, Esc to exit",
            width,
        ));
        lines
    }
}

/// Wraps `line` between words into rows narrower than `width` cells (the terminal wraps a row that
/// fills its last column). Continuation rows keep the line's indent (and a `- ` bullet's). A word
/// wider than a row (a long path) is cut where the row ends.
pub(crate) fn wrap_words(line: &str, width: usize) -> Vec<String> {
    use crate::tui::wrap::{char_width, width as cells};
    let room = width.saturating_sub(1).max(20);
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let rest_indent = if line.trim_start().starts_with("- ") {
        format!("{indent}  ")
    } else {
        indent.clone()
    };
    let mut rows = Vec::new();
    let mut row = indent;
    let mut words_in_row = 0;
    for word in line.split(' ').filter(|word| !word.is_empty()) {
        if words_in_row > 0 && cells(&row) + 1 + cells(word) > room {
            rows.push(std::mem::replace(&mut row, rest_indent.clone()));
            words_in_row = 0;
        }
        if words_in_row > 0 {
            row.push(' ');
        }
        for c in word.chars() {
            if cells(&row) + char_width(c) > room {
                rows.push(std::mem::replace(&mut row, rest_indent.clone()));
            }
            row.push(c);
        }
        words_in_row += 1;
    }
    rows.push(row);
    rows
}

/// Cuts `line` to fewer than `width` characters (so the terminal never wraps it), ending in `…`.
fn fit(line: &str, width: usize) -> String {
    let room = width.saturating_sub(1).max(8);
    if line.chars().count() <= room {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(room - 1).collect();
    cut.push('…');
    cut
}

/// Puts the terminal in raw mode and hides the cursor; dropping it undoes both.
struct RawMode;

impl RawMode {
    fn enable() -> std::io::Result<Self> {
        terminal::enable_raw_mode()?;
        let guard = RawMode;
        let mut out = std::io::stdout();
        queue!(out, cursor::Hide)?;
        out.flush()?;
        Ok(guard)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = queue!(out, cursor::Show);
        let _ = out.flush();
        let _ = terminal::disable_raw_mode();
    }
}

/// Asks on the terminal (stdin and stdout) whether to trust `project`.
pub(crate) fn ask_on_terminal(
    project: &Path,
    contents: &ProjectContents,
    changes: &[String],
) -> std::io::Result<Answer> {
    let color = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let mut select = TrustSelect::new(project).with_changes(changes);
    let _raw = RawMode::enable()?;
    let mut out = std::io::stdout().lock();
    let width = terminal_width();
    let rows = select
        .header(contents)
        .iter()
        .flat_map(|line| wrap_words(line, width))
        .collect::<Vec<_>>();
    for (index, line) in rows.iter().enumerate() {
        if index == 0 && color {
            queue!(
                out,
                SetAttribute(Attribute::Bold),
                Print(line),
                SetAttribute(Attribute::Reset),
                Print("\r\n")
            )?;
        } else {
            queue!(out, Print(line), Print("\r\n"))?;
        }
    }
    let mut drawn = draw(&mut out, &select, 0, color)?;
    let answer = loop {
        match crossterm::event::read()? {
            Event::Key(key) => {
                if let Some(answer) = select.handle(key) {
                    break answer;
                }
                drawn = draw(&mut out, &select, drawn, color)?;
            }
            Event::Resize(..) => drawn = draw(&mut out, &select, drawn, color)?,
            _ => {}
        }
    };
    // Leave the answer on screen in place of the options.
    queue!(
        out,
        cursor::MoveToPreviousLine(drawn),
        terminal::Clear(terminal::ClearType::FromCursorDown)
    )?;
    let width = terminal_width();
    let summary = match answer {
        Answer::Yes => fit(&format!("> {}", select.options()[0]), width),
        Answer::No | Answer::Interrupted => fit(&format!("> {}", select.options()[1]), width),
    };
    queue!(out, Print(summary), Print("\r\n"))?;
    out.flush()?;
    Ok(answer)
}

/// Redraws the body over the `previous` lines drawn last time; returns how many it drew.
fn draw(out: &mut impl Write, select: &TrustSelect, previous: u16, color: bool) -> std::io::Result<u16> {
    if previous > 0 {
        queue!(out, cursor::MoveToPreviousLine(previous))?;
    }
    queue!(
        out,
        cursor::MoveToColumn(0),
        terminal::Clear(terminal::ClearType::FromCursorDown)
    )?;
    let lines = select.body(terminal_width());
    for (index, line) in lines.iter().enumerate() {
        if index == select.selected() && color {
            queue!(
                out,
                SetAttribute(Attribute::Bold),
                Print(line),
                SetAttribute(Attribute::Reset),
                Print("\r\n")
            )?;
        } else {
            queue!(out, Print(line), Print("\r\n"))?;
        }
    }
    out.flush()?;
    Ok(lines.len() as u16)
}

fn terminal_width() -> usize {
    terminal::size().map(|(cols, _)| cols as usize).unwrap_or(80)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn enter_takes_the_highlighted_option_and_arrows_move() {
        let mut select = TrustSelect::new(Path::new("/p"));
        assert_eq!(select.options()[0], "Yes, trust /p");
        assert_eq!(select.handle(key(KeyCode::Down)), None);
        assert_eq!(select.selected(), 1);
        assert_eq!(select.handle(key(KeyCode::Enter)), Some(Answer::No));
        let mut select = TrustSelect::new(Path::new("/p"));
        select.handle(key(KeyCode::Down));
        select.handle(key(KeyCode::Up));
        assert_eq!(select.handle(key(KeyCode::Enter)), Some(Answer::Yes));
    }

    #[test]
    fn esc_is_no_and_ctrl_c_interrupts() {
        let mut select = TrustSelect::new(Path::new("/p"));
        assert_eq!(select.handle(key(KeyCode::Esc)), Some(Answer::No));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(select.handle(ctrl_c), Some(Answer::Interrupted));
        assert_eq!(select.handle(key(KeyCode::Char('c'))), None);
        assert_eq!(select.handle(key(KeyCode::Char('y'))), Some(Answer::Yes));
        assert_eq!(select.handle(key(KeyCode::Char('2'))), Some(Answer::No));
    }

    #[test]
    fn lines_wrap_between_words_and_keep_their_indent() {
        let rows = wrap_words("  - file changed: .elph/hooks/a-very-long-script-name.sh now", 24);
        assert_eq!(
            rows,
            [
                "  - file changed:",
                "    .elph/hooks/a-very-",
                "    long-script-name.sh",
                "    now"
            ]
        );
        assert!(rows.iter().all(|row| row.chars().count() < 24));
        assert_eq!(wrap_words("", 40), [""]);
        assert_eq!(wrap_words("one two", 40), ["one two"]);
    }

    #[test]
    fn the_body_marks_the_selection_and_never_wraps() {
        let select = TrustSelect::new(Path::new("/a/very/long/path/to/some/project/folder"));
        let body = select.body(30);
        assert!(body[0].starts_with("> 1. Yes, trust /a/very"), "{body:?}");
        assert!(body[1].starts_with("  2. No, exit"));
        assert!(body.iter().all(|line| line.chars().count() < 30), "{body:?}");
        assert!(body[0].ends_with('…'));
    }
}
