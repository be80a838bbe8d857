//! The hook host against real child processes (docs/hooks.md, "The protocol" and "The environment of a hook"). Every await sits under a deadline.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use coding_agent::hooks::config::Protocol;
use coding_agent::hooks::discovery::resolve_command;
use coding_agent::hooks::runlog::RunLog;
use coding_agent::hooks::{HookDefinition, HookHost, HookScope, HookSet};
use elph_agent::hooks::limits::MAX_INPUT_BYTES;
use elph_agent::hooks::{
    Dispatch, HookEvent, HookOutcome, HookPayload, HookRunner, Matcher, PayloadBase, PreToolUsePayload,
    Reduced, RunStatus, StopPayload, StopStatus,
};
use serde_json::{Value, json};
use test_support::hook_scripts::{live_group_members, write_script, write_with_mode};

/// How long a whole test may take before it is a failure rather than a hang.
const DEADLINE: Duration = Duration::from_secs(30);
/// How long processes just sent SIGKILL may take to finish dying: generous, because a loaded
/// machine schedules the dying late; the check returns as soon as the group is gone.
const SETTLE: Duration = Duration::from_secs(10);
/// "Ended promptly", for a run whose wrong ending (a timeout, a 1000 s sleep holding the pipes)
/// would take at least [`SLOW_WRONG`]: a margin for a loaded machine, not a speed claim.
const PROMPT: Duration = Duration::from_secs(10);
/// The timeout of a hook whose run must end long before it (by a cap, or the exit grace).
const SLOW_WRONG: Duration = Duration::from_secs(60);

async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(DEADLINE, future)
        .await
        .expect("the dispatch finished within the test deadline")
}

/// A temp folder with a project, a data dir and a folder for scripts.
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
        let project = base.join("project");
        let data = base.join("data");
        let scripts = base.join("config").join("hooks");
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

    fn script(&self, name: &str, body: &str) -> PathBuf {
        write_script(&self.scripts, name, body)
    }

    /// A file in the scripts folder for a hook to write to.
    fn out(&self, name: &str) -> PathBuf {
        self.scripts.join(name)
    }

    fn hook(&self, id: &str, event: HookEvent, program: &Path) -> HookDefinition {
        HookDefinition {
            id: id.into(),
            event,
            matcher: Matcher::any(),
            handler: coding_agent::hooks::discovery::Handler::Command(resolve_command(
                program.to_str().unwrap(),
                &self.scripts,
                "/usr/bin:/bin",
            )),
            args: Vec::new(),
            timeout: Duration::from_secs(10),
            budget: None,
            enabled: true,
            persistent: false,
            run_async: false,
            source: self.scripts.parent().unwrap().join("hooks.json"),
            scope: HookScope::Home,
            protocol: Protocol::Elph,
            sandbox: None,
            fail_closed: false,
            max_input_bytes: elph_agent::hooks::limits::MAX_INPUT_BYTES,
            max_output_bytes: elph_agent::hooks::limits::MAX_STDOUT_BYTES,
            env: Default::default(),
        }
    }

    fn host(&self, hooks: Vec<HookDefinition>) -> HookHost {
        let set = HookSet {
            hooks,
            ..HookSet::default()
        };
        HookHost::new(set, self.project.clone(), &self.data).with_parent_env(parent_env())
    }

    fn base(&self) -> PayloadBase {
        PayloadBase::new("s-42", &self.project)
    }

    fn pre_tool(&self, input: Value) -> HookPayload {
        HookPayload::PreToolUse(PreToolUsePayload {
            base: self.base(),
            tool_name: "shell_exec".into(),
            tool_call_id: "call_1".into(),
            tool_input: input,
        })
    }

    fn stop(&self) -> HookPayload {
        HookPayload::Stop(StopPayload {
            base: self.base(),
            status: StopStatus::Completed,
            continuations: 0,
        })
    }
}

/// The parent environment the host draws from: what a real agent's environment might hold.
fn parent_env() -> Vec<(&'static str, OsString)> {
    vec![
        ("HOME", "/home/hook-test".into()),
        ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
        ("LANG", "C.UTF-8".into()),
        ("TZ", "UTC".into()),
        ("HERDR_PANE_ID", "pane-7".into()),
        ("OPENAI_API_KEY", "sk-openai-secret".into()),
        ("ANTHROPIC_API_KEY", "sk-ant-secret".into()),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret".into()),
        ("GITHUB_TOKEN", "ghp_secret".into()),
        ("MY_SECRET", "hunter2".into()),
        ("RUST_LOG", "debug".into()),
    ]
}

