//! The sandbox policy of the processes Elph starts (`shell_exec` and sandboxed hooks), and its
//! enforcement on Linux.
//!
//! The policy is a value ([`SandboxPolicy`]): which mode, whether the network is on, which folders
//! may be written and which stay read-only inside them. Front ends build it from `--sandbox`,
//! `--sandbox-network` and settings.json; the process runner confines a child with it
//! ([`Confinement`]). Enforcement is by the kernel, not by inspecting commands: Landlock for the
//! file system and TCP, seccomp for the socket families Landlock cannot see, and a private mount
//! namespace with a read-only view of the file system for what Landlock cannot express: metadata
//! and the protected paths inside a writable root (see `confine` and `mount_view`), and a PID
//! namespace with its own `/proc`, so that a command sees no process outside its own
//! (`pid_namespace`).

mod appeared;
mod confine;
mod landlock_rules;
mod limits;
mod mount_view;
mod network;
mod pid_namespace;
mod privileges;
mod probe;
mod refusal;
mod refusals;
mod repositories;
mod seccomp;
mod start;
mod starter;
mod unix_sockets;
mod weaker;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use confine::{Confinement, LandlockSupport, landlock_support, mounted_read_only_paths};
pub use limits::Limits;
pub use network::{HostDecision, HostJournal, NetworkAccess, PROXY_VARIABLES, ProxyRoute};
pub(crate) use pid_namespace::CommandFailure;
pub use privileges::make_self_undumpable;
pub use probe::{mount_namespaces_available, pid_namespaces_available, user_namespaces_available};
pub use refusal::Refused;
pub use repositories::SessionWatch;
pub(crate) use start::{StartFailure, start_confined};
pub use unix_sockets::socket_variable;
pub use weaker::{MissingProtection, missing_protections, start_probes};

/// How much a sandboxed process may do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read anywhere, write nowhere (except `/dev/null` and the like).
    ReadOnly,
    /// Read anywhere; write only inside the writable roots, minus their read-only paths.
    #[default]
    WorkspaceWrite,
    /// No confinement at all (an explicit opt-in).
    FullAccess,
}

impl SandboxMode {
    /// Every mode, in the order of increasing freedom.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::FullAccess,
    ];

    /// The name used on the command line and in settings.json.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown sandbox mode name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox mode '{0}': use read-only, workspace-write or full-access")]
pub struct UnknownSandboxMode(pub String);

impl FromStr for SandboxMode {
    type Err = UnknownSandboxMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        SandboxMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| UnknownSandboxMode(name.to_string()))
    }
}

