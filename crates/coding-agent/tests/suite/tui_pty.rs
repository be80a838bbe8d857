//! The TUI end to end: the real `elph` binary in a pseudo-terminal, read through a vt100 parser,
//! against a local fake model server, with real hook processes.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::FakeReply;
use test_support::hook_scripts::live_group_members;

use super::tui_pty_support::{
    DEADLINE, Model, Tui, answered_tui, log_session_hooks, logging_hook, wait_for_file,
};

#[test]
fn the_trust_question_then_yes_then_the_app() {
    let env = TestEnv::new();
    let log = env.evidence("session.jsonl");
    let command = logging_hook(&env, "session.sh", &log, "");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "on-start", "event": "sessionStart", "command": command},
        {"id": "on-end", "event": "sessionEnd", "command": command},
    ]}));
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_for("Do you trust the files in this folder?");
    tui.press(b"\r");
    tui.wait_for("Ask Elph, or / for commands");
    tui.wait_idle();
    let screen = tui.contents();
    assert!(screen.contains("· trusted · 2 hooks ·"), "{screen}");
    let trust: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config_dir.join("trust.json")).unwrap()).unwrap();
    assert_eq!(trust["directories"][env.project.to_str().unwrap()], json!(true));
    let started = wait_for_file(&log, "the sessionStart hook");
    assert_eq!(started[0]["event"], "sessionStart");
    assert_eq!(started[0]["source"], "new");

    tui.send("/quit");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
    tui.assert_terminal_restored();
    let events: Vec<Value> = json_lines(&log).iter().map(|p| p["event"].clone()).collect();
    assert_eq!(events, vec![json!("sessionStart"), json!("sessionEnd")]);
    assert_eq!(json_lines(&log)[1]["reason"], "exit");
}

#[test]
fn a_prompt_gets_the_streamed_answer() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    model
        .server
        .enqueue(FakeReply::text("Hello from the **fake** model.\n\n- one\n- two"));
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    tui.send("say hello");
    tui.wait_for("● Hello from the fake model.");
    tui.wait_for("• two");
    tui.wait_idle();
    let requests = model.server.requests();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].to_string().contains("say hello"));
    // Up recalls the prompt; Ctrl+C clears it; twice exits.
    tui.press(b"\x1b[A");
    tui.wait_until("the recalled prompt", |_| tui.input_row() == "› say hello");
    tui.press(b"\x03");
    tui.wait_for("press Ctrl+C again to exit");
    assert!(
        !tui.input_row().contains("say hello"),
        "the first Ctrl+C cleared the input: {}",
        tui.input_row()
    );
    // Twice exits: two presses together, since a second press counts only within 1 s of the one
    // before, and on a loaded machine seeing the hint and answering it can take longer than that.
    // (The window itself is tested on the state: tui_app::ctrl_c_presses_far_apart_do_not_exit.)
    tui.press(b"\x03\x03");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
    tui.assert_terminal_restored();
    // Logs go to DATA_DIR/logs/elph.log, never to the screen.
    let log = std::fs::read_to_string(env.data_dir.join("logs").join("elph.log")).unwrap();
    assert!(log.contains("starting the terminal UI"), "{log}");
}

#[test]
fn untrust_then_the_palette_offers_trust() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("prompt.jsonl");
    let command = logging_hook(&env, "prompt.sh", &log, "");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "on-prompt", "event": "userPromptSubmit", "command": command},
    ]}));
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    // The palette offers exactly one of the two (matched by their descriptions).
    tui.press(b"/");
    tui.wait_for("Stop trusting this project");
    assert!(
        !tui.contents().contains("Trust this project"),
        "{}",
        tui.contents()
    );
    tui.press(b"untrust\r");
    tui.wait_for("is no longer trusted");
    tui.wait_idle();
    assert!(
        tui.contents().contains("· untrusted · 0 hooks ·"),
        "{}",
        tui.contents()
    );
    let trust: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config_dir.join("trust.json")).unwrap()).unwrap();
    assert_eq!(trust["directories"][env.project.to_str().unwrap()], json!(false));

    tui.press(b"/");
    tui.wait_for("Trust this project");
    assert!(
        !tui.contents().contains("Stop trusting this project"),
        "{}",
        tui.contents()
    );
    // The project's hook is off now.
    tui.press(b"\x15"); // Ctrl+U clears the input
    tui.send("hi");
    tui.wait_for("● done");
    // The answer shows before the turn ends; /trust waits for an idle session.
    tui.wait_idle();
    assert!(
        json_lines(&log).is_empty(),
        "the untrusted project's hook did not run"
    );
    // And /trust brings it back at once.
    tui.send("/trust");
    tui.wait_for("· trusted · 1 hook ·");
    tui.wait_idle();
    tui.send("again");
    wait_for_file(&log, "the project's hook after /trust");
}

