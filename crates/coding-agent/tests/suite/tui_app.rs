//! The TUI's state without a terminal: keys and agent messages in, commands for the agent out.

use std::time::Duration;

use coding_agent::store::SessionInfo;
use coding_agent::tui::app::{App, Item, Modal, Msg, ToolState};
use coding_agent::tui::view;
use coding_agent::tui::worker::{Op, PendingApproval, UiMsg};
use coding_agent::workflows::WorkflowCommand;
use crossterm::event::{KeyCode, KeyModifiers};
use elph_agent::harness::{AgentEvent, ApprovalDecision, ApprovalRequest};
use elph_agent::hooks::{HookEvent, HookOutcome, PreToolUseOutcome, StopStatus};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::tui_support::{
    SESSION_ID, agent, ctrl_c, hooks_view, ok_run, pre_tool_dispatch, press, press_with, render, screen_text,
    started_app, type_text, worker,
};

fn palette_names(app: &App) -> Vec<String> {
    app.palette()
        .unwrap()
        .iter()
        .map(|c| c.name().to_string())
        .collect()
}

fn workflow(name: &str, description: &str, hint: Option<&str>) -> WorkflowCommand {
    WorkflowCommand {
        name: name.into(),
        description: description.into(),
        hint: hint.map(Into::into),
    }
}

fn send_prompt(app: &mut App, text: &str) -> tokio_util::sync::CancellationToken {
    type_text(app, text);
    press(app, KeyCode::Enter);
    match app.take_commands().as_slice() {
        [Op::Prompt { text: sent, cancel }] => {
            assert_eq!(sent, text);
            cancel.clone()
        }
        other => panic!("expected one prompt, got {other:?}"),
    }
}

fn later(app: &mut App, by: Duration) {
    let now = app.now + by;
    app.update(Msg::Tick(now));
}

#[test]
fn ctrl_c_cancels_the_running_turn_and_twice_exits() {
    let mut app = started_app(true);
    let cancel = send_prompt(&mut app, "hello");
    assert!(app.busy.is_some());
    ctrl_c(&mut app);
    assert!(cancel.is_cancelled(), "the turn's token is cancelled");
    assert!(!app.quitting);
    agent(
        &mut app,
        AgentEvent::TurnEnded {
            status: StopStatus::Cancelled,
            error: Some("cancelled".into()),
        },
    );
    worker(&mut app, UiMsg::Idle);
    assert!(app.busy.is_none());
    later(&mut app, Duration::from_secs(5));
    // Idle: once warns, twice exits.
    ctrl_c(&mut app);
    assert!(!app.quitting);
    assert!(app.take_commands().is_empty());
    later(&mut app, Duration::from_millis(300));
    ctrl_c(&mut app);
    assert!(app.quitting);
    assert!(matches!(app.take_commands().as_slice(), [Op::End { .. }]));
    assert!(!app.exit, "waits for sessionEnd");
    worker(&mut app, UiMsg::Exited);
    assert!(app.exit);
}

#[test]
fn ctrl_c_presses_far_apart_do_not_exit() {
    let mut app = started_app(true);
    type_text(&mut app, "draft");
    ctrl_c(&mut app);
    assert!(app.composer.is_empty(), "the first Ctrl+C clears the input");
    later(&mut app, Duration::from_secs(2));
    ctrl_c(&mut app);
    assert!(!app.quitting);
}

#[test]
fn quit_command_ends_the_session() {
    let mut app = started_app(true);
    type_text(&mut app, "/quit");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.take_commands().as_slice(), [Op::End { .. }]));
    // Ctrl+C while sessionEnd hooks run: leave now.
    ctrl_c(&mut app);
    assert!(app.exit);
}

#[test]
fn typed_trust_runs_trust_even_where_the_palette_offers_untrust() {
    let mut app = started_app(true);
    type_text(&mut app, "/trust");
    assert_eq!(palette_names(&app), vec!["untrust"]);
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.take_commands().as_slice(), [Op::Trust]));
}