/// Why a process could not be confined. Never a reason to run it unconfined.
#[derive(Debug, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "each variant's fields are the words of its #[error] message"
)]
pub enum SandboxError {
    #[error(
        "the {mode} sandbox needs the kernel's Landlock LSM (Linux 5.13 or later, built with \
         CONFIG_SECURITY_LANDLOCK=y and enabled with `lsm=...,landlock` on the kernel command line), \
         and this kernel {reason}; to run without confinement, opt out with `--sandbox full-access` \
         (or \"sandbox\": {{\"mode\": \"full-access\"}} in settings.json)"
    )]
    /// The mode needs Landlock and this kernel cannot provide it; the error says how to opt out.
    LandlockUnavailable { mode: SandboxMode, reason: &'static str },
    /// The kernel refused a rule set (`what` names which).
    #[error("cannot build the sandbox's {what} rules: {reason}")]
    Rules { what: &'static str, reason: String },
    /// A writable folder (such as the session's temp dir) could not be prepared.
    #[error("cannot prepare {}: {source}", path.display())]
    Path { path: PathBuf, source: std::io::Error },
    /// A namespace this system gives could not be made for a command.
    #[error("{0}")]
    Namespace(std::io::Error),
}

/// What a sandboxed process may do: the mode, the network, and the folders it may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// How far the confinement goes.
    pub mode: SandboxMode,
    /// Whether TCP/UDP and other non-local sockets are allowed (always in `full-access`).
    pub network: bool,
    /// With the network off: the session's proxy, the one TCP port processes may connect to
    /// (`sandbox.network: "allowlist"`; see `network`).
    pub proxy: Option<ProxyRoute>,
    /// A copy of `/etc/nsswitch.conf` that looks names up in `/etc/hosts` only, bound over the
    /// real one while the network is not on (where a mount view can be made): a lookup then fails
    /// at once with "not found", where the C library's "try again" (no DNS socket can be opened)
    /// has package managers retry for a minute. Outside the writable roots, so commands cannot
    /// change it.
    pub resolver_view: Option<PathBuf>,
    /// Folders writable in `workspace-write` (PROJECT_DIR, the session's temp dir, the user's
    /// `sandbox.writableRoots`), absolute.
    pub writable_roots: Vec<PathBuf>,
    /// Paths that stay read-only even inside a writable root (the project's `.elph/`,
    /// `.git/hooks/`, CONFIG_DIR, DATA_DIR), absolute. Where the kernel allows a mount namespace,
    /// the folders between a writable root and each of them cannot be renamed or removed either.
    pub read_only_paths: Vec<PathBuf>,
    /// Read-only paths that are made as empty folders when missing, so that they can be held (an
    /// empty `.elph/` or `.git/hooks/` changes nothing; a missing one would be the model's to make).
    pub folders_to_make: Vec<PathBuf>,
    /// Why a read-only path is protected, in words for the model when a command hits one.
    pub reasons: Vec<(PathBuf, String)>,
    /// Protected paths that did not exist when the session started: no mount can hold them, so
    /// one a command creates is moved aside after that command (see `appeared`).
    pub absent: Vec<PathBuf>,
    /// The session's own temp dir, exported to sandboxed processes as `TMPDIR` (writable).
    pub temp_dir: Option<PathBuf>,
    /// Unix sockets the user lets sandboxed processes reach (`sandbox.allowUnixSockets`); when
    /// empty, they can create none (`socketpair` aside).
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Resource limits of every sandboxed process.
    pub limits: Limits,
    /// What the session remembers between commands to refuse what they leave behind (see
    /// `repositories`); shared by every copy of the policy, and no part of its equality.
    pub watch: SessionWatch,
}

