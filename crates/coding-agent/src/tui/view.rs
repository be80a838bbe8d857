//! Drawing the app: the transcript, the activity line (spinner, hints), the palette or a modal,
//! the input, and the status line. Every size down to a few rows draws without panicking.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use elph_agent::harness::ApprovalRequest;
use elph_agent::tools::ProposedChange;

use super::app::{App, Modal, TRUST_CHOICES, approval_choices};
use super::transcript::{self, summarize_input};
use super::wrap::{self, truncate, wrap_text};
use crate::session::preview::{ChangePreview, DiffKind};
use crate::store::SessionInfo;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Most rows the input grows to.
const MAX_INPUT_ROWS: usize = 8;
/// Most palette entries shown at once.
const MAX_PALETTE_ROWS: usize = 9;

fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// Removes every colour from a drawn frame, keeping bold, dim, reverse and the rest: what a person
/// who set `NO_COLOR` asked for (https://no-color.org).
pub fn strip_colors(buffer: &mut ratatui::buffer::Buffer) {
    for cell in buffer.content.iter_mut() {
        cell.set_fg(Color::Reset).set_bg(Color::Reset);
    }
}

/// Whether the user asked for no colour: `NO_COLOR` set to anything but the empty string.
pub(crate) fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty())
}

pub fn draw(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    if area.width < 4 || area.height < 4 {
        return;
    }
    let width = area.width as usize;
    let (input_rows, cursor) = app.composer.layout(width.saturating_sub(2));
    let input_height = input_rows.len().clamp(1, MAX_INPUT_ROWS) as u16 + 2;
    let fixed = input_height + 2; // the activity and status lines
    let room = area.height.saturating_sub(fixed + 1);
    let popup = popup_lines(app, width);
    let popup_height = (popup.len() as u16).min(room);
    let [
        transcript_area,
        popup_area,
        activity_area,
        input_area,
        status_area,
    ] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(popup_height),
        Constraint::Length(1),
        Constraint::Length(input_height.min(area.height.saturating_sub(2))),
        Constraint::Length(1),
    ])
    .areas(area);

    draw_transcript(frame, app, transcript_area);
    if popup_height > 0 {
        frame.render_widget(Clear, popup_area);
        let height = popup_height as usize;
        let visible = if app.modal.is_some() {
            // Too short for all of it: keep the top border and the choices at the bottom.
            let mut rows = popup;
            if rows.len() > height {
                let tail = rows.split_off(rows.len() - (height - 1));
                rows.truncate(1);
                rows.extend(tail);
                rows.truncate(height);
            }
            rows
        } else {
            palette_window(app, popup, height)
        };
        frame.render_widget(Paragraph::new(visible), popup_area);
    }
    frame.render_widget(Paragraph::new(activity(app, width)), activity_area);
    draw_input(frame, app, input_area, &input_rows, cursor);
    frame.render_widget(Paragraph::new(status_line(app, width)), status_area);
}

fn draw_transcript(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let width = area.width as usize;
    let height = area.height as usize;
    let page = height.saturating_sub(2).max(1);
    // Enough rows for this view and one more page up.
    let want = height + app.scroll + page + 1;
    let (items, complete) = transcript::tail(&app.items, width, app.expand_tools, want);
    // The welcome header heads the transcript for good (a startup notice does not replace it);
    // it scrolls away with the first rows.
    let lines = if complete {
        let mut lines = welcome(app, width);
        if !items.is_empty() {
            lines.push(Line::default());
        }
        lines.extend(items);
        lines
    } else {
        items
    };
    let max = lines.len().saturating_sub(height);
    app.scroll_max.set(max);
    app.page.set(page);
    let scroll = app.scroll.min(max);
    let start = lines.len().saturating_sub(height + scroll);
    let visible: Vec<Line<'static>> = lines.into_iter().skip(start).take(height).collect();
    frame.render_widget(Paragraph::new(visible), area);
}