fn only_run(dispatch: &Dispatch) -> &elph_agent::hooks::HookRun {
    assert_eq!(dispatch.runs.len(), 1, "{dispatch:#?}");
    &dispatch.runs[0]
}

fn diagnostic_text(dispatch: &Dispatch) -> String {
    dispatch
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Reads a pgid a script wrote, waiting for it to appear.
fn wait_for_file(path: &Path, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text;
        }
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn unix_nanos_now() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

#[tokio::test]
async fn runs_directly_with_literal_args_in_the_project_and_a_new_group() {
    let fx = Fixture::new();
    let args_file = fx.out("args.txt");
    let stdin_file = fx.out("stdin.txt");
    let where_file = fx.out("where.txt");
    let program = fx.script(
        "record.sh",
        &format!(
            "cat > '{stdin}'\n\
             for a in \"$@\"; do printf '[%s]\\n' \"$a\"; done > '{args}'\n\
             pwd > '{where_}'\n\
             cut -d' ' -f5 /proc/$$/stat >> '{where_}'\n\
             echo $$ >> '{where_}'\n\
             cut -d' ' -f6,7 /proc/$$/stat >> '{where_}'",
            stdin = stdin_file.display(),
            args = args_file.display(),
            where_ = where_file.display()
        ),
    );
    let mut hook = fx.hook("record", HookEvent::PreToolUse, &program);
    hook.args = vec![
        "two words".into(),
        "$HOME".into(),
        "*".into(),
        "; touch injected".into(),
        "'quoted' \"too\"".into(),
        "".into(),
    ];
    let host = fx.host(vec![hook]);
    let payload = fx.pre_tool(json!({"command": "ls"}));
    let dispatch = within(host.run_chain(payload.clone())).await;
    let run = only_run(&dispatch);
    assert_eq!(run.status, RunStatus::Ok, "{run:#?}");

    // Literal args: no shell expanded, split or interpreted them.
    assert_eq!(
        std::fs::read_to_string(&args_file).unwrap(),
        "[two words]\n[$HOME]\n[*]\n[; touch injected]\n['quoted' \"too\"]\n[]\n"
    );
    assert!(!fx.project.join("injected").exists());
    // stdin: the payload, one newline, then EOF (cat returned).
    assert_eq!(std::fs::read(&stdin_file).unwrap(), payload.to_stdin_bytes());
    // cwd is PROJECT_DIR; the hook leads a process group of its own.
    let where_ = std::fs::read_to_string(&where_file).unwrap();
    let lines: Vec<&str> = where_.lines().collect();
    assert_eq!(lines[0], fx.project.to_str().unwrap());
    assert_eq!(lines[1], lines[2], "pgid == pid: the hook leads a new group");
    let our_pgid = std::fs::read_to_string("/proc/self/stat").unwrap();
    let our_pgid = our_pgid[our_pgid.rfind(')').unwrap() + 2..]
        .split(' ')
        .nth(2)
        .unwrap()
        .to_string();
    assert_ne!(lines[1], our_pgid, "not the agent's group");
    // A session of its own, with no controlling terminal: `SID TTY_NR` is `PID 0`.
    assert_eq!(
        lines[3],
        format!("{} 0", lines[2]),
        "the hook leads a new session without a terminal"
    );
}

#[tokio::test]
async fn environment_is_cleared_and_rebuilt_from_the_allowlist() {
    let fx = Fixture::new();
    let env_file = fx.out("env.txt");
    let program = fx.script("env.sh", "env > \"$1\"");
    let mut hook = fx.hook("env-dump", HookEvent::Stop, &program);
    hook.args = vec![env_file.to_str().unwrap().into()];
    let host = fx.host(vec![hook]);
    let dispatch = within(host.run_chain(fx.stop())).await;
    assert_eq!(only_run(&dispatch).status, RunStatus::Ok);

    let dumped = std::fs::read_to_string(&env_file).unwrap();
    let mut vars: Vec<(&str, &str)> = dumped
        .lines()
        .filter_map(|line| line.split_once('='))
        // The shell itself sets these.
        .filter(|(name, _)| !matches!(*name, "PWD" | "SHLVL" | "OLDPWD" | "_"))
        .collect();
    vars.sort();
    let project = fx.project.to_str().unwrap();
    assert_eq!(
        vars,
        [
            ("ELPH_HOOK_ID", "env-dump"),
            ("ELPH_PROJECT_DIR", project),
            ("ELPH_SESSION_ID", "s-42"),
            ("HERDR_PANE_ID", "pane-7"),
            ("HOME", "/home/hook-test"),
            ("LANG", "C.UTF-8"),
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("TZ", "UTC"),
        ]
    );
    for secret in [
        "sk-openai-secret",
        "sk-ant-secret",
        "aws-secret",
        "ghp_secret",
        "hunter2",
    ] {
        assert!(!dumped.contains(secret), "{secret} leaked:\n{dumped}");
    }
}

#[tokio::test]
async fn a_payload_over_128_kib_is_not_sent() {
    let fx = Fixture::new();
    let marker = fx.out("ran");
    let program = fx.script("marker.sh", &format!("touch '{}'", marker.display()));
    let host = fx.host(vec![fx.hook("big-input", HookEvent::PreToolUse, &program)]);
    let payload = fx.pre_tool(json!({"data": "x".repeat(MAX_INPUT_BYTES)}));
    let dispatch = within(host.run_chain(payload)).await;
    let run = only_run(&dispatch);
    assert_eq!(run.status, RunStatus::Skipped);
    assert!(!marker.exists(), "the hook must not run");
    let text = diagnostic_text(&dispatch);
    assert!(
        text.contains("hook 'big-input'") && text.contains("input limit"),
        "{text}"
    );
}

#[tokio::test]
async fn a_hook_that_ignores_a_large_payload_still_counts() {
    let fx = Fixture::new();
    let program = fx.script("no-read.sh", r#"echo '{"toolInput": {"rewritten": true}}'"#);
    let host = fx.host(vec![fx.hook("no-read", HookEvent::PreToolUse, &program)]);
    // Just under the input limit, and twice a pipe's buffer: the write must hit a closed pipe.
    let payload = fx.pre_tool(json!({"data": "x".repeat(MAX_INPUT_BYTES - 300)}));
    assert!(payload.to_stdin_bytes().len() > 128 * 1000);
    let dispatch = within(host.run_chain(payload)).await;
    let run = only_run(&dispatch);
    assert_eq!(run.status, RunStatus::Ok, "{run:#?}");
    assert!(dispatch.diagnostics.is_empty(), "{:?}", dispatch.diagnostics);
    let Reduced::PreToolUse(elph_agent::hooks::PreToolUseReduced {
        tool_input,
        input_changed,
        ..
    }) = &dispatch.reduced
    else {
        panic!("{:?}", dispatch.reduced)
    };
    assert!(input_changed);
    assert_eq!(tool_input, &json!({"rewritten": true}));
}

/// The RSS probe runs alone in a child test process, so other tests' allocations do not count.
#[test]
fn endless_output_is_capped_and_memory_stays_flat() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::host::rss_probe_endless_output",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "probe failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "the probe did not run:\n{stdout}");
}