#[test]
fn edit_hooks_json_reload_and_the_new_hook_fires() {
    let env = TestEnv::new();
    env.trust_project();
    env.write_project_hooks(&json!({"hooks": []}));
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 30, 110);
    tui.wait_idle();
    assert!(tui.contents().contains("· 0 hooks ·"));

    let log = env.evidence("before.jsonl");
    let command = logging_hook(
        &env,
        "before.sh",
        &log,
        r#"{"additionalContext": "RELOADED-CONTEXT-42"}"#,
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "add-context", "event": "beforeAgent", "command": command},
        {"id": "bad-timeout", "event": "stop", "command": command, "timeoutMs": 0},
    ]}));
    tui.send("/reload");
    // The new file is malformed: a diagnostic, and nothing loads from it.
    tui.wait_for("Reloaded hooks: 0 active hook(s)");
    assert!(tui.contents().contains("timeoutMs"), "{}", tui.contents());

    env.write_project_hooks(&json!({"hooks": [
        {"id": "add-context", "event": "beforeAgent", "command": command},
    ]}));
    tui.send("/reload");
    tui.wait_for("Reloaded hooks: 1 active hook(s)");
    tui.wait_for("· 1 hook ·");
    model.server.enqueue(FakeReply::text("context received"));
    tui.send("use the context");
    tui.wait_for("● context received");
    tui.wait_for("hook 'add-context' added to the system prompt for this turn");
    let payloads = wait_for_file(&log, "the reloaded beforeAgent hook");
    assert_eq!(payloads[0]["event"], "beforeAgent");
    let request = model.server.requests().last().unwrap().to_string();
    assert!(request.contains("RELOADED-CONTEXT-42"), "{request}");

    tui.wait_idle();
    tui.send("/hooks");
    tui.wait_for("Active hooks (1)");
    tui.wait_for("✓ add-context · beforeAgent");
}

#[test]
fn ctrl_c_during_a_long_hook_kills_it_and_the_app_stays_usable() {
    let env = TestEnv::new();
    env.trust_project();
    let pid_file = env.evidence("hook.pid");
    env.project_script(
        "slow.sh",
        &format!(
            "payload=$(cat)\ncase \"$payload\" in *slow-please*) echo $$ > '{}'; sleep 50;; esac",
            pid_file.display()
        ),
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "slow", "event": "userPromptSubmit", "command": "hooks/slow.sh", "timeoutMs": 60000},
    ]}));
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    tui.send("slow-please");
    let deadline = Instant::now() + DEADLINE;
    let pgid: i32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the hook did not start; screen:\n{}",
            tui.contents()
        );
        std::thread::sleep(Duration::from_millis(25));
    };
    // The hook leads its own process group: the shell and its sleep.
    assert!(!live_group_members(pgid, Duration::ZERO).is_empty());
    tui.wait_for("Ctrl+C to cancel");
    tui.press(b"\x03");
    tui.wait_for("turn cancelled");
    let left = live_group_members(pgid, Duration::from_secs(10));
    assert!(left.is_empty(), "the hook's processes are gone: {left:?}");
    assert!(
        model.server.requests().is_empty(),
        "the cancelled turn never reached the model"
    );

    tui.wait_idle();
    model.server.enqueue(FakeReply::text("still here"));
    tui.send("fast");
    tui.wait_for("● still here");
    tui.wait_idle();
}

#[test]
fn a_tool_call_under_ask_waits_for_approval() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    model.server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "echo approved-output-$((40 + 2))"}),
    ));
    model.server.enqueue(FakeReply::text("The command printed 42."));
    let mut tui = Tui::start(&env, &model, 30, 100);
    tui.wait_idle();
    tui.send("run it");
    tui.wait_for("Approve tool call");
    tui.wait_for("3. No, deny");
    tui.press(b"1");
    tui.wait_for("approved-output-42");
    tui.wait_for("● The command printed 42.");
    tui.wait_idle();
    let screen = tui.contents();
    assert!(screen.contains("✓ shell_exec"), "{screen}");
}

