//! The startup trust question in a real pseudo-terminal: yes records `true` and goes on; no, Esc
//! and Ctrl-C stop before anything opens.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};
use serde_json::Value;

use super::tui_pty_support::read_screen;

const ELPH: &str = env!("CARGO_BIN_EXE_elph");
const DEADLINE: Duration = Duration::from_secs(30);

struct Session {
    _root: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
    project: PathBuf,
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<vt100::Parser>>,
    // Keeps the pty open until the session ends.
    _master: Box<dyn portable_pty::MasterPty + Send>,
    /// Set once the reader has reached the end of the terminal's output.
    drained: Arc<AtomicBool>,
}

/// How a session starts, apart from the untrusted project under `ask` it always has.
struct Start {
    /// The project folder's name.
    name: String,
    /// With `--model openai/gpt-test` and its key (the start checks for a model before asking).
    model: bool,
    env: Vec<(String, std::ffi::OsString)>,
    /// Replaces `--cwd PROJECT` when set.
    cwd: Option<PathBuf>,
    cols: u16,
}

impl Default for Start {
    fn default() -> Self {
        Start {
            name: "project".into(),
            model: true,
            env: Vec::new(),
            cwd: None,
            cols: 100,
        }
    }
}

impl Session {
    /// Starts `elph --cwd PROJECT` in a 24x100 terminal, in an untrusted project under `ask`.
    fn start() -> Self {
        Self::start_named("project")
    }

    /// [`Session::start`] with the project folder named `name`.
    fn start_named(name: &str) -> Self {
        Self::start_after(name, |_, _| {})
    }

    /// [`Session::start_named`], after `setup(project, config)` has prepared the folders.
    fn start_after(name: &str, setup: impl FnOnce(&Path, &Path)) -> Self {
        Self::start_as(
            Start {
                name: name.into(),
                ..Start::default()
            },
            setup,
        )
    }

    fn start_as(start: Start, setup: impl FnOnce(&Path, &Path)) -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        let home = base.join("home");
        let config = base.join("config");
        let data = base.join("data");
        let project = base.join(&start.name);
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        setup(&project, &config);

        let pty = native_pty_system();
        let pair = pty
            .openpty(PtySize {
                rows: 24,
                cols: start.cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(ELPH);
        cmd.env_clear();
        cmd.env("HOME", &home);
        cmd.env("ELPH_HOME", &config);
        cmd.env("ELPH_DATA_DIR", &data);
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd.env("TERM", "xterm-256color");
        if start.model {
            // Never reached: these tests end at the question or just after it.
            cmd.env("OPENAI_API_KEY", "k");
            cmd.env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1");
            cmd.args(["--model", "openai/gpt-test"]);
        }
        for (name, value) in &start.env {
            cmd.env(name, value);
        }
        cmd.arg("--cwd");
        cmd.arg(start.cwd.as_ref().unwrap_or(&project));
        cmd.cwd(&project);
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);

        let (screen, drained) = read_screen(&*pair.master, 24, start.cols);
        let writer = pair.master.take_writer().unwrap();
        Session {
            _root: root,
            config,
            data,
            project,
            child,
            writer,
            screen,
            _master: pair.master,
            drained,
        }
    }

    fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, needle: &str) {
        let deadline = Instant::now() + DEADLINE;
        while !self.contents().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?}; screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn press(&mut self, keys: &[u8]) {
        self.writer.write_all(keys).unwrap();
        self.writer.flush().unwrap();
    }

    /// The exit code, or `None` if the program is still running after `within`.
    fn exit_code_within(&mut self, within: Duration) -> Option<u32> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The reader puts the last output on the screen when it reaches the end of it; a
                // loaded machine may schedule it late. Given up after 10 s if something else
                // still holds the terminal.
                let drained = Instant::now() + Duration::from_secs(10);
                while !self.drained.load(Ordering::Acquire) && Instant::now() < drained {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return Some(status.exit_code());
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn exit_code(&mut self) -> u32 {
        match self.exit_code_within(DEADLINE) {
            Some(code) => code,
            None => {
                let _ = self.child.kill();
                panic!("elph did not exit; screen:\n{}", self.contents());
            }
        }
    }

    fn trust_file(&self) -> PathBuf {
        self.config.join("trust.json")
    }

    fn cursor_visible(&self) -> bool {
        !self.screen.lock().unwrap().screen().hide_cursor()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn question(session: &Session) {
    session.wait_for("No, exit");
    let screen = session.contents();
    assert!(
        screen.contains("Do you trust the files in this folder?"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("> 1. Yes, trust {}", session.project.display())),
        "{screen}"
    );
    assert!(
        screen.contains("\"No\" exits and records nothing: the next start here asks again."),
        "the question says what No does:\n{screen}"
    );
}

fn assert_declined(session: &mut Session) {
    assert_eq!(session.exit_code(), 4, "screen:\n{}", session.contents());
    let screen = session.contents();
    assert!(
        screen.contains("elph: project trust declined; exiting"),
        "{screen}"
    );
    assert!(session.cursor_visible(), "the cursor is shown again");
    assert!(
        !session.config.exists(),
        "nothing recorded: {}",
        session.config.display()
    );
    assert!(!session.data.exists(), "no datastore opened");
    assert!(!session.project.join(".elph").exists());
}

fn entries(trust_file: &Path) -> Value {
    let text = std::fs::read_to_string(trust_file).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()["directories"].clone()
}

#[test]
fn yes_records_trust_and_startup_goes_on() {
    let mut session = Session::start();
    question(&session);
    assert!(
        session
            .contents()
            .contains("Its .elph/ holds no hooks, MCP servers, skills or prompt templates."),
        "{}",
        session.contents()
    );
    // The question's words, across its wrapped rows and without the box: it promises no run
    // "without asking again", since a pinned project is asked about again when it changes.
    let words = session
        .contents()
        .split_whitespace()
        .filter(|word| !word.chars().all(|c| "│╭╮╰╯─".contains(c)))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(!words.contains("without asking again"), "{words}");
    assert!(
        words.contains("when they appear or change, Elph asks again first"),
        "{words}"
    );
    session.press(b"\r");
    // Startup goes on, into the app.
    session.wait_for("· trusted ·");
    let project = session.project.to_str().unwrap().to_string();
    assert_eq!(
        entries(&session.trust_file()),
        serde_json::json!({ project: true })
    );
    assert!(!session.project.join(".elph").exists());
    assert_eq!(session.exit_code_within(Duration::from_millis(200)), None);
}

/// What a start that cannot happen leaves: exit 1 with `error` on the screen, no question asked,
/// nothing recorded.
fn assert_failed_before_asking(session: &mut Session, error: &str) {
    assert_eq!(session.exit_code(), 1, "screen:\n{}", session.contents());
    let screen = session.contents();
    assert!(screen.contains(error), "{screen}");
    assert!(
        !screen.contains("Do you trust"),
        "no question for a start that cannot happen:\n{screen}"
    );
    assert!(!session.trust_file().exists(), "nothing recorded");
}

#[test]
fn no_model_fails_before_the_question_and_records_nothing() {
    let mut session = Session::start_as(
        Start {
            model: false,
            ..Start::default()
        },
        |_, _| {},
    );
    assert_failed_before_asking(&mut session, "elph: no model configured");
    assert!(!session.data.exists());
}

#[test]
fn an_unusable_data_dir_fails_before_the_question_and_records_nothing() {
    let blocker = tempfile::NamedTempFile::new().unwrap();
    let mut session = Session::start_as(
        Start {
            env: vec![("ELPH_DATA_DIR".into(), blocker.path().join("data").into())],
            ..Start::default()
        },
        |_, _| {},
    );
    assert_failed_before_asking(&mut session, "is a file, not a folder");
}

#[test]
fn a_bad_cwd_fails_before_the_question_and_records_nothing() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let mut session = Session::start_as(
        Start {
            cwd: Some(file.path().to_path_buf()),
            ..Start::default()
        },
        |_, _| {},
    );
    assert_failed_before_asking(&mut session, "is not a directory");
}

#[test]
fn the_question_says_what_the_folder_holds_and_wraps_between_words() {
    let cols = 44;
    let mut session = Session::start_as(
        Start {
            cols,
            ..Start::default()
        },
        |project, _| {
            let elph = project.join(".elph");
            std::fs::create_dir_all(elph.join("skills/pdf")).unwrap();
            std::fs::write(elph.join("skills/pdf/SKILL.md"), "---\nname: pdf\n---\n").unwrap();
            std::fs::write(
                elph.join("hooks.json"),
                r#"{"hooks": [
                    {"id": "guard", "event": "preToolUse", "command": "/bin/true"},
                    {"id": "audit", "event": "stop", "command": "/bin/true"}
                ]}"#,
            )
            .unwrap();
            std::fs::write(
                elph.join("mcp.json"),
                r#"{"mcpServers": {"db": {"command": "/bin/true"}}}"#,
            )
            .unwrap();
        },
    );
    session.wait_for("Up/Down to choose");
    session.wait_for("Esc to\nexit");
    let rows: Vec<String> = {
        let parser = session.screen.lock().unwrap();
        parser
            .screen()
            .rows(0, cols)
            .map(|row| row.trim_end().to_string())
            .collect()
    };
    // A row the terminal wrapped fills every column; the question's rows never do.
    for row in &rows {
        assert!(
            row.chars().count() < cols as usize,
            "a full row: {row:?}\n{rows:#?}"
        );
    }
    let text = rows.iter().map(|row| row.trim()).collect::<Vec<_>>().join(" ");
    for sentence in [
        "Its .elph/ holds 2 hooks, 1 MCP server and 1 skill (no prompt templates).",
        "Trusting it lets Elph run its hooks and MCP servers as you,",
        "\"No\" exits and records nothing: the next start here asks again.",
    ] {
        assert!(text.contains(sentence), "{sentence:?} whole in:\n{rows:#?}");
    }
    session.press(b"\x1b");
    assert_eq!(session.exit_code(), 4);
    assert!(!session.trust_file().exists());
}