#[tokio::test]
#[ignore = "run by endless_output_is_capped_and_memory_stays_flat in a process of its own"]
async fn rss_probe_endless_output() {
    let fx = Fixture::new();
    let yes = resolve_command("yes", &fx.scripts, "/usr/bin:/bin").path;
    let stderr_flood = fx.script("flood-stderr.sh", "exec yes 'to stderr' >&2");
    // Warm up: the runtime, the allocator and the first spawn cost what they cost once.
    let warm = fx.script("warm.sh", "echo '{}'");
    let host = fx.host(vec![fx.hook("warm", HookEvent::Stop, &warm)]);
    within(host.run_chain(fx.stop())).await;

    for (id, program, stream) in [("yes", &yes, "stdout"), ("flood", &stderr_flood, "stderr")] {
        // A timeout far beyond the bound below: only the cap can end the run in time.
        let mut hook = fx.hook(id, HookEvent::Stop, program);
        hook.timeout = SLOW_WRONG;
        let host = fx.host(vec![hook]);
        let before = test_support::hook_scripts::vm_rss_kib();
        let started = Instant::now();
        let dispatch = within(host.run_chain(fx.stop())).await;
        let elapsed = started.elapsed();
        let after = test_support::hook_scripts::vm_rss_kib();
        let run = only_run(&dispatch);
        assert_eq!(run.status, RunStatus::Failed);
        let cause = run.cause.as_deref().unwrap();
        assert!(cause.contains(&format!("{stream} passed 64 KiB")), "{cause}");
        assert!(
            elapsed < PROMPT,
            "killed soon after the cap, not at the timeout: {elapsed:?}"
        );
        let read = if stream == "stdout" {
            run.process.as_ref().unwrap().stdout_bytes
        } else {
            run.process.as_ref().unwrap().stderr_bytes
        };
        assert!(read <= 64 * 1024 + 8 * 1024, "read {read} bytes");
        let growth = after.saturating_sub(before);
        println!("{id}: rss before {before} KiB, after {after} KiB, growth {growth} KiB, {elapsed:?}");
        assert!(growth < 8 * 1024, "RSS grew by {growth} KiB");
        assert!(diagnostic_text(&dispatch).contains(&format!("hook '{id}'")));
        assert_eq!(
            run.process.as_ref().unwrap().exit_code,
            None,
            "killed, not exited"
        );
    }
}

