//! Persistent hooks against real processes: one process per hook for the session, one JSON line in
//! and one out per event. Every await sits under a deadline; processes are checked in /proc.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use coding_agent::hooks::config::Protocol;
use coding_agent::hooks::discovery::resolve_command;
use coding_agent::hooks::{HookDefinition, HookHost, HookScope, HookSet};
use elph_agent::hooks::{
    Dispatch, HookEvent, HookPayload, Matcher, PayloadBase, PreToolUsePayload, Reduced, RunStatus,
};
use serde_json::json;
use test_support::hook_scripts::{live_group_members, write_script};

const DEADLINE: Duration = Duration::from_secs(30);
/// How long a killed group may take to die: generous, because a loaded machine schedules the dying
/// late; the check returns as soon as the group is gone.
const SETTLE: Duration = Duration::from_secs(10);

async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(DEADLINE, future)
        .await
        .expect("the dispatch finished within the test deadline")
}

struct Fixture {
    _root: tempfile::TempDir,
    project: PathBuf,
    data: PathBuf,
    scripts: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        let (project, data, scripts) = (base.join("project"), base.join("data"), base.join("hooks"));
        for dir in [&project, &data, &scripts] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Fixture {
            _root: root,
            project,
            data,
            scripts,
        }
    }

    /// A persistent preToolUse hook running `body` (a `#!/bin/sh` script).
    fn hook(&self, id: &str, body: &str, timeout: Duration) -> HookDefinition {
        let program = write_script(&self.scripts, &format!("{id}.sh"), body);
        HookDefinition {
            id: id.into(),
            event: HookEvent::PreToolUse,
            matcher: Matcher::any(),
            handler: coding_agent::hooks::discovery::Handler::Command(resolve_command(
                program.to_str().unwrap(),
                &self.scripts,
                "/usr/bin:/bin",
            )),
            args: Vec::new(),
            timeout,
            budget: None,
            enabled: true,
            persistent: true,
            run_async: false,
            protocol: Protocol::Elph,
            sandbox: None,
            source: self.scripts.join("hooks.json"),
            scope: HookScope::Home,
            fail_closed: false,
            max_input_bytes: elph_agent::hooks::limits::MAX_INPUT_BYTES,
            max_output_bytes: elph_agent::hooks::limits::MAX_STDOUT_BYTES,
            env: Default::default(),
        }
    }

    fn host(&self, hooks: Vec<HookDefinition>) -> HookHost {
        HookHost::new(set(hooks), self.project.clone(), &self.data).with_parent_env(vec![
            ("PATH", OsString::from("/usr/bin:/bin")),
            ("OPENAI_API_KEY", OsString::from("sk-secret")),
        ])
    }

    fn payload(&self, command: &str) -> HookPayload {
        HookPayload::PreToolUse(PreToolUsePayload {
            base: PayloadBase::new("s-7", &self.project),
            tool_name: "shell_exec".into(),
            tool_call_id: "call_1".into(),
            tool_input: json!({ "command": command }),
        })
    }

    fn file(&self, name: &str) -> PathBuf {
        self.scripts.join(name)
    }
}

fn set(hooks: Vec<HookDefinition>) -> HookSet {
    HookSet {
        hooks,
        ..HookSet::default()
    }
}

/// A counter: answers every payload line with a block whose reason is `N pid PID`, after writing
/// the pid of each start to `pids`. On the line whose command is `crash` it exits 3 unanswered; on
/// `hang` it sleeps; on `garbage` it answers a line that is not JSON; on `invalid` an answer in step
/// whose `block` has the wrong type; on `long` one of 70 KB; on `empty` "no change"; on `quiet` it
/// exits 0 unanswered. Every answer echoes the payload's request id (its first field).
fn counter_script(pids: &Path) -> String {
    format!(
        r#"echo $$ >> '{pids}'
n=0
while IFS= read -r line; do
  n=$((n+1))
  id=${{line#'{{"requestId":'}}; id=${{id%%,*}}
  case "$line" in
    *'"crash"'*) exit 3 ;;
    *'"quiet"'*) exit 0 ;;
    *'"hang"'*) sleep 30 ;;
    *'"garbage"'*) echo 'this is not JSON'; continue ;;
    *'"invalid"'*) printf '{{"requestId":%s,"block":"yes"}}\n' "$id"; continue ;;
    *'"long"'*) head -c 70000 /dev/zero | tr '\0' x; echo; continue ;;
    *'"empty"'*) printf '{{"requestId":%s}}\n' "$id"; continue ;;
    *'"stderr"'*) echo "complaint $n" >&2 ;;
  esac
  printf '{{"requestId":%s,"block": true, "reason": "%s pid %s key %s dir %s"}}\n' "$id" "$n" "$$" "${{OPENAI_API_KEY:-none}}" "$(pwd)"
