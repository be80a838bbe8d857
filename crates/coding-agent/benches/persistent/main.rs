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
//!   real run, harness included (the issue's figure);
//! - the same shape without Elph, for the marginal to be read against: `bare 10` and `tokio 10`,
//!   one round trip to each of ten processes of the program in turn (blocking std pipes; tokio's,
//!   with the host's deadline), per hook event: what the kernel and the program cost when ten
//!   processes take turns on the CPUs rather than one hot one; and `chain of 10`, one event
//!   through the agent run's own host and processes, without the harness;
//! - where the time goes, per shape, from the kernel's accounting (`/proc/PID/schedstat`): Elph's
//!   threads running, the hook processes running, waiting for a CPU, and the rest (wake-ups).
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
//! `cargo bench -p coding-agent --bench persistent` (the summary is printed after divan's table;
//! `-- nothing_matches` skips divan's part). `PERSISTENT_BENCH_PROGRAMS=python` measures only the
//! programs named (comma-separated); `PERSISTENT_BENCH_PROFILE=python:run` (or `:without`,
//! `:chain`, `:bare10`) repeats one shape for 20 s for a profiler (`perf record -g -- BENCH`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use coding_agent::hooks::config::Protocol;
use coding_agent::hooks::discovery::resolve_command;
use coding_agent::hooks::{HookDefinition, HookHost, HookScope, HookSet};
use elph_agent::hooks::{HookEvent, HookPayload, Matcher, PayloadBase, PreToolUsePayload};
use serde_json::json;

mod agent;
mod measure;
mod pipes;
mod report;
mod schedstat;

use agent::AgentRun;
use measure::{Phase, measure, pieces};
use pipes::Bare;

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
    // `PERSISTENT_BENCH_PROFILE=python:run` (or `:without`, `:chain`, `:bare10`): only that shape,
    // over and over for 20 s, for a profiler to watch.
    if let Ok(what) = std::env::var("PERSISTENT_BENCH_PROFILE") {
        profile(&what);
        return;
    }
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
        let mut programs = vec![
            (
                "line-hook",
                test_support::hook_scripts::test_support_binary("line-hook"),
            ),
            ("sh", sh),
            ("python", python),
        ];
        // `PERSISTENT_BENCH_PROGRAMS=python` (or a comma-separated list): only those.
        if let Ok(only) = std::env::var("PERSISTENT_BENCH_PROGRAMS") {
            programs.retain(|(name, _)| only.split(',').any(|wanted| wanted == *name));
        }
        Fixture {
            programs,
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
        phases.push(Phase {
            name: phase,
            busy,
            load_before: before,
            load_after: load_average(),
            figures,
            pieces,
        });
    }
    report::print(&fixture, &phases);
}

/// One shape over and over, for a profiler (`perf record -p`).
fn profile(what: &str) {
    let (program, shape) = what.split_once(':').expect("PROGRAM:SHAPE");
    let fixture = Fixture::new();
    let agent = AgentRun::new(&fixture);
    let index = fixture
        .programs
        .iter()
        .position(|(name, _)| *name == program)
        .expect("line-hook, sh or python");
    let path = &fixture.programs[index].1;
    let runtime = current_thread();
    let hooks_file = if shape == "without" {
        &agent.without
    } else {
        &agent.with[index]
    };
    let host = AgentRun::host(&fixture, hooks_file);
    let mut bare_ten: Vec<Bare> = (0..HOOKS).map(|_| Bare::start(path)).collect();
    let started = Instant::now();
    let mut events = 0;
    eprintln!("pid {}", std::process::id());
    while started.elapsed() < Duration::from_secs(20) {
        match shape {
            "run" | "without" => {
                agent.run(&runtime, &fixture, &host);
                events += TOOL_CALLS * HOOKS;
            }
            "chain" => {
                through(&runtime, &host, &fixture.payload);
                events += HOOKS;
            }
            "bare10" => {
                for process in &mut bare_ten {
                    process.round_trip(&fixture);
                }
                events += HOOKS;
            }
            other => panic!("unknown shape {other}"),
        }
    }
    eprintln!(
        "{events} hook events, {:.1} µs each",
        started.elapsed().as_secs_f64() * 1e6 / events as f64
    );
}
