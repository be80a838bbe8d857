//! The TUI's "trust the new content?" dialog after `/reload` finds a changed project, as state and
//! as drawn (the pty test `trust_gate_pty::reload_after_an_edit_…` drives the real binary).

use coding_agent::tui::app::Modal;
use coding_agent::tui::worker::{Op, UiMsg};
use crossterm::event::KeyCode;

use super::tui_support::{press, render, started_app, worker};

fn changed(changes: &[&str]) -> UiMsg {
    UiMsg::TrustChanged {
        project: "/home/ada/code/shop".into(),
        changes: changes.iter().map(|change| change.to_string()).collect(),
    }
}

#[test]
fn the_dialog_lists_the_changes_and_esc_keeps_the_hooks_off() {
    let mut app = started_app(true);
    worker(
        &mut app,
        changed(&["hook added: lint", "file changed: .elph/hooks/audit.sh"]),
    );
    assert!(matches!(app.modal, Some(Modal::Trust { .. })));
    let screen = render(&app, 80, 24);
    for line in [
        "Trust the new content?",
        "/home/ada/code/shop changed since you trusted it:",
        "- hook added: lint",
        "- file changed: .elph/hooks/audit.sh",
        "› 1. Yes, trust the new content",
        "2. No, keep its hooks and MCP servers off",
    ] {
        assert!(screen.contains(line), "{line:?} in:\n{screen}");
    }
    press(&mut app, KeyCode::Esc);
    assert!(app.modal.is_none());
    assert!(app.take_commands().is_empty(), "No records nothing");
    let screen = render(&app, 80, 24);
    assert!(
        screen.contains("kept /home/ada/code/shop's hooks and MCP servers off"),
        "{screen}"
    );
}

#[test]
fn yes_trusts_the_new_content_and_a_long_list_is_cut() {
    let mut app = started_app(true);
    let many: Vec<String> = (0..10)
        .map(|i| format!("file changed: .elph/skills/s{i}/SKILL.md"))
        .collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    worker(&mut app, changed(&many));
    let screen = render(&app, 80, 30);
    assert!(screen.contains("s5/SKILL.md"), "{screen}");
    assert!(!screen.contains("s6/SKILL.md"), "{screen}");
    assert!(screen.contains("… and 4 more"), "{screen}");
    press(&mut app, KeyCode::Char('y'));
    assert!(app.modal.is_none());
    assert!(matches!(app.take_commands().as_slice(), [Op::Trust]));
}
