//! The seccomp half of the sandbox: what Landlock cannot express.
//!
//! - **Terminal injection.** `ioctl(TIOCSTI)` pushes bytes into a terminal's input queue, and
//!   `TIOCLINUX` can do the same on a virtual console: a command holding the user's terminal
//!   could type a line that the user's shell runs, unconfined, after Elph exits. Both are refused
//!   in every sandboxed mode, whatever the kernel's `dev.tty.legacy_tiocsti` says (the request
//!   number is compared on its low 32 bits, the part the kernel reads).
//! - **The network.** Landlock (ABI 4 and later) denies TCP bind and connect, but not UDP, raw or
//!   netlink sockets, and older kernels have no network rules at all. With the network off,
//!   `socket(2)` fails with EPERM for every family but `AF_UNIX`.
//! - **Unix sockets.** Landlock cannot yet tell which path a Unix socket connects to, and an
//!   ssh-agent, a Docker socket or a tmux server reached that way runs code outside the sandbox.
//!   Unless the user allows Unix sockets (`sandbox.allowUnixSockets`), `socket(AF_UNIX)` fails
//!   too; `socketpair(2)`, which only connects a process with itself, keeps working.
//! - `io_uring_setup(2)` is refused whenever a socket family is: its submissions create sockets
//!   without passing through the `socket` system call this filter sees.
//!
//! Where no mount namespace can give a `read-only` process a read-only view of the file system,
//! a second filter refuses the calls that change metadata, which Landlock has no right for:
//! `chmod`, `chown`, `utime`, the extended attributes and the inode flags (`chattr`).

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::SandboxError;

/// Which socket families a sandboxed process may create.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Sockets {
    /// Internet and every other family but `AF_UNIX`.
    pub network: bool,
    /// `AF_UNIX` through `socket(2)` (pathname and abstract sockets).
    pub unix: bool,
    /// With `network` off: plain TCP over IPv4 and IPv6 still (Landlock keeps its connections to
    /// the proxy's port); UDP, raw, SCTP and MPTCP sockets and TCP Fast Open stay refused.
    pub tcp: bool,
}

/// The compiled filter for `sockets` (compiled once per combination; each child gets a copy of
/// the few instructions).
pub(crate) fn filter(sockets: Sockets) -> Result<BpfProgram, SandboxError> {
    type Cache = BTreeMap<(bool, bool, bool), Result<BpfProgram, String>>;
    static FILTERS: OnceLock<Mutex<Cache>> = OnceLock::new();
    let mut filters = FILTERS
        .get_or_init(|| Mutex::new(BTreeMap::new()))
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    filters
        .entry((sockets.network, sockets.unix, sockets.tcp && !sockets.network))
        .or_insert_with(|| compile(sockets).map_err(|error| error.to_string()))
        .clone()
        .map_err(|reason| SandboxError::Rules {
            what: "seccomp",
            reason,
        })
}

/// Why the kernel's filter could not be built.
fn rules_error(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Rules {
        what: "seccomp",
        reason: error.to_string(),
    }
}

/// The architecture the filters are compiled for: this build's.
fn target_arch() -> Result<TargetArch, SandboxError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(rules_error)
}

fn compile(sockets: Sockets) -> Result<BpfProgram, SandboxError> {
    let arch = target_arch()?;
    let arg = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value)
            .and_then(|condition| SeccompRule::new(vec![condition]))
            .map_err(rules_error)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(
        libc::SYS_ioctl,
        vec![
            arg(1, SeccompCmpOp::Eq, request(libc::TIOCSTI))?,
            arg(1, SeccompCmpOp::Eq, request(libc::TIOCLINUX))?,
        ],
    );
    let unix = libc::AF_UNIX as u64;
    let socket_rules = match (sockets.network, sockets.unix) {
        (false, unix_allowed) if sockets.tcp => {
            rules.extend(tcp_fast_open_rules()?);
            Some(tcp_only_rules(unix_allowed)?)
        }
        (true, true) => None,
        // An empty rule list matches every call.
        (false, false) => Some(Vec::new()),
        (false, true) => Some(vec![arg(0, SeccompCmpOp::Ne, unix)?]),
        (true, false) => Some(vec![arg(0, SeccompCmpOp::Eq, unix)?]),
    };
    if let Some(socket_rules) = socket_rules {
        rules.insert(libc::SYS_socket, socket_rules);
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(rules_error)?;
    filter.try_into().map_err(rules_error)
}

