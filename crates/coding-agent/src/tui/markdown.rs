//! Just enough markdown for a terminal: headings, fenced code blocks, bullet and numbered lists,
//! block quotes, rules, and inline `code`, **bold** and *italic*. Everything else is plain text.
//! An unclosed fence (a streaming answer) renders as code up to the end.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::wrap::{self, wrap};

pub(crate) fn code_style() -> Style {
    Style::default().fg(Color::Cyan)
}

fn heading_style() -> Style {
    Style::default().fg(Color::Magenta).add_modifier(Modifier::BOLD)
}

fn marker_style() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// Renders `text` to rows of at most `width` cells, each starting with `indent`.
pub(crate) fn render(text: &str, width: usize, indent: &str) -> Vec<Line<'static>> {
    let text = wrap::sanitize(text);
    let pad = vec![Span::raw(indent.to_string())];
    let mut lines = Vec::new();
    let mut fence: Option<String> = None;
    for raw in text.split('\n') {
        let trimmed = raw.trim_start();
        if let Some(marker) = &fence {
            if trimmed.starts_with(marker.as_str()) && trimmed.trim_end() == marker.as_str() {
                fence = None;
                continue;
            }
            let code = [Span::styled(raw.to_string(), code_style())];
            let gutter = vec![Span::raw(indent.to_string()), Span::styled("│ ", marker_style())];
            lines.extend(wrap(&code, width, &gutter, &gutter));
            continue;
        }
        if let Some(marker) = fence_marker(trimmed) {
            fence = Some(marker);
            let lang = trimmed.trim_start_matches(['`', '~']).trim();
            if !lang.is_empty() {
                lines.push(Line::from(vec![
                    Span::raw(indent.to_string()),
                    Span::styled(format!("┌ {lang}"), marker_style()),
                ]));
            }
            continue;
        }
        if trimmed.is_empty() {
            lines.push(Line::from(indent.to_string()));
            continue;
        }
        if let Some((level, title)) = heading(trimmed) {
            let style = if level <= 2 {
                heading_style().add_modifier(Modifier::UNDERLINED)
            } else {
                heading_style()
            };
            lines.extend(wrap(&[Span::styled(title.to_string(), style)], width, &pad, &pad));
            continue;
        }
        if is_rule(trimmed) {
            let rule = "─".repeat(width.saturating_sub(wrap::width(indent)).min(40));
            lines.push(Line::from(vec![
                Span::raw(indent.to_string()),
                Span::styled(rule, marker_style()),
            ]));
            continue;
        }
        if let Some(quoted) = trimmed.strip_prefix('>') {
            let bar = vec![Span::raw(indent.to_string()), Span::styled("│ ", marker_style())];
            let style = Style::default().add_modifier(Modifier::ITALIC);
            let spans: Vec<Span<'static>> = inline(quoted.trim_start())
                .into_iter()
                .map(|s| Span::styled(s.content, s.style.patch(style)))
                .collect();
            lines.extend(wrap(&spans, width, &bar, &bar));
            continue;
        }
        let depth = (raw.chars().count() - trimmed.chars().count()) / 2;
        if let Some((bullet, rest)) = list_item(trimmed) {
            let lead = format!("{indent}{}", "  ".repeat(depth));
            let first = vec![
                Span::raw(lead.clone()),
                Span::styled(bullet.clone(), marker_style()),
            ];
            let hang = vec![Span::raw(format!("{lead}{}", " ".repeat(wrap::width(&bullet))))];
            lines.extend(wrap(&inline(rest), width, &first, &hang));
            continue;
        }
        lines.extend(wrap(&inline(trimmed), width, &pad, &pad));
    }
    lines
}

fn fence_marker(line: &str) -> Option<String> {
    for c in ['`', '~'] {
        let count = line.chars().take_while(|x| *x == c).count();
        if count >= 3 {
            return Some(c.to_string().repeat(count));
        }
    }
    None
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&level) {
        let rest = line.trim_start_matches('#');
        if rest.is_empty() || rest.starts_with(' ') {
            return Some((level, rest.trim()));
        }
    }
    None
}

fn is_rule(line: &str) -> bool {
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    compact.len() >= 3 && ['-', '*', '_'].iter().any(|m| compact.chars().all(|c| c == *m))
}

/// `- x`, `* x`, `+ x` → `• `; `1. x`, `2) x` → `1. `. Returns the bullet to draw and the text.
fn list_item(line: &str) -> Option<(String, &str)> {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(marker) {
            if let Some(task) = rest.strip_prefix("[ ] ") {
                return Some(("☐ ".into(), task));
            }
            if let Some(task) = rest.strip_prefix("[x] ").or_else(|| rest.strip_prefix("[X] ")) {
                return Some(("☑ ".into(), task));
            }
            return Some(("• ".into(), rest));
        }
    }
    let digits = line.chars().take_while(|c| c.is_ascii_digit()).count();
    if (1..=3).contains(&digits) {
        // ASCII digits are one byte each, so `digits` is a character boundary.
        let (number, rest) = line.split_at_checked(digits)?;
        for sep in [". ", ") "] {
            if let Some(text) = rest.strip_prefix(sep) {
                return Some((format!("{number}. "), text));
            }
        }
    }
    None
}

