//! Hook fixtures: small `#!/bin/sh` scripts written into temp dirs, a look at a process group
//! through /proc, this process's resident memory, and the path of the `trivial-hook` binary.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Writes `#!/bin/sh` and `body` to `dir/name`, executable, and returns its path.
pub fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    write_with_mode(&path, &format!("#!/bin/sh\n{body}\n"), 0o755);
    path
}

/// Writes `contents` to `path` with `mode`, creating parent folders.
pub fn write_with_mode(path: &Path, contents: &str, mode: u32) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create the script's folder");
    }
    std::fs::write(path, contents).expect("write the script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod the script");
}

/// A process seen in /proc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub pgrp: i32,
    /// The state letter: R, S, D, Z, T...
    pub state: char,
    pub command: String,
}

/// Every process whose process group is `pgid`, zombies included.
pub fn processes_in_group(pgid: i32) -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_info)
        .filter(|info| info.pgrp == pgid)
        .collect()
}

/// The processes of group `pgid` that are still alive (not zombies), waiting up to `settle` for
/// the ones just sent SIGKILL to finish dying.
pub fn live_group_members(pgid: i32, settle: Duration) -> Vec<ProcInfo> {
    let deadline = Instant::now() + settle;
    loop {
        let live: Vec<ProcInfo> = processes_in_group(pgid)
            .into_iter()
            .filter(|info| info.state != 'Z' && info.state != 'X')
            .collect();
        if live.is_empty() || Instant::now() >= deadline {
            return live;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A shell word that names the process running it so that a test outside any sandbox can find
/// it: `$(readlink /proc/self/ns/pid):$$`, its PID namespace and its pid there. A sandboxed
/// command runs in a PID namespace of its own, where `$$` is a small number that names some
/// other process outside; [`host_pid`] turns this back into the pid the test sees.
pub const SELF_PID: &str = "$(readlink /proc/self/ns/pid):$$";

/// [`SELF_PID`] for the last background job (`$!`).
pub const LAST_JOB_PID: &str = "$(readlink /proc/self/ns/pid):$!";

/// The pid, as this test sees it, of a process that recorded itself with [`SELF_PID`] or
/// [`LAST_JOB_PID`] (a plain number is taken as it is). `None` when no live process matches:
/// it must still run when this is called.
pub fn host_pid(recorded: &str) -> Option<i32> {
    let recorded = recorded.trim();
    let Some((namespace, local)) = recorded.rsplit_once(':') else {
        return recorded.parse().ok();
    };
    let local: i32 = local.parse().ok()?;
    std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .find(|&pid| {
            let in_namespace = std::fs::read_link(format!("/proc/{pid}/ns/pid"))
                .is_ok_and(|link| link.as_os_str() == namespace);
            // NSpid: the pid in each namespace from this one's down to the process's own.
            in_namespace
                && std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
                    status
                        .lines()
                        .find_map(|line| line.strip_prefix("NSpid:"))
                        .and_then(|pids| pids.split_whitespace().last())
                        .and_then(|last| last.parse::<i32>().ok())
                        == Some(local)
                })
        })
}

/// Every descendant of `pid` alive now (children, their children, …), zombies excluded.
pub fn descendants(pid: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&child| is_alive(child))
                .filter_map(|child| Some((child, parent_of(child)?)))
                .collect()
        })
        .unwrap_or_default();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(child, _) in parents.iter().filter(|(_, p)| *p == parent) {
            found.push(child);
            frontier.push(child);
        }
    }
    found
}

/// Whether `pid` is running: it exists and is not a zombie (PID 1 in a container may not reap).
pub fn is_alive(pid: i32) -> bool {
    proc_info(pid).is_some_and(|info| info.state != 'Z' && info.state != 'X')
}

/// Which of `pids` are still alive `settle` from now (returns as soon as none is).
pub fn still_alive(pids: &[i32], settle: Duration) -> Vec<i32> {
    let deadline = Instant::now() + settle;
    loop {
        let alive: Vec<i32> = pids.iter().copied().filter(|&pid| is_alive(pid)).collect();
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.rfind(')')?;
    stat[close + 1..].split_whitespace().nth(1)?.parse().ok()
}

fn proc_info(pid: i32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let command = stat[open + 1..close].to_string();
    let mut rest = stat[close + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let _ppid = rest.next()?;
    let pgrp = rest.next()?.parse().ok()?;
    Some(ProcInfo {
        pid,
        pgrp,
        state,
        command,
    })
}

/// This process's resident set size in KiB (VmRSS of /proc/self/status).
pub fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// The `trivial-hook` binary of this crate (reads stdin, prints `{}`).
pub fn trivial_hook_binary() -> PathBuf {
    test_support_binary("trivial-hook")
}

/// A binary of this crate, in the same target folder and profile as the running test, as the
/// sources are now: `cargo test --workspace` builds this crate's binaries only as test harnesses,
/// so a binary left in the target folder by an earlier build may predate a change its tests rely
/// on. Each test process asks cargo once to bring them up to date (a no-op when they are).
pub fn test_support_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/PROFILE/deps/NAME-HASH
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in target/PROFILE/deps");
    static BUILT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let built = BUILT.get_or_init(|| build_binaries(profile_dir));
    let binary = profile_dir.join(name);
    match built {
        Ok(()) => {}
        // Without cargo (a test binary run by another user, say) the binaries built before are
        // used; a build that ran and failed is never papered over.
        Err(error) if error.starts_with("cannot run cargo") && binary.is_file() => {}
        Err(error) => panic!("{error}"),
    }
    assert!(binary.is_file(), "{} was not built", binary.display());
    binary
}

/// `cargo build -p test-support --bins` into the running test's target folder and profile.
fn build_binaries(profile_dir: &Path) -> Result<(), String> {
    let target_dir = profile_dir.parent().expect("target folder");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(cargo);
    command
        .args(["build", "--quiet", "-p", "test-support", "--bins", "--target-dir"])
        .arg(target_dir);
    match profile_dir.file_name().and_then(|profile| profile.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(other) => {
            command.args(["--profile", other]);
        }
    }
    let status = command
        .status()
        .map_err(|err| format!("cannot run cargo to build the test-support binaries: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "cargo build of the test-support binaries failed ({status})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_in_its_own_group_listing() {
        let me = std::process::id() as i32;
        let info = proc_info(me).unwrap();
        assert_eq!(info.pid, me);
        assert!(processes_in_group(info.pgrp).iter().any(|p| p.pid == me));
        assert!(vm_rss_kib() > 0);
    }
}
