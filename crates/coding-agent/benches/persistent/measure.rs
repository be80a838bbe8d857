//! The figures of one phase (quiet or loaded): each program's round trips, interleaved, its agent
//! runs, the kernel's accounting of each shape, and the host's own pieces.

use coding_agent::hooks::runlog::RunLog;
use elph_agent::hooks::{HookEvent, HookRun, parse_stdout};

use super::agent::AgentRun;
use super::pipes::{Bare, Tokio};
use super::{Fixture, HOOKS, TOOL_CALLS, current_thread, median, schedstat, through, time};

/// One phase's figures, with the load it ran under.
pub struct Phase {
    pub name: &'static str,
    pub busy: usize,
    pub load_before: String,
    pub load_after: String,
    pub figures: Vec<(&'static str, Figures)>,
    pub pieces: [(&'static str, f64); 5],
}

/// Medians in µs of one program's figures in one phase.
pub struct Figures {
    pub bare: f64,
    pub tokio: f64,
    pub deadline: f64,
    pub host: f64,
    /// The median of `host - bare`, round by round.
    pub over: f64,
    /// Per event, one round trip to each of [`HOOKS`] processes in turn (blocking std pipes).
    pub bare_ten: f64,
    /// The same over tokio's pipes with a deadline, on the host's runtime.
    pub tokio_ten: f64,
    /// Per hook event, one event through `HookHost::run_chain` with [`HOOKS`] persistent hooks
    /// (the agent run's host and processes).
    pub chain_ten: f64,
    pub marginal: f64,
    /// Where a hook event's time goes, per shape: one process, ten in turn, the chain of ten,
    /// the agent run (with − without).
    pub splits: [schedstat::Split; 5],
}

/// Interleaved rounds of one program's round trips, and then its agent runs.
pub fn measure(fixture: &Fixture, agent: &AgentRun) -> Vec<(&'static str, Figures)> {
    const ROUNDS: usize = 1000;
    const TEN_ROUNDS: usize = 300;
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
        drop((tokio, host));
        let (without_host, with_host) = (
            AgentRun::host(fixture, &agent.without),
            AgentRun::host(fixture, hooks_file),
        );
        // The shape of an agent run's event without Elph: the same program, ten processes woken
        // in turn, over blocking pipes and over tokio's (with the deadline the host sets), against
        // the agent run's own host and processes on one event.
        let mut bare_ten: Vec<Bare> = (0..HOOKS).map(|_| Bare::start(program)).collect();
        let mut tokio_ten: Vec<Tokio> = (0..HOOKS).map(|_| Tokio::start(&runtime, program)).collect();
        let per_hook = |total: f64| total / HOOKS as f64;
        let mut rounds: [Box<dyn FnMut() -> f64 + '_>; 3] = [
            Box::new(|| {
                per_hook(time(|| {
                    for process in &mut bare_ten {
                        process.round_trip(fixture);
                    }
                }))
            }),
            Box::new(|| {
                per_hook(time(|| {
                    for process in &mut tokio_ten {
                        process.round_trip_with_deadline(&runtime, fixture);
                    }
                }))
            }),
            Box::new(|| per_hook(time(|| through(&runtime, &with_host, &fixture.payload)))),
        ];
        // The first event starts the processes: a session pays that once, not per event.
        for _ in 0..20 {
            for round in &mut rounds {
                round();
            }
        }
        let mut ten: [Vec<f64>; 3] = Default::default();
        for round in 0..TEN_ROUNDS {
            // Each shape first, second and third in turn.
            for step in 0..3 {
                let shape = (round + step) % 3;
                ten[shape].push(rounds[shape]());
            }
        }
        drop(rounds);
        let mut marginal = Vec::new();
        agent.run(&runtime, fixture, &with_host);
        for _ in 0..RUNS {
            let without = agent.run(&runtime, fixture, &without_host);
            let with = agent.run(&runtime, fixture, &with_host);
            // As seconds, not a `Duration`: on a busy machine a run with hooks can be the faster.
            marginal.push((with.as_secs_f64() - without.as_secs_f64()) * 1e6 / (TOOL_CALLS * HOOKS) as f64);
        }
        // The kernel's accounting of the same shapes, one stretch each.
        const EVENTS: usize = 100;
        let one_pid = [bare.child.id()];
        let ten_pids: Vec<u32> = bare_ten.iter().map(|process| process.child.id()).collect();
        let tokio_pids: Vec<u32> = tokio_ten
            .iter()
            .filter_map(|process| process.child.id())
            .collect();
        let hook_pids: Vec<u32> = (0..HOOKS)
            .filter_map(|i| with_host.persistent().pgid(&format!("{name}-{i}")))
            .map(i32::cast_unsigned)
            .collect();
        assert_eq!(hook_pids.len(), HOOKS);
        let one = schedstat::split(&one_pid, EVENTS * HOOKS, || {
            for _ in 0..EVENTS * HOOKS {
                bare.round_trip(fixture);
            }
        });
        let ten_split = schedstat::split(&ten_pids, EVENTS * HOOKS, || {
            for _ in 0..EVENTS {
                for process in &mut bare_ten {
                    process.round_trip(fixture);
                }
            }
        });
        let tokio_split = schedstat::split(&tokio_pids, EVENTS * HOOKS, || {
            for _ in 0..EVENTS {
                for process in &mut tokio_ten {
                    process.round_trip_with_deadline(&runtime, fixture);
                }
            }
        });
        let chain = schedstat::split(&hook_pids, EVENTS * HOOKS, || {
            for _ in 0..EVENTS {
                through(&runtime, &with_host, &fixture.payload);
            }
        });
        let (mut with_sum, mut without_sum) = (schedstat::Split::default(), schedstat::Split::default());
        for _ in 0..RUNS {
            let without = schedstat::split(&hook_pids, TOOL_CALLS * HOOKS, || {
                agent.run(&runtime, fixture, &without_host);
            });
            let with = schedstat::split(&hook_pids, TOOL_CALLS * HOOKS, || {
                agent.run(&runtime, fixture, &with_host);
            });
            with_sum = with_sum.plus(&with);
            without_sum = without_sum.plus(&without);
        }
        let run_split = with_sum.minus(&without_sum).scaled(1.0 / RUNS as f64);
        drop((bare, bare_ten, tokio_ten));
        all.push((
            *name,
            Figures {
                bare: median(&mut b),
                tokio: median(&mut t),
                deadline: median(&mut d),
                host: median(&mut h),
                over: median(&mut over),
                bare_ten: median(&mut ten[0]),
                tokio_ten: median(&mut ten[1]),
                chain_ten: median(&mut ten[2]),
                marginal: median(&mut marginal),
                splits: [one, ten_split, tokio_split, chain, run_split],
            },
        ));
    }
    all
}

/// The host's own pieces, each repeated on its own: serializing the payload, building a payload
/// line, validating an answer, appending a run record to the log (one write per run, and one
/// write for an event's ten runs, per run).
pub fn pieces(fixture: &Fixture) -> [(&'static str, f64); 5] {
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