impl SandboxPolicy {
    /// The default for a project: `workspace-write` with PROJECT_DIR writable and its `.elph/`
    /// and `.git/hooks/` read-only, network off.
    pub fn workspace(project_dir: &Path) -> Self {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            network: false,
            proxy: None,
            resolver_view: None,
            writable_roots: vec![project_dir.to_path_buf()],
            folders_to_make: project_read_only_paths(project_dir),
            read_only_paths: project_read_only_paths(project_dir),
            reasons: Vec::new(),
            absent: Vec::new(),
            temp_dir: None,
            allow_unix_sockets: Vec::new(),
            limits: Limits::default(),
            watch: SessionWatch::default(),
        }
    }

    /// The same policy in another mode (for example `read-only` for the `plan` agent mode): the
    /// roots are kept, so switching back restores them.
    pub fn with_mode(&self, mode: SandboxMode) -> Self {
        SandboxPolicy { mode, ..self.clone() }
    }

    /// The policy of plan mode: nothing writable but the session's temp dir (so tests and
    /// scratch files still work while planning), the network as it was. Without a temp dir,
    /// `read-only`.
    pub fn planning(&self) -> Self {
        let Some(temp_dir) = &self.temp_dir else {
            return self.with_mode(SandboxMode::ReadOnly);
        };
        if self.mode != SandboxMode::WorkspaceWrite {
            return self.with_mode(SandboxMode::ReadOnly);
        }
        SandboxPolicy {
            writable_roots: vec![temp_dir.clone()],
            read_only_paths: Vec::new(),
            folders_to_make: Vec::new(),
            absent: Vec::new(),
            ..self.clone()
        }
    }

    /// Adds a writable root (kept absolute; duplicates are ignored).
    pub fn add_writable_root(&mut self, root: impl Into<PathBuf>) {
        let root = root.into();
        if !self.writable_roots.contains(&root) {
            self.writable_roots.push(root);
        }
    }

    /// Adds a path that stays read-only inside the writable roots.
    pub fn add_read_only_path(&mut self, path: impl Into<PathBuf>) {
        let path = path.into();
        if !self.read_only_paths.contains(&path) {
            self.read_only_paths.push(path);
        }
    }

    /// Adds a read-only folder that is made (empty) when it is missing, so that it can be held.
    pub fn add_read_only_folder(&mut self, path: impl Into<PathBuf>) {
        let path = path.into();
        self.add_read_only_path(path.clone());
        if !self.folders_to_make.contains(&path) {
            self.folders_to_make.push(path);
        }
    }

    /// Adds a protected path (read-only, made as an empty folder when `make_folder` and missing)
    /// with the reason a refusal gives.
    pub fn add_protected(&mut self, path: impl Into<PathBuf>, why: impl Into<String>, make_folder: bool) {
        let path = path.into();
        if make_folder {
            self.add_read_only_folder(path.clone());
        } else {
            self.add_read_only_path(path.clone());
        }
        if !self.reasons.iter().any(|(known, _)| *known == path) {
            self.reasons.push((path, why.into()));
        }
    }

    /// The protected paths a command's output names (for example in "Read-only file system" or
    /// "Device or resource busy"), each with why it is protected: what the model reads below the
    /// output of a refused command. `cwd` is where the command ran (its messages name paths
    /// relative to it).
    pub fn explain_refusals(&self, output: &str, cwd: &Path) -> Vec<String> {
        const KERNEL_REFUSALS: [&str; 3] = [
            "Read-only file system",
            "Device or resource busy",
            "Operation not permitted",
        ];
        if self.mode == SandboxMode::FullAccess || !KERNEL_REFUSALS.iter().any(|words| output.contains(words))
        {
            return Vec::new();
        }
        let shown = |path: &Path| -> Vec<String> {
            let mut forms = vec![path.display().to_string()];
            if let Ok(relative) = path.strip_prefix(cwd)
                && !relative.as_os_str().is_empty()
            {
                forms.push(relative.display().to_string());
            }
            forms
        };
        let mut lines = Vec::new();
        let mut held_parents: Vec<&Path> = Vec::new();
        for (path, why) in &self.reasons {
            if shown(path).iter().any(|form| output.contains(form.as_str())) {
                lines.push(format!(
                    "{} is protected by the sandbox: {why}. A sandboxed command cannot change, move or \
                     replace it; ask the user to.",
                    path.display()
                ));
                continue;
            }
            // A folder that holds a protected path stays put: `mv .git x` names only the folder.
            for parent in path.ancestors().skip(1) {
                if !parent.starts_with(cwd) || parent == cwd || held_parents.contains(&parent) {
                    continue;
                }
                let quoted = shown(parent).iter().any(|form| {
                    output.contains(&format!("'{form}'")) || output.contains(&format!("{form}:"))
                });
                if quoted {
                    held_parents.push(parent);
                    lines.push(format!(
                        "{} holds {}, so a sandboxed command cannot move, replace or remove it ({} is \
                         protected by the sandbox: {why}).",
                        parent.display(),
                        path.display(),
                        path.display()
                    ));
                }
            }
        }
        lines
    }

    /// Sets the session's temp dir (writable, exported as `TMPDIR`).
    pub fn set_temp_dir(&mut self, dir: impl Into<PathBuf>) {
        let dir = dir.into();
        self.add_writable_root(dir.clone());
        self.temp_dir = Some(dir);
    }

    /// Whether the network is reachable under this policy.
    pub(crate) fn network_allowed(&self) -> bool {
        self.mode == SandboxMode::FullAccess || self.network
    }

    /// Whether a process under this policy may write `path` (absolute, already normalized: no
    /// `..`; symlinks are the caller's to resolve). This is the same rule the kernel enforces,
    /// for the native tools that write files themselves.
    pub(crate) fn allows_write(&self, path: &Path) -> bool {
        match self.mode {
            SandboxMode::FullAccess => true,
            SandboxMode::ReadOnly => false,
            SandboxMode::WorkspaceWrite => {
                self.writable_roots.iter().any(|root| path.starts_with(root))
                    && !self.read_only_paths.iter().any(|ro| path.starts_with(ro))
            }
        }
    }

    /// Whether processes are confined at all.
    pub fn is_confined(&self) -> bool {
        self.mode != SandboxMode::FullAccess
    }

    /// What the policy allows, one line each, for `elph doctor` and `elph sandbox`.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![format!("mode: {}", self.mode)];
        match self.mode {
            SandboxMode::FullAccess => {
                lines.push("no confinement: commands may read, write and connect anywhere".into());
                return lines;
            }
            SandboxMode::ReadOnly => lines.push("write: nowhere (except /dev/null and the like)".into()),
            SandboxMode::WorkspaceWrite => {
                for root in &self.writable_roots {
                    let missing = if std::fs::symlink_metadata(root).is_err() {
                        " (does not exist yet: made when a session starts)"
                    } else {
                        ""
                    };
                    lines.push(format!("write: {}{missing}", root.display()));
                }
                for path in &self.read_only_paths {
                    if self.writable_roots.iter().any(|root| path.starts_with(root)) {
                        lines.push(format!("read-only inside it: {}", path.display()));
                    }
                }
            }
        }
        lines.push("read: everywhere".into());
        lines.push(match (self.network_access(), &self.proxy) {
            (NetworkAccess::On, _) => "network: on".into(),
            (NetworkAccess::Allowlist, Some(route)) => format!(
                "network: allowlist (HTTP and HTTPS through Elph's proxy at {}; no other connection)",
                route.url()
            ),
            _ => "network: off (no TCP/UDP or other internet sockets)".into(),
        });
        lines.push(unix_sockets::describe(self));
        lines.push("privileges: none (no capabilities, no device nodes, no terminal injection)".into());
        lines.push(self.limits.describe());
        lines
    }
}

