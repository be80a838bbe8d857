//! The habits people bring from other coding agents, end to end through the real `elph` binary in
//! a pseudo-terminal: `/exit`, `/clear`, `/model`, Esc, Shift+Tab, `/help`, the welcome header, and
//! the transcript left in the scrollback with how to resume it.

use serde_json::json;
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::FakeReply;

use super::tui_pty_support::{Model, Tui, answered_tui, log_session_hooks, logging_hook, wait_for_file};

/// `event:reason-or-source` of each payload in `log`.
fn lifecycle(log: &std::path::Path) -> Vec<String> {
    json_lines(log)
        .iter()
        .map(|p| {
            format!(
                "{}:{}",
                p["event"].as_str().unwrap_or_default(),
                p["source"].as_str().or(p["reason"].as_str()).unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn exit_leaves_the_transcript_and_the_resume_hint_and_elph_c_resumes() {
    let env = TestEnv::new();
    let log = log_session_hooks(&env);
    let model = Model::start();
    let mut tui = answered_tui(&env, &model, "what is the answer", "The answer is 42.");
    tui.send("/exit");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
    tui.assert_terminal_restored();
    // Out of the alternate screen, the conversation is still there, then how to come back.
    let screen = tui.contents();
    assert!(screen.contains("› what is the answer"), "{screen}");
    assert!(screen.contains("● The answer is 42."), "{screen}");
    assert!(screen.contains("resume with `elph -c`"), "{screen}");
    assert_eq!(lifecycle(&log), ["sessionStart:new", "sessionEnd:exit"]);

    // `elph -c` continues that session: the conversation shows again.
    let tui = Tui::start_with(&env, &model, 24, 100, &["-c"]);
    tui.wait_for("● The answer is 42.");
    tui.wait_for("resumed session");
    tui.wait_idle();
    assert_eq!(lifecycle(&log)[2], "sessionStart:resume");
}

#[test]
fn clear_is_new_and_quit_ends_the_session() {
    let env = TestEnv::new();
    let log = log_session_hooks(&env);
    let model = Model::start();
    let mut tui = answered_tui(&env, &model, "the first question", "The first answer.");
    tui.send("/clear");
    tui.wait_for("started session");
    tui.wait_idle();
    assert!(
        !tui.contents().contains("The first answer."),
        "{}",
        tui.contents()
    );
    tui.send("/quit");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
    assert_eq!(
        lifecycle(&log),
        [
            "sessionStart:new",
            "sessionEnd:new_session",
            "sessionStart:new",
            "sessionEnd:exit"
        ]
    );
}

#[test]
fn model_shows_the_model_switches_it_and_refuses_an_unknown_one() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    model
        .server
        .enqueue(FakeReply::text("Answered by the other model."));
    let mut tui = Tui::start(&env, &model, 30, 110);
    tui.wait_idle();
    tui.send("/model");
    tui.wait_for("Model: openai/gpt-test. /model PROVIDER/MODEL switches");
    tui.wait_idle();

    tui.send("/model nosuch/thing");
    tui.wait_for("Cannot switch the model: unknown provider \"nosuch\" (from /model)");
    tui.wait_for("Still using openai/gpt-test.");
    tui.wait_idle();
    tui.send("/model gpt-5");
    tui.wait_for("expected PROVIDER/MODEL");
    tui.wait_idle();

    tui.send("/model openai/gpt-other");
    tui.wait_for("Model: openai/gpt-other; the next requests go to it.");
    tui.wait_idle();
    let status = tui.rows().last().cloned().unwrap_or_default();
    assert!(status.starts_with("openai/gpt-other"), "{status}");
    tui.send("who are you");
    tui.wait_for("● Answered by the other model.");
    let requests = model.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "gpt-other", "{}", requests[0]);
    tui.wait_idle();
    tui.send("/quit");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
    // The stored session records the model it continues with.
    let output = env
        .command(std::path::Path::new(super::tui_pty_support::ELPH))
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("openai/gpt-other"), "{text}");
}

#[test]
fn esc_cancels_the_running_turn_and_the_stop_hook_sees_it_cancelled() {
    let env = TestEnv::new();
    env.trust_project();
    let started = env.evidence("started");
    env.project_script(
        "slow.sh",
        &format!(
            "payload=$(cat)\ncase \"$payload\" in *slow-please*) touch '{}'; sleep 50;; esac",
            started.display()
        ),
    );
    let log = env.evidence("stop.jsonl");
    let stop = logging_hook(&env, "stop.sh", &log, "");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "slow", "event": "userPromptSubmit", "command": "hooks/slow.sh", "timeoutMs": 60000},
        {"id": "on-stop", "event": "stop", "command": stop},
    ]}));
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();

    // Esc first closes the palette; the input keeps what was typed.
    tui.press(b"/he");
    tui.wait_for("Show commands and keys");
    tui.press(b"\x1b");
    tui.wait_until("the palette to close", |screen| {
        !screen.contains("Show commands and keys")
    });
    tui.press(b"\x15"); // Ctrl+U clears the input

    tui.send("slow-please");
    tui.wait_until("the slow hook to start", |_| started.exists());
    tui.wait_for("Esc or Ctrl+C to cancel");
    tui.press(b"\x1b");
    tui.wait_for("turn cancelled");
    let stops = wait_for_file(&log, "the stop hook");
    assert_eq!(stops[0]["status"], "cancelled", "{:?}", stops[0]);
    assert!(model.server.requests().is_empty());
    tui.wait_idle();
    // The app goes on.
    model.server.enqueue(FakeReply::text("still here"));
    tui.send("fast");
    tui.wait_for("● still here");
}

