//! An MCP server's question as a form in the terminal UI (docs/mcp.md, "Elicitation"): the asking
//! server's name and its message, a warning that servers should not ask for secrets, then one row
//! per field — text, numbers, yes/no, one option, several options — with its title, a `*` when it
//! is required, and the focused field's description and rules below. Enter submits (each value
//! checked against the server's rules first; the first problem is shown and nothing is sent),
//! Ctrl+D declines, Esc cancels. A URL question shows the URL in full; Enter says the user will
//! open it (Elph opens nothing itself).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::{Map, Number, Value};

use super::wrap::{truncate, wrap_text};
use crate::mcp::elicitation::{
    ElicitationAnswer, ElicitationKind, Field, FieldKind, Form, PendingElicitation,
};

/// Most fields shown at once; the window follows the focus.
const WINDOW: usize = 8;

/// The warning every form carries.
pub(crate) const SECRETS_WARNING: &str =
    "⚠ MCP servers should not ask for passwords, API keys or other secrets: do not enter them here.";

/// What the user has put in one field so far.
#[derive(Clone, Debug, PartialEq)]
enum Entry {
    /// Text and numbers, as typed.
    Typed(String),
    Flag(bool),
    /// The chosen option, if any.
    One(Option<usize>),
    /// Which options are chosen, and the option under the cursor.
    Many {
        chosen: Vec<bool>,
        cursor: usize,
    },
}

impl Entry {
    fn start(field: &Field) -> Entry {
        match &field.kind {
            FieldKind::Text { default, .. } => Entry::Typed(default.clone().unwrap_or_default()),
            FieldKind::Number { default, .. } => {
                Entry::Typed(default.as_ref().map(Number::to_string).unwrap_or_default())
            }
            FieldKind::Boolean { default } => Entry::Flag(default.unwrap_or(false)),
            FieldKind::Choice { options, default } => {
                let chosen = default
                    .as_ref()
                    .and_then(|default| options.iter().position(|option| option.value == *default));
                // A required choice starts on its first option: there is nothing else to send.
                Entry::One(chosen.or(field.required.then_some(0)))
            }
            FieldKind::Choices { options, default, .. } => Entry::Many {
                chosen: options
                    .iter()
                    .map(|option| default.contains(&option.value))
                    .collect(),
                cursor: 0,
            },
        }
    }

    /// The value this entry sends for `field`, `None` for nothing, or why it is no value.
    fn value(&self, field: &Field) -> Result<Option<Value>, String> {
        match (self, &field.kind) {
            (Entry::Typed(text), _) if text.is_empty() => Ok(None),
            (Entry::Typed(text), FieldKind::Number { integer: true, .. }) => text
                .trim()
                .parse::<i64>()
                .map(|number| Some(Value::Number(number.into())))
                .map_err(|_| "must be a whole number".to_string()),
            (Entry::Typed(text), FieldKind::Number { .. }) => text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(|number| Some(Value::Number(number)))
                .ok_or_else(|| "must be a number".to_string()),
            (Entry::Typed(text), _) => Ok(Some(Value::String(text.clone()))),
            (Entry::Flag(flag), _) => Ok(Some(Value::Bool(*flag))),
            (Entry::One(chosen), FieldKind::Choice { options, .. }) => Ok(chosen
                .and_then(|index| options.get(index))
                .map(|option| Value::String(option.value.clone()))),
            (Entry::Many { chosen, .. }, FieldKind::Choices { options, .. }) => {
                let values: Vec<Value> = options
                    .iter()
                    .zip(chosen)
                    .filter(|(_, chosen)| **chosen)
                    .map(|(option, _)| Value::String(option.value.clone()))
                    .collect();
                Ok((!values.is_empty() || field.required).then_some(Value::Array(values)))
            }
            _ => Ok(None),
        }
    }

