//! What the TUI's end-to-end tests share: the real `elph` binary in a pseudo-terminal, read through
//! a vt100 parser, and a local fake model server on a runtime of its own.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use serde_json::Value;
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, Wire};

pub(super) const ELPH: &str = env!("CARGO_BIN_EXE_elph");
/// The longest any one wait may take; generous for a loaded two-core machine.
pub(super) const DEADLINE: Duration = Duration::from_secs(40);
pub(super) const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The fake model server, on a runtime of its own (the tests are synchronous).
pub(super) struct Model {
    pub(super) server: FakeModelServer,
    _runtime: tokio::runtime::Runtime,
}

/// What is drawn on `master`'s terminal, as a `rows` × `cols` vt100 screen that a thread of its
/// own keeps up to date, and whether that thread has read the output to its end (elph exited and
/// the last frame is on the screen).
pub(super) fn read_screen(
    master: &dyn MasterPty,
    rows: u16,
    cols: u16,
) -> (Arc<Mutex<vt100::Parser>>, Arc<AtomicBool>) {
    let screen = Arc::new(Mutex::new(vt100::Parser::new(
        NonZeroU16::new(rows).unwrap(),
        NonZeroU16::new(cols).unwrap(),
        0,
    )));
    let mut reader = master.try_clone_reader().unwrap();
    let sink = Arc::clone(&screen);
    let drained = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&drained);
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => sink.lock().unwrap().process(&buf[..n]),
            }
        }
        done.store(true, Ordering::Release);
    });
    (screen, drained)
}

impl Model {
    pub(super) fn start() -> Model {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(FakeModelServer::start(Wire::OpenAi));
        Model {
            server,
            _runtime: runtime,
        }
    }
}

pub(super) struct Tui {
    pub(super) child: Mutex<Box<dyn Child + Send + Sync>>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<vt100::Parser>>,
    master: Box<dyn MasterPty + Send>,
    /// Set once the reader has seen the end of the terminal's output (elph and everything that
    /// held the terminal are gone) and put all of it on the screen.
    drained: Arc<AtomicBool>,
}

impl Tui {
    /// Starts `elph --cwd PROJECT --model openai/gpt-test` in a `rows`x`cols` terminal.
    pub(super) fn start(env: &TestEnv, model: &Model, rows: u16, cols: u16) -> Tui {
        Tui::start_with(env, model, rows, cols, &[])
    }

    /// `start`, with `args` added to the command line.
    pub(super) fn start_with(env: &TestEnv, model: &Model, rows: u16, cols: u16, args: &[&str]) -> Tui {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(ELPH);
        cmd.env_clear();
        cmd.env("HOME", &env.home);
        cmd.env("ELPH_HOME", &env.config_dir);
        cmd.env("ELPH_DATA_DIR", &env.data_dir);
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.env("TERM", "xterm-256color");
        cmd.env("OPENAI_API_KEY", "k");
        cmd.env("OPENAI_BASE_URL", model.server.base_url());
        cmd.arg("--cwd");
        cmd.arg(&env.project);
        cmd.args(["--model", "openai/gpt-test"]);
        cmd.args(args);
        cmd.cwd(&env.project);
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);

