//! The Landlock half of the sandbox: what the kernel supports, and the ruleset of one policy.
//!
//! Landlock rules only ever grant: a process may do what some rule on the path or one of its
//! parents allows, and everything the ruleset "handles" and no rule grants is denied. So the
//! ruleset handles every file-system right the crate knows (the kernel drops those it lacks),
//! grants reading and executing beneath `/`, all rights beneath each writable root, and reading
//! and writing a few character devices (`/dev/null`, `/dev/tty`, …); never making device nodes.
//! With the network off it also handles TCP bind and connect and grants no port, or only the
//! session proxy's port for connecting (`sandbox.network: "allowlist"`, which needs ABI 4: below
//! it nothing could keep TCP to that one port, so such a policy is refused). Abstract Unix
//! sockets are always scoped (ABI 6), so nothing outside the sandbox can be reached through them.
//! Signals are always scoped (ABI 6): a
//! sandboxed command cannot signal Elph or any other process outside its sandbox.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::{SandboxError, SandboxMode, SandboxPolicy};

/// The newest ABI whose rights the rulesets ask for; older kernels get what they support.
const TARGET_ABI: ABI = ABI::V6;

/// Character devices every sandboxed process may read and write, as programs expect to.
const DEVICES: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];

/// Landlock on this kernel, as far as Elph uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LandlockSupport {
    /// The highest Landlock ABI (1..=6) whose rights this kernel enforces in full; `None` when
    /// the kernel has no Landlock at all. 6 means "6 or later": later ABIs add nothing Elph uses.
    pub abi: Option<u8>,
}

impl LandlockSupport {
    /// Whether this kernel can confine processes at all.
    pub fn available(&self) -> bool {
        self.abi.is_some()
    }

    /// Whether Landlock itself denies TCP (ABI 4); below it, only the seccomp filter does.
    pub fn filters_tcp(&self) -> bool {
        self.abi.is_some_and(|abi| abi >= 4)
    }

    /// For `elph doctor`.
    pub fn describe(&self) -> String {
        match self.abi {
            None => "Landlock: not available in this kernel (sandboxed modes refuse to run)".into(),
            Some(abi) if abi >= TARGET_ABI as u8 => {
                format!("Landlock ABI {abi} or later (everything Elph uses)")
            }
            Some(abi) => format!("Landlock ABI {abi}"),
        }
    }
}

/// Probes the running kernel once: for each ABI from the newest Elph uses down, whether a
/// ruleset with all its rights can be created. Creating a ruleset restricts nothing.
pub fn landlock_support() -> LandlockSupport {
    static SUPPORT: std::sync::OnceLock<LandlockSupport> = std::sync::OnceLock::new();
    *SUPPORT.get_or_init(|| {
        let abi = [ABI::V6, ABI::V5, ABI::V4, ABI::V3, ABI::V2, ABI::V1]
            .into_iter()
            .find(|abi| supports(*abi))
            .map(|abi| abi as u8);
        LandlockSupport { abi }
    })
}

fn supports(abi: ABI) -> bool {
    let ruleset = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi));
    let ruleset = match ruleset {
        Ok(ruleset) if abi as u8 >= 4 => ruleset.handle_access(AccessNet::from_all(abi)),
        other => other,
    };
    let ruleset = match ruleset {
        Ok(ruleset) if abi as u8 >= 6 => ruleset.scope(Scope::from_all(abi)),
        other => other,
    };
    ruleset.and_then(|ruleset| ruleset.create()).is_ok()
}

/// The ruleset of `policy` (not `full-access`), created and filled, ready for `restrict_self`.
pub fn build(policy: &SandboxPolicy) -> Result<RulesetCreated, SandboxError> {
    if !landlock_support().available() {
        return Err(SandboxError::LandlockUnavailable {
            mode: policy.mode,
            reason: "has none (landlock_create_ruleset fails)",
        });
    }
    let rules = |error: landlock::RulesetError| SandboxError::Rules {
        what: "Landlock",
        reason: error.to_string(),
    };
    let abi = TARGET_ABI;
    let mut ruleset = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(rules)?;
    let proxy_port = policy
        .proxy
        .as_ref()
        .filter(|_| !policy.network_allowed())
        .map(|route| route.port);
    if proxy_port.is_some() && !landlock_support().filters_tcp() {
        return Err(SandboxError::Rules {
            what: "Landlock",
            reason: "the network allowlist (sandbox.network \"allowlist\") needs Landlock's TCP rules \
                     (ABI 4, Linux 6.7 or later) to keep commands to the proxy; this kernel has none. \
                     Use \"network\": false or true instead"
                .into(),
        });
    }
    if !policy.network_allowed() {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(rules)?;
    }
    // Abstract Unix sockets have no path to allow: outside the sandbox, none is reachable, with
    // the network on or off (`sandbox.allowUnixSockets` names pathname sockets only).
    let mut created = ruleset
        .scope(Scope::AbstractUnixSocket)
        .map_err(rules)?
        .scope(Scope::Signal)
        .map_err(rules)?
        .create()
        .map_err(rules)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(rules)?
        .add_rules(path_beneath_rules(
            DEVICES,
            AccessFs::from_file(abi) & !AccessFs::Execute,
        ))
        .map_err(rules)?;
    if let Some(port) = proxy_port {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(rules)?;
    }
    if policy.mode == SandboxMode::WorkspaceWrite {
        created = created
            .add_rules(path_beneath_rules(
                &policy.writable_roots,
                // Never device nodes: a block device made inside the project is the raw disk.
                AccessFs::from_all(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock),
            ))
            .map_err(rules)?;
    }
    Ok(created)
}