async fn assert_timeout_kills_group(body: &str) {
    let fx = Fixture::new();
    let pid_file = fx.out("pid");
    let program = fx.script("slow.sh", &format!("echo $$ > '{}'\n{body}", pid_file.display()));
    let mut hook = fx.hook("slow", HookEvent::Stop, &program);
    let timeout = Duration::from_millis(400);
    hook.timeout = timeout;
    let host = fx.host(vec![hook]);
    let started = Instant::now();
    let dispatch = within(host.run_chain(fx.stop())).await;
    let elapsed = started.elapsed();
    println!("timeout {timeout:?}: ended after {elapsed:?}");
    let run = only_run(&dispatch);
    assert!(run.process.as_ref().unwrap().timed_out, "{run:#?}");
    assert_eq!(run.status, RunStatus::Failed);
    // The group's sleeps would hold the pipes for 1000 s: ending near the timeout shows it was
    // killed, not waited for. The margin is for a loaded machine, far below the sleeps.
    assert!(
        elapsed <= timeout + PROMPT,
        "ended {elapsed:?} after the start; the bound is timeout + {PROMPT:?}"
    );
    let text = diagnostic_text(&dispatch);
    assert!(
        text.contains("hook 'slow'") && text.contains("timed out after 400 ms"),
        "{text}"
    );
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let left = live_group_members(pgid, SETTLE);
    assert!(left.is_empty(), "processes of the group survived: {left:?}");
}

#[tokio::test]
async fn timeout_kills_a_hook_whose_background_job_holds_stdout() {
    assert_timeout_kills_group("sleep 1000 &\nwait").await;
}

#[tokio::test]
async fn timeout_kills_a_double_forked_daemon() {
    assert_timeout_kills_group("( sleep 1000 & )\nsleep 1000").await;
}

#[tokio::test]
async fn a_grandchild_holding_the_pipes_does_not_hold_the_agent() {
    let fx = Fixture::new();
    let stamp = fx.out("exited-at");
    let pid_file = fx.out("pid");
    let program = fx.script(
        "leaves-a-child.sh",
        &format!(
            "echo $$ > '{pid}'\n\
             echo '{{\"block\": true, \"reason\": \"printed before exiting\"}}'\n\
             sleep 1000 &\n\
             date +%s%N > '{stamp}'\n\
             exit 0",
            pid = pid_file.display(),
            stamp = stamp.display()
        ),
    );
    // A timeout far beyond the bound below: only the exit grace can end the run in time.
    let mut hook = fx.hook("leaves-a-child", HookEvent::PreToolUse, &program);
    hook.timeout = SLOW_WRONG;
    let host = fx.host(vec![hook]);
    let dispatch = within(host.run_chain(fx.pre_tool(json!({})))).await;
    let done = unix_nanos_now();
    let exited: u128 = std::fs::read_to_string(&stamp).unwrap().trim().parse().unwrap();
    let after_exit = Duration::from_nanos((done - exited) as u64);
    println!("finished {after_exit:?} after the hook exited");
    assert!(
        after_exit <= PROMPT,
        "finished {after_exit:?} after the hook exited; the bound is {PROMPT:?} (the grace is {:?}, the timeout {SLOW_WRONG:?})",
        coding_agent::hooks::process::EXIT_GRACE
    );
    let run = only_run(&dispatch);
    assert_eq!(run.status, RunStatus::Ok, "{run:#?}");
    assert_eq!(run.process.as_ref().unwrap().exit_code, Some(0));
    let Reduced::PreToolUse(elph_agent::hooks::PreToolUseReduced { blocked, .. }) = &dispatch.reduced else {
        panic!()
    };
    assert_eq!(
        blocked.as_ref().unwrap().reason.as_deref(),
        Some("printed before exiting")
    );
    assert!(
        run.notes.iter().any(|note| note.contains("still open")),
        "{run:#?}"
    );
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let left = live_group_members(pgid, SETTLE);
    assert!(left.is_empty(), "the grandchild survived: {left:?}");
}