#[test]
fn shift_tab_switches_to_plan_mode_and_back() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 110);
    tui.wait_idle();
    assert!(tui.contents().contains("mode build"), "{}", tui.contents());
    tui.press(b"\x1b[Z");
    tui.wait_for("Mode plan: Read-only");
    tui.wait_for("· mode plan ·");
    tui.wait_idle();
    tui.press(b"\x1b[Z");
    tui.wait_for("· mode build ·");
}

#[test]
fn help_shows_the_trust_command_that_applies_and_the_templates() {
    let env = TestEnv::new();
    env.trust_project();
    let prompts = env.project.join(".elph").join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("review.md"),
        "---\ndescription: Review a file with care\nargument-hint: <file>\n---\nReview $1.\n",
    )
    .unwrap();
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 50, 110);
    tui.wait_idle();
    tui.send("/help");
    tui.wait_for("Prompt templates and skills");
    // The panel's last line: the screen is read once all of the panel has arrived.
    tui.wait_for("//word …  ");
    let screen = tui.contents();
    assert!(screen.contains("/untrust"), "{screen}");
    assert!(!screen.contains("/trust "), "{screen}");
    assert!(screen.contains("/review [<file>]"), "{screen}");
    assert!(screen.contains("Review a file with care"), "{screen}");
    assert!(screen.contains("/quit, /exit"), "{screen}");
    assert!(screen.contains("/new, /clear"), "{screen}");
    assert!(screen.contains("/model [provider/model]"), "{screen}");
    assert!(screen.contains("Esc"), "{screen}");
    assert!(screen.contains("//word …  "), "{screen}");
}

#[test]
fn the_welcome_header_stays_with_a_startup_notice() {
    let env = TestEnv::new();
    env.trust_project();
    // A hook with a bad timeout: a diagnostic shown as a notice at startup.
    env.write_project_hooks(&json!({"hooks": [
        {"id": "bad-timeout", "event": "stop", "command": "true", "timeoutMs": 0},
    ]}));
    let model = Model::start();
    let tui = Tui::start(&env, &model, 24, 100);
    tui.wait_for("timeoutMs");
    tui.wait_idle();
    let screen = tui.contents();
    assert!(
        screen.contains("Elph · a coding agent whose hooks you can trust"),
        "{screen}"
    );
    assert!(screen.contains("project  "), "{screen}");
}

#[test]
fn a_blocked_call_is_reported_once() {
    let env = TestEnv::new();
    env.trust_project();
    env.project_script(
        "guard.sh",
        "cat > /dev/null\nprintf '%s' '{\"block\": true, \"reason\": \"Writing BLOCK-REASON-7 is not allowed\"}'",
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "no-writes", "event": "preToolUse", "matcher": {"toolNames": ["write_file"]}, "command": "hooks/guard.sh"},
    ]}));
    let model = Model::start();
    model.server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": "notes.txt", "content": "hello"}),
    ));
    model.server.enqueue(FakeReply::text("Left it alone."));
    let mut tui = Tui::start_with(&env, &model, 30, 120, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("write the notes");
    tui.wait_for("● Left it alone.");
    tui.wait_idle();
    let screen = tui.contents();
    assert!(screen.contains("⊘ write_file"), "{screen}");
    assert_eq!(screen.matches("BLOCK-REASON-7").count(), 1, "{screen}");
    assert!(!env.project.join("notes.txt").exists());
}

