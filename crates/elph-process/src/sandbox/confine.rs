//! Confining one child process with a [`SandboxPolicy`].
//!
//! Why it is built this way: the confinement must cover the command and everything it spawns, so
//! it is applied to the child itself, between `fork` and `exec` (Landlock domains, seccomp
//! filters, namespaces and `no_new_privs` are inherited across both). Elph is multi-threaded, and
//! after `fork` only async-signal-safe work is allowed: another thread may have held the
//! allocator's lock at the moment of the fork. So everything that allocates, opens paths or
//! compiles anything happens in the parent, in [`Confinement::prepare`]: the Landlock ruleset is
//! created and filled (a file descriptor the child inherits), the seccomp filter is compiled to
//! BPF, the mount targets are turned into C strings and the id maps into bytes. What runs in the
//! child (`start`, or [`Confinement::apply_in_child`] on the fork path) only makes system calls on
//! that prepared data. The
//! alternative, re-executing the `elph` binary as a launcher that restricts itself and then
//! execs the command, is robust too but costs a second exec of a large binary on every command;
//! `elph sandbox -- CMD` uses this same code, so both paths are one.
//!
//! The steps, in this order in the child:
//! 1. the mount view (`mount_view`): everything outside the writable roots read-only, metadata
//!    included, and the protected paths inside them (the project's `.elph/`, `.git/hooks/`, …)
//!    bound read-only with their parents pinned, in a mount namespace of its own (inside a user
//!    namespace when Elph is not root). That namespace is made once per view, by a short-lived
//!    holder process whose namespace file descriptors Elph keeps; each child joins it with `setns`
//!    and goes back to its working directory. Making and tearing down a namespace per command
//!    would cost several milliseconds on a busy machine (the teardown waits for an RCU grace
//!    period). Where the system allows no mount namespace, `read-only` refuses the metadata
//!    system calls with seccomp instead;
//! 2. the view's PID namespace, with its own `/proc` (`pid_namespace`): the command is created in
//!    it (`start`; on the fork path, `ELPH_SPAWN=fork`, through a waiter when Elph is not root);
//! 3. no privileges and the limits (`privileges`, `limits`);
//! 4. Landlock (`landlock_rules`): the file system and TCP; once restricted, no more mounts;
//! 5. seccomp (`seccomp`): the other socket families, with the network off.

use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};

use landlock::{RulesetCreated, RulesetStatus};
use nix::errno::Errno;
use nix::sched::CloneFlags;
use seccompiler::BpfProgram;

use super::landlock_rules;
use super::limits::Limits;
use super::mount_view::{MountView, ViewKey, c_path};
use super::pid_namespace::{
    CommandFailure, ForkInNamespace, Init, InitEnds, RunCommand, StartInit, pid_namespaces_available,
};
use super::privileges::DropPrivileges;
use super::seccomp;
use super::{SandboxError, SandboxMode, SandboxPolicy};

pub use super::landlock_rules::{LandlockSupport, landlock_support};

/// Everything one child needs to confine itself, prepared before `fork`.
pub struct Confinement {
    mounts: Option<JoinNamespace>,
    /// Where the kernel allows one (it needs the mount namespace for its `/proc`): the command
    /// runs in the view's PID namespace.
    pids: Option<RunCommand>,
    landlock: Option<RulesetCreated>,
    seccomp: Option<BpfProgram>,
    /// Refuses changes to metadata where no mount view can (read-only without mount namespaces).
    metadata: Option<BpfProgram>,
    privileges: DropPrivileges,
    limits: Limits,
}

/// A mount namespace (and, when Elph is not root, the user namespace that owns it) in which the
/// read-only paths are mounted read-only; kept alive by these descriptors for the life of Elph.
struct SharedNamespace {
    user: Option<std::fs::File>,
    mount: std::fs::File,
    /// The view's PID namespace, whose init mounted the `/proc` of the mount namespace (where
    /// the system allows one).
    pid: Option<std::fs::File>,
    /// The init's lifeline, closed when the namespace is dropped (the session ended) or Elph's
    /// process ends, and the init, and everything in its namespace, with it; and its pidfd.
    init: Option<Init>,
}

/// The namespaces of every view, by key; the session's end removes its own.
type Namespaces = std::collections::HashMap<ViewKey, std::sync::Arc<SharedNamespace>>;

fn namespaces() -> std::sync::MutexGuard<'static, Option<Namespaces>> {
    static NAMESPACES: std::sync::Mutex<Option<Namespaces>> = std::sync::Mutex::new(None);
    NAMESPACES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Ends the namespaces of the session `session` (`SessionWatch::id`): their inits read EOF and