#[test]
fn a_read_outside_the_project_asks_and_a_read_inside_does_not() {
    let env = TestEnv::new();
    env.trust_project();
    std::fs::write(env.root.path().join("outside.txt"), "OUTSIDE-5521\n").unwrap();
    std::fs::write(env.project.join("inside.txt"), "INSIDE-5521\n").unwrap();
    let model = Model::start();
    model
        .server
        .enqueue(FakeReply::tool_call("read_file", json!({"path": "inside.txt"})));
    model.server.enqueue(FakeReply::tool_call(
        "read_file",
        json!({"path": "../outside.txt"}),
    ));
    model.server.enqueue(FakeReply::text("Read both."));
    let mut tui = Tui::start(&env, &model, 30, 100);
    tui.wait_idle();
    tui.send("read them");
    tui.wait_for("Approve tool call");
    tui.wait_for("reads outside the project: ../outside.txt");
    tui.press(b"3");
    tui.wait_for("● Read both.");
    tui.wait_idle();
    let last = model.server.requests().last().unwrap().to_string();
    assert!(
        last.contains("INSIDE-5521"),
        "the inside read ran without a question"
    );
    assert!(
        !last.contains("OUTSIDE-5521"),
        "the denied read never reached the model"
    );
    assert!(last.contains("denied by the user"), "{last}");
}

#[test]
fn approval_auto_runs_tools_without_asking() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    model.server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "echo auto-output-$((40 + 2))"}),
    ));
    model.server.enqueue(FakeReply::text("Ran it without asking."));
    let mut tui = Tui::start_with(&env, &model, 30, 100, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("run it");
    tui.wait_for("● Ran it without asking.");
    tui.wait_idle();
    let screen = tui.contents();
    assert!(
        screen.contains("auto-output-42") && !screen.contains("Approve tool call"),
        "{screen}"
    );
}

#[test]
fn resizing_and_a_60x20_terminal_keep_the_layout() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    model.server.enqueue(FakeReply::text(
        "A long answer that wraps. ".repeat(12) + "\n\n```\ncode line\n```",
    ));
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    tui.send("tell me");
    tui.wait_for("code line");
    tui.wait_idle();
    for (rows, cols) in [(20, 60), (12, 40), (30, 120), (20, 60)] {
        tui.resize(rows, cols);
        tui.wait_until(&format!("the layout at {cols}x{rows}"), |_| {
            let lines = tui.rows();
            lines.len() == rows as usize
                && lines.last().is_some_and(|last| last.starts_with("openai/"))
                && lines[rows as usize - 2].starts_with("─")
                && lines[rows as usize - 3].starts_with("› Ask Elph")
                && lines.iter().all(|line| line.chars().count() <= cols as usize)
        });
    }
    let screen = tui.contents();
    assert!(screen.contains("code line"), "{screen}");
    tui.send("/quit");
    assert_eq!(tui.exit_code(), 0);
}

/// Keys typed while the terminal is resized arrive at once. crossterm's default reader waits on an
/// edge-triggered epoll and took one ready source per wake-up: when the resize's signal and a key
/// were ready together, the key stayed unread until another key came (a Ctrl+C Ctrl+C then did
/// nothing). Each round resizes and types one letter at the same moment, and waits for it.
#[test]
fn keys_typed_as_the_terminal_resizes_arrive_at_once() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    let mut typed = String::new();
    for round in 0..40u8 {
        let cols = if round % 2 == 0 { 90 } else { 100 };
        let letter = (b'a' + round % 26) as char;
        tui.resize(24, cols);
        tui.press(letter.to_string().as_bytes());
        typed.push(letter);
        tui.wait_for(&format!("› {typed}"));
    }
    tui.press(b"\x03\x03");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
}

#[test]
fn sigterm_ends_the_session_and_restores_the_terminal() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("end.jsonl");
    let command = logging_hook(&env, "end.sh", &log, "");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "on-end", "event": "sessionEnd", "command": command},
    ]}));
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    let pid = tui.child.lock().unwrap().process_id().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(tui.exit_code(), 143, "screen:\n{}", tui.contents());
    tui.assert_terminal_restored();
    // As `elph run` and `elph acp` record it: the session was interrupted, not exited.
    assert_eq!(json_lines(&log)[0]["reason"], "interrupted");
}

#[test]
fn sighup_during_a_tool_call_kills_it_runs_the_final_hooks_and_exits_129() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("final.jsonl");
    let command = logging_hook(&env, "final.sh", &log, "");
    env.write_project_hooks(&json!({"hooks": [
        {"id": "on-stop", "event": "stop", "command": command},
        {"id": "on-end", "event": "sessionEnd", "command": command},
    ]}));
    // Inside the project: the default sandbox (workspace-write) lets a command write only there.
    let pids = env.project.join("tool.pids");
    let model = Model::start();
    model.server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("sleep 40 & echo $! >> '{0}'; echo $$ >> '{0}'; wait", pids.display())}),
    ));
    let mut tui = Tui::start_with(&env, &model, 30, 100, &["--approval", "auto"]);
    tui.wait_idle();
    tui.send("run it");
    tui.wait_until("the tool recorded its pids", |_| {
        std::fs::read_to_string(&pids).is_ok_and(|text| text.lines().count() >= 2)
    });
    let pid = tui.child.lock().unwrap().process_id().unwrap() as i32;
    let family = test_support::hook_scripts::descendants(pid);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGHUP).unwrap();
    assert_eq!(tui.exit_code(), 129, "screen:\n{}", tui.contents());
    tui.assert_terminal_restored();
    let left = test_support::hook_scripts::still_alive(&family, Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "still alive after SIGHUP: {left:?} of {family:?}"
    );
    let events: Vec<Value> = json_lines(&log).iter().map(|p| p["event"].clone()).collect();
    assert_eq!(events, [json!("stop"), json!("sessionEnd")]);
    assert_eq!(json_lines(&log)[1]["reason"], "interrupted");
}