#[test]
fn the_palette_refreshes_after_untrust() {
    let mut app = started_app(true);
    type_text(&mut app, "/untr");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.take_commands().as_slice(), [Op::Untrust]));
    worker(&mut app, UiMsg::Hooks(hooks_view(false)));
    worker(&mut app, UiMsg::Idle);
    type_text(&mut app, "/");
    let names = palette_names(&app);
    assert!(
        names.iter().any(|n| n == "trust") && !names.iter().any(|n| n == "untrust"),
        "{names:?}"
    );
}

#[test]
fn palette_keys_select_complete_and_close() {
    let mut app = started_app(true);
    type_text(&mut app, "/co");
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.composer.text(), "/compact ");
    assert!(app.palette().is_none(), "closed once arguments start");
    type_text(&mut app, "keep the plan");
    press(&mut app, KeyCode::Enter);
    match app.take_commands().as_slice() {
        [Op::Compact { instructions, .. }] => assert_eq!(instructions.as_deref(), Some("keep the plan")),
        other => panic!("{other:?}"),
    }
    worker(&mut app, UiMsg::Idle);
    type_text(&mut app, "/");
    press(&mut app, KeyCode::Esc);
    assert!(app.palette().is_none());
    press(&mut app, KeyCode::Backspace);
    type_text(&mut app, "/he");
    assert!(app.palette().is_some(), "reopens as you type again");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.items.last(), Some(Item::Panel(panel)) if panel.title == "Help"));
}

#[test]
fn unknown_commands_are_reported_not_sent() {
    let mut app = started_app(true);
    type_text(&mut app, "/frobnicate now");
    press(&mut app, KeyCode::Enter);
    assert!(app.take_commands().is_empty());
    assert_eq!(
        app.composer.text(),
        "/frobnicate now",
        "the line stays to be corrected"
    );
    assert!(
        matches!(app.items.last(), Some(Item::Notice { text, .. }) if text.contains("unknown command /frobnicate"))
    );
}

#[test]
fn a_prompt_waits_while_the_agent_works() {
    let mut app = started_app(true);
    send_prompt(&mut app, "first");
    type_text(&mut app, "second");
    press(&mut app, KeyCode::Enter);
    assert!(app.take_commands().is_empty());
    assert_eq!(app.composer.text(), "second", "the text stays");
    type_text(&mut app, "/reload");
    press(&mut app, KeyCode::Enter);
    assert!(app.take_commands().is_empty(), "agent commands wait too");
}

#[test]
fn multi_line_input_and_history() {
    let mut app = started_app(true);
    type_text(&mut app, "line one");
    press_with(&mut app, KeyCode::Enter, KeyModifiers::SHIFT);
    type_text(&mut app, "line two");
    press_with(&mut app, KeyCode::Enter, KeyModifiers::ALT);
    type_text(&mut app, "three");
    press_with(&mut app, KeyCode::Char('j'), KeyModifiers::CONTROL);
    assert_eq!(app.composer.text(), "line one\nline two\nthree\n");
    press(&mut app, KeyCode::Enter);
    match app.take_commands().as_slice() {
        [Op::Prompt { text, .. }] => assert_eq!(text, "line one\nline two\nthree\n"),
        other => panic!("{other:?}"),
    }
    worker(&mut app, UiMsg::Idle);
    press(&mut app, KeyCode::Up);
    assert_eq!(app.composer.text(), "line one\nline two\nthree\n");
    press(&mut app, KeyCode::Down);
    assert_eq!(app.composer.text(), "");
}

#[test]
fn paste_keeps_line_breaks() {
    let mut app = started_app(true);
    app.update(Msg::Paste("a\r\nb".into()));
    assert_eq!(app.composer.text(), "a\nb");
}

fn approval(app: &mut App) -> tokio::sync::oneshot::Receiver<ApprovalDecision> {
    agent(
        app,
        AgentEvent::ToolCallStarted {
            tool_call_id: "c1".into(),
            tool_name: "shell_exec".into(),
            input: json!({"command": "make"}),
        },
    );
    let (reply, answer) = tokio::sync::oneshot::channel();
    worker(
        app,
        UiMsg::Approval(PendingApproval {
            preview: None,
            request: ApprovalRequest {
                tool_call_id: "c1".into(),
                tool_name: "shell_exec".into(),
                input: json!({"command": "make"}),
                title: "Run `make`".into(),
                change: None,
                reason: "hook 'ask-first' requested approval".into(),
                offers_session: true,
                suggested_rule: None,
                escalation: None,
            },
            reply,
        }),
    );
    answer
}

