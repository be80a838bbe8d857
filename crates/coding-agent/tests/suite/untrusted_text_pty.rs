//! Text that Elph does not control (a model's answer) on a real terminal: `elph run` makes its
//! control characters visible there and keeps them exact in JSON and pipes; the TUI draws any
//! UTF-8 at any width without panicking. The real binary in a pseudo-terminal.

use std::io::Read;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::FakeReply;

use super::run_e2e::elph;
use super::tui_pty_support::{DEADLINE, Model, Tui};

/// An answer that tries everything a terminal obeys: OSC 52 (write the clipboard), OSC 0 (the
/// window title), an 8-bit CSI, a screen clear and a cursor move, among ordinary multi-byte text.
const HOSTILE: &str = "safe — é 日本\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\u{9b}2J\x1b[2J\x1b[H\tend";

fn script(env: &TestEnv, text: &str) -> std::path::PathBuf {
    let path = env.evidence("script.json");
    std::fs::write(&path, json!({"turns": [{"text": text}]}).to_string()).unwrap();
    path
}

/// `elph run ARGS` with stdout and stderr on a pseudo-terminal: its exit code and every byte it
/// wrote there.
fn run_on_a_terminal(env: &TestEnv, args: &[&str]) -> (u32, Vec<u8>) {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(elph());
    cmd.env_clear();
    cmd.env("HOME", &env.home);
    cmd.env("ELPH_HOME", &env.config_dir);
    cmd.env("ELPH_DATA_DIR", &env.data_dir);
    cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    cmd.env("TERM", "xterm-256color");
    cmd.env("NO_COLOR", "1");
    cmd.arg("run");
    cmd.args(args);
    cmd.cwd(&env.project);
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
        let _ = sender.send(all);
    });
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("elph run did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(pair.master);
    let bytes = received.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
    (status.exit_code(), bytes)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[test]
fn plain_run_on_a_terminal_shows_the_answers_control_characters_as_escapes() {
    let env = TestEnv::new();
    let script = script(&env, HOSTILE);
    let model = format!("scripted/{}", script.display());
    let (code, bytes) = run_on_a_terminal(&env, &["--model", &model, "hello"]);
    let shown = String::from_utf8_lossy(&bytes);
    assert_eq!(code, 0, "{shown}");
    for raw in [
        &b"\x1b]52"[..],
        b"\x1b]0;",
        "\u{9b}".as_bytes(),
        b"\x1b[2J",
        b"\x1b[H",
        b"\x07",
    ] {
        assert!(!contains(&bytes, raw), "{raw:?} reached the terminal: {shown:?}");
    }
    assert!(
        shown.contains("safe — é 日本\\e]52;c;ZXZpbA==\\a\\e]0;pwned\\a\\x9b2J\\e[2J\\e[H\tend"),
        "{shown:?}"
    );
}

#[test]
fn json_outputs_and_pipes_keep_the_answer_exact() {
    let env = TestEnv::new();
    let script = script(&env, HOSTILE);
    let model = format!("scripted/{}", script.display());
    // On a terminal too: JSON is data, and its string escapes keep the terminal safe.
    let (code, bytes) = run_on_a_terminal(&env, &["--model", &model, "--output-format", "json", "hello"]);
    assert_eq!(code, 0);
    let text = String::from_utf8(bytes).unwrap();
    let start = text.find('{').unwrap();
    let document: Value = serde_json::from_str(text[start..].trim_end()).unwrap();
    assert_eq!(document["result"], HOSTILE);

    let output = env
        .command(&elph())
        .args([
            "run",
            "--model",
            &model,
            "--output-format",
            "stream-json",
            "hello",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let last: Value = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["type"] == "result")
        .unwrap();
    assert_eq!(last["result"], HOSTILE);

    // Plain into a pipe: the answer is data for the next program, byte for byte.
    let output = env
        .command(&elph())
        .args(["run", "--model", &model, "hello"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(output.stdout, format!("{HOSTILE}\n").into_bytes());
}

/// Model text that broke the TUI's markdown (issue 28: a multi-byte character at the start of a
/// span, `start byte index 1 is not a char boundary`, exit 101), with everything else a model
/// may write: wide and combining characters, emoji sequences, right-to-left text, bidi and C0/C1
/// controls, markup around all of them.
const EVERY_KIND: &str = "Done — é *é* **日本** `🎉` [ü](x)\n\n# Überschrift\n\n- e\u{301}\u{302} combining\n- 👩‍👩‍👧 family\n1. שלום עולם\n> مرحبا\n\n\u{202e}reversed\u{202c} \x1b[2J\x07\u{9b}\u{0}\n```\n日本語\tcode\n```\nend of answer";

#[test]
fn the_tui_draws_any_text_at_any_width() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    model.server.enqueue(FakeReply::text(EVERY_KIND));
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    tui.send("write");
    tui.wait_for("end of answer");
    tui.wait_idle();
    let screen = tui.contents();
    assert!(screen.contains("Done — é é 日本 🎉 ü (x)"), "{screen}");
    assert!(screen.contains("שלום עולם"), "{screen}");
    // Every width down to one column, then back: each redraw wraps the whole transcript again.
    for cols in [60, 17, 5, 3, 2, 1, 40] {
        tui.resize(24, cols);
        std::thread::sleep(Duration::from_millis(150));
        assert!(
            tui.child.lock().unwrap().try_wait().unwrap().is_none(),
            "elph exited at width {cols}: {}",
            tui.contents()
        );
    }
    tui.resize(24, 100);
    tui.wait_for("end of answer");
    tui.press(b"\x03\x03");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
    tui.assert_terminal_restored();
}