done
"#,
        pids = pids.display()
    )
}

fn reason(dispatch: &Dispatch) -> Option<String> {
    match &dispatch.reduced {
        Reduced::PreToolUse(elph_agent::hooks::PreToolUseReduced { blocked, .. }) => {
            blocked.as_ref().and_then(|v| v.reason.clone())
        }
        other => panic!("not a preToolUse reduction: {other:?}"),
    }
}

fn pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| line.trim().parse().unwrap())
        .collect()
}

fn cause(dispatch: &Dispatch) -> String {
    dispatch.runs[0].cause.clone().unwrap_or_default()
}

#[tokio::test]
async fn one_process_keeps_its_state_across_events_with_the_hook_environment() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&pid_file),
        Duration::from_secs(10),
    )]);
    for n in 1..=3 {
        let dispatch = within(host.run_chain(fx.payload("ls"))).await;
        assert!(dispatch.diagnostics.is_empty(), "{:?}", dispatch.diagnostics);
        assert_eq!(dispatch.runs[0].status, RunStatus::Ok);
        let reason = reason(&dispatch).unwrap();
        let pid = pids(&pid_file)[0];
        // The key is not in the hook's environment; the cwd is the project.
        let expected = format!("{n} pid {pid} key none dir {}", fx.project.display());
        assert_eq!(reason, expected);
    }
    assert_eq!(pids(&pid_file).len(), 1, "one process for all three events");
}

#[tokio::test]
async fn an_empty_line_is_no_change() {
    let fx = Fixture::new();
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&fx.file("pids")),
        Duration::from_secs(10),
    )]);
    let dispatch = within(host.run_chain(fx.payload("empty"))).await;
    assert_eq!(dispatch.runs[0].status, RunStatus::Ok);
    assert!(dispatch.runs[0].outcome.is_none());
    assert_eq!(reason(&dispatch), None);
    assert!(dispatch.diagnostics.is_empty(), "{:?}", dispatch.diagnostics);
}

#[tokio::test]
async fn a_crash_fails_open_and_the_next_event_starts_a_new_process() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&pid_file),
        Duration::from_secs(10),
    )]);
    within(host.run_chain(fx.payload("ls"))).await;
    let crashed = within(host.run_chain(fx.payload("crash"))).await;
    assert_eq!(crashed.runs[0].status, RunStatus::Failed);
    assert_eq!(reason(&crashed), None, "a crash changes nothing");
    assert!(
        cause(&crashed).contains("exited with code 3 without answering"),
        "{}",
        cause(&crashed)
    );
    assert!(!crashed.diagnostics.is_empty());
    let first = pids(&pid_file)[0];
    assert!(
        live_group_members(first, SETTLE).is_empty(),
        "the crashed group is gone"
    );

    let after = within(host.run_chain(fx.payload("ls"))).await;
    let second = pids(&pid_file)[1];
    assert_ne!(first, second);
    assert!(reason(&after).unwrap().starts_with(&format!("1 pid {second} ")));
    assert!(
        after.runs[0].notes.iter().any(|n| n.contains("started again")),
        "{:?}",
        after.runs[0].notes
    );
}

#[tokio::test]
async fn exiting_0_without_an_answer_is_a_failure_not_a_silent_success() {
    let fx = Fixture::new();
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&fx.file("pids")),
        Duration::from_secs(10),
    )]);
    let dispatch = within(host.run_chain(fx.payload("quiet"))).await;
    assert_eq!(dispatch.runs[0].status, RunStatus::Failed);
    assert!(cause(&dispatch).contains("exited with code 0 without answering"));
}