fn tool_state(app: &App) -> ToolState {
    app.items
        .iter()
        .rev()
        .find_map(|item| match item {
            Item::Tool(tool) => Some(tool.state),
            _ => None,
        })
        .unwrap()
}

#[test]
fn approval_choices_reach_the_agent() {
    let mut app = started_app(true);
    send_prompt(&mut app, "build it");
    let mut answer = approval(&mut app);
    assert_eq!(tool_state(&app), ToolState::Approval);
    type_text(&mut app, "x"); // swallowed by the modal
    assert!(app.composer.is_empty());
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    assert_eq!(answer.try_recv().unwrap(), ApprovalDecision::AllowForSession);
    assert!(app.modal.is_none());
    assert_eq!(tool_state(&app), ToolState::Running);

    let mut answer = approval(&mut app);
    press(&mut app, KeyCode::Esc);
    assert_eq!(answer.try_recv().unwrap(), ApprovalDecision::Deny);

    let mut answer = approval(&mut app);
    press(&mut app, KeyCode::Char('1'));
    assert_eq!(answer.try_recv().unwrap(), ApprovalDecision::AllowOnce);
}

#[test]
fn ctrl_c_at_an_approval_cancels_the_turn() {
    let mut app = started_app(true);
    let cancel = send_prompt(&mut app, "build it");
    let mut answer = approval(&mut app);
    ctrl_c(&mut app);
    assert!(cancel.is_cancelled());
    assert!(app.modal.is_none());
    assert!(answer.try_recv().is_err(), "no answer: the reply was dropped");
    agent(
        &mut app,
        AgentEvent::TurnEnded {
            status: StopStatus::Cancelled,
            error: None,
        },
    );
    assert_eq!(tool_state(&app), ToolState::Cancelled);
}

fn session(id: &str, title: &str) -> SessionInfo {
    let now = time::OffsetDateTime::now_utc();
    SessionInfo {
        id: id.into(),
        project_dir: "/home/ada/code/shop".into(),
        created_at: now,
        updated_at: now,
        model: "openai/gpt-test".into(),
        title: Some(title.into()),
        entry_count: 4,
    }
}

