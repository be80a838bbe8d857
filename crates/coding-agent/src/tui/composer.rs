//! The multi-line input: a text buffer with a cursor, editing keys, and a history of what was sent.
//!
//! Enter is the caller's business (send, or run a palette entry); this module handles the rest:
//! Shift+Enter, Alt+Enter and Ctrl+J insert a line break, Up/Down move between lines and recall the
//! history at the first/last line, and the usual readline keys edit.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::wrap::char_width;

/// What a key did to the composer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edit {
    /// The text or the cursor changed.
    Changed,
    /// The key is not the composer's (Enter, Esc, Ctrl+C, …).
    Ignored,
}

#[derive(Clone, Debug, Default)]
pub struct Composer {
    text: String,
    /// Byte offset into `text`, always on a character boundary.
    cursor: usize,
    history: Vec<String>,
    /// The history entry shown, counting from the oldest; `None` while editing a fresh draft.
    recalled: Option<usize>,
    draft: String,
}

impl Composer {
    pub fn new() -> Self {
        Composer::default()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text; the cursor goes to the end.
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.recalled = None;
    }

    /// Takes the text to send and remembers it in the history (not twice in a row).
    pub fn submit(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.recalled = None;
        self.draft.clear();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        text
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Inserts text at the cursor (a paste: line breaks normalized, tabs as spaces).
    pub(crate) fn insert_str(&mut self, text: &str) {
        let text = text
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .replace('\t', "    ");
        let text: String = text.chars().filter(|c| *c == '\n' || !c.is_control()).collect();
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
    }

    pub(crate) fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Applies an editing key.
    pub(crate) fn handle_key(&mut self, key: KeyEvent) -> Edit {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if shift || alt => self.insert_char('\n'),
            KeyCode::Char('j') if ctrl => self.insert_char('\n'),
            KeyCode::Char('a') if ctrl => self.cursor = self.line_start(),
            KeyCode::Char('e') if ctrl => self.cursor = self.line_end(),
            KeyCode::Char('u') if ctrl => {
                let start = self.line_start();
                self.text.replace_range(start..self.cursor, "");
                self.cursor = start;
            }
            KeyCode::Char('k') if ctrl => {
                let end = self.line_end();
                self.text.replace_range(self.cursor..end, "");
            }
            KeyCode::Char('w') if ctrl => self.delete_word_back(),
            KeyCode::Backspace if alt || ctrl => self.delete_word_back(),
            KeyCode::Char('b') if alt => self.cursor = self.word_left(),
            KeyCode::Char('f') if alt => self.cursor = self.word_right(),
            // AltGr arrives as Ctrl+Alt on some systems.
            KeyCode::Char(c) if !ctrl || alt => self.insert_char(c),
            KeyCode::Backspace => {
                if let Some(previous) = self.prev_boundary(self.cursor) {
                    self.text.replace_range(previous..self.cursor, "");
                    self.cursor = previous;
                }
            }
            KeyCode::Delete => {
                if let Some(next) = self.next_boundary(self.cursor) {
                    self.text.replace_range(self.cursor..next, "");
                }
            }
            KeyCode::Left if ctrl || alt => self.cursor = self.word_left(),
            KeyCode::Right if ctrl || alt => self.cursor = self.word_right(),
            KeyCode::Left => self.cursor = self.prev_boundary(self.cursor).unwrap_or(self.cursor),
            KeyCode::Right => self.cursor = self.next_boundary(self.cursor).unwrap_or(self.cursor),
            KeyCode::Home => self.cursor = self.line_start(),
            KeyCode::End => self.cursor = self.line_end(),
            KeyCode::Up => self.up(),
            KeyCode::Down => self.down(),
            _ => return Edit::Ignored,
        }
        Edit::Changed
    }

    /// Up: the previous line, or the previous history entry on the first line.
    pub fn up(&mut self) {
        let start = self.line_start();
        if start == 0 {
            self.recall_older();
            return;
        }
        let column = self.column();
        let previous_start = self.upto(start - 1).rfind('\n').map_or(0, |i| i + 1);
        self.cursor = self.at_column(previous_start, start - 1, column);
    }

    /// Down: the next line, or the next history entry on the last line.
    pub fn down(&mut self) {
        let end = self.line_end();
        if end == self.text.len() {
            self.recall_newer();
            return;
        }
        let column = self.column();
        let next_start = end + 1;
        let next_end = self
            .from(next_start)
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = self.at_column(next_start, next_end, column);
    }

    fn recall_older(&mut self) {
        let index = match self.recalled {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(index) => index - 1,
        };
        self.recalled = Some(index);
        let text = self.history[index].clone();
        self.set_text(&text);
    }

