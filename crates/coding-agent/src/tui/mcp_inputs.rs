//! The MCP files' `${input:ID}` questions (VS Code's `inputs`), asked on the terminal when the
//! terminal UI starts, before its screen opens, once for the session:
//!
//! ```text
//! MCP server input 'gitlab_token': GitLab Personal Access Token (hidden): ********
//! MCP server input 'gitlab_url': GitLab API URL (optional) [https://gitlab.com/api/v4]:
//! ```
//!
//! A `password` input's answer is not shown; Enter on nothing takes the `default`; a `pickString`
//! lists its options and takes a number or a value. Esc leaves the input unanswered (the servers
//! that need it are skipped, and the session says so); Ctrl+C stops the start.

use std::collections::BTreeMap;
use std::io::Write;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::Print;
use crossterm::{queue, terminal};

use crate::mcp::inputs::{InputConfig, InputKind, McpInputs, needed};
use crate::paths::Paths;

/// What came of the questions.
pub(crate) enum Asked {
    Answered(McpInputs),
    /// Ctrl+C: the person does not want to start.
    Interrupted,
}

/// Asks every input that the servers this session would start need.
pub(crate) fn ask(paths: &Paths, project_trusted: bool) -> std::io::Result<Asked> {
    let needed = needed(paths, project_trusted);
    let mut answers = BTreeMap::new();
    for spec in &needed {
        match ask_one(spec)? {
            LineOutcome::Entered(answer) => {
                answers.insert(spec.id.clone(), answer);
            }
            LineOutcome::Skipped => {}
            LineOutcome::Interrupted => return Ok(Asked::Interrupted),
        }
    }
    Ok(Asked::Answered(McpInputs::answered(answers)))
}

/// The question's line, escaped (an mcp.json is the project's text).
fn prompt(spec: &InputConfig) -> String {
    let mut line = format!("MCP server input '{}'", spec.id);
    if let Some(description) = &spec.description {
        line.push_str(&format!(": {description}"));
    }
    if spec.password {
        line.push_str(" (hidden)");
    }
    match (&spec.default, spec.password) {
        (Some(default), false) => line.push_str(&format!(" [{default}]")),
        (Some(_), true) => line.push_str(" [Enter: the default]"),
        (None, _) => {}
    }
    line.push_str(": ");
    crate::terminal_text::escape(&line).into_owned()
}

/// The answer `typed` gives, or why it gives none (a pick that names no option).
fn answer_of(spec: &InputConfig, typed: &str) -> Result<String, String> {
    let typed = if typed.is_empty() {
        spec.default.clone().unwrap_or_default()
    } else {
        typed.to_string()
    };
    if spec.kind != InputKind::PickString {
        return Ok(typed);
    }
    if let Ok(number) = typed.parse::<usize>()
        && let Some(option) = number.checked_sub(1).and_then(|index| spec.options.get(index))
    {
        return Ok(option.value().to_string());
    }
    spec.options
        .iter()
        .find(|option| option.value() == typed)
        .map(|option| option.value().to_string())
        .ok_or_else(|| format!("choose 1 to {}", spec.options.len()))
}

fn ask_one(spec: &InputConfig) -> std::io::Result<LineOutcome> {
    let _raw = RawMode::enable()?;
    let mut out = std::io::stdout().lock();
    if spec.kind == InputKind::PickString {
        for (index, option) in spec.options.iter().enumerate() {
            let line = format!("  {}. {}", index + 1, option.label());
            queue!(out, Print(crate::terminal_text::escape(&line)), Print("\r\n"))?;
        }
    }
    loop {
        queue!(out, Print(prompt(spec)))?;
        out.flush()?;
        let mut line = LineInput::new(spec.password);
        let outcome = loop {
            if let Event::Key(key) = crossterm::event::read()? {
                match line.handle(key) {
                    Step::Echo(c) => queue!(out, Print(c))?,
                    Step::Erase => queue!(out, Print("\u{8} \u{8}"))?,
                    Step::Done(outcome) => break outcome,
                    Step::Nothing => {}
                }
                out.flush()?;
            }
        };
        queue!(out, Print("\r\n"))?;
        let LineOutcome::Entered(typed) = outcome else {
            out.flush()?;
            return Ok(outcome);
        };
        match answer_of(spec, &typed) {
            Ok(answer) => {
                out.flush()?;
                return Ok(LineOutcome::Entered(answer));
            }
            Err(why) => queue!(out, Print(why), Print("\r\n"))?,
        }
    }
}

