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
use super::pid_namespace::{CommandFailure, ForkInNamespace, Init, InitEnds, RunCommand, StartInit};
use super::privileges::DropPrivileges;
use super::probe::{mount_namespaces_available, pid_namespaces_available};
use super::seccomp;
use super::starter::Starter;
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
    /// What a view's starter shares with the commands it creates, besides the view itself.
    starter_key: StarterKey,
}

/// The seccomp filters a view's starter attached (the socket families, and whether metadata is
/// refused): commands of one view whose policies differ there get different starters.
type StarterKey = (seccomp::Sockets, bool);

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
    /// The starters of the view (`starter`), which end with it.
    starters: std::sync::Mutex<std::collections::HashMap<StarterKey, std::sync::Arc<Starter>>>,
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

/// The pids of the starters of the session `session`'s views (for tests).
#[cfg(test)]
pub(super) fn starter_pids(session: usize) -> Vec<i32> {
    let namespaces = namespaces();
    namespaces
        .iter()
        .flat_map(|namespaces| namespaces.iter())
        .filter(|(key, _)| key.2 == session)
        .flat_map(|(_, namespace)| {
            let starters = namespace
                .starters
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            starters.values().map(|starter| starter.pid()).collect::<Vec<_>>()
        })
        .collect()
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
        let sockets = seccomp::Sockets {
            network: policy.network_allowed(),
            unix: super::unix_sockets::allowed(policy),
            tcp: policy.proxy.is_some(),
        };
        let seccomp = Some(seccomp::filter(sockets)?);
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
        let starter_key = (sockets, metadata.is_some());
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
            privileges: DropPrivileges::prepare(in_user_namespace).map_err(SandboxError::Namespace)?,
            limits: policy.limits,
            starter_key,
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
            starter_key: _,
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
    /// Whether the command runs in a view (mount namespaces are available): then the view's
    /// starter creates it.
    pub(super) fn has_view(&self) -> bool {
        self.mounts.is_some()
    }

    /// Whether the command runs in the view's PID namespace.
    pub(super) fn in_pid_namespace(&self) -> bool {
        self.mounts
            .as_ref()
            .is_some_and(|join| join.namespace.pid.is_some())
    }

    /// In the child: joins the view's user and mount namespaces and goes back to the working
    /// directory; nothing when there is no view.
    pub(super) fn join_view(&self) -> io::Result<()> {
        match &self.mounts {
            Some(join) => join_view(join),
            None => Ok(()),
        }
    }

    /// The starter of this confinement's view and key (`starter`), made with this confinement
    /// at the first command that needs it, or again when it was killed; the error of the step
    /// of its setup that failed (or of its making).
    pub(super) fn starter(
        &self,
        entry: extern "C" fn(*mut std::ffi::c_void) -> libc::c_int,
    ) -> io::Result<std::sync::Arc<Starter>> {
        let namespace = &self
            .mounts
            .as_ref()
            .ok_or_else(|| io::Error::from(Errno::EINVAL))?
            .namespace;
        let mut starters = namespace
            .starters
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(starter) = starters.get(&self.starter_key)
            && !starter.is_gone()
        {
            return Ok(starter.clone());
        }
        // None yet, or killed (a user, the OOM killer): the view gets a new one.
        let starter = std::sync::Arc::new(Starter::make(self, entry)?);
        starters.insert(self.starter_key, starter.clone());
        Ok(starter)
    }

    /// In a view's starter, once: what every command of the view and key shares, which the
    /// commands inherit: the view's namespaces (the PID namespace for the starter's children),
    /// no privilege, and the seccomp filters. Only system calls on prepared data.
    pub(super) fn confine_starter(&self) -> io::Result<()> {
        let join = self
            .mounts
            .as_ref()
            .ok_or_else(|| io::Error::from(Errno::EINVAL))?;
        // No folder of its own: each command goes to its own.
        join_namespaces(&join.namespace)?;
        if let Some(pid) = &join.namespace.pid {
            nix::sched::setns(pid, CloneFlags::CLONE_NEWPID)?;
        }
        self.privileges.apply_in_child()?;
        apply_filters([self.seccomp.as_ref(), self.metadata.as_ref()])
    }

    /// In a command its view's starter created: what is the command's own, its limits and a
    /// Landlock domain of its own.
    pub(super) fn confine_started_command(&self) -> io::Result<()> {
        self.limits.apply_in_child()?;
        restrict_with_landlock(self.landlock.as_ref())
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
    restrict_with_landlock(landlock)?;
    apply_filters([seccomp, metadata])
}

/// Restricts the calling process with `landlock`, a domain of its own.
fn restrict_with_landlock(landlock: Option<&RulesetCreated>) -> io::Result<()> {
    // A copy of the ruleset's descriptor, in this process's own table: the ruleset itself stays
    // where it is, in memory this process may share with Elph (`start`), which closes it.
    if let Some(ruleset) = landlock {
        match ruleset.try_clone()?.restrict_self() {
            Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
            // Never exec unconfined.
            _ => return Err(io::Error::from(Errno::EPERM)),
        }
    }
    Ok(())
}

fn apply_filters(filters: [Option<&BpfProgram>; 2]) -> io::Result<()> {
    for filter in filters.into_iter().flatten() {
        seccompiler::apply_filter(filter).map_err(|_| io::Error::from(Errno::EPERM))?;
    }
    Ok(())
}

fn join_view(join: &JoinNamespace) -> io::Result<()> {
    join_namespaces(&join.namespace)?;
    nix::unistd::chdir(join.cwd.as_c_str())?;
    Ok(())
}

/// Joins the view's user namespace (when Elph is not root) and its mount namespace, which puts
/// the caller at the view's root.
fn join_namespaces(namespace: &SharedNamespace) -> io::Result<()> {
    if let Some(user) = &namespace.user {
        nix::sched::setns(user, CloneFlags::CLONE_NEWUSER)?;
    }
    nix::sched::setns(&namespace.mount, CloneFlags::CLONE_NEWNS)?;
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
            starters: std::sync::Mutex::default(),
        })
    })();
    holder.end();
    let namespace = Arc::new(opened.map_err(failed)?);
    namespaces.insert(key, namespace.clone());
    Ok(namespace)
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