    /// How the entry shows in its row.
    fn shown(&self, field: &Field, focused: bool) -> String {
        match (self, &field.kind) {
            (Entry::Typed(text), _) => {
                let text = crate::terminal_text::escape(text).into_owned();
                if focused { format!("{text}▏") } else { text }
            }
            (Entry::Flag(flag), _) => if *flag { "[x] yes" } else { "[ ] no" }.to_string(),
            (Entry::One(chosen), FieldKind::Choice { options, .. }) => {
                let title = chosen
                    .and_then(|index| options.get(index))
                    .map_or("(none)", |option| option.title.as_str());
                format!("‹ {} ›", crate::terminal_text::escape(title))
            }
            (Entry::Many { chosen, cursor }, FieldKind::Choices { options, .. }) => options
                .iter()
                .zip(chosen)
                .enumerate()
                .map(|(index, (option, chosen))| {
                    let mark = if *chosen { "[x]" } else { "[ ]" };
                    let title = crate::terminal_text::escape(&option.title).into_owned();
                    if focused && index == *cursor {
                        format!("›{mark} {title}")
                    } else {
                        format!("{mark} {title}")
                    }
                })
                .collect::<Vec<_>>()
                .join("  "),
            _ => String::new(),
        }
    }

    fn option_count(field: &Field) -> usize {
        match &field.kind {
            FieldKind::Choice { options, .. } | FieldKind::Choices { options, .. } => options.len(),
            _ => 0,
        }
    }
}

#[derive(Debug)]
enum Body {
    Form {
        form: Form,
        entries: Vec<Entry>,
        focus: usize,
        /// Why the last Enter sent nothing.
        problem: Option<String>,
    },
    Url {
        url: String,
    },
}

/// The open question.
#[derive(Debug)]
pub struct ElicitationForm {
    /// Taken when answered.
    pending: Option<PendingElicitation>,
    server: String,
    message: String,
    body: Body,
}

