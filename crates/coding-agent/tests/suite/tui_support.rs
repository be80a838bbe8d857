//! Shared helpers for the TUI's state and snapshot tests: an app fed the messages the agent sends
//! at startup, keys, and rendering to text with ratatui's `TestBackend`.

use std::time::Instant;

use coding_agent::tui::app::{App, Msg};
use coding_agent::tui::hookview::{FileInfo, HookInfo, HooksView};
use coding_agent::tui::view;
use coding_agent::tui::worker::{SessionView, UiMsg};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use elph_agent::hooks::{
    Dispatch, HookEvent, HookOutcome, HookPayload, HookRun, PayloadBase, PreToolUsePayload, ProcessExit,
    Reducer, RunStatus,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

pub const SESSION_ID: &str = "0197c1a2-3b4c-7d5e-8f60-1234567890ab";

pub fn hooks_view(trusted: bool) -> HooksView {
    let mut hooks = vec![HookInfo {
        id: "audit".into(),
        event: HookEvent::SessionStart,
        matcher: None,
        command: "hooks/audit.sh".into(),
        missing: false,
        timeout_ms: 5000,
        enabled: true,
        scope: "home",
        source: "/home/ada/.config/elph/hooks.json".into(),
    }];
    let mut files = vec![FileInfo {
        path: "/home/ada/.config/elph/hooks.json".into(),
        scope: "home",
        state: "loaded, 1 hook(s)".into(),
    }];
    if trusted {
        hooks.push(HookInfo {
            id: "no-env-writes".into(),
            event: HookEvent::PreToolUse,
            matcher: Some("write_file, edit_file".into()),
            command: "hooks/guard.sh --strict".into(),
            missing: false,
            timeout_ms: 10000,
            enabled: true,
            scope: "project",
            source: "/home/ada/code/shop/.elph/hooks.json".into(),
        });
        files.push(FileInfo {
            path: "/home/ada/code/shop/.elph/hooks.json".into(),
            scope: "project",
            state: "loaded, 1 hook(s)".into(),
        });
    } else {
        files.push(FileInfo {
            path: "/home/ada/code/shop/.elph/hooks.json".into(),
            scope: "project",
            state: "skipped: the project is not trusted".into(),
        });
    }
    HooksView {
        trusted,
        offered: if trusted {
            coding_agent::trust::TrustSlashCommand::Untrust
        } else {
            coding_agent::trust::TrustSlashCommand::Trust
        },
        trust_reason: if trusted {
            "decided by entry /home/ada/code/shop = true".into()
        } else {
            "decided by the default (ask)".into()
        },
        hooks,
        files,
        diagnostics: Vec::new(),
        workflows: Vec::new(),
        mcp_servers: Vec::new(),
    }
}

/// An idle app as it is after startup: session, hooks, context use.
pub fn started_app(trusted: bool) -> App {
    let mut app = App::new(Instant::now());
    app.status.project_dir = "/home/ada/code/shop".into();
    worker(
        &mut app,
        UiMsg::Session(SessionView {
            model: "openai/gpt-test".into(),
            session_id: SESSION_ID.into(),
            resumed: false,
            context_window: 128_000,
            history: Vec::new(),
            mode: elph_agent::harness::AgentMode::Build,
        }),
    );
    worker(&mut app, UiMsg::Hooks(hooks_view(trusted)));
    worker(
        &mut app,
        UiMsg::Context {
            tokens: 1830,
            window: 128_000,
        },
    );
    worker(&mut app, UiMsg::Idle);
    app
}

pub fn worker(app: &mut App, msg: UiMsg) {
    app.update(Msg::Worker(msg));
}

pub fn agent(app: &mut App, event: elph_agent::harness::AgentEvent) {
    worker(app, UiMsg::Agent(event));
}

pub fn press(app: &mut App, code: KeyCode) {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

pub fn press_with(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
    app.update(Msg::Key(KeyEvent::new(code, modifiers)));
}

pub fn ctrl_c(app: &mut App) {
    press_with(app, KeyCode::Char('c'), KeyModifiers::CONTROL);
}

pub fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// The screen as text, one line per row, trailing spaces cut.
pub fn render(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    screen_text(terminal.backend().buffer())
}

/// A buffer as text; the cell after a wide character (which it covers) is skipped.
pub fn screen_text(buffer: &ratatui::buffer::Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut row = String::new();
        let mut skip = 0;
        for x in 0..area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buffer[(x, y)].symbol();
            skip = unicode_width::UnicodeWidthStr::width(symbol).saturating_sub(1);
            row.push_str(symbol);
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

/// A preToolUse dispatch (of a write_file call) with `run`, folded as the registry folds it.
pub fn pre_tool_dispatch(mut run: HookRun) -> Dispatch {
    let payload = HookPayload::PreToolUse(PreToolUsePayload {
        base: PayloadBase::new("s", "/p"),
        tool_name: "write_file".into(),
        tool_call_id: "call-1".into(),
        tool_input: json!({}),
    });
    let mut chain = Reducer::new(payload);
    chain.record(&mut run);
    Dispatch {
        event: HookEvent::PreToolUse,
        runs: vec![run],
        diagnostics: Vec::new(),
        reduced: chain.finish(),
    }
}

/// A successful run of hook `id`.
pub fn ok_run(id: &str, event: HookEvent, outcome: Option<HookOutcome>) -> HookRun {
    let mut run = HookRun::skipped(id, event, "");
    run.status = RunStatus::Ok;
    run.cause = None;
    run.process = Some(ProcessExit {
        exit_code: Some(0),
        ..Default::default()
    });
    run.duration_ms = 14;
    run.outcome = outcome;
    run
}
