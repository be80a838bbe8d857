//! Weaker systems are never silently weaker: which protections of a policy this system cannot
//! give, in words a user can act on.
//!
//! Some protections need namespaces that a system may refuse (Ubuntu's AppArmor policy forbids
//! unprivileged user namespaces; a container's seccomp profile may refuse `unshare`). Landlock and
//! seccomp still hold there, but not everything the docs promise. The front ends ask this module
//! at start, say what is missing, and refuse the sandboxed modes unless the user accepts it
//! (`sandbox.allowWeaker` or `--allow-weaker-sandbox`).

use std::fmt;

use super::{
    SandboxMode, SandboxPolicy, landlock_support, mount_namespaces_available, mounted_read_only_paths,
    pid_namespaces_available,
};

/// One protection this system cannot give to a policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingProtection {
    /// What a sandboxed command can do that it should not.
    pub consequence: String,
    /// The kernel feature that is missing.
    pub missing: &'static str,
}

impl fmt::Display for MissingProtection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.consequence, self.missing)
    }
}

/// Starts finding out, on a thread of its own, what this system gives a sandboxed command:
/// Landlock, and a user, mount and PID namespace (`probe`: one short-lived child that tries them).
/// On a thread it overlaps with the rest of a session's start (its settings, hooks and store).
/// Whoever asks afterwards ([`missing_protections`], the first sandboxed command, `elph doctor`)
/// gets the same answer, waiting for the probe if it is still running: each is probed once per
/// process, so nothing is probed twice and nothing is decided without its answer.
pub fn start_probes() {
    let started = std::thread::Builder::new()
        .name("elph-probes".into())
        // The probe's child has a stack of its own; this thread only starts it and waits.
        .stack_size(256 * 1024)
        .spawn(|| {
            let _ = landlock_support();
            // One probe answers for the three namespaces.
            let _ = pid_namespaces_available();
        });
    if let Err(error) = started {
        // The first to ask probes then, on its own thread: slower to start, not weaker.
        tracing::debug!(%error, "cannot start the sandbox probes' thread");
    }
}

/// The protections of `policy` this system cannot give; empty for `full-access` and on a system
/// that gives all of them.
pub fn missing_protections(policy: &SandboxPolicy) -> Vec<MissingProtection> {
    let mut missing = Vec::new();
    if !policy.is_confined() {
        return missing;
    }
    if !super::user_namespaces_available() {
        let whose = if nix::unistd::geteuid().is_root() {
            "of root processes that hold no capabilities"
        } else {
            "and memory of every other process of your user"
        };
        missing.push(MissingProtection {
            consequence: format!(
                "commands can read the environment (/proc/PID/environ) {whose}, outside Elph"
            ),
            missing: "no user namespace for sandboxed commands",
        });
    }
    if !pid_namespaces_available() {
        // Landlock's ABI 6 scopes signals; before it, nothing else keeps them in.
        let signals = if landlock_support().abi.is_some_and(|abi| abi >= 6) {
            ""
        } else {
            ", and signal those of your user (Elph included)"
        };
        missing.push(MissingProtection {
            consequence: format!(
                "commands can list every process of the system with its command line (ps, /proc){signals}"
            ),
            missing: "no PID namespace with its own /proc",
        });
    }
    // In `read-only`, a seccomp filter refuses the metadata calls instead (`confine`).
    if policy.mode == SandboxMode::WorkspaceWrite && !mount_namespaces_available() {
        let paths = mounted_read_only_paths(policy);
        let listed: Vec<String> = paths.iter().map(|path| path.display().to_string()).collect();
        let protected = if listed.is_empty() {
            String::new()
        } else {
            format!("write the protected paths {} and ", listed.join(", "))
        };
        missing.push(MissingProtection {
            consequence: format!(
                "commands can {protected}change the metadata (chmod, chown, times, extended \
                 attributes) of files outside the writable roots"
            ),
            missing: "no mount namespace for the read-only view",
        });
    }
    missing
}
