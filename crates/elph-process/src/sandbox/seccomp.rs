//! The seccomp half of the sandbox: what Landlock cannot express.
//!
//! Landlock (ABI 4 and later) denies TCP bind and connect, but not UDP, raw or netlink sockets,
//! and older kernels have no network rules at all. With the network off, this filter makes
//! `socket(2)` fail with EPERM for every address family except `AF_UNIX` (local IPC, which build
//! tools and language servers rely on), and refuses `io_uring_setup(2)`, whose submissions would
//! create sockets without passing through the `socket` system call this filter sees.
//!
//! Where no mount namespace can give a `read-only` process a read-only view of the file system,
//! a second filter refuses the calls that change metadata, which Landlock has no right for:
//! `chmod`, `chown`, `utime`, the extended attributes and the inode flags (`chattr`).

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

/// The compiled filter that refuses every change of metadata (`read-only` without a mount view).
pub(crate) fn metadata_off() -> Result<BpfProgram, SandboxError> {
    static FILTER: std::sync::OnceLock<Result<BpfProgram, String>> = std::sync::OnceLock::new();
    FILTER
        .get_or_init(|| compile_metadata().map_err(|error| error.to_string()))
        .clone()
        .map_err(|reason| SandboxError::Rules {
            what: "seccomp",
            reason,
        })
}

/// Newer than the `libc` crate's tables; the same number on every architecture Elph builds for.
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
const SYS_FILE_SETATTR: i64 = 469;
const SYS_FCHMODAT2: i64 = 452;
/// `FS_IOC_SETFLAGS` and `FS_IOC_FSSETXATTR` (`chattr`, `xfs_io chattr`).
const INODE_FLAG_IOCTLS: [u64; 2] = [0x4008_6602, 0x401c_5820];

fn compile_metadata() -> Result<BpfProgram, SandboxError> {
    let rules_error = |error: seccompiler::BackendError| SandboxError::Rules {
        what: "seccomp",
        reason: error.to_string(),
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|error| SandboxError::Rules {
        what: "seccomp",
        reason: error.to_string(),
    })?;
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        SYS_FCHMODAT2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_REMOVEXATTRAT,
        SYS_FILE_SETATTR,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for call in calls {
        // An empty rule list matches every call.
        rules.insert(call, Vec::new());
    }
    let mut ioctls = Vec::new();
    for request in INODE_FLAG_IOCTLS {
        let condition = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
            .map_err(rules_error)?;
        ioctls.push(SeccompRule::new(vec![condition]).map_err(rules_error)?);
    }
    rules.insert(libc::SYS_ioctl, ioctls);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EROFS as u32),
        arch,
    )
    .map_err(rules_error)?;
    filter.try_into().map_err(rules_error)
}