/// The paths of a project that stay read-only in `workspace-write`: its hooks and settings
/// (`.elph/`) and git's hooks, which would otherwise run code outside the sandbox later.
pub(crate) fn project_read_only_paths(project_dir: &Path) -> Vec<PathBuf> {
    vec![project_dir.join(".elph"), project_dir.join(".git").join("hooks")]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_print_their_cli_names() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.as_str().parse::<SandboxMode>().unwrap(), mode);
            assert_eq!(
                serde_json::to_value(mode).unwrap(),
                serde_json::json!(mode.as_str())
            );
        }
        let error = "danger".parse::<SandboxMode>().unwrap_err();
        assert!(error.to_string().contains("workspace-write"), "{error}");
        assert_eq!(SandboxMode::default(), SandboxMode::WorkspaceWrite);
    }

    #[test]
    fn workspace_write_allows_the_roots_minus_their_read_only_paths() {
        let mut policy = SandboxPolicy::workspace(Path::new("/p"));
        policy.set_temp_dir("/tmp/elph-1");
        policy.add_read_only_path("/p/cfg");
        assert!(policy.allows_write(Path::new("/p/src/main.rs")));
        assert!(policy.allows_write(Path::new("/tmp/elph-1/x")));
        assert!(!policy.allows_write(Path::new("/p/.elph/hooks.json")));
        assert!(!policy.allows_write(Path::new("/p/.git/hooks/pre-commit")));
        assert!(policy.allows_write(Path::new("/p/.git/config")));
        assert!(!policy.allows_write(Path::new("/p/cfg/trust.json")));
        assert!(!policy.allows_write(Path::new("/etc/passwd")));
        assert!(
            !policy.allows_write(Path::new("/pp/x")),
            "a sibling sharing a prefix"
        );
        assert!(
            !policy
                .with_mode(SandboxMode::ReadOnly)
                .allows_write(Path::new("/p/x"))
        );
        assert!(
            policy
                .with_mode(SandboxMode::FullAccess)
                .allows_write(Path::new("/etc/x"))
        );
        assert!(!policy.network_allowed());
        assert!(policy.with_mode(SandboxMode::FullAccess).network_allowed());
    }

    #[test]
    fn a_refusal_names_the_protection_and_the_folders_that_hold_one() {
        let mut policy = SandboxPolicy::workspace(Path::new("/p"));
        policy.add_protected("/p/.git/config", "git's config", false);
        let cwd = Path::new("/p");
        let direct = policy.explain_refusals(
            "error: could not write config file .git/config: Device or resource busy",
            cwd,
        );
        assert_eq!(direct.len(), 1, "{direct:?}");
        assert!(direct[0].contains("/p/.git/config is protected by the sandbox: git's config"));
        let parent = policy.explain_refusals("mv: cannot move '.git' to 'x': Device or resource busy", cwd);
        assert_eq!(parent.len(), 1, "{parent:?}");
        assert!(
            parent[0].starts_with("/p/.git holds /p/.git/config"),
            "{parent:?}"
        );
        assert!(
            policy
                .explain_refusals("cat: .git/config: No such file", cwd)
                .is_empty()
        );
        assert!(
            policy
                .with_mode(SandboxMode::FullAccess)
                .explain_refusals("'.git/config': Read-only file system", cwd)
                .is_empty()
        );
    }
}
