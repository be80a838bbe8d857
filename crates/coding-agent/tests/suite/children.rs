//! Every kind of child Elph starts — a one-shot hook, a persistent hook, a `shell_exec` command, an
//! MCP server, and the command of `elph sandbox` — starts through the one spawn path
//! (`elph_process::process::spawn`), so each gets the same guarantees. Checked here through the
//! real binary in a real terminal: each child leads a session and process group of its own with no
//! controlling terminal although Elph has one (it can neither read the user's keys nor draw on the
//! screen), and none sees a secret of Elph's environment. The kill of `elph sandbox`'s command with
//! everything it started (SIGTERM passed on, SIGKILL of Elph) is here too; the other kinds' kills
//! are in `lifecycle_orphans`, `host`, `persistent` and `mcp`.

use std::path::Path;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::json;
use test_support::env::TestEnv;
use test_support::fake_model::FakeReply;
use test_support::hook_scripts::{descendants, still_alive, test_support_binary, write_script};

use super::lifecycle_support::long_command;
use super::tui_pty_support::{ELPH, Model, read_screen};

/// Values of Elph's environment that no child may see.
const SECRETS: [(&str, &str); 2] = [
    ("OPENAI_API_KEY", "sk-children-secret"),
    ("ELPH_TEST_SECRET_TOKEN", "token-children-secret"),
];

/// A shell line that records its shell's /proc stat line and environment as `NAME.stat` and
/// `NAME.env` in its working directory (the project).
fn record(name: &str) -> String {
    format!("cat /proc/$$/stat > {name}.stat; env > {name}.env")
}

/// pid, process group, session and controlling terminal of a recorded stat line.
#[derive(Debug)]
struct Stat {
    pid: i32,
    pgrp: i32,
    session: i32,
    tty_nr: i32,
}

fn stat_of(project: &Path, name: &str) -> Stat {
    let path = project.join(format!("{name}.stat"));
    let line =
        std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{name} never ran: no {}", path.display()));
    let pid = line.split(' ').next().unwrap().parse().unwrap();
    // state ppid pgrp session tty_nr, after the command name in parentheses.
    let fields: Vec<&str> = line.rsplit_once(") ").unwrap().1.split(' ').collect();
    Stat {
        pid,
        pgrp: fields[2].parse().unwrap(),
        session: fields[3].parse().unwrap(),
        tty_nr: fields[4].parse().unwrap(),
    }
}

/// The recorded child leads its own session and group and has no controlling terminal, and its
/// environment holds none of [`SECRETS`].
fn assert_guarantees(project: &Path, name: &str) {
    let stat = stat_of(project, name);
    assert_eq!(
        stat.pgrp, stat.pid,
        "{name} leads its own process group: {stat:?}"
    );
    assert_eq!(stat.session, stat.pid, "{name} leads its own session: {stat:?}");
    assert_eq!(stat.tty_nr, 0, "{name} has no controlling terminal: {stat:?}");
    let env = std::fs::read_to_string(project.join(format!("{name}.env"))).unwrap();
    for (variable, secret) in SECRETS {
        assert!(!env.contains(secret), "{name} sees {variable}: {env}");
    }
}

