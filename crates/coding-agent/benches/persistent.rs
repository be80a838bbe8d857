//! What one persistent hook event costs, against a bare round trip over a pipe to the same program,
//! measured in the same run (issue 25, "cheap dispatch"):
//!
//! - `bare`: one payload line written to an already running process and its answer line read back,
//!   with blocking std pipes: the floor for any persistent hook;
//! - `tokio`: the same round trip through tokio's pipes on a current-thread runtime (as `elph run`
//!   has), and `+ deadline` with the timer every round trip has: what the runtime's wake-ups add;
//! - `host`: one event through `HookHost::run_chain` with one persistent hook of the same program,
//!   run log included: the host's whole cost; `host - bare` is the median of the differences of
//!   the rounds, each round measuring all of them back to back;
//! - `marginal`: in an agent run of [`TOOL_CALLS`] tool calls with [`HOOKS`] persistent hooks on
//!   preToolUse, (run with hooks − run without) / (calls × hooks): the cost of one hook event in a
//!   real run, harness included.
//!
//! Each for three programs: `line-hook` of test-support (compiled, the smallest possible answer),
//! and the two smallest persistent hooks of docs/hooks.md ("The line protocol"): the shell loop and
//! the Python loop (the issue's own measure). Then the pieces of the host's own time, one by one:
//! building the payload line, validating the answer, handing the lines to the run log (and, for
//! comparison, writing them at once as the host did before).
//!
//! All of it twice: on the machine as it is ("quiet"), then with [`BUSY_LOOPS`] busy loops started
//! beside it ("loaded"); the load average is printed with each. The claim (target ≤ 1.5× bare
//! quiet, ≤ 2× under load, medians) is a ratio of figures measured in the same run, interleaved
//! (the order alternating round by round) so that drift in the machine's load hits them alike.
//!
//! `cargo bench -p coding-agent --bench persistent` (the summary is printed after divan's table).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use coding_agent::hooks::config::Protocol;
use coding_agent::hooks::discovery::{FileLoad, merge, resolve_command};
use coding_agent::hooks::runlog::RunLog;
use coding_agent::hooks::{HookDefinition, HookHost, HookScope, HookSet};
use elph_agent::harness::{AgentHarness, HarnessConfig};
use elph_agent::hooks::{
    HookEvent, HookPayload, HookRegistry, HookRun, Matcher, PayloadBase, PreToolUsePayload, parse_stdout,
};
use elph_agent::tools::ToolCatalog;
use elph_ai::ScriptedProvider;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

const TOOL_CALLS: usize = 100;
const HOOKS: usize = 10;
const BUSY_LOOPS: usize = 2;
const QUIET_TARGET: f64 = 1.5;
const LOADED_TARGET: f64 = 2.0;

/// The smallest persistent hook in Python of docs/hooks.md: parses each payload, answers "no
/// change" for its request.
const PYTHON_HOOK: &str = r#"#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    print(json.dumps({"requestId": json.loads(line)["requestId"]}), flush=True)
"#;

