//! The seccomp half of the sandbox: what Landlock cannot express.
//!
//! Landlock (ABI 4 and later) denies TCP bind and connect, but not UDP, raw or netlink sockets,
//! and older kernels have no network rules at all. With the network off, this filter makes
//! `socket(2)` fail with EPERM for every address family except `AF_UNIX` (local IPC, which build
//! tools and language servers rely on), and refuses `io_uring_setup(2)`, whose submissions would
//! create sockets without passing through the `socket` system call this filter sees.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::SandboxError;

/// The compiled filter that keeps a process off the network (compiled once; each child gets a
/// copy of the few instructions).
pub(crate) fn network_off() -> Result<BpfProgram, SandboxError> {
    static FILTER: std::sync::OnceLock<Result<BpfProgram, String>> = std::sync::OnceLock::new();
    FILTER
        .get_or_init(|| compile().map_err(|error| error.to_string()))
        .clone()
        .map_err(|reason| SandboxError::Rules {
            what: "seccomp",
            reason,
        })
}

fn compile() -> Result<BpfProgram, SandboxError> {
    let rules_error = |error: seccompiler::BackendError| SandboxError::Rules {
        what: "seccomp",
        reason: error.to_string(),
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|error| SandboxError::Rules {
        what: "seccomp",
        reason: error.to_string(),
    })?;
    let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)
        .map_err(rules_error)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![not_unix]).map_err(rules_error)?],
    );
    // An empty rule list matches every call.
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(rules_error)?;
    filter.try_into().map_err(rules_error)
}