        let (screen, drained) = read_screen(&*pair.master, rows, cols);
        let writer = pair.master.take_writer().unwrap();
        Tui {
            child: Mutex::new(child),
            writer,
            screen,
            master: pair.master,
            drained,
        }
    }

    /// After elph has exited: waits until its last output is on the screen. A loaded machine may
    /// schedule the reader late, so this waits for the end of the output rather than a fixed
    /// time; if something else still holds the terminal, it gives up after 10 s.
    fn wait_for_the_last_output(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.drained.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub(super) fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Every row of the screen, trailing spaces cut (empty rows too).
    pub(super) fn rows(&self) -> Vec<String> {
        let parser = self.screen.lock().unwrap();
        let (_, cols) = parser.screen().size();
        parser
            .screen()
            .rows(0, cols.get())
            .map(|row| row.trim_end().to_string())
            .collect()
    }

    /// The foreground colour of the first cell of the row that contains `needle`.
    pub(super) fn colour_of(&self, needle: &str) -> Option<vt100::Color> {
        let parser = self.screen.lock().unwrap();
        let (_, cols) = parser.screen().size();
        let row = parser
            .screen()
            .rows(0, cols.get())
            .position(|row| row.contains(needle))?;
        let row = u16::try_from(row).ok()?;
        let text: String = parser.screen().rows(0, cols.get()).nth(row as usize)?;
        let col = text.find(needle).map(|byte| text[..byte].chars().count())?;
        let col = u16::try_from(col).ok()?;
        parser.screen().cell(row, col).map(|cell| cell.fgcolor())
    }

    /// The input's first row (above the bottom rule and the status line).
    pub(super) fn input_row(&self) -> String {
        let rows = self.rows();
        rows[rows.len() - 3].clone()
    }

    pub(super) fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.contents();
            if done(&screen) {
                return;
            }
            if let Ok(Some(status)) = self.child.lock().unwrap().try_wait() {
                self.wait_for_the_last_output();
                panic!(
                    "elph exited ({status:?}) while waiting for {what}; screen:\n{}",
                    self.contents()
                );
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub(super) fn wait_for(&self, needle: &str) {
        self.wait_until(&format!("{needle:?}"), |screen| screen.contains(needle));
    }

    /// Waits until the agent is idle: the app is up and no spinner turns.
    pub(super) fn wait_idle(&self) {
        self.wait_until("the agent to be idle", |screen| {
            screen.contains(" · ctx ") && !screen.contains(SPINNER)
        });
    }

    pub(super) fn press(&mut self, keys: &[u8]) {
        self.writer.write_all(keys).unwrap();
        self.writer.flush().unwrap();
    }

    /// Types `text` and presses Enter.
    pub(super) fn send(&mut self, text: &str) {
        self.press(text.as_bytes());
        self.wait_for(&format!("› {text}"));
        self.press(b"\r");
    }

    pub(super) fn resize(&mut self, rows: u16, cols: u16) {
        self.screen
            .lock()
            .unwrap()
            .set_size(NonZeroU16::new(rows).unwrap(), NonZeroU16::new(cols).unwrap());
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }

    pub(super) fn exit_code(&mut self) -> u32 {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.lock().unwrap().try_wait().unwrap() {
                self.wait_for_the_last_output();
                return status.exit_code();
            }
            if Instant::now() > deadline {
                let _ = self.child.lock().unwrap().kill();
                panic!("elph did not exit; screen:\n{}", self.contents());
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// After exit: the alternate screen is left and the cursor shows again.
    pub(super) fn assert_terminal_restored(&self) {
        let parser = self.screen.lock().unwrap();
        assert!(
            !parser.screen().alternate_screen(),
            "the alternate screen was left"
        );
        assert!(!parser.screen().hide_cursor(), "the cursor shows again");
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap();
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A hook script that appends its payload (one JSON line) to `log` and prints `outcome`.
pub(super) fn logging_hook(env: &TestEnv, name: &str, log: &Path, outcome: &str) -> String {
    env.project_script(
        name,
        &format!(
            "payload=$(cat)\nprintf '%s\\n' \"$payload\" >> '{}'\nprintf '%s' '{}'",
            log.display(),
            outcome
        ),
    );
    format!("hooks/{name}")
}

pub(super) fn wait_for_file(path: &Path, what: &str) -> Vec<Value> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let lines = json_lines(path);
        if !lines.is_empty() {
            return lines;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A trusted project whose `sessionStart` and `sessionEnd` hooks append their payloads to the
/// returned log.
pub(super) fn log_session_hooks(env: &TestEnv) -> std::path::PathBuf {
    env.trust_project();
    let log = env.evidence("sessions.jsonl");
    let command = logging_hook(env, "sessions.sh", &log, "");
    env.write_project_hooks(&serde_json::json!({"hooks": [
        {"id": "start", "event": "sessionStart", "command": command},
        {"id": "end", "event": "sessionEnd", "command": command},
    ]}));
    log
}

/// A 24 × 100 TUI that has sent `question`, shown the model's `answer` and is idle again.
pub(super) fn answered_tui(env: &TestEnv, model: &Model, question: &str, answer: &str) -> Tui {
    model
        .server
        .enqueue(test_support::fake_model::FakeReply::text(answer));
    let mut tui = Tui::start(env, model, 24, 100);
    tui.wait_idle();
    tui.send(question);
    tui.wait_for(&format!("● {answer}"));
    tui.wait_idle();
    tui
}
