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
//! child, [`Confinement::apply_in_child`], only makes system calls on that prepared data. The
//! alternative, re-executing the `elph` binary as a launcher that restricts itself and then
//! execs the command, is robust too but costs a second exec of a large binary on every command;
//! `elph sandbox -- CMD` uses this same code, so both paths are one.
//!
//! Three layers, in this order in the child:
//! 1. read-only paths inside writable roots (the project's `.elph/`, `.git/hooks/`): Landlock can
//!    only grant, never carve an exception out of a grant, so they are bind-mounted read-only over
//!    themselves in a mount namespace of their own (inside a user namespace when Elph is not root).
//!    That namespace is made once per set of paths, by a short-lived holder process whose
//!    namespace file descriptors Elph keeps; each child joins it with `setns` and goes back to its
//!    working directory. Making and tearing down a namespace per command would cost several
//!    milliseconds on a busy machine (the teardown waits for an RCU grace period);
//! 2. Landlock (`landlock_rules`): the file system and TCP; once restricted, no more mounts;
//! 3. seccomp (`seccomp`): the other socket families, with the network off.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{RulesetCreated, RulesetStatus};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::stat::Mode;
use seccompiler::BpfProgram;

use super::landlock_rules;
use super::seccomp;
use super::{SandboxError, SandboxMode, SandboxPolicy};

pub use super::landlock_rules::{LandlockSupport, landlock_support};

/// Everything one child needs to confine itself, prepared before `fork`.
pub struct Confinement {
    mounts: Option<JoinNamespace>,
    landlock: Option<RulesetCreated>,
    seccomp: Option<BpfProgram>,
}

/// A mount namespace (and, when Elph is not root, the user namespace that owns it) in which the
/// read-only paths are mounted read-only; kept alive by these descriptors for the life of Elph.
struct SharedNamespace {
    user: Option<std::fs::File>,
    mount: std::fs::File,
}

/// What a child does to enter the shared namespace.
struct JoinNamespace {
    namespace: std::sync::Arc<SharedNamespace>,
    /// `setns` moves the working directory to the namespace's root: the child goes back here.
    cwd: CString,
}

/// Which paths a namespace holds read-only, by path and inode: a folder removed and made again
/// gets a new namespace.
type NamespaceKey = Vec<(PathBuf, u64, u64)>;

struct MountPlan {
    /// Set when Elph is not root: a user namespace is what lets it make a mount namespace.
    id_maps: Option<IdMaps>,
    read_only: Vec<ReadOnlyMount>,
}

struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

struct ReadOnlyMount {
    path: CString,
    /// The flags of the mount the path is on (nosuid, nodev, …): a remount inside a user
    /// namespace must keep them, or the kernel refuses it.
    kept_flags: MsFlags,
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
        let seccomp = if policy.network_allowed() {
            None
        } else {
            Some(seccomp::network_off()?)
        };
        let mounts = if policy.mode == SandboxMode::WorkspaceWrite && mount_namespaces_available() {
            match mount_plan(policy)? {
                Some((plan, key)) => Some(JoinNamespace {
                    namespace: shared_namespace(plan, key)?,
                    cwd: c_path(cwd)?,
                }),
                None => None,
            }
        } else {
            None
        };
        Ok(Some(Confinement {
            mounts,
            landlock: Some(landlock),
            seccomp,
        }))
    }

    /// Confines the calling process. Runs in the child between `fork` and `exec`, so it must not
    /// allocate: it only makes system calls on the data `prepare` made.
    pub(crate) fn apply_in_child(&mut self) -> io::Result<()> {
        let landlock = self.landlock.take();
        self.apply(landlock)
    }

    /// The same, in a child that shares this process's memory (`clone(CLONE_VM)`, see
    /// `vfork_spawn`), leaving `self` as it was: the child consumes a bitwise copy of the ruleset,
    /// as a forked child consumes its own copy, and the parent still closes its descriptor.
    pub(crate) fn apply_in_memory_sharing_child(&self) -> io::Result<()> {
        // SAFETY: a `RulesetCreated` is a descriptor and plain data (no heap). The copy is
        // consumed in the child, whose descriptor table is its own (no CLONE_FILES): its drop
        // closes the child's descriptor, the original's drop in the parent closes the parent's.
        let landlock = self
            .landlock
            .as_ref()
            .map(|ruleset| unsafe { std::ptr::read(ruleset) });
        self.apply(landlock)
    }

    fn apply(&self, landlock: Option<RulesetCreated>) -> io::Result<()> {
        if let Some(join) = &self.mounts {
            if let Some(user) = &join.namespace.user {
                nix::sched::setns(user, CloneFlags::CLONE_NEWUSER)?;
            }
            nix::sched::setns(&join.namespace.mount, CloneFlags::CLONE_NEWNS)?;
            nix::unistd::chdir(join.cwd.as_c_str())?;
        }
        if let Some(ruleset) = landlock {
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset != RulesetStatus::NotEnforced => {}
                // Never exec unconfined.
                _ => return Err(io::Error::from(Errno::EPERM)),
            }
        }
        if let Some(filter) = &self.seccomp {
            seccompiler::apply_filter(filter).map_err(|_| io::Error::from(Errno::EPERM))?;
        }
        Ok(())
    }
}