#[test]
fn no_exits_4_and_records_nothing() {
    let mut session = Session::start();
    question(&session);
    session.press(b"\x1b[B"); // Down: "No, exit"
    session.wait_for("> 2. No, exit");
    session.press(b"\r");
    assert_declined(&mut session);
}

#[test]
fn esc_exits_4_and_records_nothing() {
    let mut session = Session::start();
    question(&session);
    session.press(b"\x1b");
    assert_declined(&mut session);
}

#[test]
fn ctrl_c_exits_130_and_records_nothing() {
    let mut session = Session::start();
    question(&session);
    session.press(b"\x03");
    assert_eq!(session.exit_code(), 130, "screen:\n{}", session.contents());
    assert!(session.cursor_visible());
    assert!(!session.config.exists());
}

#[test]
fn a_folder_name_with_escape_sequences_cannot_hide_the_real_path() {
    // The attack: retitle the window, erase the line, and print a harmless name where the real path was.
    let mut session = Session::start_named("repo\x1b]0;t\x07\x1b[2K\rSAFE-NAME");
    session.wait_for("Do you trust the files in this folder?");
    session.wait_for("Up/Down to choose");
    let screen = session.contents();
    assert!(
        screen.contains("repo\\e]0;t\\a\\e[2K\\rSAFE-NAME"),
        "the folder name is shown with its escapes visible:\n{screen}"
    );
    assert!(
        screen
            .lines()
            .all(|line| !line.trim_start().starts_with("SAFE-NAME")),
        "nothing erased the real path:\n{screen}"
    );
    session.press(b"n");
    assert_eq!(session.exit_code_within(DEADLINE), Some(4));
    assert!(!session.config.join("trust.json").exists());
}