/// How a line ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LineOutcome {
    Entered(String),
    Skipped,
    Interrupted,
}

/// What the terminal should show after a key.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Echo(char),
    Erase,
    Done(LineOutcome),
    Nothing,
}

/// One line being typed, apart from any terminal.
struct LineInput {
    text: String,
    hidden: bool,
}

impl LineInput {
    fn new(hidden: bool) -> Self {
        LineInput {
            text: String::new(),
            hidden,
        }
    }

    fn handle(&mut self, key: KeyEvent) -> Step {
        if key.kind == KeyEventKind::Release {
            return Step::Nothing;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => Step::Done(LineOutcome::Interrupted),
            KeyCode::Esc => Step::Done(LineOutcome::Skipped),
            KeyCode::Enter => Step::Done(LineOutcome::Entered(std::mem::take(&mut self.text))),
            KeyCode::Backspace => match self.text.pop() {
                Some(_) if !self.hidden => Step::Erase,
                _ => Step::Nothing,
            },
            KeyCode::Char(c) if !ctrl => {
                self.text.push(c);
                if self.hidden {
                    Step::Echo('*')
                } else if c.is_control() {
                    Step::Nothing
                } else {
                    Step::Echo(c)
                }
            }
            _ => Step::Nothing,
        }
    }
}

/// Raw mode while a question is asked; dropping it restores the terminal.
struct RawMode;

impl RawMode {
    fn enable() -> std::io::Result<Self> {
        terminal::enable_raw_mode()?;
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = terminal::disable_raw_mode();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventState;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent {
            code,
            modifiers: KeyModifiers::NONE,
            kind: KeyEventKind::Press,
            state: KeyEventState::NONE,
        }
    }

    fn spec(value: serde_json::Value) -> InputConfig {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_hidden_line_shows_stars_and_keeps_the_text() {
        let mut line = LineInput::new(true);
        assert_eq!(line.handle(key(KeyCode::Char('a'))), Step::Echo('*'));
        assert_eq!(line.handle(key(KeyCode::Char('b'))), Step::Echo('*'));
        assert_eq!(line.handle(key(KeyCode::Backspace)), Step::Nothing);
        assert_eq!(line.handle(key(KeyCode::Char('c'))), Step::Echo('*'));
        assert_eq!(
            line.handle(key(KeyCode::Enter)),
            Step::Done(LineOutcome::Entered("ac".into()))
        );
        let mut shown = LineInput::new(false);
        assert_eq!(shown.handle(key(KeyCode::Char('x'))), Step::Echo('x'));
        assert_eq!(shown.handle(key(KeyCode::Backspace)), Step::Erase);
        assert_eq!(shown.handle(key(KeyCode::Esc)), Step::Done(LineOutcome::Skipped));
        let ctrl_c = KeyEvent {
            modifiers: KeyModifiers::CONTROL,
            ..key(KeyCode::Char('c'))
        };
        assert_eq!(shown.handle(ctrl_c), Step::Done(LineOutcome::Interrupted));
    }

    #[test]
    fn defaults_picks_and_prompts() {
        let url = spec(
            serde_json::json!({"type": "promptString", "id": "url", "description": "URL", "default": "https://h"}),
        );
        assert_eq!(answer_of(&url, "").unwrap(), "https://h");
        assert_eq!(answer_of(&url, "x").unwrap(), "x");
        assert_eq!(prompt(&url), "MCP server input 'url': URL [https://h]: ");
        let pick = spec(
            serde_json::json!({"type": "pickString", "id": "tier", "options": ["a", {"label": "Bee", "value": "b"}]}),
        );
        assert_eq!(answer_of(&pick, "2").unwrap(), "b");
        assert_eq!(answer_of(&pick, "a").unwrap(), "a");
        assert_eq!(answer_of(&pick, "3").unwrap_err(), "choose 1 to 2");
        let token = spec(
            serde_json::json!({"type": "promptString", "id": "t", "password": true, "description": "\u{1b}[2Jx"}),
        );
        assert!(!prompt(&token).contains('\u{1b}'), "escaped: {}", prompt(&token));
        assert!(prompt(&token).contains("(hidden)"));
    }
}