    fn recall_newer(&mut self) {
        let Some(index) = self.recalled else { return };
        if index + 1 < self.history.len() {
            self.recalled = Some(index + 1);
            let text = self.history[index + 1].clone();
            self.set_text(&text);
        } else {
            self.recalled = None;
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    // The cursor and every offset below are kept on character boundaries; these read the text
    // with `get`, so an offset that was not would show less text rather than panic.
    fn upto(&self, at: usize) -> &str {
        self.text.get(..at).unwrap_or_default()
    }

    fn from(&self, at: usize) -> &str {
        self.text.get(at..).unwrap_or_default()
    }

    fn between(&self, start: usize, end: usize) -> &str {
        self.text.get(start..end).unwrap_or_default()
    }

    fn line_start(&self) -> usize {
        self.upto(self.cursor).rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.from(self.cursor)
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// The cursor's column in characters.
    fn column(&self) -> usize {
        self.between(self.line_start(), self.cursor).chars().count()
    }

    fn at_column(&self, start: usize, end: usize, column: usize) -> usize {
        self.between(start, end)
            .char_indices()
            .nth(column)
            .map_or(end, |(offset, _)| start + offset)
    }

    fn prev_boundary(&self, at: usize) -> Option<usize> {
        self.upto(at).char_indices().next_back().map(|(i, _)| i)
    }

    fn next_boundary(&self, at: usize) -> Option<usize> {
        self.from(at).chars().next().map(|c| at + c.len_utf8())
    }

    fn word_left(&self) -> usize {
        let before = self.upto(self.cursor);
        let trimmed = before.trim_end_matches(|c: char| c.is_whitespace());
        trimmed
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8())
    }

    fn word_right(&self) -> usize {
        let after = self.from(self.cursor);
        let rest = after.trim_start_matches(|c: char| c.is_whitespace());
        let skip = after.len() - rest.len();
        let word = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        self.cursor + skip + word
    }

    fn delete_word_back(&mut self) {
        let start = self.word_left();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// The text as rows of at most `width` cells, and the cursor's (row, column).
    #[expect(clippy::expect_used, reason = "the row list is never empty")]
    pub fn layout(&self, width: usize) -> (Vec<String>, (usize, usize)) {
        let width = width.max(1);
        let mut rows = vec![String::new()];
        let mut used = 0;
        let mut cursor = (0, 0);
        for (offset, c) in self.text.char_indices() {
            if offset == self.cursor {
                cursor = (rows.len() - 1, used);
            }
            if c == '\n' {
                rows.push(String::new());
                used = 0;
                continue;
            }
            let w = char_width(c);
            if used + w > width {
                rows.push(String::new());
                used = 0;
                if offset == self.cursor {
                    cursor = (rows.len() - 1, 0);
                }
            }
            let row = rows.last_mut().expect("a row");
            if c == '\t' {
                row.push_str("    ");
            } else {
                row.push(c);
            }
            used += w;
        }
        if self.cursor >= self.text.len() {
            cursor = (rows.len() - 1, used);
            if used >= width {
                rows.push(String::new());
                cursor = (rows.len() - 1, 0);
            }
        }
        (rows, cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    fn typed(text: &str) -> Composer {
        let mut composer = Composer::new();
        for c in text.chars() {
            composer.handle_key(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        composer
    }

    #[test]
    fn shift_alt_enter_and_ctrl_j_add_lines() {
        let mut composer = typed("a");
        composer.handle_key(key(KeyCode::Enter, KeyModifiers::SHIFT));
        composer.handle_key(key(KeyCode::Char('b'), KeyModifiers::NONE));
        composer.handle_key(key(KeyCode::Enter, KeyModifiers::ALT));
        composer.handle_key(key(KeyCode::Char('j'), KeyModifiers::CONTROL));
        assert_eq!(composer.text(), "a\nb\n\n");
        assert_eq!(
            composer.handle_key(key(KeyCode::Enter, KeyModifiers::NONE)),
            Edit::Ignored
        );
    }

    #[test]
    fn up_and_down_recall_history_at_the_edges() {
        let mut composer = typed("first");
        composer.submit();
        for c in "second".chars() {
            composer.insert_char(c);
        }
        composer.submit();
        composer.insert_str("draft");
        composer.up();
        assert_eq!(composer.text(), "second");
        composer.up();
        assert_eq!(composer.text(), "first");
        composer.up();
        assert_eq!(composer.text(), "first");
        composer.down();
        assert_eq!(composer.text(), "second");
        composer.down();
        assert_eq!(composer.text(), "draft");
    }

    #[test]
    fn up_moves_between_lines_before_recalling() {
        let mut composer = Composer::new();
        composer.submit();
        composer.insert_str("old");
        composer.submit();
        composer.insert_str("abc\nde");
        composer.up();
        assert_eq!(composer.text(), "abc\nde");
        assert_eq!(composer.cursor(), 2);
        composer.up();
        assert_eq!(composer.text(), "old");
    }

    #[test]
    fn editing_keys() {
        let mut composer = typed("hello big world");
        composer.handle_key(key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(composer.text(), "hello big ");
        composer.handle_key(key(KeyCode::Left, KeyModifiers::CONTROL));
        composer.handle_key(key(KeyCode::Backspace, KeyModifiers::NONE));
        assert_eq!(composer.text(), "hellobig ");
        composer.handle_key(key(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(composer.text(), "big ");
        composer.insert_str("a\r\nb\tc");
        assert_eq!(composer.text(), "a\nb    cbig ");
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let composer = typed("abcdef");
        let (rows, cursor) = composer.layout(4);
        assert_eq!(rows, vec!["abcd", "ef"]);
        assert_eq!(cursor, (1, 2));
        let composer = typed("abcd");
        let (rows, cursor) = composer.layout(4);
        assert_eq!(rows, vec!["abcd", ""]);
        assert_eq!(cursor, (1, 0));
        let mut composer = typed("ab\ncd");
        composer.handle_key(key(KeyCode::Home, KeyModifiers::NONE));
        assert_eq!(
            composer.layout(10),
            (vec!["ab".to_string(), "cd".to_string()], (1, 0))
        );
    }
}