#[test]
fn resume_lists_sessions_and_resumes_the_chosen_one() {
    let mut app = started_app(true);
    type_text(&mut app, "/resume");
    press(&mut app, KeyCode::Enter);
    assert!(matches!(app.take_commands().as_slice(), [Op::ListSessions]));
    worker(
        &mut app,
        UiMsg::Sessions(vec![
            session(SESSION_ID, "this one"),
            session("0197aaaa-0000-7000-8000-000000000001", "fix the tests"),
            session("0197aaaa-0000-7000-8000-000000000002", "add a hook"),
        ]),
    );
    worker(&mut app, UiMsg::Idle);
    match &app.modal {
        Some(Modal::Sessions { sessions, .. }) => {
            assert_eq!(sessions.len(), 2, "the current one is left out")
        }
        other => panic!("{other:?}"),
    }
    let screen = render(&app, 80, 24);
    assert!(
        screen.contains("Resume a session") && screen.contains("add a hook"),
        "{screen}"
    );
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    match app.take_commands().as_slice() {
        [Op::Resume(id)] => assert_eq!(id, "0197aaaa-0000-7000-8000-000000000002"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn hook_notices_attach_to_their_tool_call() {
    let mut app = started_app(true);
    send_prompt(&mut app, "go");
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            tool_call_id: "call-1".into(),
            tool_name: "write_file".into(),
            input: json!({"path": ".env"}),
        },
    );
    let before = app.items.len();
    let outcome = HookOutcome::PreToolUse(PreToolUseOutcome {
        decision: Some(elph_agent::hooks::Decision::Ask),
        reason: Some("check it".into()),
        ..Default::default()
    });
    let dispatch = pre_tool_dispatch(ok_run("guard", HookEvent::PreToolUse, Some(outcome)));
    agent(&mut app, AgentEvent::Hooks { dispatch });
    assert_eq!(app.items.len(), before, "no separate line");
    match app.items.last() {
        Some(Item::Tool(tool)) => assert_eq!(tool.notes[0].1, "hook 'guard' asked for approval: check it"),
        other => panic!("{other:?}"),
    }
    assert_eq!(app.recent_runs.len(), 1);
    // With no call running, hook activity is a line of its own.
    agent(
        &mut app,
        AgentEvent::TurnEnded {
            status: StopStatus::Completed,
            error: None,
        },
    );
    let dispatch = pre_tool_dispatch(ok_run(
        "guard",
        HookEvent::PreToolUse,
        Some(HookOutcome::PreToolUse(PreToolUseOutcome {
            tool_input: Some(json!({"path": "b"})),
            ..Default::default()
        })),
    ));
    agent(&mut app, AgentEvent::Hooks { dispatch });
    assert!(
        matches!(app.items.last(), Some(Item::Notice { text, .. }) if text == "hook 'guard' rewrote the tool input")
    );
}

/// Every size draws; a resized terminal shows the same as a fresh one of that size.
#[test]
fn any_size_and_resizing_draw_cleanly() {
    let mut app = started_app(true);
    send_prompt(
        &mut app,
        "a long question that wraps across several rows of a narrow terminal, to be sure",
    );
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "# Title\n\n```rust\nfn main() { println!(\"日本語 and wide text\"); }\n```\n\n- a\n- b"
                .into(),
        },
    );
    let _answer = approval(&mut app);
    let sizes: Vec<(u16, u16)> = [1u16, 2, 3, 7, 12, 20, 33, 60, 80, 131]
        .iter()
        .flat_map(|w| {
            [1u16, 2, 3, 4, 6, 9, 14, 20, 24, 41]
                .iter()
                .map(move |h| (*w, *h))
        })
        .collect();
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    for (width, height) in sizes.iter().chain(sizes.iter().rev()) {
        terminal.backend_mut().resize(*width, *height);
        terminal.draw(|frame| view::draw(frame, &app)).unwrap();
        let screen = screen_text(terminal.backend().buffer());
        assert_eq!(
            screen,
            render(&app, *width, *height),
            "after resizing to {width}x{height}"
        );
    }
    assert!(render(&app, 80, 24).contains("fn main() { println!(\"日本語 and wide text\"); }"));
    // The modal is closed: the palette and the plain layout at 60x20 too.
    press(&mut app, KeyCode::Esc);
    type_text(&mut app, "/");
    let screen = render(&app, 60, 20);
    let rows: Vec<&str> = screen.lines().collect();
    assert_eq!(rows.len(), 20);
    assert_eq!(
        rows[19], "openai/gpt-test · build · trusted · 2 hooks · ctx 1%",
        "{screen}"
    );
    assert!(rows[18].starts_with("────"), "{screen}");
    assert!(rows[17].starts_with("› /"), "{screen}");
}

#[test]
fn page_up_scrolls_back_through_a_long_transcript() {
    let mut app = started_app(true);
    for n in 0..60 {
        worker(
            &mut app,
            UiMsg::Notice(
                coding_agent::tui::worker::Level::Info,
                format!("notice number {n}"),
            ),
        );
    }
    let screen = render(&app, 80, 24);
    assert!(
        screen.contains("notice number 59") && !screen.contains("notice number 40\n"),
        "{screen}"
    );
    for _ in 0..10 {
        press(&mut app, KeyCode::PageUp);
        render(&app, 80, 24);
    }
    let screen = render(&app, 80, 24);
    assert!(screen.contains("notice number 0\n"), "the beginning: {screen}");
    assert!(screen.contains("↑ scrolled"), "{screen}");
    press_with(&mut app, KeyCode::End, KeyModifiers::CONTROL);
    assert!(render(&app, 80, 24).contains("notice number 59"));
}