/// exit, and the kernel kills everything left in their PID namespaces, even what left its
/// command's process group; returns once they are gone (within a second). The session's next
/// command, if any, gets new ones.
pub(super) fn end_namespaces(session: usize) {
    let mut ended = Vec::new();
    if let Some(namespaces) = namespaces().as_mut() {
        namespaces.retain(|key, namespace| {
            let keep = key.2 != session;
            if !keep {
                ended.push(namespace.clone());
            }
            keep
        });
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    for namespace in ended {
        // Another holder of it (a command starting right now) ends it when it lets go.
        if let Some(init) = std::sync::Arc::into_inner(namespace).and_then(|namespace| namespace.init) {
            init.end(deadline);
        }
    }
}

/// What a child does to enter the shared namespace.
struct JoinNamespace {
    namespace: std::sync::Arc<SharedNamespace>,
    /// `setns` moves the working directory to the namespace's root: the child goes back here.
    cwd: CString,
}

impl Confinement {
    /// Prepares the confinement of `policy`; `None` for `full-access`. Fails (never silently runs
    /// unconfined) when the kernel lacks Landlock.
    /// `cwd` is where the child will run.
    pub fn prepare(policy: &SandboxPolicy, cwd: &Path) -> Result<Option<Confinement>, SandboxError> {
        if policy.mode == SandboxMode::FullAccess {
            return Ok(None);
        }
        let landlock = landlock_rules::build(policy)?;
        let seccomp = Some(seccomp::filter(seccomp::Sockets {
            network: policy.network_allowed(),
            unix: super::unix_sockets::allowed(policy),
            tcp: policy.proxy.is_some(),
        })?);
        let (mounts, metadata) = if mount_namespaces_available() {
            let (view, key) = MountView::of(policy)?;
            let join = JoinNamespace {
                namespace: shared_namespace(view, key)?,
                cwd: c_path(cwd)?,
            };
            (Some(join), None)
        } else if policy.mode == SandboxMode::ReadOnly {
            (None, Some(seccomp::metadata_off()?))
        } else {
            // workspace-write without mount namespaces: docs/security.md says what then stays open.
            (None, None)
        };
        let in_user_namespace = mounts.as_ref().is_some_and(|join| join.namespace.user.is_some());
        let pids = mounts
            .as_ref()
            .is_some_and(|join| join.namespace.pid.is_some())
            .then(RunCommand::prepare);
        Ok(Some(Confinement {
            mounts,
            pids,
            landlock: Some(landlock),
            seccomp,
            metadata,
            privileges: DropPrivileges::prepare(in_user_namespace),
            limits: policy.limits,
        }))
    }

    /// Where the calling thread may fork straight into the view's PID namespace (Elph is root):
    /// the guard under which to fork, after which the child is the command's own process and
    /// needs no waiter. Called before the fork, on the thread that forks.
    pub(crate) fn fork_in_namespace(&mut self) -> Option<ForkInNamespace> {
        self.pids.as_ref()?;
        let namespace = self.mounts.as_ref()?.namespace.pid.as_ref()?;
        let guard = ForkInNamespace::enter(namespace)?;
        self.pids = None;
        Some(guard)
    }

    /// What the child will execute, for a child that starts its command itself (in the view's
    /// PID namespace); a no-op otherwise. Called before the fork, with what the `Command` gets.
    pub(crate) fn set_program(
        &mut self,
        program: &Path,
        args: &[&std::ffi::OsStr],
        env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> io::Result<()> {
        match &mut self.pids {
            Some(run) => run.set_program(program, args, env),
            None => Ok(()),
        }
    }

    /// Confines the calling process. Runs in the child between `fork` and `exec`, so it must not
    /// allocate: it only makes system calls on the data `prepare` made. In a PID namespace the
    /// command is a process of its own, which executes the program itself, and the calling
    /// process waits for it and exits as it did: then this returns only on a failure.
    pub(crate) fn apply_in_child(&mut self) -> Result<(), CommandFailure> {
        let confine_failed =
            |error: io::Error| CommandFailure::Confine(error.raw_os_error().unwrap_or(libc::EPERM));
        let Confinement {
            mounts,
            pids,
            landlock,
            seccomp,
            metadata,
            privileges,
            limits,
        } = self;
        if let Some(join) = mounts {
            join_view(join).map_err(confine_failed)?;
        }
        let mut confine = || {
            confine_self(
                privileges,
                limits,
                landlock.as_ref(),
                seccomp.as_ref(),
                metadata.as_ref(),
            )
        };
        match (pids, mounts.as_ref().and_then(|join| join.namespace.pid.as_ref())) {
            (Some(run), Some(namespace)) => Err(run.run(namespace, &mut confine)),
            _ => confine().map_err(confine_failed),
        }
    }
}

impl Confinement {
    /// The view's PID namespace, for a child that starts the command from inside the view's
    /// user namespace (`start`): where one is made and the calling thread could not fork
    /// straight into it ([`Confinement::fork_in_namespace`]).
    pub(super) fn namespace_to_enter(&self) -> Option<&std::fs::File> {
        self.pids.as_ref()?;
        self.mounts.as_ref()?.namespace.pid.as_ref()
    }

    /// In the child: joins the view's user and mount namespaces and goes back to the working
    /// directory. `false` when there is no view to join (the caller then changes directory
    /// itself).
    pub(super) fn join_view(&self) -> io::Result<bool> {
        match &self.mounts {
            Some(join) => join_view(join).map(|()| true),
            None => Ok(false),
        }
    }

    /// In the child, once in the view: the steps of the confinement proper (privileges, limits,
    /// Landlock, seccomp). Only system calls on prepared data.
    pub(super) fn confine_self(&self) -> io::Result<()> {
        confine_self(
            &self.privileges,
            &self.limits,
            self.landlock.as_ref(),
            self.seccomp.as_ref(),
            self.metadata.as_ref(),
        )
    }
}

/// Gives up every privilege, sets the limits, and restricts the calling process with Landlock
/// and seccomp, in that order (the module's steps 3 to 5).
fn confine_self(
    privileges: &DropPrivileges,
    limits: &Limits,
    landlock: Option<&RulesetCreated>,
    seccomp: Option<&BpfProgram>,
    metadata: Option<&BpfProgram>,
) -> io::Result<()> {
    privileges.apply_in_child()?;
    limits.apply_in_child()?;
    // A copy of the ruleset's descriptor, in this process's own table: the ruleset itself stays
    // where it is, in memory this process may share with Elph (`start`), which closes it.
    if let Some(ruleset) = landlock {
        match ruleset.try_clone()?.restrict_self() {
            Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
            // Never exec unconfined.
            _ => return Err(io::Error::from(Errno::EPERM)),
        }
    }
    for filter in [seccomp, metadata].into_iter().flatten() {
        seccompiler::apply_filter(filter).map_err(|_| io::Error::from(Errno::EPERM))?;
    }
    Ok(())
}

fn join_view(join: &JoinNamespace) -> io::Result<()> {
    if let Some(user) = &join.namespace.user {
        nix::sched::setns(user, CloneFlags::CLONE_NEWUSER)?;
    }
    nix::sched::setns(&join.namespace.mount, CloneFlags::CLONE_NEWNS)?;
    nix::unistd::chdir(join.cwd.as_c_str())?;
    Ok(())
}

/// The namespace for `key`, made on first use: a holder process applies `view` in a child and,
/// where the system allows, starts the view's PID namespace and its init (which lives as long as
/// Elph); Elph opens the namespace files, then ends the holder (the descriptors keep the
/// namespaces).
fn shared_namespace(
    mut view: MountView,
    key: ViewKey,
) -> Result<std::sync::Arc<SharedNamespace>, SandboxError> {
    use std::sync::Arc;
    let mut namespaces = namespaces();
    let namespaces = namespaces.get_or_insert_with(Default::default);
    if let Some(namespace) = namespaces.get(&key) {
        if !namespace.init.as_ref().is_some_and(Init::is_gone) {
            return Ok(namespace.clone());
        }
        // Its init was killed (the OOM killer, a user), and the kernel killed everything in the
        // namespace with it: no process can start there any more. This command gets a new one.
        tracing::warn!("the sandbox's PID namespace lost its init (killed); starting a new one");
        namespaces.remove(&key);
    }
    let failed = |source: io::Error| SandboxError::Path {
        path: key
            .1
            .first()
            .map(|(path, ..)| path.clone())
            .unwrap_or_else(|| PathBuf::from("/")),
        source: io::Error::new(
            source.kind(),
            format!("cannot make the mount namespace that keeps it read-only: {source}"),
        ),
    };
    let own_user = view.has_user_namespace();
    // The view's PID namespace and its init are made by the same holder, in its mount namespace.
    let (init, ends) = if pid_namespaces_available() {
        let (init, ends) = StartInit::prepare().map_err(failed)?;
        (Some(init), Some(ends))
    } else {
        (None, None)
    };
    let with_pids = init.is_some();
    let mut holder = crate::process::spawn_holder(move || {
        view.apply()?;
        match &init {
            Some(init) => init.in_holder(),
            None => Ok(()),
        }
    })
    .map_err(failed)?;
    let open = |name: &str| std::fs::File::open(format!("/proc/{}/ns/{name}", holder.id()));
    let opened = (|| -> io::Result<SharedNamespace> {
        Ok(SharedNamespace {
            user: if own_user { Some(open("user")?) } else { None },
            mount: open("mnt")?,
            pid: if with_pids {
                Some(open("pid_for_children")?)
            } else {
                None
            },
            init: ends.map(InitEnds::started).transpose()?,
        })
    })();
    holder.end();
    let namespace = Arc::new(opened.map_err(failed)?);
    namespaces.insert(key, namespace.clone());
    Ok(namespace)
}

/// Whether this system lets Elph make a private mount namespace for a child (probed once, with a
/// real child: `unshare` cannot be tried in a multi-threaded parent): the probe makes a
/// read-only view of `/`, as every sandboxed command's view does. Some systems forbid it to
/// unprivileged users; there the read-only paths inside writable roots cannot be held read-only
/// and metadata outside them is only guarded in `read-only`, which `elph doctor` says.
pub fn mount_namespaces_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let mut view = MountView::probe();
        crate::process::probe_in_child(move || view.apply())
    })
}

/// The paths a policy would hold read-only by mounting (for `elph doctor`).
pub fn mounted_read_only_paths(policy: &SandboxPolicy) -> Vec<PathBuf> {
    policy
        .read_only_paths
        .iter()
        .filter(|path| policy.writable_roots.iter().any(|root| path.starts_with(root)))
        .cloned()
        .collect()
}