#[tokio::test]
async fn a_timeout_kills_the_group_and_the_next_event_restarts_it() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    // The timeout covers the process's start too: short enough to keep the test quick, long
    // enough for a loaded machine to start a shell and answer `ls` well within it.
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&pid_file),
        Duration::from_secs(5),
    )]);
    let answered = within(host.run_chain(fx.payload("ls"))).await;
    assert_eq!(answered.runs[0].status, RunStatus::Ok, "{:?}", answered.runs[0]);
    let first = pids(&pid_file)[0];
    let timed_out = within(host.run_chain(fx.payload("hang"))).await;
    let run = &timed_out.runs[0];
    assert_eq!(run.status, RunStatus::Failed);
    assert!(run.process.as_ref().is_some_and(|exit| exit.timed_out));
    assert!(
        cause(&timed_out).contains("timed out after 5000 ms"),
        "{}",
        cause(&timed_out)
    );
    assert!(
        live_group_members(first, SETTLE).is_empty(),
        "the hung process and its sleep were killed"
    );
    let after = within(host.run_chain(fx.payload("ls"))).await;
    let second = pids(&pid_file)[1];
    assert!(reason(&after).unwrap().starts_with(&format!("1 pid {second} ")));
}

#[tokio::test]
async fn an_invalid_outcome_in_step_is_rejected_like_a_one_shot_outcome_and_the_process_stays() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&pid_file),
        Duration::from_secs(10),
    )]);
    let invalid = within(host.run_chain(fx.payload("invalid"))).await;
    assert_eq!(invalid.runs[0].status, RunStatus::Failed);
    assert!(
        cause(&invalid).starts_with("outcome rejected"),
        "{}",
        cause(&invalid)
    );
    assert_eq!(reason(&invalid), None);
    let after = within(host.run_chain(fx.payload("ls"))).await;
    assert!(
        reason(&after).unwrap().starts_with("2 pid "),
        "the same process answers"
    );
    assert_eq!(pids(&pid_file).len(), 1);
}

#[tokio::test]
async fn a_garbage_line_is_a_protocol_error_that_restarts_the_process() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&pid_file),
        Duration::from_secs(10),
    )]);
    let garbage = within(host.run_chain(fx.payload("garbage"))).await;
    let run = &garbage.runs[0];
    assert_eq!(run.status, RunStatus::Failed);
    assert!(run.process.as_ref().unwrap().protocol_error);
    assert!(
        cause(&garbage).contains("broke the line protocol")
            && cause(&garbage).contains("is not JSON: \"this is not JSON\""),
        "{}",
        cause(&garbage)
    );
    assert_eq!(reason(&garbage), None);
    assert!(
        live_group_members(pids(&pid_file)[0], SETTLE).is_empty(),
        "the process out of step was killed"
    );
    let after = within(host.run_chain(fx.payload("ls"))).await;
    assert!(
        reason(&after).unwrap().starts_with("1 pid "),
        "a new process answers"
    );
    assert_eq!(pids(&pid_file).len(), 2);
}

#[tokio::test]
async fn an_over_long_line_kills_the_process_like_an_over_long_stdout() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&pid_file),
        Duration::from_secs(10),
    )]);
    let long = within(host.run_chain(fx.payload("long"))).await;
    assert_eq!(long.runs[0].status, RunStatus::Failed);
    assert!(cause(&long).contains("stdout passed 64 KiB"), "{}", cause(&long));
    assert!(live_group_members(pids(&pid_file)[0], SETTLE).is_empty());
    let after = within(host.run_chain(fx.payload("ls"))).await;
    assert!(reason(&after).unwrap().starts_with("1 pid "));
    assert_eq!(pids(&pid_file).len(), 2);
}