#[test]
fn the_spinner_names_the_hook_or_tool_at_work() {
    let mut app = started_app(true);
    send_prompt(&mut app, "go");
    let label = |app: &App| app.busy.as_ref().unwrap().label.clone();
    agent(&mut app, AgentEvent::TurnStarted { prompt: "go".into() });
    agent(&mut app, AgentEvent::ModelRequestStarted);
    assert_eq!(label(&app), "waiting for the model");
    // The harness names each phase: write_file's preToolUse chain, then shell_exec's own run.
    let write_hooks = AgentEvent::HooksStarted {
        event: HookEvent::PreToolUse,
        tool_name: Some("write_file".into()),
    };
    let shell_runs = AgentEvent::ToolStarted {
        tool_call_id: "shell_exec".into(),
        tool_name: "shell_exec".into(),
    };
    for (tool, phase, expected) in [
        ("write_file", write_hooks, "hook preToolUse · write_file"),
        ("shell_exec", shell_runs, "running shell_exec"),
    ] {
        agent(
            &mut app,
            AgentEvent::ToolCallStarted {
                tool_call_id: tool.into(),
                tool_name: tool.into(),
                input: json!({}),
            },
        );
        agent(&mut app, phase);
        assert_eq!(label(&app), expected);
    }
    let since = app.busy.as_ref().unwrap().since;
    app.update(Msg::Tick(since + Duration::from_secs(75)));
    assert!(render(&app, 80, 24).contains("running shell_exec · 75s · Esc or Ctrl+C to cancel"));
    // When the harness says which chain runs, the spinner says so exactly.
    agent(
        &mut app,
        AgentEvent::HooksStarted {
            event: HookEvent::PostToolUse,
            tool_name: Some("shell_exec".into()),
        },
    );
    assert_eq!(label(&app), "hook postToolUse · shell_exec");
    agent(
        &mut app,
        AgentEvent::HooksStarted {
            event: HookEvent::Stop,
            tool_name: None,
        },
    );
    // A rewritten input replaces the one shown for the call.
    agent(
        &mut app,
        AgentEvent::ToolInputRewritten {
            tool_call_id: "shell_exec".into(),
            tool_name: "shell_exec".into(),
            input: json!({"command": "REWRITTEN-COMMAND"}),
        },
    );
    assert!(render(&app, 80, 24).contains("REWRITTEN-COMMAND"));
    assert_eq!(label(&app), "hook stop");
}

#[test]
fn no_color_strips_every_colour_but_keeps_the_text_and_emphasis() {
    use ratatui::style::{Color, Modifier};
    let mut app = started_app(false);
    type_text(&mut app, "/");
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|frame| view::draw(frame, &app)).unwrap();
    let coloured = terminal.backend().buffer().clone();
    assert!(
        coloured
            .content
            .iter()
            .any(|cell| cell.fg != Color::Reset || cell.bg != Color::Reset),
        "the normal screen has colour"
    );
    let emphasis: Vec<Modifier> = coloured.content.iter().map(|cell| cell.modifier).collect();
    terminal
        .draw(|frame| {
            view::draw(frame, &app);
            view::strip_colors(frame.buffer_mut());
        })
        .unwrap();
    let plain = terminal.backend().buffer();
    assert!(
        plain
            .content
            .iter()
            .all(|cell| cell.fg == Color::Reset && cell.bg == Color::Reset)
    );
    assert_eq!(screen_text(plain), screen_text(&coloured), "the same text");
    let kept: Vec<Modifier> = plain.content.iter().map(|cell| cell.modifier).collect();
    assert_eq!(kept, emphasis, "bold, dim and reverse stay");
}

#[test]
fn template_and_skill_commands_are_sent_as_prompts_for_the_session_to_expand() {
    let mut app = started_app(true);
    let mut view = hooks_view(true);
    view.workflows = vec![
        workflow("review", "Review a file", Some("FILE")),
        workflow("skill:refactor", "Refactor safely", None),
    ];
    worker(&mut app, UiMsg::Hooks(view));
    send_prompt(&mut app, "/review src/main.rs");
    worker(&mut app, UiMsg::Idle);
    send_prompt(&mut app, "/skill:refactor the parser");
    worker(&mut app, UiMsg::Idle);
    // An unknown skill or command is refused here, and its line stays to be corrected.
    type_text(&mut app, "/skill:refactr x");
    press(&mut app, KeyCode::Enter);
    assert!(app.take_commands().is_empty());
    assert_eq!(app.composer.text(), "/skill:refactr x");
    let screen = render(&app, 80, 30);
    assert!(
        screen.contains("no skill named 'refactr' (did you mean /skill:refactor?)"),
        "{screen}"
    );
    app.composer.set_text("/nope x");
    press(&mut app, KeyCode::Enter);
    assert!(app.take_commands().is_empty());
    assert_eq!(app.composer.text(), "/nope x");
    let screen = render(&app, 80, 30);
    assert!(screen.contains("unknown command /nope"), "{screen}");
}