fn welcome(app: &App, width: usize) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut lines = vec![Line::from(vec![
        Span::styled("Elph", bold.fg(Color::Cyan)),
        Span::styled(" · a coding agent whose hooks you can trust", dim()),
    ])];
    let project = format!("project  {}", app.status.project_dir);
    lines.extend(wrap_text(&project, dim(), width, &[], &[Span::raw("         ")]));
    let hooks = format!(
        "hooks    {} active · project {}",
        app.hooks.active(),
        crate::session::wording::trust_word(app.hooks.trusted)
    );
    lines.extend(wrap_text(&hooks, dim(), width, &[], &[]));
    lines.push(Line::default());
    lines.extend(wrap_text(
        "Ask for something, or type / for commands (/help lists them and the keys).",
        Style::default(),
        width,
        &[],
        &[],
    ));
    lines
}

/// The palette or the open modal, as rows.
fn popup_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    if let Some(modal) = &app.modal {
        return modal_lines(modal, width);
    }
    let Some(matches) = app.palette() else {
        return Vec::new();
    };
    if matches.is_empty() {
        return vec![Line::from(Span::styled("  no matching command", dim()))];
    }
    let name_width = matches
        .iter()
        .map(|c| wrap::width(c.name()) + wrap::width(&c.usage) + 1)
        .max()
        .unwrap_or(0)
        + 2;
    matches
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let selected = index == app.palette_selected.min(matches.len() - 1);
            let marker = if selected { "› " } else { "  " };
            let name = format!("/{}{}", command.name(), command.usage);
            let name_style = if selected {
                Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD)
            } else {
                Style::default().fg(Color::Cyan)
            };
            let room = width.saturating_sub(name_width + 2);
            Line::from(vec![
                Span::styled(marker, name_style),
                Span::styled(format!("{name:<name_width$}"), name_style),
                Span::styled(truncate(&command.description, room), dim()),
            ])
        })
        .collect()
}

fn palette_window(app: &App, lines: Vec<Line<'static>>, height: usize) -> Vec<Line<'static>> {
    let selected = app.palette_selected.min(lines.len().saturating_sub(1));
    let height = height.clamp(1, MAX_PALETTE_ROWS);
    let start = (selected + 1).saturating_sub(height);
    lines.into_iter().skip(start).take(height).collect()
}

fn modal_lines(modal: &Modal, width: usize) -> Vec<Line<'static>> {
    let inner = width.saturating_sub(4);
    let (title, body, footer) = match modal {
        Modal::Approval {
            request,
            selected,
            preview,
            ..
        } => {
            let choices = approval_choices(request);
            let labels: Vec<&str> = choices.iter().map(|(label, _)| label.as_str()).collect();
            let mut body = approval_body(request, preview.as_ref(), inner);
            body.extend(choice_lines(&labels, *selected));
            let footer = match labels.len() {
                4 => "Enter choose · 1/2/3/4 · Esc deny",
                3 => "Enter choose · 1/2/3 · Esc deny",
                _ => "Enter choose · 1/2 · Esc deny · this exact call only",
            };
            ("Approve tool call", body, footer)
        }
        Modal::Elicitation(form) => {
            let (title, body, footer) = form.lines(inner);
            return boxed(title, body, footer, width);
        }
        Modal::Sessions { sessions, selected } => (
            "Resume a session",
            sessions_body(sessions, *selected, inner),
            "Enter resume · Esc cancel",
        ),
        Modal::Trust {
            project,
            changes,
            selected,
        } => {
            let mut body = trust_body(project, changes, inner);
            body.extend(choice_lines(&TRUST_CHOICES, *selected));
            (
                "Trust the new content?",
                body,
                "Enter choose · y/n · Esc keep off",
            )
        }
    };
    boxed(title, body, footer, width)
}