#[test]
fn new_then_resume_brings_the_conversation_back() {
    let env = TestEnv::new();
    let log = log_session_hooks(&env);
    let model = Model::start();
    let mut tui = answered_tui(&env, &model, "the first question", "The first answer.");

    tui.send("/new");
    tui.wait_for("started session");
    tui.wait_idle();
    assert!(
        !tui.contents().contains("The first answer."),
        "{}",
        tui.contents()
    );

    tui.send("/resume");
    tui.wait_for("Resume a session");
    tui.wait_for("the first question");
    tui.press(b"\r");
    tui.wait_for("resumed session");
    tui.wait_for("● The first answer.");
    tui.wait_idle();
    let events: Vec<String> = json_lines(&log)
        .iter()
        .map(|p| {
            format!(
                "{}:{}",
                p["event"].as_str().unwrap(),
                p["source"].as_str().or(p["reason"].as_str()).unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![
            "sessionStart:new",
            "sessionEnd:new_session",
            "sessionStart:new",
            "sessionEnd:resume",
            "sessionStart:resume"
        ]
    );
}

#[test]
fn a_template_is_in_the_palette_and_reaches_the_model_expanded() {
    let env = TestEnv::new();
    env.trust_project();
    let prompts = env.project.join(".elph").join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 with care.\n",
    )
    .unwrap();
    let model = Model::start();
    model.server.enqueue(FakeReply::text("Reviewed."));
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    tui.press(b"/rev");
    tui.wait_for("/review [<file>]");
    tui.wait_for("Review a file");
    tui.press(b"iew src/lib.rs");
    tui.wait_for("› /review src/lib.rs");
    tui.press(b"\r");
    tui.wait_for("● Reviewed.");
    tui.wait_idle();
    let requests = model.server.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0].to_string().contains("Review src/lib.rs with care."),
        "{}",
        requests[0]
    );
    tui.press(b"\x03");
    tui.press(b"\x03");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
}

/// The full id in the screen's last "started session ID" notice.
fn started_session(screen: &str) -> Option<String> {
    let (_, after) = screen.rsplit_once("started session ")?;
    Some(after.split_whitespace().next()?.to_string())
}

#[test]
fn resume_shows_ids_that_tell_sessions_of_one_sitting_apart() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    let mut tui = answered_tui(&env, &model, "the first question", "The first answer.");
    // Two more sessions: the picker lists the sessions other than the current one.
    for (question, answer) in [
        ("the second question", "The second answer."),
        ("the third", "The third answer."),
    ] {
        model.server.enqueue(FakeReply::text(answer));
        // The screen may still show the last "started session": wait for another session's id,
        // or the question could be typed while `/new` still runs.
        let before = started_session(&tui.contents());
        tui.send("/new");
        tui.wait_until("a new session", |screen| {
            started_session(screen).is_some_and(|id| Some(&id) != before.as_ref())
        });
        tui.wait_idle();
        tui.send(question);
        tui.wait_for(&format!("● {answer}"));
        tui.wait_idle();
    }

    // UUIDv7 ids made within a minute share their first eight characters.
    let listed = env
        .command(&super::run_e2e::elph())
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let sessions: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let full: Vec<String> = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(full.len(), 3, "{sessions}");

    tui.send("/resume");
    tui.wait_for("Resume a session");
    tui.wait_for("the first question");
    tui.wait_for("the second question");
    let shown: Vec<String> = tui
        .rows()
        .iter()
        .filter(|row| row.contains('│') && row.matches(" · ").count() >= 2)
        .filter_map(|row| Some(row.split(" · ").next()?.split_whitespace().last()?.to_string()))
        .collect();
    assert_eq!(shown.len(), 2, "{}", tui.contents());
    // The picker lists the other sessions (newest first, the current one is the newest): each id
    // it shows names exactly one of them.
    let listed = &full[1..];
    for id in &shown {
        let matching = listed.iter().filter(|full| full.starts_with(id.as_str())).count();
        assert_eq!(
            matching,
            1,
            "{id} names {matching} of {listed:?}:\n{}",
            tui.contents()
        );
    }
}