impl ElicitationForm {
    pub fn new(pending: PendingElicitation) -> ElicitationForm {
        let request = &pending.request;
        let body = match &request.kind {
            ElicitationKind::Form(form) => Body::Form {
                entries: form.fields.iter().map(Entry::start).collect(),
                form: form.clone(),
                focus: 0,
                problem: None,
            },
            ElicitationKind::Url { url, .. } => Body::Url { url: url.clone() },
        };
        ElicitationForm {
            server: request.server.clone(),
            message: request.message.clone(),
            body,
            pending: Some(pending),
        }
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// Whether nobody waits for the answer any more (the call ended, the limit passed).
    pub fn is_withdrawn(&self) -> bool {
        self.pending.as_ref().is_none_or(PendingElicitation::is_withdrawn)
    }

    fn answer(&mut self, answer: ElicitationAnswer) -> Option<ElicitationAnswer> {
        let pending = self.pending.take()?;
        pending.answer(answer.clone());
        Some(answer)
    }

    /// Handles `key`; returns the answer sent when it ends the question.
    pub fn key(&mut self, key: KeyEvent) -> Option<ElicitationAnswer> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Esc => return self.answer(ElicitationAnswer::Cancel),
            KeyCode::Char('d') if ctrl => return self.answer(ElicitationAnswer::Decline),
            KeyCode::Enter => {
                let content = match &mut self.body {
                    Body::Url { .. } => Ok(Map::new()),
                    Body::Form {
                        form,
                        entries,
                        focus,
                        problem,
                    } => collect(form, entries).map_err(|(index, text)| {
                        *focus = index;
                        *problem = Some(text);
                    }),
                };
                return match content {
                    Ok(content) => self.answer(ElicitationAnswer::Accept(content)),
                    Err(()) => None,
                };
            }
            _ => {}
        }
        let Body::Form {
            form,
            entries,
            focus,
            problem,
        } = &mut self.body
        else {
            return None;
        };
        let count = entries.len();
        if count == 0 {
            return None;
        }
        let field = &form.fields[*focus];
        let options = Entry::option_count(field);
        match (key.code, &mut entries[*focus]) {
            (KeyCode::Tab | KeyCode::Down, _) => *focus = (*focus + 1) % count,
            (KeyCode::BackTab | KeyCode::Up, _) => *focus = (*focus + count - 1) % count,
            (KeyCode::Char(' '), Entry::Flag(flag)) => *flag = !*flag,
            (KeyCode::Right | KeyCode::Char(' '), Entry::One(chosen)) => {
                // Past the last option: back to none, unless the field needs one.
                *chosen = match *chosen {
                    None => Some(0),
                    Some(index) if index + 1 < options => Some(index + 1),
                    Some(_) if field.required => Some(0),
                    Some(_) => None,
                };
            }
            (KeyCode::Left, Entry::One(chosen)) => {
                *chosen = match *chosen {
                    None => Some(options - 1),
                    Some(0) if !field.required => None,
                    Some(index) => Some((index + options - 1) % options),
                };
            }
            (KeyCode::Right, Entry::Many { cursor, .. }) => *cursor = (*cursor + 1) % options,
            (KeyCode::Left, Entry::Many { cursor, .. }) => *cursor = (*cursor + options - 1) % options,
            (KeyCode::Char(' '), Entry::Many { chosen, cursor }) => {
                if let Some(chosen) = chosen.get_mut(*cursor) {
                    *chosen = !*chosen;
                }
            }
            (KeyCode::Backspace, Entry::Typed(text)) => {
                text.pop();
            }
            (KeyCode::Char(c), Entry::Typed(text)) if !ctrl => text.push(c),
            _ => return None,
        }
        *problem = None;
        None
    }

    /// Pasted text goes into the focused text field.
    pub fn paste(&mut self, pasted: &str) {
        if let Body::Form { entries, focus, .. } = &mut self.body
            && let Some(Entry::Typed(text)) = entries.get_mut(*focus)
        {
            text.extend(pasted.chars().filter(|c| !c.is_control()));
        }
    }

    /// The title, body and footer of the modal, `inner` cells wide.
    pub(crate) fn lines(&self, inner: usize) -> (&'static str, Vec<Line<'static>>, &'static str) {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let dim = Style::default().fg(Color::DarkGray);
        // The server's words are untrusted: escape sequences and bidirectional overrides (which
        // could disguise where a URL leads) are shown, not obeyed.
        let escape = |text: &str| crate::terminal_text::escape_lines(text).into_owned();
        let mut body = wrap_text(
            &format!("MCP server '{}' asks:", escape(&self.server)),
            bold,
            inner,
            &[],
            &[],
        );
        body.extend(wrap_text(
            &escape(&self.message),
            Style::default(),
            inner,
            &[Span::raw("  ")],
            &[Span::raw("  ")],
        ));
        body.extend(wrap_text(
            SECRETS_WARNING,
            Style::default().fg(Color::Yellow),
            inner,
            &[],
            &[],
        ));
        match &self.body {
            Body::Url { url } => {
                body.push(Line::from(Span::styled(
                    "Open this address in your browser:",
                    dim,
                )));
                // In full, never cut: the person must see where it leads.
                body.extend(wrap_text(
                    &escape(url),
                    Style::default().fg(Color::Cyan),
                    inner,
                    &[Span::raw("  ")],
                    &[Span::raw("  ")],
                ));
                (
                    "MCP server wants you to open a link",
                    body,
                    "Enter I will open it · Ctrl+D decline · Esc cancel",
                )
            }
            Body::Form {
                form,
                entries,
                focus,
                problem,
            } => {
                for text in [&form.title, &form.description].into_iter().flatten() {
                    body.extend(wrap_text(&escape(text), dim, inner, &[], &[]));
                }
                let start = (*focus + 1).saturating_sub(WINDOW);
                if start > 0 {
                    body.push(Line::from(Span::styled(format!("  ↑ {start} more"), dim)));
                }
                for (index, (field, entry)) in form
                    .fields
                    .iter()
                    .zip(entries)
                    .enumerate()
                    .skip(start)
                    .take(WINDOW)
                {
                    let focused = index == *focus;
                    let marker = if focused { "› " } else { "  " };
                    let required = if field.required { " *" } else { "" };
                    let label = format!(
                        "{marker}{}{required}: ",
                        crate::terminal_text::escape(field.label())
                    );
                    let style = if focused {
                        Style::default().fg(Color::Cyan).add_modifier(Modifier::BOLD)
                    } else {
                        Style::default()
                    };
                    let room = inner.saturating_sub(super::wrap::width(&label));
                    body.push(Line::from(vec![
                        Span::styled(label, style),
                        Span::raw(truncate(&entry.shown(field, focused), room)),
                    ]));
                    if focused && let Some(about) = about(field) {
                        body.extend(wrap_text(
                            &escape(&about),
                            dim,
                            inner,
                            &[Span::raw("    ")],
                            &[Span::raw("    ")],
                        ));
                    }
                }
                let below = form.fields.len().saturating_sub(start + WINDOW);
                if below > 0 {
                    body.push(Line::from(Span::styled(format!("  ↓ {below} more"), dim)));
                }
                if let Some(problem) = problem {
                    body.extend(wrap_text(
                        problem,
                        Style::default().fg(Color::Red),
                        inner,
                        &[],
                        &[],
                    ));
                }
                (
                    "MCP server asks for input",
                    body,
                    "Enter submit · Tab next · Space/←→ choose · Ctrl+D decline · Esc cancel",
                )
            }
        }
    }
}