impl MountPlan {
    fn apply(&self) -> io::Result<()> {
        let mut flags = CloneFlags::CLONE_NEWNS;
        if self.id_maps.is_some() {
            flags |= CloneFlags::CLONE_NEWUSER;
        }
        nix::sched::unshare(flags)?;
        if let Some(maps) = &self.id_maps {
            write_proc(c"/proc/self/setgroups", b"deny")?;
            write_proc(c"/proc/self/uid_map", &maps.uid_map)?;
            write_proc(c"/proc/self/gid_map", &maps.gid_map)?;
        }
        // Nothing done here may reach the parent's mount namespace; what is mounted there later
        // still reaches this one (slave, not private), so a long-lived namespace does not go stale.
        nix::mount::mount(
            None::<&CStr>,
            c"/",
            None::<&CStr>,
            MsFlags::MS_REC | MsFlags::MS_SLAVE,
            None::<&CStr>,
        )?;
        for target in &self.read_only {
            let path = target.path.as_c_str();
            nix::mount::mount(
                Some(path),
                path,
                None::<&CStr>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&CStr>,
            )?;
            nix::mount::mount(
                None::<&CStr>,
                path,
                None::<&CStr>,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | target.kept_flags,
                None::<&CStr>,
            )?;
        }
        Ok(())
    }
}

fn write_proc(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    nix::unistd::write(&fd, bytes)?;
    Ok(())
}

/// The read-only paths of `policy` that lie inside one of its writable roots. A missing one is
/// created first (an empty `.elph/` changes nothing), since only an existing path can be
/// mounted over, and a missing `.elph/` would otherwise be the model's to create.
fn mount_plan(policy: &SandboxPolicy) -> Result<Option<(MountPlan, NamespaceKey)>, SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let mut read_only = Vec::new();
    let mut key = Vec::new();
    for path in &policy.read_only_paths {
        if !policy.writable_roots.iter().any(|root| path.starts_with(root)) {
            continue; // Landlock already keeps it read-only.
        }
        if !path.exists() {
            // `.git/hooks` only in a repository; never create the parents of a protected path.
            let parent_exists = path.parent().is_some_and(Path::is_dir);
            if !parent_exists || std::fs::create_dir(path).is_err() {
                continue;
            }
        }
        let canonical = std::fs::canonicalize(path).map_err(|source| SandboxError::Path {
            path: path.clone(),
            source,
        })?;
        let metadata = std::fs::metadata(&canonical).map_err(|source| SandboxError::Path {
            path: canonical.clone(),
            source,
        })?;
        read_only.push(ReadOnlyMount {
            kept_flags: mount_flags_of(&canonical),
            path: c_path(&canonical)?,
        });
        key.push((canonical, metadata.dev(), metadata.ino()));
    }
    if read_only.is_empty() {
        return Ok(None);
    }
    let uid = nix::unistd::geteuid();
    let id_maps = (!uid.is_root()).then(|| {
        let gid = nix::unistd::getegid();
        IdMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        }
    });
    Ok(Some((MountPlan { id_maps, read_only }, key)))
}

/// The namespace for `key`, made on first use: a holder process applies `plan` in a child and
/// waits; Elph opens its namespace files, then ends it (the descriptors keep the namespaces).
fn shared_namespace(
    plan: MountPlan,
    key: NamespaceKey,
) -> Result<std::sync::Arc<SharedNamespace>, SandboxError> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    static NAMESPACES: Mutex<Option<HashMap<NamespaceKey, Arc<SharedNamespace>>>> = Mutex::new(None);
    let mut namespaces = NAMESPACES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let namespaces = namespaces.get_or_insert_with(HashMap::new);
    if let Some(namespace) = namespaces.get(&key) {
        return Ok(namespace.clone());
    }
    let failed = |source: io::Error| SandboxError::Path {
        path: key.first().map(|(path, _, _)| path.clone()).unwrap_or_default(),
        source: io::Error::new(
            source.kind(),
            format!("cannot make the mount namespace that keeps it read-only: {source}"),
        ),
    };
    let own_user = plan.id_maps.is_some();
    let mut holder = crate::process::spawn_holder(move || plan.apply()).map_err(failed)?;
    let open = |name: &str| std::fs::File::open(format!("/proc/{}/ns/{name}", holder.id()));
    let opened = (|| -> io::Result<SharedNamespace> {
        Ok(SharedNamespace {
            user: if own_user { Some(open("user")?) } else { None },
            mount: open("mnt")?,
        })
    })();
    let _ = holder.kill();
    let _ = holder.wait();
    let namespace = Arc::new(opened.map_err(failed)?);
    namespaces.insert(key, namespace.clone());
    Ok(namespace)
}

fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Path {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "the path contains a NUL byte"),
    })
}

fn mount_flags_of(path: &Path) -> MsFlags {
    use nix::sys::statvfs::FsFlags;
    let Ok(stat) = nix::sys::statvfs::statvfs(path) else {
        return MsFlags::empty();
    };
    let flags = stat.flags();
    let mut kept = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if flags.contains(fs) {
            kept |= ms;
        }
    }
    kept
}

/// Whether this system lets Elph make a private mount namespace for a child (probed once, with a
/// real child: `unshare` cannot be tried in a multi-threaded parent). Some systems forbid it to
/// unprivileged users; there the read-only paths inside writable roots cannot be held read-only,
/// which `elph doctor` says.
pub fn mount_namespaces_available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        // Any existing directory will do: the child bind-mounts it read-only over itself in its
        // own namespace, which nothing else sees, and writes nothing.
        let probe = std::env::temp_dir();
        let plan = c_path(&probe).ok().map(|path| {
            let uid = nix::unistd::geteuid();
            let gid = nix::unistd::getegid();
            MountPlan {
                id_maps: (!uid.is_root()).then(|| IdMaps {
                    uid_map: format!("{uid} {uid} 1").into_bytes(),
                    gid_map: format!("{gid} {gid} 1").into_bytes(),
                }),
                read_only: vec![ReadOnlyMount {
                    kept_flags: mount_flags_of(&probe),
                    path,
                }],
            }
        });
        plan.is_some_and(|plan| crate::process::probe_in_child(move || plan.apply()))
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