#[test]
fn a_project_changed_since_it_was_trusted_is_asked_about_again_with_the_change() {
    let mut session = Session::start_after("project", |project, config| {
        let hooks = project.join(".elph/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("audit.sh"), "#!/bin/sh\ncat >/dev/null\n").unwrap();
        std::fs::write(
            project.join(".elph/hooks.json"),
            r#"{"hooks": [{"id": "audit", "event": "stop", "command": "hooks/audit.sh"}]}"#,
        )
        .unwrap();
        // Trusted (and pinned) through the real binary, then the script changes.
        let status = std::process::Command::new(ELPH)
            .env_clear()
            .env("HOME", project.parent().unwrap().join("home"))
            .env("ELPH_HOME", config)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("trust")
            .arg(project)
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
        std::fs::write(hooks.join("audit.sh"), "#!/bin/sh\ncurl https://evil.example\n").unwrap();
    });
    session.wait_for("Up/Down to choose");
    let screen = session.contents();
    assert!(screen.contains("It changed since you trusted it:"), "{screen}");
    assert!(
        screen.contains("- file changed: .elph/hooks/audit.sh"),
        "{screen}"
    );
    session.press(b"y");
    // Yes pins the new content.
    let expected = {
        use sha2::Digest as _;
        let digest =
            sha2::Sha256::digest(std::fs::read(session.project.join(".elph/hooks/audit.sh")).unwrap());
        format!(
            "sha256:{}",
            digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    };
    let deadline = Instant::now() + DEADLINE;
    let mut pin = Value::Null;
    while pin != Value::String(expected.clone()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(session.trust_file()).unwrap()).unwrap();
        pin = file["pins"][session.project.to_str().unwrap()]["files"][".elph/hooks/audit.sh"].clone();
    }
    assert_eq!(pin, Value::String(expected), "the new content is pinned");
}

/// The screen's text with every run of whitespace (line ends too) made one space.
fn squashed(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_app_names_the_project_hooks_that_are_off_when_it_starts_untrusted() {
    // Under "always", a project with an explicit false starts without a question, its hooks off.
    let session = Session::start_as(Start::default(), |project, config| {
        std::fs::create_dir_all(config).unwrap();
        std::fs::write(
            config.join("trust.json"),
            serde_json::json!({
                "defaultProjectTrust": "always",
                "directories": {project.to_str().unwrap(): false}
            })
            .to_string(),
        )
        .unwrap();
        std::fs::create_dir_all(project.join(".elph")).unwrap();
        std::fs::write(
            project.join(".elph/hooks.json"),
            r#"{"hooks": [
                {"id": "no-rm-rf", "event": "preToolUse", "command": "/bin/true"},
                {"id": "audit", "event": "stop", "command": "/bin/true"}
            ]}"#,
        )
        .unwrap();
    });
    session.wait_for("· untrusted ·");
    let deadline = Instant::now() + DEADLINE;
    let wanted = "off: no-rm-rf (preToolUse), audit (stop)";
    while !squashed(&session.contents()).contains(wanted) {
        assert!(
            Instant::now() < deadline,
            "{wanted:?} in:\n{}",
            session.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        squashed(&session.contents()).matches("no-rm-rf").count(),
        1,
        "said once:\n{}",
        session.contents()
    );
    assert!(
        session.contents().contains(&format!(
            "⚠ {}/.elph/hooks.json: project hooks skipped until",
            session.project.display()
        )),
        "as loud as a failed guard:\n{}",
        session.contents()
    );
}

#[test]
fn untrust_in_the_app_says_what_the_next_start_does() {
    let mut session = Session::start();
    question(&session);
    session.press(b"y");
    session.wait_for("· trusted ·");
    session.press(b"/untrust");
    session.wait_for("› /untrust");
    session.press(b"\r");
    let deadline = Instant::now() + DEADLINE;
    let wanted = "The next `elph` started here asks again whether to trust it (\"No\" exits)";
    while !squashed(&session.contents()).contains(wanted) {
        assert!(
            Instant::now() < deadline,
            "{wanted:?} in:\n{}",
            session.contents()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sha256 recorded for `file` (relative to the project) in trust.json's pin of the project.
fn pinned_digest(session: &Session, file: &str) -> Value {
    let trust: Value = serde_json::from_str(&std::fs::read_to_string(session.trust_file()).unwrap()).unwrap();
    trust["pins"][session.project.to_str().unwrap()]["files"][file].clone()
}

fn sha256_of(path: &Path) -> Value {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    Value::String(format!(
        "sha256:{}",
        digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

#[test]
fn reload_after_an_edit_asks_to_trust_the_new_content_and_shows_what_changed() {
    let mut session = Session::start_after("project", |project, _| {
        let hooks = project.join(".elph/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(hooks.join("audit.sh"), "#!/bin/sh\ncat >/dev/null\n").unwrap();
        std::fs::write(
            project.join(".elph/hooks.json"),
            r#"{"hooks": [{"id": "audit", "event": "stop", "command": "hooks/audit.sh"}]}"#,
        )
        .unwrap();
    });
    question(&session);
    session.press(b"y");
    session.wait_for("· trusted · 1 hook ·");
    let script = session.project.join(".elph/hooks/audit.sh");
    let first = pinned_digest(&session, ".elph/hooks/audit.sh");
    assert_eq!(first, sha256_of(&script));

    // A pull changes the script and adds a hook.
    std::fs::write(&script, "#!/bin/sh\ncat >/dev/null\necho changed\n").unwrap();
    std::fs::write(
        session.project.join(".elph/hooks.json"),
        r#"{"hooks": [
            {"id": "audit", "event": "stop", "command": "hooks/audit.sh"},
            {"id": "lint", "event": "stop", "command": "hooks/audit.sh"}
        ]}"#,
    )
    .unwrap();
    session.press(b"/reload");
    session.wait_for("› /reload");
    session.press(b"\r");
    session.wait_for("Trust the new content?");
    session.wait_for("Esc keep off");
    let screen = session.contents();
    assert!(
        screen.contains(&format!(
            "{} changed since you trusted it:",
            session.project.display()
        )),
        "{screen}"
    );
    assert!(screen.contains("- hook added: lint"), "{screen}");
    assert!(
        screen.contains("- file changed: .elph/hooks/audit.sh"),
        "{screen}"
    );
    assert!(screen.contains("› 1. Yes, trust the new content"), "{screen}");

    // No keeps the project's hooks off and records nothing.
    session.press(b"n");
    session.wait_for("hooks and MCP servers off; /trust trusts the new content");
    session.wait_for("· untrusted · 0 hooks ·");
    assert_eq!(pinned_digest(&session, ".elph/hooks/audit.sh"), first);

    // Asked again at the next /reload; Yes re-pins and loads.
    session.press(b"/reload");
    session.wait_for("› /reload");
    session.press(b"\r");
    session.wait_for("Esc keep off");
    session.press(b"\x1b[B"); // Down: No
    session.wait_for("› 2. No, keep its hooks and MCP servers off");
    session.press(b"\x1b[A"); // Up: Yes
    session.wait_for("› 1. Yes, trust the new content");
    session.press(b"\r");
    session.wait_for("· trusted · 2 hooks ·");
    assert_eq!(
        pinned_digest(&session, ".elph/hooks/audit.sh"),
        sha256_of(&script)
    );
    assert!(!session.contents().contains("Trust the new content?"));
}
