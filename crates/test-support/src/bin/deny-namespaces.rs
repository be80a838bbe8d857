//! `deny-namespaces [--mount] [--pid] PROGRAM ARGS…`: runs the program where it cannot create a
//! user namespace (and, with `--mount`, no mount namespace, with `--pid` no PID namespace either):
//! a seccomp filter of this process,
//! inherited by the program and everything it starts, refuses `unshare(2)` and `clone(2)` with
//! those flags (EPERM, as a system that forbids them answers), and `clone3(2)` with ENOSYS so that
//! the C library falls back to `clone`, whose flags the filter can see. This is how the tests make
//! a weaker system on the real kernel, the way Ubuntu's AppArmor policy or a container's seccomp
//! profile does, without touching anything in Elph.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let mut flags = vec![libc::CLONE_NEWUSER as u64];
    while let Some(option) = args.first().and_then(|arg| arg.to_str()) {
        match option {
            "--mount" => flags.push(libc::CLONE_NEWNS as u64),
            "--pid" => flags.push(libc::CLONE_NEWPID as u64),
            _ => break,
        }
        args.remove(0);
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: deny-namespaces [--mount] [--pid] PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
    let with_flag = |flag: u64| {
        SeccompRule::new(vec![
            SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(flag), flag).unwrap(),
        ])
        .unwrap()
    };
    let refused: Vec<SeccompRule> = flags.iter().map(|flag| with_flag(*flag)).collect();
    let namespaces = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_unshare, refused.clone()), (libc::SYS_clone, refused)]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .unwrap();
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .unwrap();
    for filter in [namespaces, clone3] {
        let program: seccompiler::BpfProgram = filter.try_into().unwrap();
        seccompiler::apply_filter(&program).unwrap();
    }
    let error = Command::new(program).args(rest).exec();
    eprintln!(
        "deny-namespaces: cannot run {}: {error}",
        program.to_string_lossy()
    );
    ExitCode::from(127)
}
