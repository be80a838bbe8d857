//! Agent modes in the TUI's state: `/mode [build|plan]` and Shift+Tab become the session's
//! `SetMode` operation, and the status line shows the mode the session reports.

use coding_agent::session::{Outcome, SessionEvent};
use coding_agent::tui::app::{App, Item};
use coding_agent::tui::worker::{Level, Op, ui_messages};
use crossterm::event::{KeyCode, KeyModifiers};
use elph_agent::harness::AgentMode;

use super::tui_support::{press, press_with, render, started_app, type_text, worker};

/// The session's answer to a `SetMode`, as the worker hands it to the app.
fn session_answers(app: &mut App, outcome: Result<AgentMode, String>) {
    let finished = SessionEvent::Finished {
        op: 1,
        outcome: Outcome::Mode(outcome),
    };
    for message in ui_messages(finished) {
        worker(app, message);
    }
}

fn status_row(app: &App) -> String {
    render(app, 120, 20)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

fn shift_tab(app: &mut App) {
    press_with(app, KeyCode::BackTab, KeyModifiers::SHIFT);
}

#[test]
fn mode_command_asks_the_session_and_the_status_line_follows() {
    let mut app = started_app(true);
    assert!(status_row(&app).contains("mode build"), "{}", status_row(&app));

    type_text(&mut app, "/mode plan");
    press(&mut app, KeyCode::Enter);
    match app.take_commands().as_slice() {
        [Op::SetMode(Some(name))] => assert_eq!(name, "plan"),
        other => panic!("expected SetMode(plan), got {other:?}"),
    }
    assert!(app.busy.is_some(), "the session carries it out");
    session_answers(&mut app, Ok(AgentMode::Plan));
    assert!(app.busy.is_none());
    assert_eq!(app.status.mode, AgentMode::Plan);
    assert!(status_row(&app).contains("mode plan"), "{}", status_row(&app));
    assert!(app.items.iter().any(|item| matches!(
        item,
        Item::Notice { level: Level::Info, text } if text.starts_with("Mode plan: Read-only")
    )));

    // Without an argument: the session picks the next mode.
    type_text(&mut app, "/mode");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.take_commands().as_slice(), [Op::SetMode(None)]));
}

#[test]
fn an_unknown_mode_is_reported_and_the_mode_stays() {
    let mut app = started_app(true);
    type_text(&mut app, "/mode yolo");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.take_commands().as_slice(), [Op::SetMode(Some(_))]));
    session_answers(
        &mut app,
        Err("unknown agent mode 'yolo'; expected build or plan".into()),
    );
    assert_eq!(app.status.mode, AgentMode::Build);
    assert!(app.items.iter().any(|item| matches!(
        item,
        Item::Notice { level: Level::Error, text } if text.contains("expected build or plan")
    )));
    assert!(status_row(&app).contains("mode build"));
}

#[test]
fn shift_tab_cycles_the_mode_when_idle_and_waits_while_the_agent_works() {
    let mut app = started_app(true);
    shift_tab(&mut app);
    assert!(matches!(app.take_commands().as_slice(), [Op::SetMode(None)]));
    session_answers(&mut app, Ok(AgentMode::Plan));
    assert!(status_row(&app).contains("mode plan"));

    // While a turn runs, Shift+Tab sends nothing and says why.
    type_text(&mut app, "look around");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.take_commands().as_slice(), [Op::Prompt { .. }]));
    shift_tab(&mut app);
    assert!(app.take_commands().is_empty());
    let hint = app
        .hint
        .as_ref()
        .map(|(text, _)| text.as_str())
        .unwrap_or_default();
    assert!(hint.contains("once the agent is idle"), "{hint}");
    assert_eq!(app.status.mode, AgentMode::Plan);
}

#[test]
fn help_and_palette_list_the_mode_command_and_key() {
    let mut app = started_app(true);
    type_text(&mut app, "/mo");
    let offered: Vec<String> = app
        .palette()
        .unwrap()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    assert_eq!(offered, ["mode", "model"]);
    app.composer.set_text("");
    type_text(&mut app, "/help");
    press(&mut app, KeyCode::Enter);
    let screen = render(&app, 120, 60);
    assert!(screen.contains("Shift+Tab"), "{screen}");
    assert!(screen.contains("/mode [build|plan]"), "{screen}");
}