#[tokio::test]
async fn stderr_reaches_the_run_record() {
    let fx = Fixture::new();
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&fx.file("pids")),
        Duration::from_secs(10),
    )]);
    let dispatch = within(host.run_chain(fx.payload("stderr"))).await;
    assert_eq!(dispatch.runs[0].status, RunStatus::Ok);
    // stderr is read concurrently, as it comes: a later event's record shows it once the reader
    // has caught up (at once on an idle machine; later under load).
    let deadline = std::time::Instant::now() + DEADLINE;
    loop {
        let dispatch = within(host.run_chain(fx.payload("ls"))).await;
        assert_eq!(dispatch.runs[0].status, RunStatus::Ok, "{:?}", dispatch.runs[0]);
        if dispatch.runs[0].stderr_tail().contains("complaint 1") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "stderr never reached a run record: {:?}",
            dispatch.runs[0]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn repeated_crashes_back_off_with_a_diagnostic() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    let host = fx.host(vec![fx.hook(
        "counter",
        &counter_script(&pid_file),
        Duration::from_secs(10),
    )]);
    for _ in 0..3 {
        let crashed = within(host.run_chain(fx.payload("crash"))).await;
        assert_eq!(crashed.runs[0].status, RunStatus::Failed);
    }
    let skipped = within(host.run_chain(fx.payload("ls"))).await;
    assert_eq!(skipped.runs[0].status, RunStatus::Skipped);
    assert!(
        cause(&skipped).contains("failed 3 times in a row"),
        "{}",
        cause(&skipped)
    );
    assert_eq!(pids(&pid_file).len(), 3, "no start during the backoff");
    assert_eq!(skipped.diagnostics.len(), 1);
}

#[tokio::test]
async fn session_end_kills_the_whole_group() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    // A helper the hook leaves running in its group must die with it.
    let body = format!("sleep 60 &\n{}", counter_script(&pid_file));
    let host = fx.host(vec![fx.hook("counter", &body, Duration::from_secs(10))]);
    within(host.run_chain(fx.payload("ls"))).await;
    let pgid = host.persistent().pgid("counter").unwrap();
    assert_eq!(pgid, pids(&pid_file)[0]);
    assert!(
        live_group_members(pgid, Duration::ZERO).len() >= 2,
        "the hook and its sleep"
    );
    drop(host);
    assert!(
        live_group_members(pgid, SETTLE).is_empty(),
        "nothing of the group is left"
    );
}

#[tokio::test]
async fn reload_keeps_an_unchanged_process_and_replaces_a_changed_one() {
    let fx = Fixture::new();
    let pid_file = fx.file("pids");
    let hook = fx.hook("counter", &counter_script(&pid_file), Duration::from_secs(10));
    let host = fx.host(vec![hook.clone()]);
    within(host.run_chain(fx.payload("ls"))).await;
    host.replace_set(set(vec![hook.clone()]));
    let same = within(host.run_chain(fx.payload("ls"))).await;
    assert!(
        reason(&same).unwrap().starts_with("2 pid "),
        "kept across an unchanged reload"
    );

    let first = pids(&pid_file)[0];
    let changed = HookDefinition {
        args: vec!["--changed".into()],
        ..hook
    };
    host.replace_set(set(vec![changed]));
    assert!(
        live_group_members(first, SETTLE).is_empty(),
        "the old process is killed at the reload"
    );
    let after = within(host.run_chain(fx.payload("ls"))).await;
    assert!(reason(&after).unwrap().starts_with("1 pid "));
    assert_eq!(pids(&pid_file).len(), 2);

    host.replace_set(set(Vec::new()));
    assert!(
        live_group_members(pids(&pid_file)[1], SETTLE).is_empty(),
        "a removed hook's process is killed"
    );
}