/// Inline markup: `code`, **bold**, __bold__, *italic*, [text](url).
pub(crate) fn inline(text: &str) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut bold = false;
    let mut italic = false;
    let style = |bold: bool, italic: bool| {
        let mut style = Style::default();
        if bold {
            style = style.add_modifier(Modifier::BOLD);
        }
        if italic {
            style = style.add_modifier(Modifier::ITALIC);
        }
        style
    };
    let flush = |plain: &mut String, spans: &mut Vec<Span<'static>>, s: Style| {
        if !plain.is_empty() {
            spans.push(Span::styled(std::mem::take(plain), s));
        }
    };
    // Every step moves on by whole characters or whole markers (no byte offsets), so no text,
    // however many bytes its characters take, is cut inside one.
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let mut chars = rest.chars();
        chars.next();
        let after = chars.as_str();
        if c == '`'
            && let Some((code, tail)) = after.split_once('`')
        {
            flush(&mut plain, &mut spans, style(bold, italic));
            spans.push(Span::styled(code.to_string(), code_style()));
            rest = tail;
            continue;
        }
        if let Some(marker) = ["**", "__"].into_iter().find(|m| rest.starts_with(m))
            && let Some(tail) = rest.strip_prefix(marker)
            && (bold || tail.contains(marker))
        {
            flush(&mut plain, &mut spans, style(bold, italic));
            bold = !bold;
            rest = tail;
            continue;
        }
        if c == '*' {
            let opens_italic = !italic
                && after.chars().next().is_some_and(|next| !next.is_whitespace())
                && after.contains('*');
            if italic || opens_italic {
                flush(&mut plain, &mut spans, style(bold, italic));
                italic = !italic;
                rest = after;
                continue;
            }
        }
        if c == '['
            && let Some((label, tail)) = after.split_once("](")
            && let Some((url, tail)) = tail.split_once(')')
            && !label.contains('[')
            && !url.contains(' ')
        {
            flush(&mut plain, &mut spans, style(bold, italic));
            spans.push(Span::styled(
                label.to_string(),
                style(bold, italic).add_modifier(Modifier::UNDERLINED),
            ));
            if url != label {
                spans.push(Span::styled(format!(" ({url})"), marker_style()));
            }
            rest = tail;
            continue;
        }
        plain.push(c);
        rest = after;
    }
    flush(&mut plain, &mut spans, style(bold, italic));
    spans
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
    fn renders_blocks() {
        let text = "# Title\n\nSome `code` here.\n\n- one\n- two\n  - nested\n1. first\n\n```rust\nfn main() {}\n```\n> quoted";
        assert_eq!(
            texts(&render(text, 40, "")),
            vec![
                "Title",
                "",
                "Some code here.",
                "",
                "• one",
                "• two",
                "  • nested",
                "1. first",
                "",
                "┌ rust",
                "│ fn main() {}",
                "│ quoted",
            ]
        );
    }

    #[test]
    fn list_items_hang_when_wrapped() {
        assert_eq!(
            texts(&render("- alpha beta gamma", 12, "")),
            vec!["• alpha beta", "  gamma"]
        );
    }

    #[test]
    fn an_unclosed_fence_is_code_to_the_end() {
        let lines = render("```\nlet x = 1;", 40, "  ");
        assert_eq!(texts(&lines), vec!["  │ let x = 1;"]);
        assert_eq!(lines[0].spans[2].style, code_style());
    }

    #[test]
    fn inline_markup() {
        let spans = inline("a **b** *c* `d` [e](http://x)");
        let text: Vec<&str> = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, vec!["a ", "b", " ", "c", " ", "d", " ", "e", " (http://x)"]);
        assert!(spans[1].style.add_modifier.contains(Modifier::BOLD));
        assert!(spans[3].style.add_modifier.contains(Modifier::ITALIC));
        // A lone star is text.
        let spans = inline("2 * 3");
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].content, "2 * 3");
    }

    #[test]
    fn multi_byte_text_is_cut_only_between_characters() {
        // Each of these panicked with "byte index 1 is not a char boundary" (issue 28).
        for text in [
            "é",
            "— a dash",
            "🎉 done",
            "日本語",
            "e\u{301}",
            "שלום",
            "a*é*b",
            "*é*",
            "`é`",
            "[é](ü)",
        ] {
            let lines = render(text, 20, "  ");
            assert!(!lines.is_empty(), "{text}");
        }
        let spans = inline("— **日本** *é* `🎉` [ü](x)");
        let text: Vec<&str> = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, vec!["— ", "日本", " ", "é", " ", "🎉", " ", "ü", " (x)"]);
        assert_eq!(texts(&render("1. 日本", 20, "")), vec!["1. 日本"]);
        assert_eq!(texts(&render("## ü", 20, "")), vec!["ü"]);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Text with what breaks renderers: multi-byte, wide and combining characters, emoji, RTL
        /// and bidi controls, C0/C1 controls, and the markup characters themselves.
        fn hostile_text() -> impl Strategy<Value = String> {
            let pieces = prop_oneof![
                Just("é".to_string()),
                Just("—".to_string()),
                Just("🎉".to_string()),
                Just("👩‍👩‍👧".to_string()),
                Just("日本語".to_string()),
                Just("e\u{301}\u{302}".to_string()),
                Just("שלום".to_string()),
                Just("\u{202e}".to_string()),
                Just("\x1b]52;c;eA==\x07".to_string()),
                Just("\u{9b}2J".to_string()),
                Just("\t\r\n\x00".to_string()),
                "[*_`#>\\[\\]()~ \n0-9.-]{1,4}",
                any::<String>(),
            ];
            prop::collection::vec(pieces, 0..24).prop_map(|parts| parts.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Any text at any width renders without a panic, and no control character reaches
            /// the screen.
            #[test]
            fn any_text_at_any_width(text in hostile_text(), width in 0usize..120, indent in "[ ]{0,4}") {
                for line in render(&text, width, &indent) {
                    for span in &line.spans {
                        prop_assert!(
                            !span.content.chars().any(|c| c.is_control()),
                            "a control character in {:?}",
                            span.content
                        );
                    }
                }
            }
        }
    }
}