/// The `socket(2)` calls refused when only TCP may be used: every family but IPv4, IPv6 (and
/// `AF_UNIX` when allowed), every type but a stream, and every protocol but the default and TCP
/// (SCTP and MPTCP streams are not TCP to Landlock). Each rule is one way to be refused.
fn tcp_only_rules(unix_allowed: bool) -> Result<Vec<SeccompRule>, SandboxError> {
    let condition = |index: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(rules_error)
    };
    let inet = [libc::AF_INET as u64, libc::AF_INET6 as u64];
    let mut other_family = vec![
        condition(0, SeccompCmpOp::Ne, inet[0])?,
        condition(0, SeccompCmpOp::Ne, inet[1])?,
    ];
    if unix_allowed {
        other_family.push(condition(0, SeccompCmpOp::Ne, libc::AF_UNIX as u64)?);
    }
    let mut rules = vec![SeccompRule::new(other_family).map_err(rules_error)?];
    // The type's low bits (SOCK_NONBLOCK and SOCK_CLOEXEC are flags above them).
    const SOCK_TYPE_MASK: u64 = 0xf;
    for family in inet {
        for kind in NOT_STREAM_TYPES {
            rules.push(
                SeccompRule::new(vec![
                    condition(0, SeccompCmpOp::Eq, family)?,
                    condition(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), kind)?,
                ])
                .map_err(rules_error)?,
            );
        }
        rules.push(
            SeccompRule::new(vec![
                condition(0, SeccompCmpOp::Eq, family)?,
                condition(2, SeccompCmpOp::Ne, 0)?,
                condition(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
            ])
            .map_err(rules_error)?,
        );
    }
    Ok(rules)
}

/// Every socket type of the kernel's `enum sock_type` but `SOCK_STREAM` (1): datagram, raw,
/// reliable datagram, sequenced packet, DCCP and the obsolete packet type (the `libc` crate names
/// some of them only for some C libraries).
const NOT_STREAM_TYPES: [u64; 6] = [2, 3, 4, 5, 6, 10];

/// `sendto`, `sendmsg` and `sendmmsg` with `MSG_FASTOPEN`: TCP Fast Open connects inside the
/// send, past the connect check Landlock makes.
fn tcp_fast_open_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, SandboxError> {
    let fast_open = libc::MSG_FASTOPEN as u64;
    let flags_at = |index: u8| {
        SeccompCondition::new(
            index,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(fast_open),
            fast_open,
        )
        .and_then(|condition| SeccompRule::new(vec![condition]))
        .map(|rule| vec![rule])
        .map_err(rules_error)
    };
    Ok(vec![
        (libc::SYS_sendto, flags_at(3)?),
        (libc::SYS_sendmsg, flags_at(2)?),
        (libc::SYS_sendmmsg, flags_at(3)?),
    ])
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
    let arch = target_arch()?;
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

/// An ioctl request number as seccomp compares it (libc's type differs between C libraries).
#[cfg_attr(
    all(target_env = "gnu", target_pointer_width = "64"),
    expect(
        clippy::unnecessary_cast,
        reason = "libc's Ioctl is c_ulong on glibc, c_int on musl"
    )
)]
fn request(value: libc::Ioctl) -> u64 {
    value as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination_compiles() {
        for network in [false, true] {
            for unix in [false, true] {
                for tcp in [false, true] {
                    let program = filter(Sockets { network, unix, tcp }).unwrap();
                    assert!(!program.is_empty());
                }
            }
        }
    }
}