/// What a tool call asks to do: the tool, its input (a diff for a write or an edit), the reason.
fn approval_body(
    request: &ApprovalRequest,
    preview: Option<&ChangePreview>,
    inner: usize,
) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut body = vec![Line::from(vec![
        Span::styled(request.tool_name.clone(), bold),
        Span::raw(" wants to run"),
    ])];
    match preview {
        Some(preview) => {
            let path = request.change.as_ref().map_or("", ProposedChange::path);
            body.push(Line::from(Span::styled(
                truncate(&format!("  {}", crate::terminal_text::escape(path)), inner),
                Style::default().fg(Color::Cyan),
            )));
            body.extend(diff_lines(preview, inner));
        }
        None => {
            let input = wrap::sanitize(&summarize_input(&request.input)).replace('\n', "⏎");
            let mut input_rows = wrap_text(
                &input,
                Style::default().fg(Color::Cyan),
                inner,
                &[Span::raw("  ")],
                &[Span::raw("  ")],
            );
            if input_rows.len() > 3 {
                input_rows.truncate(3);
                input_rows.push(Line::from(Span::styled("  …", dim())));
            }
            body.extend(input_rows);
        }
    }
    body.extend(wrap_text(&request.reason, dim(), inner, &[], &[]));
    body
}

/// A window of the stored sessions around the selected one.
fn sessions_body(sessions: &[SessionInfo], selected: usize, inner: usize) -> Vec<Line<'static>> {
    let now = time::OffsetDateTime::now_utc();
    let window = 8usize;
    let start = (selected + 1).saturating_sub(window);
    let ids: Vec<&str> = sessions.iter().map(|session| session.id.as_str()).collect();
    let shown_ids = crate::store::distinct_prefixes(&ids);
    let mut body = Vec::new();
    for ((index, session), shown_id) in sessions
        .iter()
        .enumerate()
        .zip(&shown_ids)
        .skip(start)
        .take(window)
    {
        let chosen = index == selected;
        let style = if chosen {
            Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        let marker = if chosen { "› " } else { "  " };
        let title = session.title.clone().unwrap_or_else(|| "(no prompt yet)".into());
        let text = format!(
            "{marker}{shown_id} · {} · {}",
            crate::store::ago(session.updated_at, now),
            title
        );
        body.push(Line::from(Span::styled(truncate(&text, inner), style)));
    }
    body
}

/// What changed in a project since it was trusted.
fn trust_body(project: &str, changes: &[String], inner: usize) -> Vec<Line<'static>> {
    let mut body = wrap_text(
        &format!("{project} changed since you trusted it:"),
        Style::default().add_modifier(Modifier::BOLD),
        inner,
        &[],
        &[],
    );
    // The list can be long (a pull that touched many files); the first few show the kind.
    const SHOWN: usize = 6;
    for change in changes.iter().take(SHOWN) {
        body.extend(wrap_text(
            change,
            Style::default().fg(Color::Cyan),
            inner,
            &[Span::raw("  - ")],
            &[Span::raw("    ")],
        ));
    }
    if changes.len() > SHOWN {
        body.push(Line::from(Span::styled(
            format!(
                "  … and {} more (`elph trust --status` lists them)",
                changes.len() - SHOWN
            ),
            dim(),
        )));
    }
    body.extend(wrap_text(
        "Its hooks and MCP servers stay off until you trust the new content.",
        dim(),
        inner,
        &[],
        &[],
    ));
    body
}

/// A question's numbered choices, the selected one marked and bold.
fn choice_lines(labels: &[&str], selected: usize) -> Vec<Line<'static>> {
    labels
        .iter()
        .enumerate()
        .map(|(index, label)| {
            let chosen = index == selected;
            let style = if chosen {
                Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let marker = if chosen { "› " } else { "  " };
            Line::from(Span::styled(format!("{marker}{}. {label}", index + 1), style))
        })
        .collect()
}