#[test]
fn a_protected_write_offers_no_yes_for_this_session_and_asks_each_time() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    for n in 1..=2 {
        model.server.enqueue(FakeReply::tool_call(
            "write_file",
            json!({"path": format!(".elph/notes-{n}.md"), "content": "protected"}),
        ));
    }
    model.server.enqueue(FakeReply::text("Wrote both."));
    let mut tui = Tui::start(&env, &model, 40, 110);
    tui.wait_idle();
    tui.send("write the notes");
    for n in 1..=2 {
        let asking = format!("? write_file path: .elph/notes-{n}.md");
        tui.wait_until("the question about this call", |screen| {
            screen.contains(&asking) && screen.contains("this exact call only")
        });
        let screen = tui.contents();
        assert!(
            screen.contains("1. Yes, once") && screen.contains("2. No, deny"),
            "{screen}"
        );
        assert!(!screen.contains("for this session"), "{screen}");
        tui.press(b"1");
        tui.wait_for(&format!("Created .elph/notes-{n}.md"));
    }
    tui.wait_for("● Wrote both.");
    for n in 1..=2 {
        let written = std::fs::read_to_string(env.project.join(format!(".elph/notes-{n}.md")));
        assert_eq!(written.unwrap(), "protected");
    }
}

#[test]
fn a_write_asks_with_a_coloured_bounded_diff_and_escapes_the_file_text() {
    let env = TestEnv::new();
    env.trust_project();
    std::fs::write(env.project.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let mut content = String::from("one\nTWO-CHANGED\nthree\n\u{1b}]0;pwned\u{7}\n");
    for n in 0..30 {
        content.push_str(&format!("added line {n}\n"));
    }
    let model = Model::start();
    model.server.enqueue(FakeReply::tool_call(
        "write_file",
        json!({"path": "notes.txt", "content": content}),
    ));
    model.server.enqueue(FakeReply::text("Rewrote the notes."));
    let mut tui = Tui::start(&env, &model, 40, 110);
    tui.wait_idle();
    tui.send("rewrite the notes");
    tui.wait_for("Approve tool call");
    tui.wait_for("more lines");
    let screen = tui.contents();
    assert!(screen.contains("-two"), "{screen}");
    assert!(screen.contains("+TWO-CHANGED"), "{screen}");
    assert!(screen.contains("@@ -1,3 +1,34 @@"), "{screen}");
    // The file's escape sequence is shown, not run.
    assert!(screen.contains(r"+\e]0;pwned\a"), "{screen}");
    // Bounded: the last added lines are not in the question.
    assert!(!screen.contains("added line 29"), "{screen}");
    assert_eq!(tui.colour_of("+TWO-CHANGED"), Some(vt100::Color::Idx(2)), "green");
    assert_eq!(tui.colour_of("-two"), Some(vt100::Color::Idx(1)), "red");
    tui.press(b"1");
    tui.wait_for("● Rewrote the notes.");
    let written = std::fs::read_to_string(env.project.join("notes.txt")).unwrap();
    assert!(written.starts_with("one\nTWO-CHANGED\n"));
}

#[test]
fn continue_with_no_earlier_session_fails_before_the_trust_question() {
    let env = TestEnv::new();
    let model = Model::start();
    let mut tui = Tui::start_with(&env, &model, 24, 100, &["-c"]);
    assert_eq!(tui.exit_code(), 1, "screen:\n{}", tui.contents());
    let screen = tui.contents();
    assert!(screen.contains("no earlier session for"), "{screen}");
    assert!(!screen.contains("Do you trust"), "{screen}");
    assert!(!env.config_dir.join("trust.json").exists(), "nothing recorded");

    let mut tui = Tui::start_with(&env, &model, 24, 100, &["--session", "no-such-id"]);
    assert_eq!(tui.exit_code(), 1, "screen:\n{}", tui.contents());
    assert!(
        tui.contents().contains("no session 'no-such-id'"),
        "{}",
        tui.contents()
    );
    assert!(!env.config_dir.join("trust.json").exists(), "nothing recorded");
}
