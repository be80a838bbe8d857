//! Where a hook event's wall time goes, from the kernel's own accounting: `/proc/PID/schedstat`
//! gives, per task, the nanoseconds it ran and the nanoseconds it waited on a run queue. Over a
//! stretch of events, Elph's threads' run time is Elph's own work, the hook processes' run time is
//! theirs, the waits are other tasks holding the CPU, and what is left of the wall time is neither
//! side running nor waiting: wake-up latency (a CPU coming out of idle, the IPI to it).

use std::time::Instant;

/// Run and wait nanoseconds, summed over some tasks.
#[derive(Clone, Copy, Default)]
pub struct Cpu {
    pub run: u64,
    pub wait: u64,
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, earlier: Cpu) -> Cpu {
        Cpu {
            run: self.run.saturating_sub(earlier.run),
            wait: self.wait.saturating_sub(earlier.wait),
        }
    }
}

fn read(path: &str) -> Cpu {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().unwrap_or(0));
    Cpu {
        run: fields.next().unwrap_or(0),
        wait: fields.next().unwrap_or(0),
    }
}

/// Every thread of this process (the runtime, the run log's writer, blocking-pool threads).
pub fn own() -> Cpu {
    let mut total = Cpu::default();
    for entry in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let cpu = read(&format!("{}/schedstat", entry.path().display()));
        total.run += cpu.run;
        total.wait += cpu.wait;
    }
    total
}

/// The processes `pids` (hook processes: one thread each).
pub fn of(pids: &[u32]) -> Cpu {
    let mut total = Cpu::default();
    for pid in pids {
        let cpu = read(&format!("/proc/{pid}/schedstat"));
        total.run += cpu.run;
        total.wait += cpu.wait;
    }
    total
}

/// One stretch of events, per event, in µs.
#[derive(Clone, Copy, Default)]
pub struct Split {
    pub wall: f64,
    pub elph: f64,
    pub hooks: f64,
    pub wait: f64,
}

impl Split {
    /// What is left of the wall time: neither side ran nor waited for a CPU.
    pub fn idle(&self) -> f64 {
        self.wall - self.elph - self.hooks - self.wait
    }

    pub fn plus(&self, other: &Split) -> Split {
        Split {
            wall: self.wall + other.wall,
            elph: self.elph + other.elph,
            hooks: self.hooks + other.hooks,
            wait: self.wait + other.wait,
        }
    }

    pub fn scaled(&self, by: f64) -> Split {
        Split {
            wall: self.wall * by,
            elph: self.elph * by,
            hooks: self.hooks * by,
            wait: self.wait * by,
        }
    }

    pub fn minus(&self, other: &Split) -> Split {
        Split {
            wall: self.wall - other.wall,
            elph: self.elph - other.elph,
            hooks: self.hooks - other.hooks,
            wait: self.wait - other.wait,
        }
    }
}

/// Runs `f` (which makes `events` events) and splits its wall time; `pids` are the hook
/// processes it talks to.
pub fn split(pids: &[u32], events: usize, f: impl FnOnce()) -> Split {
    let (own_before, hooks_before) = (own(), of(pids));
    let started = Instant::now();
    f();
    let wall = started.elapsed().as_secs_f64() * 1e6;
    let (own_used, hooks_used) = (own() - own_before, of(pids) - hooks_before);
    let per = |ns: u64| ns as f64 / 1e3 / events as f64;
    Split {
        wall: wall / events as f64,
        elph: per(own_used.run),
        hooks: per(hooks_used.run),
        wait: per(own_used.wait + hooks_used.wait),
    }
}