#[tokio::test]
async fn nothing_a_hook_started_outlives_it() {
    let fx = Fixture::new();
    let pid_file = fx.out("pid");
    // The background job lets go of the pipes, so the run ends as soon as the hook exits.
    let program = fx.script(
        "detached.sh",
        &format!(
            "echo $$ > '{}'\nsleep 1000 < /dev/null > /dev/null 2>&1 &\necho '{{}}'",
            pid_file.display()
        ),
    );
    let mut hook = fx.hook("detached", HookEvent::Stop, &program);
    hook.timeout = SLOW_WRONG;
    let host = fx.host(vec![hook]);
    let started = Instant::now();
    let dispatch = within(host.run_chain(fx.stop())).await;
    assert!(
        started.elapsed() < PROMPT,
        "waited for the background job: {:?}",
        started.elapsed()
    );
    let run = only_run(&dispatch);
    assert_eq!(run.status, RunStatus::Ok);
    assert!(run.notes.is_empty(), "no grace was needed: {:?}", run.notes);
    let pgid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let left = live_group_members(pgid, SETTLE);
    assert!(left.is_empty(), "the background job outlived the hook: {left:?}");
}

/// One failing hook: it fails open (no change) with a diagnostic naming the hook and `cause`.
async fn assert_fails_open(fx: &Fixture, hook: HookDefinition, causes: &[&str]) -> Dispatch {
    let id = hook.id.clone();
    let host = fx.host(vec![hook]);
    let input = json!({"command": "ls"});
    let dispatch = within(host.run_chain(fx.pre_tool(input.clone()))).await;
    let run = only_run(&dispatch);
    assert_eq!(run.status, RunStatus::Failed, "{run:#?}");
    assert_eq!(run.outcome, None);
    assert_eq!(
        dispatch.reduced,
        Reduced::PreToolUse(elph_agent::hooks::PreToolUseReduced {
            tool_input: input,
            input_changed: false,
            blocked: None,
            ask: None
        }),
        "fail open: no change"
    );
    let text = diagnostic_text(&dispatch);
    assert!(text.contains(&format!("hook '{id}'")), "{text}");
    for cause in causes {
        assert!(text.contains(cause), "expected {cause:?} in:\n{text}");
    }
    dispatch
}

#[tokio::test]
async fn spawn_failures_fail_open_with_a_clear_cause() {
    let fx = Fixture::new();
    let missing = fx.scripts.join("missing.sh");
    let dispatch = assert_fails_open(
        &fx,
        fx.hook("missing", HookEvent::PreToolUse, &missing),
        &["command not found", "missing.sh does not exist", "hooks.json"],
    )
    .await;
    assert!(
        only_run(&dispatch)
            .process
            .as_ref()
            .unwrap()
            .spawn_error
            .is_some()
    );

    let no_run_bit = fx.scripts.join("no-x.sh");
    write_with_mode(&no_run_bit, "#!/bin/sh\necho '{}'\n", 0o644);
    assert_fails_open(
        &fx,
        fx.hook("no-x", HookEvent::PreToolUse, &no_run_bit),
        &["not executable", "chmod +x"],
    )
    .await;

    let dir = fx.scripts.join("a-folder");
    std::fs::create_dir(&dir).unwrap();
    assert_fails_open(
        &fx,
        fx.hook("folder", HookEvent::PreToolUse, &dir),
        &["is a directory"],
    )
    .await;

    let bad_interpreter = fx.scripts.join("bad-shebang.sh");
    write_with_mode(&bad_interpreter, "#!/no/such/interpreter\n", 0o755);
    assert_fails_open(
        &fx,
        fx.hook("shebang", HookEvent::PreToolUse, &bad_interpreter),
        &["interpreter"],
    )
    .await;
}