/// The focused field's description and its rules.
fn about(field: &Field) -> Option<String> {
    let mut parts: Vec<String> = field.description.iter().cloned().collect();
    let rule = match &field.kind {
        FieldKind::Text {
            format,
            min_length,
            max_length,
            ..
        } => {
            let mut rules: Vec<String> = format.iter().map(|format| format.hint().to_string()).collect();
            if let Some(min) = min_length {
                rules.push(format!("at least {min} characters"));
            }
            if let Some(max) = max_length {
                rules.push(format!("at most {max} characters"));
            }
            rules.join(", ")
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
            ..
        } => {
            let kind = if *integer { "a whole number" } else { "a number" };
            match (minimum, maximum) {
                (Some(min), Some(max)) => format!("{kind} from {min} to {max}"),
                (Some(min), None) => format!("{kind}, at least {min}"),
                (None, Some(max)) => format!("{kind}, at most {max}"),
                (None, None) => kind.to_string(),
            }
        }
        FieldKind::Boolean { .. } => "Space switches".to_string(),
        FieldKind::Choice { .. } => "←/→ or Space choose".to_string(),
        FieldKind::Choices {
            min_items, max_items, ..
        } => {
            let mut rule = "←/→ move, Space picks".to_string();
            if let Some(min) = min_items {
                rule.push_str(&format!(", at least {min}"));
            }
            if let Some(max) = max_items {
                rule.push_str(&format!(", at most {max}"));
            }
            rule
        }
    };
    if !rule.is_empty() {
        parts.push(format!("({rule})"));
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The answer's content, or the first field with a problem and the problem.
fn collect(form: &Form, entries: &[Entry]) -> Result<Map<String, Value>, (usize, String)> {
    let mut content = Map::new();
    for (index, (field, entry)) in form.fields.iter().zip(entries).enumerate() {
        let problem = |text: String| (index, format!("{}: {text}", field.label()));
        match entry.value(field).map_err(problem)? {
            Some(value) => {
                field.check(&value).map_err(problem)?;
                content.insert(field.name.clone(), value);
            }
            None if field.required => return Err(problem("required".to_string())),
            None => {}
        }
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::elicitation::ElicitationRequest;
    use serde_json::json;

    fn press(form: &mut ElicitationForm, code: KeyCode) -> Option<ElicitationAnswer> {
        form.key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn type_text(form: &mut ElicitationForm, text: &str) {
        for c in text.chars() {
            press(form, KeyCode::Char(c));
        }
    }

    fn open(schema: Value) -> (ElicitationForm, tokio::sync::oneshot::Receiver<ElicitationAnswer>) {
        let (pending, answer) = PendingElicitation::new(ElicitationRequest {
            server: "srv".into(),
            message: "Who are you?".into(),
            kind: ElicitationKind::Form(Form::from_schema(&schema).unwrap()),
        });
        (ElicitationForm::new(pending), answer)
    }

    #[test]
    fn enter_sends_the_typed_and_default_values_once_they_fit_the_rules() {
        let (mut form, mut answer) = open(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
                "ok": {"type": "boolean"},
                "hero": {"type": "string", "oneOf": [{"const": "h1", "title": "Superman"}, {"const": "h2", "title": "Batman"}]},
                "fish": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Trout"}]}}
            },
            "required": ["name"]
        }));
        assert_eq!(press(&mut form, KeyCode::Enter), None, "the name is required");
        let (_, body, _) = form.lines(80);
        let text: Vec<String> = body.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|line| line == "name: required"), "{text:?}");
        type_text(&mut form, "Ada");
        press(&mut form, KeyCode::Tab);
        press(&mut form, KeyCode::Backspace);
        press(&mut form, KeyCode::Backspace);
        type_text(&mut form, "200");
        assert_eq!(press(&mut form, KeyCode::Enter), None, "200 is above the maximum");
        assert_eq!(
            form.lines(80).1.last().unwrap().to_string(),
            "age: must be at most 100"
        );
        press(&mut form, KeyCode::Backspace);
        press(&mut form, KeyCode::Backspace);
        press(&mut form, KeyCode::Tab);
        press(&mut form, KeyCode::Char(' '));
        press(&mut form, KeyCode::Tab);
        press(&mut form, KeyCode::Right);
        press(&mut form, KeyCode::Right);
        press(&mut form, KeyCode::Tab);
        press(&mut form, KeyCode::Right);
        press(&mut form, KeyCode::Char(' '));
        let sent = press(&mut form, KeyCode::Enter).expect("sent");
        let expected = json!({"name": "Ada", "age": 2, "ok": true, "hero": "h2", "fish": ["f2"]});
        assert_eq!(
            sent,
            ElicitationAnswer::Accept(expected.as_object().unwrap().clone())
        );
        assert_eq!(answer.try_recv().unwrap(), sent);
    }

    #[test]
    fn the_servers_words_cannot_drive_the_terminal_or_disguise_a_url() {
        let (pending, _answer) = PendingElicitation::new(ElicitationRequest {
            server: "srv".into(),
            message: "hi\x1b]0;owned\x07 \x1b[2J".into(),
            kind: ElicitationKind::Url {
                url: "https://example.org/\u{202e}gpj.exe".into(),
                id: "1".into(),
            },
        });
        let form = ElicitationForm::new(pending);
        let (_, body, footer) = form.lines(100);
        let text = body.iter().map(ToString::to_string).collect::<Vec<_>>().concat();
        assert!(!text.contains('\x1b') && !text.contains('\u{202e}'), "{text:?}");
        assert!(text.contains("\\u{202e}gpj.exe"), "{text:?}");
        assert!(footer.starts_with("Enter I will open it"));
    }

    #[test]
    fn ctrl_d_declines_and_esc_cancels() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let (mut form, mut answer) = open(schema.clone());
        let declined = form.key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL));
        assert_eq!(declined, Some(ElicitationAnswer::Decline));
        assert_eq!(answer.try_recv().unwrap(), ElicitationAnswer::Decline);
        let (mut form, mut answer) = open(schema);
        assert_eq!(press(&mut form, KeyCode::Esc), Some(ElicitationAnswer::Cancel));
        assert_eq!(answer.try_recv().unwrap(), ElicitationAnswer::Cancel);
    }

    #[test]
    fn the_form_names_the_server_shows_its_message_and_warns_about_secrets() {
        let (form, answer) = open(json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Name", "description": "Your full name"}
        }, "required": ["name"]}));
        let (_, body, footer) = form.lines(100);
        let text: Vec<String> = body.iter().map(ToString::to_string).collect();
        assert_eq!(text[0], "MCP server 'srv' asks:");
        assert_eq!(text[1], "  Who are you?");
        assert_eq!(text[2], SECRETS_WARNING);
        assert_eq!(text[3], "› Name *: ▏");
        assert_eq!(text[4], "    Your full name");
        assert!(footer.contains("Ctrl+D decline") && footer.contains("Esc cancel"));
        assert!(!form.is_withdrawn());
        drop(answer);
        assert!(form.is_withdrawn(), "nobody waits once the asking side is gone");
    }
}
