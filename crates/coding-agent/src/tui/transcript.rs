//! The transcript's items as rows of styled text for a given width: prompts, markdown answers, tool
//! calls (input, status, a result collapsed to a few rows), hook activity and notices, panels.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::app::{Item, Panel, Tone, ToolItem, ToolState};
use super::markdown;
use super::worker::Level;
use super::wrap::{self, truncate, wrap_text};

/// Result rows shown while a tool's output is collapsed.
pub(crate) const COLLAPSED_ROWS: usize = 5;

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

fn grouped(items: &[Item], index: usize) -> bool {
    matches!(items[index], Item::Notice { .. })
        && matches!(
            index.checked_sub(1).map(|i| &items[i]),
            Some(Item::Notice { .. } | Item::Command(_))
        )
}

/// The last rows of the transcript, whole items, at least `want` of them when there are that many;
/// and whether they are all of it. Drawing costs what is on screen, not the whole session.
pub(crate) fn tail(items: &[Item], width: usize, expand: bool, want: usize) -> (Vec<Line<'static>>, bool) {
    let width = width.max(8);
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut count = 0;
    let mut complete = true;
    for index in (0..items.len()).rev() {
        let mut chunk = Vec::new();
        if index > 0 && !grouped(items, index) {
            chunk.push(Line::default());
        }
        chunk.extend(item_lines(&items[index], width, expand));
        count += chunk.len();
        chunks.push(chunk);
        if count >= want && index > 0 {
            complete = false;
            break;
        }
    }
    (chunks.into_iter().rev().flatten().collect(), complete)
}

pub(crate) fn item_lines(item: &Item, width: usize, expand: bool) -> Vec<Line<'static>> {
    match item {
        Item::User(text) => {
            let style = Style::default().add_modifier(Modifier::BOLD);
            let first = [Span::styled(
                "› ",
                Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )];
            wrap_text(text, style, width, &first, &[Span::raw("  ")])
        }
        Item::Command(text) => wrap_text(
            text,
            dim(),
            width,
            &[Span::styled("› ", dim())],
            &[Span::raw("  ")],
        ),
        Item::Assistant { text, streaming } => assistant(text, *streaming, width),
        Item::Tool(tool) => tool_lines(tool, width, expand),
        Item::Notice { level, text } => notice(*level, text, width),
        Item::Panel(panel) => panel_lines(panel, width),
    }
}

fn assistant(text: &str, streaming: bool, width: usize) -> Vec<Line<'static>> {
    let mut lines = markdown::render(text.trim_end_matches('\n'), width, "  ");
    if let Some(first) = lines.first_mut()
        && first.spans.first().is_some_and(|s| s.content == "  ")
    {
        first.spans[0] = Span::raw("● ");
    }
    if streaming {
        match lines.last_mut() {
            Some(last) => last.spans.push(Span::styled("▍", dim())),
            None => lines.push(Line::from(vec![Span::raw("● "), Span::styled("▍", dim())])),
        }
    }
    lines
}

pub(crate) fn level_style(level: Level) -> (&'static str, Style) {
    match level {
        Level::Info => ("· ", dim()),
        Level::Effect => ("◆ ", Style::default().fg(Color::Magenta)),
        Level::Problem => ("! ", Style::default().fg(Color::Yellow)),
        Level::Warning => (
            "⚠ ",
            Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
        Level::Error => ("✗ ", Style::default().fg(Color::Red)),
    }
}

fn notice(level: Level, text: &str, width: usize) -> Vec<Line<'static>> {
    let (mark, style) = level_style(level);
    wrap_text(
        text,
        style,
        width,
        &[Span::styled(mark, style)],
        &[Span::raw("  ")],
    )
}

fn state_mark(state: ToolState) -> (&'static str, Style, &'static str) {
    match state {
        ToolState::Running => ("○ ", Style::default().fg(Color::Yellow), ""),
        ToolState::Approval => (
            "? ",
            Style::default().fg(Color::Yellow),
            " · waiting for approval",
        ),
        ToolState::Ok => ("✓ ", Style::default().fg(Color::Green), ""),
        ToolState::Failed => ("✗ ", Style::default().fg(Color::Red), " · failed"),
        ToolState::NotRun => ("⊘ ", Style::default().fg(Color::Red), " · not run"),
        ToolState::Cancelled => ("◌ ", dim(), " · cancelled"),
    }
}