/// Runs `elph ARGS` in a terminal of its own (it is the terminal's controlling process), and waits
/// for it to exit. The shell that execs elph records its stat as `terminal.stat` first: the
/// evidence that Elph had a controlling terminal its children could have inherited.
fn in_terminal(env: &TestEnv, model: &Model, args: &[&str]) {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 40,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut command = CommandBuilder::new("/bin/sh");
    command.args(["-c", &format!("{}; exec \"$@\"", record("terminal")), "sh", ELPH]);
    command.args(args);
    command.env_clear();
    command.env("HOME", &env.home);
    command.env("ELPH_HOME", &env.config_dir);
    command.env("ELPH_DATA_DIR", &env.data_dir);
    command.env("PATH", std::env::var_os("PATH").unwrap_or_default());
    command.env("TERM", "xterm-256color");
    command.env("OPENAI_BASE_URL", model.server.base_url());
    for (variable, secret) in SECRETS {
        command.env(variable, secret);
    }
    command.cwd(&env.project);
    let mut child = pair.slave.spawn_command(command).unwrap();
    drop(pair.slave);
    // The terminal's output must be read, or a child writing to it would block.
    let _screen = read_screen(&*pair.master, 40, 120);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "elph {args:?} failed: {status:?}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("elph {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_ne!(
        stat_of(&env.project, "terminal").tty_nr,
        0,
        "the test gave Elph a controlling terminal"
    );
}

#[test]
fn every_child_of_a_run_in_a_terminal_has_its_own_session_and_an_allowlisted_environment() {
    let env = TestEnv::new();
    env.trust_project();
    let model = Model::start();
    env.project_script("oneshot.sh", &format!("cat > /dev/null\n{}\n", record("oneshot")));
    // Answers every payload with an empty line; whatever the protocol makes of that, the process
    // has recorded itself when it started.
    env.project_script(
        "persistent.sh",
        &format!("{}\nwhile read -r _; do echo; done\n", record("persistent")),
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "oneshot", "event": "userPromptSubmit", "command": "hooks/oneshot.sh"},
        {"id": "persistent", "event": "userPromptSubmit", "command": "hooks/persistent.sh",
         "persistent": true},
    ]}));
    let server = write_script(
        &env.evidence("mcp"),
        "server.sh",
        &format!(
            "{}\nexec '{}'\n",
            record("mcp"),
            test_support_binary("mcp-test-server").display()
        ),
    );
    std::fs::write(
        env.config_dir.join("mcp.json"),
        json!({"servers": {"rec": {"command": server.display().to_string()}}}).to_string(),
    )
    .unwrap();
    model.server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": record("shell")}),
    ));
    model.server.enqueue(FakeReply::text("done"));

    in_terminal(&env, &model, &["run", "--model", "openai/gpt-test", "go"]);

    for kind in ["oneshot", "persistent", "shell", "mcp"] {
        assert_guarantees(&env.project, kind);
    }
}

#[test]
fn the_command_of_elph_sandbox_has_its_own_session_and_the_shell_environment() {
    let env = TestEnv::new();
    let model = Model::start();
    in_terminal(&env, &model, &["sandbox", "--", "sh", "-c", &record("sandbox")]);
    assert_guarantees(&env.project, "sandbox");
}

/// `elph sandbox -- CMD` with CMD recording its pid and a background `sleep`'s, as a process of
/// its own (no terminal); returns it once both pids are recorded, with them. The caller waits for
/// it (`wait_with_deadline`).
#[expect(clippy::zombie_processes, reason = "each caller waits for it")]
fn busy_sandbox(env: &TestEnv) -> (std::process::Child, Vec<i32>) {
    let pid_file = env.project.join("busy.pids");
    let child = env
        .command(Path::new(ELPH))
        .args(["sandbox", "--", "sh", "-c", &long_command(&pid_file, 40)])
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(&pid_file)
            .unwrap_or_default()
            .lines()
            .filter_map(test_support::hook_scripts::host_pid)
            .collect();
        if pids.len() >= 2 {
            return (child, pids);
        }
        assert!(Instant::now() < deadline, "the command never recorded its pids");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_with_deadline(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("elph sandbox did not end within 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_to_elph_sandbox_reaches_the_command_and_everything_it_started() {
    let env = TestEnv::new();
    let (mut elph, busy) = busy_sandbox(&env);
    let family = descendants(elph.id() as i32);
    for pid in &busy {
        assert!(family.contains(pid), "{pid} is a descendant of elph ({family:?})");
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(elph.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = wait_with_deadline(&mut elph);
    // The shell died of the SIGTERM Elph passed on; Elph exits 128 + 15 with it.
    assert_eq!(status.code(), Some(143), "{status:?}");
    let left = still_alive(&busy, Duration::from_secs(10));
    assert!(left.is_empty(), "still alive after SIGTERM: {left:?}");
}

#[test]
fn kill_9_of_elph_sandbox_leaves_no_process() {
    let env = TestEnv::new();
    let (mut elph, busy) = busy_sandbox(&env);
    let family = descendants(elph.id() as i32);
    elph.kill().unwrap();
    let status = wait_with_deadline(&mut elph);
    assert_eq!(status.code(), None, "killed by a signal");
    let left = still_alive(&family, Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "still alive 10 s after kill -9: {left:?} of {family:?} ({busy:?})"
    );
}
