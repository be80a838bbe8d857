//! Snapshots of the TUI drawn on ratatui's `TestBackend`: what a person sees in each situation.

use std::time::Duration;

use coding_agent::tui::app::Msg;
use coding_agent::tui::worker::{Level, PendingApproval, UiMsg};
use crossterm::event::KeyCode;
use elph_agent::harness::{AgentEvent, ApprovalRequest};
use elph_agent::hooks::{HookEvent, HookOutcome, HookRun, PreToolUseOutcome, RunStatus, StopStatus};
use elph_agent::messages::ContentBlock;
use serde_json::json;

use super::tui_support::{
    agent, hooks_view, ok_run, pre_tool_dispatch, press, render, started_app, type_text, worker,
};

#[test]
fn empty_app() {
    let app = started_app(true);
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn streamed_answer() {
    let mut app = started_app(true);
    type_text(&mut app, "How do I run the tests?");
    press(&mut app, KeyCode::Enter);
    agent(
        &mut app,
        AgentEvent::TurnStarted {
            prompt: "How do I run the tests?".into(),
        },
    );
    for chunk in [
        "## Running the tests\n\nUse `cargo`:\n\n",
        "```sh\ncargo test --workspace\n```\n\n",
        "- **unit** tests sit beside the code\n- the *integration* tests live in `tests/`",
    ] {
        agent(&mut app, AgentEvent::TextDelta { text: chunk.into() });
    }
    let since = app.busy.as_ref().unwrap().since;
    app.update(Msg::Tick(since + Duration::from_millis(2300)));
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn tool_call_with_result() {
    let mut app = started_app(true);
    type_text(&mut app, "What is in src?");
    press(&mut app, KeyCode::Enter);
    agent(
        &mut app,
        AgentEvent::AssistantMessage {
            text: "Let me look.".into(),
            tool_calls: vec![],
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            tool_call_id: "call-1".into(),
            tool_name: "shell_exec".into(),
            input: json!({"command": "ls -1 src"}),
        },
    );
    let listing: Vec<String> = [
        "cli", "gate.rs", "hooks", "lib.rs", "main.rs", "paths.rs", "store", "trust.rs", "tui",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            tool_call_id: "call-1".into(),
            tool_name: "shell_exec".into(),
            content: vec![ContentBlock::text(listing.join("\n"))],
            details: json!({}),
            is_error: false,
            ran: true,
        },
    );
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "There are nine entries.".into(),
        },
    );
    agent(
        &mut app,
        AgentEvent::AssistantMessage {
            text: "There are nine entries.".into(),
            tool_calls: vec![],
        },
    );
    agent(
        &mut app,
        AgentEvent::TurnEnded {
            status: StopStatus::Completed,
            error: None,
        },
    );
    worker(&mut app, UiMsg::Idle);
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn blocked_tool_call() {
    let mut app = started_app(true);
    type_text(&mut app, "Put the key in .env");
    press(&mut app, KeyCode::Enter);
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            tool_call_id: "call-1".into(),
            tool_name: "write_file".into(),
            input: json!({"path": ".env", "content": "API_KEY=secret\n"}),
        },
    );
    let outcome = HookOutcome::PreToolUse(PreToolUseOutcome {
        block: Some(true),
        reason: Some("Writing .env is not allowed".into()),
        ..Default::default()
    });
    agent(
        &mut app,
        AgentEvent::Hooks {
            dispatch: pre_tool_dispatch(ok_run("no-env-writes", HookEvent::PreToolUse, Some(outcome))),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallFinished {
            tool_call_id: "call-1".into(),
            tool_name: "write_file".into(),
            content: vec![ContentBlock::text(
                "Tool call blocked by hook 'no-env-writes': Writing .env is not allowed.",
            )],
            details: json!({}),
            is_error: true,
            ran: false,
        },
    );
    agent(
        &mut app,
        AgentEvent::AssistantMessage {
            text: "A hook does not allow writing `.env`, so I left it alone.".into(),
            tool_calls: vec![],
        },
    );
    agent(
        &mut app,
        AgentEvent::TurnEnded {
            status: StopStatus::Completed,
            error: None,
        },
    );
    worker(&mut app, UiMsg::Idle);
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn approval_prompt() {
    let mut app = started_app(true);
    type_text(&mut app, "Clean the build folder");
    press(&mut app, KeyCode::Enter);
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            tool_call_id: "call-1".into(),
            tool_name: "shell_exec".into(),
            input: json!({"command": "rm -rf build"}),
        },
    );
    let reason = "shell_exec changes files or runs commands (approval policy: ask)";
    agent(
        &mut app,
        AgentEvent::ApprovalNeeded {
            tool_call_id: "call-1".into(),
            tool_name: "shell_exec".into(),
            reason: reason.into(),
        },
    );
    let (reply, _answer) = tokio::sync::oneshot::channel();
    worker(
        &mut app,
        UiMsg::Approval(PendingApproval {
            preview: None,
            request: ApprovalRequest {
                tool_call_id: "call-1".into(),
                tool_name: "shell_exec".into(),
                input: json!({"command": "rm -rf build"}),
                title: "Run `rm -rf build`".into(),
                change: None,
                reason: reason.into(),
                offers_session: true,
                suggested_rule: None,
                escalation: None,
            },
            reply,
        }),
    );
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn palette_in_a_trusted_project() {
    let mut app = started_app(true);
    type_text(&mut app, "/");
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn palette_in_an_untrusted_project() {
    let mut app = started_app(false);
    type_text(&mut app, "/");
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn palette_filtered() {
    let mut app = started_app(true);
    type_text(&mut app, "/re");
    press(&mut app, KeyCode::Down);
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn hooks_panel() {
    let mut app = started_app(true);
    let failed = {
        let mut run = HookRun::skipped("audit", HookEvent::SessionStart, "");
        run.status = RunStatus::Failed;
        run.process = Some(elph_agent::hooks::ProcessExit {
            exit_code: Some(2),
            ..Default::default()
        });
        run.duration_ms = 8;
        run.cause = Some("exited with code 2. No exit code blocks in Elph".into());
        run
    };
    let mut dispatch = pre_tool_dispatch(ok_run("no-env-writes", HookEvent::PreToolUse, None));
    dispatch.runs.insert(0, failed);
    agent(&mut app, AgentEvent::Hooks { dispatch });
    let mut view = hooks_view(true);
    view.diagnostics
        .push("duplicate hook id 'audit' in /home/ada/code/shop/.elph/hooks.json (first defined in /home/ada/.config/elph/hooks.json)".into());
    worker(&mut app, UiMsg::Hooks(view));
    type_text(&mut app, "/hooks");
    press(&mut app, KeyCode::Enter);
    insta::assert_snapshot!(render(&app, 80, 30));
}

#[test]
fn hook_diagnostic_notice() {
    let mut app = started_app(true);
    type_text(&mut app, "/reload");
    press(&mut app, KeyCode::Enter);
    worker(
        &mut app,
        UiMsg::Notice(
            Level::Problem,
            "/home/ada/code/shop/.elph/hooks.json at /hooks/1/timeoutMs: now fails to load (120000 is greater \
             than the maximum of 60000); its 2 previously loaded hook(s) stay active until it is fixed"
                .into(),
        ),
    );
    worker(
        &mut app,
        UiMsg::Notice(
            Level::Info,
            "reloaded: 2 active hook(s), 1 diagnostic(s); project trusted".into(),
        ),
    );
    worker(&mut app, UiMsg::Idle);
    let mut failed = HookRun::skipped("audit", HookEvent::UserPromptSubmit, "");
    failed.status = RunStatus::Failed;
    failed.cause = Some(
        "exited with code 2. No exit code blocks in Elph: the hook failed open and changed nothing. To block, \
         print {\"block\": true, \"reason\": \"…\"} on stdout and exit 0"
            .into(),
    );
    let mut dispatch = pre_tool_dispatch(failed);
    dispatch.event = HookEvent::UserPromptSubmit;
    agent(&mut app, AgentEvent::Hooks { dispatch });
    insta::assert_snapshot!(render(&app, 80, 24));
}

#[test]
fn small_terminal_60x20() {
    let mut app = started_app(true);
    type_text(&mut app, "Explain the layout\nof this project, briefly");
    press(&mut app, KeyCode::Enter);
    agent(
        &mut app,
        AgentEvent::TextDelta {
            text: "The project has **three** parts:\n\n1. `elph-ai`: the providers, each behind one trait\n2. `elph-agent`: the turn loop and the hooks' types\n3. `coding-agent`: the binary\n\n```\nelph run \"hello\"\n```".into(),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolCallStarted {
            tool_call_id: "c".into(),
            tool_name: "read_file".into(),
            input: json!({"path": "crates/coding-agent/src/tui/mod.rs"}),
        },
    );
    agent(
        &mut app,
        AgentEvent::ToolStarted {
            tool_call_id: "c".into(),
            tool_name: "read_file".into(),
        },
    );
    insta::assert_snapshot!(render(&app, 60, 20));
}