/// The smallest persistent hook in shell of docs/hooks.md: takes the request id from the line's
/// start.
const SH_HOOK: &str = r#"#!/bin/sh
while IFS= read -r line; do
  id=${line#'{"requestId":'}; printf '{"requestId":%s}\n' "${id%%,*}"
done
"#;

fn main() {
    divan::main();
    // `cargo bench` passes --bench; `cargo test --benches` does not, and only checks that it runs.
    if std::env::args().any(|arg| arg == "--bench") {
        summary();
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    project: PathBuf,
    data: PathBuf,
    programs: Vec<(&'static str, PathBuf)>,
    payload: HookPayload,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        let data = project.join("data");
        // Written as is: `write_script` would put a `#!/bin/sh` line first.
        let script = |name: &str, text: &str| {
            let path = project.join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
            path
        };
        let (sh, python) = (
            script("line-hook.sh", SH_HOOK),
            script("line-hook.py", PYTHON_HOOK),
        );
        let payload = HookPayload::PreToolUse(PreToolUsePayload {
            base: PayloadBase::new("bench-session", &project),
            tool_name: "shell_exec".into(),
            tool_call_id: "call_1".into(),
            tool_input: json!({"command": "cargo test --workspace", "timeoutMs": 120000}),
        });
        Fixture {
            programs: vec![
                (
                    "line-hook",
                    test_support::hook_scripts::test_support_binary("line-hook"),
                ),
                ("sh", sh),
                ("python", python),
            ],
            _dir: dir,
            project,
            data,
            payload,
        }
    }

    fn hook(&self, id: String, program: &Path) -> HookDefinition {
        HookDefinition {
            id,
            event: HookEvent::PreToolUse,
            matcher: Matcher::any(),
            handler: coding_agent::hooks::discovery::Handler::Command(resolve_command(
                program.to_str().unwrap(),
                &self.project,
                "",
            )),
            args: Vec::new(),
            timeout: Duration::from_secs(10),
            budget: None,
            enabled: true,
            persistent: true,
            run_async: false,
            source: self.project.join("hooks.json"),
            scope: HookScope::Home,
            protocol: Protocol::Elph,
            sandbox: None,
            fail_closed: false,
            max_input_bytes: elph_agent::hooks::limits::MAX_INPUT_BYTES,
            max_output_bytes: elph_agent::hooks::limits::MAX_STDOUT_BYTES,
            env: Default::default(),
        }
    }

    /// A host with one persistent hook of `program`, writing its run log as a session does.
    fn host(&self, program: &Path) -> HookHost {
        let set = HookSet {
            hooks: vec![self.hook("persistent".into(), program)],
            ..HookSet::default()
        };
        HookHost::new(set, self.project.clone(), &self.data)
    }

    /// The payload line as a persistent hook gets it, with a request id.
    fn line(&self, id: u64) -> Vec<u8> {
        let bytes = self.payload.to_stdin_bytes();
        let mut line = format!("{{\"requestId\":{id},").into_bytes();
        line.extend_from_slice(&bytes[1..]);
        line
    }
}

/// A program started once, talked to over blocking pipes.
struct Bare {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    answer: Vec<u8>,
    next: u64,
}

impl Bare {
    fn start(program: &Path) -> Self {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Bare {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            answer: Vec::new(),
            next: 0,
        }
    }

    fn round_trip(&mut self, fixture: &Fixture) {
        self.next += 1;
        self.stdin.write_all(&fixture.line(self.next)).unwrap();
        self.stdin.flush().unwrap();
        self.answer.clear();
        self.stdout.read_until(b'\n', &mut self.answer).unwrap();
        assert!(
            self.answer.ends_with(b"}\n"),
            "{:?}",
            String::from_utf8_lossy(&self.answer)
        );
    }
}

impl Drop for Bare {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same program over tokio's pipes, on the runtime the host runs on.
struct Tokio {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
    answer: Vec<u8>,
    next: u64,
}

impl Tokio {
    fn start(runtime: &tokio::runtime::Runtime, program: &Path) -> Self {
        let _entered = runtime.enter();
        let mut child = tokio::process::Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Tokio {
            stdin: child.stdin.take().unwrap(),
            stdout: tokio::io::BufReader::new(child.stdout.take().unwrap()),
            child,
            answer: Vec::new(),
            next: 0,
        }
    }

    fn round_trip(&mut self, runtime: &tokio::runtime::Runtime, fixture: &Fixture) {
        self.next += 1;
        let line = fixture.line(self.next);
        runtime.block_on(async {
            self.stdin.write_all(&line).await.unwrap();
            self.stdin.flush().await.unwrap();
            self.answer.clear();
            self.stdout.read_until(b'\n', &mut self.answer).await.unwrap();
        });
        assert!(self.answer.ends_with(b"}\n"));
        let _ = self.child.id();
    }

    /// The same round trip under a deadline, as the host bounds each one: what the timer adds.
    fn round_trip_with_deadline(&mut self, runtime: &tokio::runtime::Runtime, fixture: &Fixture) {
        self.next += 1;
        let line = fixture.line(self.next);
        runtime.block_on(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            tokio::time::timeout_at(deadline, async {
                self.stdin.write_all(&line).await.unwrap();
                self.stdin.flush().await.unwrap();
                self.answer.clear();
                self.stdout.read_until(b'\n', &mut self.answer).await.unwrap();
            })
            .await
            .unwrap();
        });
        assert!(self.answer.ends_with(b"}\n"));
    }
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn through(runtime: &tokio::runtime::Runtime, host: &HookHost, payload: &HookPayload) {
    let dispatch = runtime.block_on(host.run_chain(payload.clone()));
    assert!(dispatch.diagnostics.is_empty(), "{:?}", dispatch.diagnostics);
}

#[divan::bench(args = ["line-hook", "sh", "python"], sample_count = 500)]
fn bare_pipe_round_trip(bencher: divan::Bencher, program: &str) {
    let fixture = Fixture::new();
    let (_, path) = fixture
        .programs
        .iter()
        .find(|(name, _)| *name == program)
        .unwrap();
    let mut bare = Bare::start(path);
    bare.round_trip(&fixture);
    bencher.bench_local(|| bare.round_trip(&fixture));
}

#[divan::bench(args = ["line-hook", "sh", "python"], sample_count = 500)]
fn one_persistent_hook_event(bencher: divan::Bencher, program: &str) {
    let fixture = Fixture::new();
    let (_, path) = fixture
        .programs
        .iter()
        .find(|(name, _)| *name == program)
        .unwrap();
    let runtime = current_thread();
    let host = fixture.host(path);
    through(&runtime, &host, &fixture.payload);
    bencher.bench_local(|| through(&runtime, &host, &fixture.payload));
}

/// An agent turn of [`TOOL_CALLS`] `list_dir` calls, without hooks and with [`HOOKS`] persistent
/// hooks of each program.
struct AgentRun {
    script: PathBuf,
    without: PathBuf,
    with: Vec<PathBuf>,
}

impl AgentRun {
    fn new(fixture: &Fixture) -> Self {
        let mut turns: Vec<serde_json::Value> = (0..TOOL_CALLS)
            .map(|_| json!({"text": "", "toolCalls": [{"name": "list_dir", "input": {"path": "."}}]}))
            .collect();
        turns.push(json!({"text": "done"}));
        let script = fixture.project.join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
        let without = fixture.project.join("no-hooks.json");
        std::fs::write(&without, r#"{"hooks": []}"#).unwrap();
        let with = fixture
            .programs
            .iter()
            .map(|(name, program)| {
                let hooks: Vec<_> = (0..HOOKS)
                    .map(|i| json!({"id": format!("{name}-{i}"), "event": "preToolUse", "command": program, "persistent": true}))
                    .collect();
                let file = fixture.project.join(format!("{name}.json"));
                std::fs::write(&file, json!({ "hooks": hooks }).to_string()).unwrap();
                file
            })
            .collect();
        AgentRun {
            script,
            without,
            with,
        }
    }

    /// A host for the hooks of `hooks_file`; it keeps its persistent processes across runs, as a
    /// session keeps them across turns.
    fn host(fixture: &Fixture, hooks_file: &Path) -> Arc<HookHost> {
        let set = merge(
            vec![FileLoad::read(hooks_file.to_path_buf(), HookScope::Home)],
            None,
        );
        Arc::new(HookHost::new(set, fixture.project.clone(), &fixture.data))
    }

    /// One turn's wall time.
    fn run(&self, runtime: &tokio::runtime::Runtime, fixture: &Fixture, host: &Arc<HookHost>) -> Duration {
        let provider = Arc::new(ScriptedProvider::load(&self.script).unwrap());
        let mut harness = AgentHarness::new(
            provider,
            Arc::new(ToolCatalog::native()),
            HookRegistry::new(host.clone()),
            HarnessConfig {
                max_turns: 1000,
                ..HarnessConfig::new("bench", fixture.project.clone())
            },
        );
        let started = Instant::now();
        let result = runtime.block_on(harness.run_turn("go", &CancellationToken::new()));
        let elapsed = started.elapsed();
        assert_eq!(result.text, "done");
        elapsed
    }
}

/// Busy loops beside the benchmark, killed when dropped.
struct Load(Vec<Child>);

impl Load {
    fn start(n: usize) -> Self {
        Load(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn time(f: impl FnOnce()) -> f64 {
    let started = Instant::now();
    f();
    started.elapsed().as_secs_f64() * 1e6
}

/// Medians in µs of one program's figures in one phase.
struct Figures {
    bare: f64,
    tokio: f64,
    deadline: f64,
    host: f64,
    /// The median of `host - bare`, round by round.
    over: f64,
    marginal: f64,
}

/// Interleaved rounds of one program's round trips, and then its agent runs.
fn measure(fixture: &Fixture, agent: &AgentRun) -> Vec<(&'static str, Figures)> {
    const ROUNDS: usize = 1000;
    const RUNS: usize = 7;
    let runtime = current_thread();
    let mut all = Vec::new();
    for ((name, program), hooks_file) in fixture.programs.iter().zip(&agent.with) {
        let mut bare = Bare::start(program);
        let mut tokio = Tokio::start(&runtime, program);
        let host = fixture.host(program);
        for _ in 0..20 {
            bare.round_trip(fixture);
            tokio.round_trip(&runtime, fixture);
            through(&runtime, &host, &fixture.payload);
        }
        let (mut b, mut t, mut d, mut h, mut over) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let mut bare_round = || time(|| bare.round_trip(fixture));
            let host_round = || time(|| through(&runtime, &host, &fixture.payload));
            // Neither always comes first (after the other's wake-ups) nor always last.
            let (bare_us, host_us) = if round % 2 == 0 {
                let bare_us = bare_round();
                (bare_us, host_round())
            } else {
                let host_us = host_round();
                (bare_round(), host_us)
            };
            b.push(bare_us);
            h.push(host_us);
            over.push(host_us - bare_us);
            t.push(time(|| tokio.round_trip(&runtime, fixture)));
            d.push(time(|| tokio.round_trip_with_deadline(&runtime, fixture)));
        }
        let mut marginal = Vec::new();
        let (without_host, with_host) = (
            AgentRun::host(fixture, &agent.without),
            AgentRun::host(fixture, hooks_file),
        );
        // The first run starts the processes: a session pays that once, not per event.
        agent.run(&runtime, fixture, &with_host);
        for _ in 0..RUNS {
            let without = agent.run(&runtime, fixture, &without_host);
            let with = agent.run(&runtime, fixture, &with_host);
            // As seconds, not a `Duration`: on a busy machine a run with hooks can be the faster.
            marginal.push((with.as_secs_f64() - without.as_secs_f64()) * 1e6 / (TOOL_CALLS * HOOKS) as f64);
        }
        all.push((
            *name,
            Figures {
                bare: median(&mut b),
                tokio: median(&mut t),
                deadline: median(&mut d),
                host: median(&mut h),
                over: median(&mut over),
                marginal: median(&mut marginal),
            },
        ));
    }
    all
}

/// The host's own pieces, each repeated on its own: serializing the payload, building a payload
/// line, validating an answer, appending a run record to the log (one write per run, and one
/// write for an event's ten runs, per run).
fn pieces(fixture: &Fixture) -> [(&'static str, f64); 5] {
    const N: usize = 2000;
    let per = |total: f64| total / N as f64;
    let serialize = per(time(|| {
        for _ in 0..N {
            std::hint::black_box(fixture.payload.to_stdin_bytes());
        }
    }));
    let build = per(time(|| {
        for id in 0..N as u64 {
            std::hint::black_box(fixture.line(id));
        }
    }));
    let validate = per(time(|| {
        for _ in 0..N {
            std::hint::black_box(parse_stdout(HookEvent::PreToolUse, b"{}").unwrap());
        }
    }));
    let log = RunLog::new(&fixture.data);
    let mut run = HookRun::skipped("persistent", HookEvent::PreToolUse, "");
    run.status = elph_agent::hooks::RunStatus::Ok;
    run.cause = None;
    let hand_over = per(time(|| {
        for _ in 0..N {
            log.append(&run);
        }
    }));
    log.flush();
    let write_at_once = per(time(|| {
        for _ in 0..N {
            log.append(&run);
            log.flush();
        }
    }));
    [
        ("serialize the payload", serialize),
        ("build the payload line", build),
        ("validate an answer ({})", validate),
        ("hand an event's run to the run log", hand_over),
        ("(write it at once, as before)", write_at_once),
    ]
}

/// The load averages, as `uptime` shows them.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn summary() {
    let fixture = Fixture::new();
    let agent = AgentRun::new(&fixture);
    let mut phases = Vec::new();
    for (phase, busy) in [("quiet", 0), ("loaded", BUSY_LOOPS)] {
        let _load = Load::start(busy);
        let before = load_average();
        let figures = measure(&fixture, &agent);
        let pieces = pieces(&fixture);
        phases.push((phase, busy, before, load_average(), figures, pieces));
    }
    println!();
    println!(
        "one persistent hook event vs a bare pipe round trip to the same program, in the same run \
         (medians of interleaved rounds, µs; marginal = in an agent run of {TOOL_CALLS} calls × \
         {HOOKS} hooks, minus the run without, per hook event):"
    );
    for (phase, busy, before, after, _, _) in &phases {
        println!("  {phase}: {busy} busy loops, load average {before} at the start, {after} at the end");
    }
    println!(
        "  {:<9}  {:<6}  {:>6}  {:>13}  {:>13}  {:>20}  {:>8}  {:>15}",
        "program", "phase", "bare", "tokio pipe", "+ deadline", "host event", "host-bare", "marginal"
    );
    for (index, (name, _)) in fixture.programs.iter().enumerate() {
        for (phase, _, _, _, figures, _) in &phases {
            let target = if *phase == "quiet" {
                QUIET_TARGET
            } else {
                LOADED_TARGET
            };
            let f = &figures[index].1;
            let verdict = |ratio: f64| if ratio <= target { "ok" } else { "MISSED" };
            println!(
                "  {name:<9}  {phase:<6}  {:>6.1}  {:>6.1} ({:.2}x)  {:>6.1} ({:.2}x)  {:>6.1} ({:.2}x {:<6})  {:>8.1}  {:>6.1} ({:.2}x)",
                f.bare,
                f.tokio,
                f.tokio / f.bare,
                f.deadline,
                f.deadline / f.bare,
                f.host,
                f.host / f.bare,
                verdict(f.host / f.bare),
                f.over,
                f.marginal,
                f.marginal / f.bare,
            );
        }
    }
    println!("  targets: host event <= {QUIET_TARGET}x bare quiet, <= {LOADED_TARGET}x loaded");
    for (phase, _, _, _, _, pieces) in &phases {
        let text: Vec<String> = pieces
            .iter()
            .map(|(what, us)| format!("{what} {us:.2}"))
            .collect();
        println!("  host pieces, {phase} (µs): {}", text.join(", "));
    }
}