#[tokio::test]
async fn a_non_zero_exit_fails_open_and_says_how_to_block() {
    let fx = Fixture::new();
    // 3 KiB of stderr, ending with a line the diagnostic must quote.
    let program = fx.script(
        "exit2.sh",
        "head -c 3000 /dev/zero | tr '\\0' a >&2\necho >&2\necho 'denied: rm is not allowed' >&2\nexit 2",
    );
    let dispatch = assert_fails_open(
        &fx,
        fx.hook("claude-style", HookEvent::PreToolUse, &program),
        &[
            "exited with code 2",
            "No exit code blocks in Elph",
            r#"{"block": true, "reason": "…"}"#,
            "denied: rm is not allowed",
        ],
    )
    .await;
    let run = only_run(&dispatch);
    assert_eq!(run.process.as_ref().unwrap().exit_code, Some(2));
    assert!(
        run.process.as_ref().unwrap().stderr_tail.len() <= 1024,
        "{}",
        run.process.as_ref().unwrap().stderr_tail.len()
    );
    assert!(
        run.process
            .as_ref()
            .unwrap()
            .stderr_tail
            .ends_with("denied: rm is not allowed")
    );
    let message = &dispatch.diagnostics[0].message;
    assert!(
        message.len() < 1024 + 400,
        "at most 1 KiB of stderr: {}",
        message.len()
    );
}

#[tokio::test]
async fn death_by_signal_fails_open() {
    let fx = Fixture::new();
    let program = fx.script("killed.sh", "kill -TERM $$\nsleep 5");
    let dispatch = assert_fails_open(
        &fx,
        fx.hook("killed", HookEvent::PreToolUse, &program),
        &["killed by SIGTERM"],
    )
    .await;
    assert_eq!(only_run(&dispatch).process.as_ref().unwrap().signal, Some(15));
}

#[tokio::test]
async fn a_timeout_fails_open() {
    let fx = Fixture::new();
    let program = fx.script("sleepy.sh", "exec sleep 1000");
    let mut hook = fx.hook("sleepy", HookEvent::PreToolUse, &program);
    hook.timeout = Duration::from_millis(100);
    let dispatch = assert_fails_open(&fx, hook, &["timed out after 100 ms"]).await;
    assert!(only_run(&dispatch).process.as_ref().unwrap().timed_out);
}

#[tokio::test]
async fn bad_stdout_fails_open() {
    let fx = Fixture::new();
    let cases = [
        ("not-json", "echo 'hello world'", "not valid JSON"),
        ("not-utf8", "printf '\\377\\376'", "not valid UTF-8"),
        ("not-object", "echo '[1, 2]'", "not an object (got an array)"),
        (
            "wrong-type",
            r#"echo '{"block": "yes"}'"#,
            "invalid outcome for preToolUse",
        ),
    ];
    for (id, body, cause) in cases {
        let program = fx.script(&format!("{id}.sh"), body);
        let dispatch = assert_fails_open(
            &fx,
            fx.hook(id, HookEvent::PreToolUse, &program),
            &["outcome rejected", cause],
        )
        .await;
        assert_eq!(only_run(&dispatch).process.as_ref().unwrap().exit_code, Some(0));
    }
}

#[tokio::test]
async fn an_over_limit_string_rejects_the_outcome() {
    let fx = Fixture::new();
    let program = fx.script(
        "long-reason.sh",
        "printf '{\"block\": true, \"reason\": \"'\nhead -c 33000 /dev/zero | tr '\\0' x\nprintf '\"}'",
    );
    assert_fails_open(
        &fx,
        fx.hook("long-reason", HookEvent::PreToolUse, &program),
        &["outcome rejected", "reason is 33000 bytes"],
    )
    .await;
}

