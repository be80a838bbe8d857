//! SIGTERM, SIGHUP and SIGQUIT take the Ctrl+C path in `elph run` and `elph acp`: the running
//! tool or hook is killed with its whole group, the `stop` and `sessionEnd` hooks run, the output
//! ends with the final events, and the exit code is 128 + the signal. A second signal exits at
//! once and still kills the groups. The real binary, real processes, /proc.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, Wire};
use test_support::hook_scripts::{descendants, still_alive};

use super::lifecycle_orphans::{During, Front, busy_elph_with};

fn recording_hooks(env: &TestEnv) -> (std::path::PathBuf, Vec<Value>) {
    let log = env.evidence("final-hooks.jsonl");
    env.project_script(
        "record.sh",
        &format!("cat >> '{}'\necho >> '{}'\n", log.display(), log.display()),
    );
    let hooks = vec![
        json!({"id": "stop", "event": "stop", "command": "hooks/record.sh"}),
        json!({"id": "end", "event": "sessionEnd", "command": "hooks/record.sh"}),
    ];
    (log, hooks)
}

async fn signal_takes_the_ctrl_c_path(front: Front, during: During, signal: Signal) {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let (log, hooks) = recording_hooks(&env);
    let (running, busy) = busy_elph_with(&env, &server, front, during, hooks).await;
    let family = descendants(running.pid);
    for pid in &busy {
        assert!(family.contains(pid), "{pid} is a descendant of elph");
    }
    let sent = Instant::now();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(running.pid), signal).unwrap();
    let (code, lines, stderr) = running.finish().await;
    let took = sent.elapsed();
    let left = still_alive(&family, Duration::from_secs(10));
    // For the closing note: how long each signal took to end the process.
    eprintln!("{front:?}/{during:?}/{signal}: exit {code:?} after {took:?}");

    assert_eq!(
        code,
        Some(128 + signal as i32),
        "{front:?}/{during:?}/{signal}: {stderr}"
    );
    assert!(
        left.is_empty(),
        "still alive 1 s after {signal}: {left:?} of {family:?}"
    );
    let events: Vec<String> = json_lines(&log)
        .iter()
        .map(|payload| payload["event"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(events, ["stop", "sessionEnd"], "{front:?}/{during:?}/{signal}");
    assert_eq!(json_lines(&log)[0]["status"], "cancelled");

    let frames: Vec<Value> = lines
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    match front {
        Front::Run => {
            let types: Vec<&str> = frames
                .iter()
                .map(|frame| frame["type"].as_str().unwrap_or_default())
                .collect();
            assert_eq!(types[types.len() - 2..], ["sessionEnded", "result"], "{lines:#?}");
            let turn_ended = types.iter().position(|t| *t == "turnEnded").expect("turnEnded");
            let stop_hooks = types.iter().position(|t| *t == "hooks").map(|_| ());
            assert!(stop_hooks.is_some() && turn_ended < types.len() - 2, "{types:?}");
            assert_eq!(frames[frames.len() - 1]["status"], "cancelled");
            assert_eq!(frames[frames.len() - 2]["reason"], "interrupted");
        }
        Front::Acp => {
            let answer = frames
                .iter()
                .find(|frame| frame["id"] == 3)
                .unwrap_or_else(|| panic!("the prompt was answered: {lines:#?}"));
            assert_eq!(answer["result"]["stopReason"], "cancelled", "{answer}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_of_elph_run_during_shell_exec() {
    signal_takes_the_ctrl_c_path(Front::Run, During::ShellExec, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_of_elph_run_during_shell_exec() {
    signal_takes_the_ctrl_c_path(Front::Run, During::ShellExec, Signal::SIGHUP).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigquit_of_elph_run_during_shell_exec() {
    signal_takes_the_ctrl_c_path(Front::Run, During::ShellExec, Signal::SIGQUIT).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_of_elph_run_during_a_hook() {
    signal_takes_the_ctrl_c_path(Front::Run, During::Hook, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_of_elph_run_during_a_hook() {
    signal_takes_the_ctrl_c_path(Front::Run, During::Hook, Signal::SIGHUP).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_of_elph_acp_during_shell_exec() {
    signal_takes_the_ctrl_c_path(Front::Acp, During::ShellExec, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_of_elph_acp_during_shell_exec() {
    signal_takes_the_ctrl_c_path(Front::Acp, During::ShellExec, Signal::SIGHUP).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_of_elph_acp_during_a_hook() {
    signal_takes_the_ctrl_c_path(Front::Acp, During::Hook, Signal::SIGTERM).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_of_elph_acp_during_a_hook() {
    signal_takes_the_ctrl_c_path(Front::Acp, During::Hook, Signal::SIGHUP).await;
}

/// A stop hook that would take 30 s: the first SIGTERM lets it run for the 2 s deadline at most;
/// a second SIGTERM exits at once and kills it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_final_hooks_are_held_to_the_deadline_and_a_second_signal_exits_at_once() {
    for second in [false, true] {
        let env = TestEnv::new();
        let server = FakeModelServer::start(Wire::OpenAi).await;
        let started = env.evidence("stop.pid");
        env.project_script(
            "slow-stop.sh",
            &format!("cat > /dev/null\necho $$ > '{}'\nsleep 30\n", started.display()),
        );
        let hooks = vec![
            json!({"id": "slow-stop", "event": "stop", "command": "hooks/slow-stop.sh", "timeoutMs": 60000}),
        ];
        let (running, _) = busy_elph_with(&env, &server, Front::Run, During::ShellExec, hooks).await;
        let pid = nix::unistd::Pid::from_raw(running.pid);
        let sent = Instant::now();
        nix::sys::signal::kill(pid, Signal::SIGTERM).unwrap();
        let hook_pid = super::lifecycle_support::pids_in(&started, 1).await[0];
        if second {
            nix::sys::signal::kill(pid, Signal::SIGTERM).unwrap();
        }
        let (code, _, stderr) = running.finish().await;
        eprintln!(
            "slow stop hook, second signal {second}: exit {code:?} after {:?}",
            sent.elapsed()
        );
        assert_eq!(code, Some(143), "{stderr}");
        assert!(
            still_alive(&[hook_pid], Duration::from_secs(10)).is_empty(),
            "the stop hook's process was killed"
        );
        if second {
            assert!(
                stderr.contains("again; exiting without waiting for hooks"),
                "{stderr}"
            );
        } else {
            let log = test_support::env::json_lines(&env.data_dir.join("logs/hooks.jsonl"));
            let stop = log
                .iter()
                .find(|run| run["hookId"] == "slow-stop")
                .expect("the stop hook's run is logged");
            assert_eq!(stop["timedOut"], true, "{stop}");
            assert!(
                stop["durationMs"].as_u64().unwrap() < 20_000,
                "cut short, not run for 30 s: {stop}"
            );
        }
    }
}
