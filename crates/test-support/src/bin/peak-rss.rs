//! `peak-rss OUT PROGRAM ARGS…`: runs the program, waits for it, and writes its peak resident set in
//! KiB to the file OUT (getrusage of this process's children: the program is the only one).
//! Exits with the program's status. The start-up benchmark measures `elph run` with it.
#![forbid(unsafe_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::process::{Command, ExitCode};

use nix::sys::resource::{UsageWho, getrusage};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (Some(out), Some(program)) = (args.next(), args.next()) else {
        eprintln!("usage: peak-rss OUT PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    let status = match Command::new(&program).args(args).status() {
        Ok(status) => status,
        Err(error) => {
            eprintln!("peak-rss: cannot run {}: {error}", program.to_string_lossy());
            return ExitCode::from(127);
        }
    };
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    // Linux reports ru_maxrss in KiB.
    std::fs::write(&out, format!("{}\n", usage.max_rss())).expect("write OUT");
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