#[tokio::test]
async fn a_field_the_event_does_not_honour_is_ignored_with_a_diagnostic() {
    let fx = Fixture::new();
    let program = fx.script(
        "mixed.sh",
        r#"echo '{"toolInput": {"command": "ls -la"}, "systemPrompt": "sneaky"}'"#,
    );
    let host = fx.host(vec![fx.hook("mixed", HookEvent::PreToolUse, &program)]);
    let dispatch = within(host.run_chain(fx.pre_tool(json!({"command": "ls"})))).await;
    let run = only_run(&dispatch);
    assert_eq!(run.status, RunStatus::Ok);
    let text = diagnostic_text(&dispatch);
    assert!(
        text.contains("hook 'mixed'") && text.contains("'systemPrompt' is not honoured by preToolUse"),
        "{text}"
    );
    let Reduced::PreToolUse(elph_agent::hooks::PreToolUseReduced { tool_input, .. }) = &dispatch.reduced
    else {
        panic!()
    };
    assert_eq!(
        tool_input,
        &json!({"command": "ls -la"}),
        "the honoured part applies"
    );
}

#[tokio::test]
async fn the_chain_runs_in_order_each_hook_sees_the_previous_rewrite_and_a_block_stops_it() {
    let fx = Fixture::new();
    let seen = fx.out("seen.json");
    let later = fx.out("later-ran");
    let rewrite = fx.script(
        "rewrite.sh",
        r#"cat > /dev/null; echo '{"toolInput": {"command": "ls -la"}}'"#,
    );
    let observe = fx.script("observe.sh", &format!("cat > '{}'", seen.display()));
    let guard = fx.script("guard.sh", r#"echo '{"block": true, "reason": "no listing"}'"#);
    let never = fx.script("never.sh", &format!("touch '{}'", later.display()));
    let mut read_only = fx.hook("read-only", HookEvent::PreToolUse, &never);
    read_only.matcher = Matcher::parse(&["read_*".to_string()]).unwrap();
    let mut disabled = fx.hook("disabled", HookEvent::PreToolUse, &never);
    disabled.enabled = false;
    let host = fx.host(vec![
        fx.hook("rewrite", HookEvent::PreToolUse, &rewrite),
        read_only,
        disabled,
        fx.hook("observe", HookEvent::PreToolUse, &observe),
        fx.hook("guard", HookEvent::PreToolUse, &guard),
        fx.hook("after-guard", HookEvent::PreToolUse, &never),
        fx.hook("other-event", HookEvent::Stop, &never),
    ]);
    assert!(host.has_hooks(HookEvent::PreToolUse, Some("shell_exec")));
    assert!(!host.has_hooks(HookEvent::PostToolUse, Some("shell_exec")));
    let dispatch = within(host.run_chain(fx.pre_tool(json!({"command": "ls"})))).await;
    let ids: Vec<&str> = dispatch.runs.iter().map(|run| run.hook_id.as_str()).collect();
    assert_eq!(ids, ["rewrite", "observe", "guard"]);
    assert!(
        !later.exists(),
        "no hook after the block, unmatched or disabled ran"
    );
    let observed: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(observed["toolInput"], json!({"command": "ls -la"}));
    let Reduced::PreToolUse(elph_agent::hooks::PreToolUseReduced {
        blocked, tool_input, ..
    }) = &dispatch.reduced
    else {
        panic!()
    };
    assert_eq!(
        blocked.as_ref().unwrap().describe("blocked"),
        "blocked by hook 'guard': no listing"
    );
    assert_eq!(tool_input, &json!({"command": "ls -la"}));
    assert!(matches!(
        dispatch.runs[2].outcome,
        Some(HookOutcome::PreToolUse(_))
    ));
}

#[tokio::test]
async fn dropping_a_dispatch_kills_the_running_hooks() {
    let fx = Fixture::new();
    let pid_file = fx.out("pid");
    let program = fx.script(
        "endless.sh",
        &format!(
            "echo $$ > '{}'\nsleep 1000 &\n( sleep 1000 & )\nwait",
            pid_file.display()
        ),
    );
    let host = fx.host(vec![fx.hook("endless", HookEvent::Stop, &program)]);
    let mut dispatch = Box::pin(host.run_chain(fx.stop()));
    // Drive the dispatch until the hook has started, then drop it (a cancelled turn).
    let pid_text = tokio::select! {
        _ = &mut dispatch => panic!("the endless hook finished"),
        text = tokio::task::spawn_blocking({
            let pid_file = pid_file.clone();
            move || wait_for_file(&pid_file, Duration::from_secs(10))
        }) => text.unwrap(),
    };
    let pgid: i32 = pid_text.trim().parse().unwrap();
    assert!(!live_group_members(pgid, Duration::ZERO).is_empty());
    drop(dispatch);
    let left = live_group_members(pgid, SETTLE);
    assert!(left.is_empty(), "the hook's group survived the drop: {left:?}");
}

#[tokio::test]
async fn aborting_the_task_of_a_dispatch_kills_the_running_hooks() {
    let fx = Fixture::new();
    let pid_file = fx.out("pid");
    let program = fx.script(
        "endless.sh",
        &format!("echo $$ > '{}'\nexec sleep 1000", pid_file.display()),
    );
    let host = std::sync::Arc::new(fx.host(vec![fx.hook("endless", HookEvent::Stop, &program)]));
    let task = tokio::spawn({
        let host = host.clone();
        let payload = fx.stop();
        async move { host.run_chain(payload).await }
    });
    let pid_text = tokio::task::spawn_blocking({
        let pid_file = pid_file.clone();
        move || wait_for_file(&pid_file, Duration::from_secs(10))
    });
    let pgid: i32 = within(pid_text).await.unwrap().trim().parse().unwrap();
    task.abort();
    assert!(within(task).await.unwrap_err().is_cancelled());
    let left = live_group_members(pgid, SETTLE);
    assert!(left.is_empty(), "the hook survived the cancelled turn: {left:?}");
}

#[tokio::test]
async fn every_run_is_logged_without_the_payload() {
    let fx = Fixture::new();
    let ok = fx.script("ok.sh", "cat > /dev/null; echo '{}'");
    let fail = fx.script("fail.sh", "echo 'secret stderr' >&2; exit 3");
    let host = fx.host(vec![
        fx.hook("ok", HookEvent::PreToolUse, &ok),
        fx.hook("fail", HookEvent::PreToolUse, &fail),
    ]);
    assert!(!fx.data.join("logs").exists());
    let payload = fx.pre_tool(json!({"command": "cat ~/.ssh/id_rsa # user-data-marker"}));
    within(host.run_chain(payload)).await;

    // A chain hands its lines to the log's writer; what reads the log writes them out first.
    coding_agent::hooks::runlog::flush();
    let path = fx.data.join("logs").join("hooks.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("user-data-marker"),
        "the payload leaked into the log:\n{text}"
    );
    assert!(
        !text.contains("secret stderr"),
        "stderr leaked into the log:\n{text}"
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["hookId"], "ok");
    assert_eq!(lines[0]["event"], "preToolUse");
    assert_eq!(lines[0]["status"], "ok");
    assert_eq!(lines[0]["exit"], 0);
    assert!(lines[0]["durationMs"].is_u64());
    assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(lines[1]["hookId"], "fail");
    assert_eq!(lines[1]["status"], "failed");
    assert_eq!(lines[1]["exit"], 3);
    assert_eq!(lines[1]["timedOut"], false);
    assert!(lines[1]["cause"].as_str().unwrap().contains("exited with code 3"));
    assert_eq!(RunLog::new(&fx.data).read().len(), 2);
}

#[tokio::test]
async fn replace_set_swaps_the_hooks_for_the_next_dispatch() {
    let fx = Fixture::new();
    let first = fx.script("first.sh", r#"echo '{"toolInput": {"by": "first"}}'"#);
    let second = fx.script("second.sh", r#"echo '{"toolInput": {"by": "second"}}'"#);
    let host = fx.host(vec![fx.hook("h", HookEvent::PreToolUse, &first)]);
    let by = |dispatch: &Dispatch| match &dispatch.reduced {
        Reduced::PreToolUse(elph_agent::hooks::PreToolUseReduced { tool_input, .. }) => {
            tool_input["by"].clone()
        }
        other => panic!("{other:?}"),
    };
    let d = within(host.run_chain(fx.pre_tool(json!({})))).await;
    assert_eq!(by(&d), "first");
    host.replace_set(HookSet {
        hooks: vec![fx.hook("h", HookEvent::PreToolUse, &second)],
        ..HookSet::default()
    });
    assert_eq!(host.set().hooks[0].command().unwrap().path, second);
    let d = within(host.run_chain(fx.pre_tool(json!({})))).await;
    assert_eq!(by(&d), "second");
    host.replace_set(HookSet::default());
    assert!(!host.has_hooks(HookEvent::PreToolUse, Some("x")));
    let d = within(host.run_chain(fx.pre_tool(json!({})))).await;
    assert!(d.runs.is_empty());
}
