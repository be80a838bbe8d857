//! Word wrapping of styled text to a width, with a prefix for the first line and another for the
//! lines that continue it (a bullet and its hanging indent, a quote bar, a gutter).
//!
//! The transcript wraps its own lines (instead of letting a `Paragraph` do it) so that it knows how
//! many rows each item takes, which scrolling needs.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// The display width of `text` in terminal cells.
pub(crate) fn width(text: &str) -> usize {
    text.chars().map(char_width).sum()
}

/// The display width of one character (control characters count as one cell: they are replaced
/// before drawing).
pub(crate) fn char_width(c: char) -> usize {
    if c == '\t' {
        return 4;
    }
    c.width().unwrap_or(1)
}

/// Replaces tabs and control characters, which would move the terminal's cursor.
pub(crate) fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\r' => {}
            c if c.is_control() && c != '\n' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Wraps `spans` (one logical line, no newlines) to `width` cells. The first row starts with
/// `first`, the others with `rest`; both prefixes should have the same width.
#[expect(clippy::expect_used, reason = "the row list is never empty")]
pub(crate) fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let prefix_width = |spans: &[Span<'static>]| spans.iter().map(|s| self::width(&s.content)).sum::<usize>();
    let prefix_width = prefix_width(first).max(prefix_width(rest));
    let room = width.saturating_sub(prefix_width).max(1);

    // Split into words and runs of spaces, each a list of (char, style).
    let mut tokens: Vec<(bool, Vec<(char, Style)>)> = Vec::new();
    for span in spans {
        for c in span.content.chars() {
            let space = c == ' ';
            match tokens.last_mut() {
                Some((is_space, chars)) if *is_space == space => chars.push((c, span.style)),
                _ => tokens.push((space, vec![(c, span.style)])),
            }
        }
    }

    let mut rows: Vec<Vec<(char, Style)>> = vec![Vec::new()];
    let mut used = 0usize;
    for (is_space, chars) in tokens {
        let token_width: usize = chars.iter().map(|(c, _)| char_width(*c)).sum();
        if is_space {
            if used == 0 && rows.len() > 1 {
                continue; // no leading spaces on a wrapped row
            }
            if used + token_width <= room {
                rows.last_mut().expect("a row").extend(chars);
                used += token_width;
            } else {
                rows.push(Vec::new());
                used = 0;
            }
            continue;
        }
        if used + token_width > room && used > 0 {
            // Drop the trailing spaces of the full row.
            let row = rows.last_mut().expect("a row");
            while row.last().is_some_and(|(c, _)| *c == ' ') {
                row.pop();
            }
            rows.push(Vec::new());
            used = 0;
        }
        for (c, style) in chars {
            let w = char_width(c);
            if used + w > room && used > 0 {
                rows.push(Vec::new());
                used = 0;
            }
            rows.last_mut().expect("a row").push((c, style));
            used += w;
        }
    }

    rows.into_iter()
        .enumerate()
        .map(|(index, row)| {
            let mut line: Vec<Span<'static>> = if index == 0 { first.to_vec() } else { rest.to_vec() };
            line.extend(merge(row));
            Line::from(line)
        })
        .collect()
}

/// Wraps plain text that may hold newlines, every line in `style`.
pub(crate) fn wrap_text(
    text: &str,
    style: Style,
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (index, line) in sanitize(text).split('\n').enumerate() {
        let prefix = if index == 0 { first } else { rest };
        lines.extend(wrap(
            &[Span::styled(line.to_string(), style)],
            width,
            prefix,
            rest,
        ));
    }
    lines
}

/// Joins runs of characters with the same style into spans.
fn merge(chars: Vec<(char, Style)>) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut current = String::new();
    let mut style = None;
    for (c, s) in chars {
        if style != Some(s) {
            if let Some(previous) = style
                && !current.is_empty()
            {
                spans.push(Span::styled(std::mem::take(&mut current), previous));
            }
            style = Some(s);
        }
        current.push(c);
    }
    if let Some(style) = style
        && !current.is_empty()
    {
        spans.push(Span::styled(current, style));
    }
    spans
}

/// Cuts `text` to at most `max` cells, ending with `…` when something was cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = char_width(c);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn wraps_on_spaces_with_a_hanging_indent() {
        let lines = wrap(
            &[Span::raw("one two three four")],
            10,
            &[Span::raw("• ")],
            &[Span::raw("  ")],
        );
        assert_eq!(texts(&lines), vec!["• one two", "  three", "  four"]);
    }

    #[test]
    fn breaks_words_longer_than_the_row() {
        let lines = wrap(&[Span::raw("abcdefghij")], 4, &[], &[]);
        assert_eq!(texts(&lines), vec!["abcd", "efgh", "ij"]);
    }

    #[test]
    fn keeps_styles_across_the_cut() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let lines = wrap(&[Span::raw("ab "), Span::styled("cd", bold)], 3, &[], &[]);
        assert_eq!(texts(&lines), vec!["ab", "cd"]);
        assert_eq!(lines[1].spans[0].style, bold);
    }

    #[test]
    fn wide_characters_count_two_cells() {
        let lines = wrap(&[Span::raw("日本語")], 4, &[], &[]);
        assert_eq!(texts(&lines), vec!["日本", "語"]);
        assert_eq!(truncate("日本語", 5), "日本…");
    }

    #[test]
    fn an_empty_line_is_one_row() {
        assert_eq!(texts(&wrap(&[], 10, &[Span::raw("> ")], &[])), vec!["> "]);
    }
}