/// A tool's arguments on one line: the command or path when there is one, else `key: value` pairs.
pub(crate) fn summarize_input(input: &Value) -> String {
    let Value::Object(map) = input else {
        return input.to_string();
    };
    let text_of = |value: &Value| match value {
        Value::String(s) => s.trim_end().to_string(),
        other => other.to_string(),
    };
    for key in ["command", "path", "pattern"] {
        if let Some(value) = map.get(key)
            && map.len() == 1
        {
            return text_of(value);
        }
    }
    map.iter()
        .map(|(key, value)| format!("{key}: {}", text_of(value).replace('\n', "⏎")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn tool_lines(tool: &ToolItem, width: usize, expand: bool) -> Vec<Line<'static>> {
    let (mark, style, status) = state_mark(tool.state);
    let name = Span::styled(tool.name.clone(), Style::default().add_modifier(Modifier::BOLD));
    let input = summarize_input(&tool.input);
    let limit = if expand {
        usize::MAX
    } else {
        width.saturating_mul(2)
    };
    let header = vec![
        name,
        Span::raw(" "),
        Span::styled(truncate(&wrap::sanitize(&input).replace('\n', "⏎"), limit), dim()),
        Span::styled(status, style),
    ];
    let mut lines = wrap::wrap(&header, width, &[Span::styled(mark, style)], &[Span::raw("  ")]);

    let body_style = if matches!(tool.state, ToolState::Failed | ToolState::NotRun) {
        Style::default().fg(Color::Red)
    } else {
        Style::default()
    };
    let result = tool.result.trim_end();
    if !result.is_empty() {
        let gutter = [Span::styled("  ⎿ ", dim())];
        let rows = wrap_text(result, body_style, width, &gutter, &[Span::raw("    ")]);
        if !expand && rows.len() > COLLAPSED_ROWS {
            let shown = COLLAPSED_ROWS - 1;
            let hidden_rows = rows.len() - shown;
            lines.extend(rows.into_iter().take(shown));
            let more = format!(
                "… {hidden_rows} more line{} · Ctrl+O to expand",
                if hidden_rows == 1 { "" } else { "s" }
            );
            lines.push(Line::from(vec![Span::raw("    "), Span::styled(more, dim())]));
        } else {
            lines.extend(rows);
        }
    } else if tool.state == ToolState::Ok {
        lines.push(Line::from(vec![
            Span::styled("  ⎿ ", dim()),
            Span::styled("(no output)", dim()),
        ]));
    }
    for (level, text) in &tool.notes {
        let (mark, style) = level_style(*level);
        let first = [Span::raw("  "), Span::styled(mark, style)];
        lines.extend(wrap_text(text, style, width, &first, &[Span::raw("    ")]));
    }
    lines
}

fn tone_style(tone: Tone) -> Style {
    match tone {
        Tone::Normal => Style::default(),
        Tone::Dim => dim(),
        Tone::Heading => Style::default().add_modifier(Modifier::BOLD),
        Tone::Good => Style::default().fg(Color::Green),
        Tone::Warn => Style::default().fg(Color::Yellow),
    }
}

fn panel_lines(panel: &Panel, width: usize) -> Vec<Line<'static>> {
    let title = format!("─ {} ", panel.title);
    let rule = "─".repeat(width.saturating_sub(wrap::width(&title)).min(40));
    let mut lines = vec![Line::from(Span::styled(
        format!("{title}{rule}"),
        Style::default().fg(Color::Blue).add_modifier(Modifier::BOLD),
    ))];
    for line in &panel.lines {
        let indent = line.text.len() - line.text.trim_start().len();
        let hang = [Span::raw(" ".repeat(indent + 2))];
        lines.extend(wrap_text(&line.text, tone_style(line.tone), width, &[], &hang));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn long_results_collapse() {
        let tool = ToolItem {
            id: "1".into(),
            name: "shell_exec".into(),
            input: json!({"command": "seq 20"}),
            state: ToolState::Ok,
            result: (1..=20).map(|n| n.to_string()).collect::<Vec<_>>().join("\n"),
            notes: vec![],
        };
        let collapsed = texts(&tool_lines(&tool, 60, false));
        assert_eq!(collapsed[0], "✓ shell_exec seq 20");
        assert_eq!(collapsed[1], "  ⎿ 1");
        assert_eq!(collapsed.len(), 1 + COLLAPSED_ROWS);
        assert!(collapsed.last().unwrap().contains("16 more lines"));
        assert_eq!(tool_lines(&tool, 60, true).len(), 21);
    }

    #[test]
    fn inputs_are_summarized() {
        assert_eq!(summarize_input(&json!({"command": "ls"})), "ls");
        assert_eq!(
            summarize_input(&json!({"path": "a.txt", "content": "x\ny"})),
            "path: a.txt, content: x⏎y"
        );
    }
}