#[tokio::test]
async fn a_sandboxed_persistent_hook_stays_confined_for_its_whole_life() {
    if !elph_process::sandbox::landlock_support().available() {
        let why = "a_sandboxed_persistent_hook_stays_confined_for_its_whole_life: skipped: no Landlock";
        assert!(
            std::env::var_os("ELPH_REQUIRE_LANDLOCK").is_none_or(|v| v != "1"),
            "{why}; ELPH_REQUIRE_LANDLOCK=1 forbids skipping"
        );
        eprintln!("{why}");
        return;
    }
    let fx = Fixture::new();
    let marker = fx.project.join("marker");
    let body = format!(
        "while IFS= read -r line; do\n  id=${{line#'{{\"requestId\":'}}; id=${{id%%,*}}\n  \
         if echo x > '{}' 2>/dev/null; then r=wrote; else r=refused; fi\n  \
         printf '{{\"requestId\":%s,\"block\": true, \"reason\": \"%s\"}}\\n' \"$id\" \"$r\"\ndone\n",
        marker.display()
    );
    let mut hook = fx.hook("confined", &body, Duration::from_secs(10));
    hook.sandbox = Some(elph_process::sandbox::SandboxMode::ReadOnly);
    let host = fx.host(vec![hook]);
    for _ in 0..2 {
        let dispatch = within(host.run_chain(fx.payload("ls"))).await;
        assert_eq!(
            reason(&dispatch).as_deref(),
            Some("refused"),
            "{:?}",
            dispatch.runs
        );
    }
    assert!(!marker.exists());
}

/// Through the real binary: `elph run` with three tool calls and a persistent counter, then
/// `elph hooks list` and `elph hooks test`.
mod binary {
    use super::SETTLE;
    use serde_json::json;
    use test_support::env::TestEnv;
    use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
    use test_support::hook_scripts::live_group_members;

    use super::super::run_e2e::run_elph;

    /// Logs `N PID` for each event to `log` and answers "no change"; leaves a `sleep` in its group.
    fn counter(env: &TestEnv, log: &std::path::Path) {
        let body = format!(
            "sleep 60 &\nn=0\nwhile IFS= read -r line; do\n  n=$((n+1))\n  echo \"$n $$\" >> '{}'\n  \
             id=${{line#'{{\"requestId\":'}}; printf '{{\"requestId\":%s}}\\n' \"${{id%%,*}}\"\ndone\n",
            log.display()
        );
        test_support::hook_scripts::write_script(&env.config_dir.join("hooks"), "counter.sh", &body);
        env.write_home_hooks(&json!({"hooks": [{
            "id": "counter", "event": "preToolUse", "command": "hooks/counter.sh", "persistent": true
        }]}));
    }

    #[tokio::test]
    async fn elph_run_keeps_one_process_for_the_session_and_kills_its_group_at_the_end() {
        let env = TestEnv::new();
        let log = env.evidence("counter.log");
        counter(&env, &log);
        let server = FakeModelServer::start(Wire::OpenAi).await;
        for _ in 0..3 {
            server.enqueue(FakeReply::tool_call("list_dir", json!({"path": "."})));
        }
        server.enqueue(FakeReply::text("done"));
        let output = run_elph(&env, &server, &["list three times"]).await;
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let lines: Vec<(u32, i32)> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|line| {
                let (n, pid) = line.split_once(' ').unwrap();
                (n.parse().unwrap(), pid.parse().unwrap())
            })
            .collect();
        let pid = lines[0].1;
        assert_eq!(
            lines,
            vec![(1, pid), (2, pid), (3, pid)],
            "one process counted the three calls"
        );
        assert!(
            live_group_members(pid, SETTLE).is_empty(),
            "the hook and its sleep are gone after elph exits"
        );
    }

    #[test]
    fn hooks_list_and_hooks_test_show_a_persistent_hook() {
        let env = TestEnv::new();
        let log = env.evidence("counter.log");
        counter(&env, &log);
        let list = env
            .command(&super::super::run_e2e::elph())
            .args(["hooks", "list"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&list.stdout);
        assert!(text.contains("10000ms persistent"), "{text}");

        let test = env
            .command(&super::super::run_e2e::elph())
            .args(["hooks", "test", "preToolUse", "--tool", "list_dir"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&test.stdout);
        assert!(test.status.success(), "{text}");
        assert!(text.contains("persistent: one process for the session"), "{text}");
        assert!(
            text.contains("outcome: none (its answer held only its requestId: no change)"),
            "{text}"
        );
        assert!(!text.contains("empty stdout"), "the hook answered a line: {text}");
        let pid: i32 = std::fs::read_to_string(&log)
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            live_group_members(pid, SETTLE).is_empty(),
            "stopped after the test"
        );

        let doctor = env
            .command(&super::super::run_e2e::elph())
            .args(["doctor"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&doctor.stdout);
        assert!(text.contains("process  persistent"), "{text}");
    }
}