/// The body in a box drawn by hand, titled, with the footer as its last row, so the popup is
/// plain rows.
fn boxed(title: &str, mut body: Vec<Line<'static>>, footer: &str, width: usize) -> Vec<Line<'static>> {
    let inner = width.saturating_sub(4);
    let border = Style::default().fg(Color::Yellow);
    body.push(Line::from(Span::styled(footer.to_string(), dim())));
    let bar = |left: &str, fill: String, right: &str| {
        Line::from(Span::styled(format!("{left}{fill}{right}"), border))
    };
    let label = format!(" {title} ");
    let top_fill = "─".repeat(width.saturating_sub(3 + wrap::width(&label)));
    let mut lines = vec![Line::from(vec![
        Span::styled("╭─", border),
        Span::styled(label, border.add_modifier(Modifier::BOLD)),
        Span::styled(format!("{top_fill}╮"), border),
    ])];
    for row in body {
        let used: usize = row.spans.iter().map(|s| wrap::width(&s.content)).sum();
        let mut spans = vec![Span::styled("│ ", border)];
        spans.extend(row.spans);
        spans.push(Span::raw(" ".repeat(inner.saturating_sub(used))));
        spans.push(Span::styled(" │", border));
        lines.push(Line::from(spans));
    }
    lines.push(bar("╰", "─".repeat(width.saturating_sub(2)), "╯"));
    lines
}

/// A write's or an edit's diff: added lines green, removed red, hunk headers blue; each row one
/// terminal line (the file's text escaped, cut to the width), then how many lines are not shown.
fn diff_lines(preview: &ChangePreview, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = preview
        .lines
        .iter()
        .map(|line| {
            let (mark, style) = match line.kind {
                DiffKind::Hunk => ("", Style::default().fg(Color::Blue)),
                DiffKind::Context => (" ", Style::default()),
                DiffKind::Added => ("+", Style::default().fg(Color::Green)),
                DiffKind::Removed => ("-", Style::default().fg(Color::Red)),
            };
            let text = crate::terminal_text::escape(&line.text.replace('\t', "    ")).into_owned();
            Line::from(Span::styled(truncate(&format!("{mark}{text}"), width), style))
        })
        .collect();
    if preview.more > 0 {
        let more = format!(
            "… {} more line{}",
            preview.more,
            if preview.more == 1 { "" } else { "s" }
        );
        lines.push(Line::from(Span::styled(more, dim())));
    }
    lines
}

pub(crate) fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

fn activity(app: &App, width: usize) -> Line<'static> {
    if let Some(busy) = &app.busy {
        let elapsed = app.now.saturating_duration_since(busy.since);
        let frame = (elapsed.as_millis() / 100) as usize % SPINNER.len();
        let mut text = format!("{} · {}s", busy.label, elapsed.as_secs());
        if busy.cancel.as_ref().is_some_and(|c| !c.is_cancelled()) {
            text.push_str(" · Esc or Ctrl+C to cancel");
        }
        if let Some(hint) = app.hint() {
            text = format!("{text} · {hint}");
        }
        return Line::from(vec![
            Span::styled(format!("{} ", SPINNER[frame]), Style::default().fg(Color::Cyan)),
            Span::styled(
                truncate(&text, width.saturating_sub(2)),
                Style::default().fg(Color::Cyan),
            ),
        ]);
    }
    if let Some(hint) = app.hint() {
        return Line::from(Span::styled(
            truncate(hint, width),
            Style::default().fg(Color::Yellow),
        ));
    }
    if app.scroll > 0 {
        let text = format!(
            "↑ scrolled {} row(s) up · PageDown or Ctrl+End to return",
            app.scroll.min(app.scroll_max.get())
        );
        return Line::from(Span::styled(truncate(&text, width), dim()));
    }
    Line::default()
}

fn draw_input(frame: &mut Frame<'_>, app: &App, area: Rect, rows: &[String], cursor: (usize, usize)) {
    let border = if app.modal.is_some() {
        dim()
    } else {
        Style::default().fg(Color::Cyan)
    };
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(border);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let height = inner.height as usize;
    if height == 0 {
        return;
    }
    let first = (cursor.0 + 1).saturating_sub(height);
    let lines: Vec<Line<'static>> = if app.composer.is_empty() {
        vec![Line::from(vec![
            Span::styled("› ", Style::default().fg(Color::Cyan)),
            Span::styled(
                truncate(
                    "Ask Elph, or / for commands",
                    (inner.width as usize).saturating_sub(2),
                ),
                dim(),
            ),
        ])]
    } else {
        rows.iter()
            .enumerate()
            .skip(first)
            .take(height)
            .map(|(index, row)| {
                let prefix = if index == 0 { "› " } else { "  " };
                Line::from(vec![
                    Span::styled(prefix, Style::default().fg(Color::Cyan)),
                    Span::raw(row.clone()),
                ])
            })
            .collect()
    };
    frame.render_widget(Paragraph::new(lines), inner);
    if app.modal.is_none() && !app.exit {
        let x = inner.x + 2 + cursor.1 as u16;
        let y = inner.y + (cursor.0 - first) as u16;
        if x < inner.x + inner.width && y < inner.y + inner.height {
            frame.set_cursor_position((x, y));
        }
    }
}