#[test]
fn an_mcp_servers_prompt_goes_to_the_session_before_the_server_lists_it() {
    let mut app = started_app(true);
    let mut view = hooks_view(true);
    view.mcp_servers = vec!["github".to_string()];
    worker(&mut app, UiMsg::Hooks(view));
    send_prompt(&mut app, "/github:triage 42");
    worker(&mut app, UiMsg::Idle);
    // Another namespace is no server of the session's.
    type_text(&mut app, "/gitlab:triage 42");
    press(&mut app, KeyCode::Enter);
    assert!(app.take_commands().is_empty());
    assert!(render(&app, 100, 30).contains("unknown command /gitlab:triage"));
    // `//` sends it as text; a path is text without it.
    app.composer.set_text("//gitlab:triage 42");
    press(&mut app, KeyCode::Enter);
    assert!(
        matches!(app.take_commands().as_slice(), [Op::Prompt { text, .. }] if text == "//gitlab:triage 42")
    );
    worker(&mut app, UiMsg::Idle);
    send_prompt(&mut app, "/etc/hosts looks odd");
}

#[test]
fn the_palette_lists_templates_and_skills_after_the_built_ins_and_refreshes_after_reload() {
    let mut app = started_app(true);
    let mut view = hooks_view(true);
    view.workflows = vec![workflow("review", "Review a file", Some("FILE"))];
    worker(&mut app, UiMsg::Hooks(view.clone()));
    type_text(&mut app, "/re");
    assert_eq!(palette_names(&app), vec!["reload", "resume", "review"]);
    let screen = render(&app, 80, 30);
    assert!(
        screen.contains("/review [FILE]") && screen.contains("Review a file"),
        "{screen}"
    );
    // Enter on an exactly typed template sends it, not the selected built-in.
    type_text(&mut app, "view");
    press(&mut app, KeyCode::Enter);
    match app.take_commands().as_slice() {
        [Op::Prompt { text, .. }] => assert_eq!(text, "/review"),
        other => panic!("{other:?}"),
    }
    worker(&mut app, UiMsg::Idle);
    // `/reload` brings a new template and a skill: the palette shows them.
    view.workflows.push(workflow("explain", "Explain code", None));
    view.workflows
        .push(workflow("skill:pdf", "Work with PDFs", Some("what to do")));
    worker(&mut app, UiMsg::Hooks(view));
    type_text(&mut app, "/");
    let names = palette_names(&app);
    assert_eq!(&names[names.len() - 3..], ["review", "explain", "skill:pdf"]);
    assert!(names.iter().position(|n| n == "quit") < names.iter().position(|n| n == "review"));
}

/// A blocked call is reported once: its result names the hook and the reason, so the hook's own
/// "blocked" notice is not added to it; the run still shows in /hooks.
#[test]
fn a_blocked_call_is_reported_once() {
    let mut app = started_app(true);
    send_prompt(&mut app, "go");
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            tool_call_id: "call-1".into(),
            tool_name: "write_file".into(),
            input: json!({"path": ".env"}),
        },
    );
    let outcome = HookOutcome::PreToolUse(PreToolUseOutcome {
        block: Some(true),
        reason: Some("no secrets".into()),
        ..Default::default()
    });
    let dispatch = pre_tool_dispatch(ok_run("guard", HookEvent::PreToolUse, Some(outcome)));
    agent(&mut app, AgentEvent::Hooks { dispatch });
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            tool_call_id: "call-1".into(),
            tool_name: "write_file".into(),
            content: vec![elph_agent::messages::ContentBlock::text(
                "Tool call blocked by hook 'guard': no secrets.",
            )],
            details: json!({}),
            is_error: true,
            ran: false,
        },
    );
    let screen = render(&app, 100, 30);
    assert_eq!(screen.matches("no secrets").count(), 1, "{screen}");
    assert_eq!(app.recent_runs.len(), 1);
}