fn short_count(n: u64) -> String {
    match n {
        1_000_000.. => format!("{:.1}M", n as f64 / 1_000_000.0).replace(".0M", "M"),
        100_000.. => format!("{}k", n / 1_000),
        1_000.. => format!("{:.1}k", n as f64 / 1_000.0).replace(".0k", "k"),
        _ => n.to_string(),
    }
}

/// `ctx 12% (15.2k/128k)`, or `ctx 12%` when `short`.
fn context_use(tokens: u64, window: u64, short: bool) -> String {
    if window == 0 {
        return format!("ctx {}", short_count(tokens));
    }
    let percent = (tokens as f64 * 100.0 / window as f64).round() as u64;
    if short {
        format!("ctx {percent}%")
    } else {
        format!("ctx {percent}% ({}/{})", short_count(tokens), short_count(window))
    }
}

/// Model, session, trust, active hooks, context use; shorter forms when the row is narrow.
fn status_line(app: &App, width: usize) -> Line<'static> {
    let trust = if app.hooks.trusted { "trusted" } else { "untrusted" };
    let trust_style = if app.hooks.trusted {
        Style::default().fg(Color::Green)
    } else {
        Style::default().fg(Color::Yellow)
    };
    let session = if app.status.session_id.is_empty() {
        "…".to_string()
    } else {
        short_id(&app.status.session_id)
    };
    let active = app.hooks.active();
    let hooks = format!("{active} hook{}", if active == 1 { "" } else { "s" });
    let (tokens, window) = (app.status.context_tokens, app.status.context_window);
    let mode = app.status.mode;
    let mode_style = if mode.is_read_only() {
        Style::default().fg(Color::Magenta)
    } else {
        dim()
    };
    let full: Vec<(String, Style)> = vec![
        (app.status.model.clone(), Style::default().fg(Color::Cyan)),
        (format!("mode {mode}"), mode_style),
        (format!("session {session}"), dim()),
        (trust.to_string(), trust_style),
        (hooks.clone(), dim()),
        (context_use(tokens, window, false), dim()),
    ];
    let compact: Vec<(String, Style)> = vec![
        (app.status.model.clone(), Style::default().fg(Color::Cyan)),
        (mode.to_string(), mode_style),
        (trust.to_string(), trust_style),
        (hooks, dim()),
        (context_use(tokens, window, true), dim()),
        (session, dim()),
    ];
    let total = |parts: &[(String, Style)]| {
        parts.iter().map(|(text, _)| wrap::width(text)).sum::<usize>() + 3 * parts.len().saturating_sub(1)
    };
    let mut parts = if total(&full) <= width { full } else { compact };
    while total(&parts) > width && parts.len() > 1 {
        // Drop from the end; the model keeps what room is left.
        let rest = total(&parts[1..]) + 3;
        if parts.len() <= 4 && width > rest + 8 {
            parts[0].0 = truncate(&parts[0].0, width - rest);
            break;
        }
        parts.pop();
    }
    let mut spans = Vec::new();
    for (index, (text, style)) in parts.into_iter().enumerate() {
        if index > 0 {
            spans.push(Span::styled(" · ", dim()));
        }
        spans.push(Span::styled(text, style));
    }
    let mut line = Line::from(spans);
    if line.width() > width {
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        line = Line::from(Span::styled(truncate(&text, width), dim()));
    }
    line
}
