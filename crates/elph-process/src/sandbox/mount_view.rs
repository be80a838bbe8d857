//! The file-system view of a sandboxed process, as the kernel's mount table holds it.
//!
//! Why mounts: Landlock has no right for a file's metadata, so without them `chmod`, `chown`,
//! `utime` and `setxattr` reach every file the user owns, outside the writable roots too. And
//! Landlock only ever grants, so it cannot carve a protected place out of a writable root. A
//! read-only mount answers both, for root and for everyone else (a write, a `chmod` or a rename
//! there fails with `EROFS`), as bubblewrap's `--ro-bind / /` does for Flatpak and Codex:
//!
//! 1. each writable root is cloned with everything mounted beneath it (`open_tree`), so the
//!    clone keeps the flags the user's mounts have;
//! 2. the whole tree, from `/` down, is made read-only (`mount_setattr`, recursively);
//! 3. the clones are attached back over their roots: the roots are writable again, and nothing
//!    else is;
//! 4. inside the roots, every protected path is bound over itself and made read-only, and every
//!    folder between a root and a protected path is bound over itself as it is. A mount point
//!    cannot be renamed, replaced or removed (`EBUSY`): that is what keeps `mv .git x && mkdir
//!    .git` or `mv .config .config-moved` from taking a protected path's place, since a mount moves
//!    with its renamed parent. A protected symbolic link (a `.elph` that points elsewhere) is
//!    mounted over itself, so the link cannot be replaced either.
//!
//! The view is made once per set of paths, in a namespace every command of a session joins
//! (see `confine`). Everything here that runs in the child only makes system calls on data
//! prepared before the fork.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::mount::MsFlags;
use nix::sched::CloneFlags;
use nix::sys::stat::Mode;

use super::{SandboxError, SandboxMode, SandboxPolicy};

/// The view one policy asks for, prepared in the parent; [`MountView::apply`] makes it in a child.
pub(super) struct MountView {
    /// Whether Elph is not root: a user namespace of its own is what lets it make a mount
    /// namespace.
    own_user: bool,
    /// That namespace's id maps (none in the probe, which cannot write them: see `probe`).
    id_maps: Option<IdMaps>,
    /// The writable roots that exist, real paths, parents before the roots inside them.
    writable: Vec<CString>,
    /// One slot per writable root for its clone's descriptor, allocated here so the child does not.
    clones: Vec<libc::c_int>,
    /// The mounts inside the roots, parents before children.
    inner: Vec<InnerMount>,
    /// A file bound over another, read-only: the resolver's view (`SandboxPolicy::resolver_view`
    /// over `/etc/nsswitch.conf`).
    file_over: Option<(CString, CString)>,
}

struct IdMaps {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

struct InnerMount {
    path: CString,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    /// A folder between a writable root and a protected path: bound as it is, so it stays put.
    Pinned,
    /// A symbolic link that is itself protected: bound over itself, so it stays put.
    PinnedLink,
    /// A protected path: bound over itself, read-only.
    ReadOnly,
}

/// Which view a namespace holds: the mode and every path by inode, so a folder removed and made
/// again, or a protected path that appeared since, gets a new namespace.
/// And the session's, whose end ends its namespaces.
pub(super) type ViewKey = (SandboxMode, Vec<(PathBuf, u64, u64, u8)>, usize);

impl MountView {
    /// The view of `policy` (`read-only` or `workspace-write`) and the key of its namespace.
    ///
    /// A protected path that does not exist is made first when the policy lists it among the
    /// folders to make (an empty `.elph/` or `.git/hooks/` changes nothing), since only an
    /// existing path can be mounted over; any other missing one is left out.
    pub(super) fn of(policy: &SandboxPolicy) -> Result<(MountView, ViewKey), SandboxError> {
        let mut key = Vec::new();
        let mut roots: Vec<PathBuf> = Vec::new();
        if policy.mode == SandboxMode::WorkspaceWrite {
            for root in &policy.writable_roots {
                // A root that does not exist (yet) cannot be written through Landlock either.
                let Ok(real) = std::fs::canonicalize(root) else {
                    continue;
                };
                if !roots.contains(&real) {
                    roots.push(real);
                }
            }
        }
        roots.sort_by_key(|root| root.components().count());
        for root in &roots {
            key.push(identity(root, 0)?);
        }
        let mut inner: Vec<(PathBuf, Kind)> = Vec::new();
        for path in &policy.read_only_paths {
            let Some(root) = roots
                .iter()
                .find(|root| path.starts_with(root) || real_starts_with(path, root))
            else {
                continue; // Outside the roots, the read-only `/` already holds it.
            };
            if std::fs::symlink_metadata(path).is_err() && policy.folders_to_make.contains(path) {
                // Never the parents of a protected path: `.git/hooks` only in a repository.
                if path.parent().is_some_and(Path::is_dir) && std::fs::create_dir(path).is_ok() {
                    // Removed at the end of the session if still empty (an empty `.git` no more).
                    policy.watch.note_placeholder(path);
                }
            }
            let Ok(link) = std::fs::symlink_metadata(path) else {
                continue;
            };
            if link.file_type().is_symlink() && path.starts_with(root) {
                // The link itself: its target is held below, wherever it points.
                pin_parents(root, path, &mut inner);
                add(&mut inner, path.clone(), Kind::PinnedLink);
            }
            let Ok(real) = std::fs::canonicalize(path) else {
                continue; // A dangling link: held by the link's own mount.
            };
            if let Some(root) = roots.iter().find(|root| real.starts_with(root)) {
                pin_parents(root, &real, &mut inner);
                add(&mut inner, real, Kind::ReadOnly);
            }
        }
        inner.sort_by(|a, b| {
            a.0.components()
                .count()
                .cmp(&b.0.components().count())
                .then_with(|| a.0.cmp(&b.0))
        });
        for (path, kind) in &inner {
            key.push(identity(path, *kind as u8 + 1)?);
        }
        let file_over = resolver_view(policy);
        if let Some((source, _)) = &file_over {
            key.push(identity(source, 9)?);
        }
        let id_maps = own_user_namespace();
        let view = MountView {
            own_user: id_maps.is_some(),
            id_maps,
            clones: vec![-1; roots.len()],
            writable: roots.iter().map(|root| c_path(root)).collect::<Result<_, _>>()?,
            inner: inner
                .into_iter()
                .map(|(path, kind)| {
                    Ok(InnerMount {
                        path: c_path(&path)?,
                        kind,
                    })
                })
                .collect::<Result<_, SandboxError>>()?,
            file_over: match file_over {
                Some((source, target)) => Some((c_path(&source)?, c_path(&target)?)),
                None => None,
            },
        };
        Ok((view, (policy.mode, key, policy.watch.id())))
    }

    /// A view that only makes `/` read-only, for probing whether this system allows one, in a
    /// child that shares Elph's memory (`probe`): its user namespace, when it needs one, gets no
    /// id maps.
    pub(super) fn probe() -> MountView {
        MountView {
            own_user: !nix::unistd::geteuid().is_root(),
            id_maps: None,
            writable: Vec::new(),
            clones: Vec::new(),
            inner: Vec::new(),
            file_over: None,
        }
    }

    /// Whether the user namespace it makes is its own (Elph is not root).
    pub(super) fn has_user_namespace(&self) -> bool {
        self.own_user
    }

    /// Makes the view in the calling process: a new mount namespace (and user namespace when not
    /// root). Runs in a child of Elph's (a fork, or the probe's clone sharing Elph's memory), so
    /// it only makes system calls on prepared data.
    pub(super) fn apply(&mut self) -> io::Result<()> {
        let mut flags = CloneFlags::CLONE_NEWNS;
        if self.own_user {
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
        for (slot, root) in self.clones.iter_mut().zip(&self.writable) {
            *slot = open_tree(root, false)?;
        }
        set_read_only(c"/")?;
        for (slot, root) in self.clones.iter_mut().zip(&self.writable) {
            let attached = move_mount(*slot, root);
            close(*slot);
            *slot = -1;
            attached?;
        }
        for mount in &self.inner {
            let tree = open_tree(&mount.path, mount.kind == Kind::PinnedLink)?;
            let attached = move_mount(tree, &mount.path);
            close(tree);
            attached?;
            if mount.kind == Kind::ReadOnly {
                set_read_only(&mount.path)?;
            }
        }
        if let Some((source, target)) = &self.file_over {
            // Best effort: without it, lookups fail slowly, never open up.
            if let Ok(tree) = open_tree(source, false) {
                let _ = move_mount(tree, target);
                close(tree);
            }
        }
        Ok(())
    }
}

/// The resolver's view and the real file it goes over, when the network is not on and both
/// exist (the target with its links resolved: a mount is never attached through a link).
fn resolver_view(policy: &SandboxPolicy) -> Option<(PathBuf, PathBuf)> {
    if policy.network_allowed() {
        return None;
    }
    let source = policy.resolver_view.as_ref()?;
    let target = std::fs::canonicalize("/etc/nsswitch.conf").ok()?;
    let writable = policy.writable_roots.iter().any(|root| target.starts_with(root));
    (source.is_file() && target.is_file() && !writable).then(|| (source.clone(), target))
}

/// Whether `path`, once its links are resolved, lies in `root` (a `.elph` link pointing into the
/// project, a CONFIG_DIR reached through a linked HOME).
fn real_starts_with(path: &Path, root: &Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|real| real.starts_with(root))
}

fn add(inner: &mut Vec<(PathBuf, Kind)>, path: PathBuf, kind: Kind) {
    match inner.iter_mut().find(|(known, _)| *known == path) {
        // A protected path is held read-only even when it is also another one's parent.
        Some(entry) => entry.1 = entry.1.max(kind),
        None => inner.push((path, kind)),
    }
}

/// Pins every folder strictly between `root` and `path`.
fn pin_parents(root: &Path, path: &Path, inner: &mut Vec<(PathBuf, Kind)>) {
    let mut parent = path.parent();
    while let Some(dir) = parent {
        if dir == root || !dir.starts_with(root) {
            break;
        }
        add(inner, dir.to_path_buf(), Kind::Pinned);
        parent = dir.parent();
    }
}

fn identity(path: &Path, kind: u8) -> Result<(PathBuf, u64, u64, u8), SandboxError> {
    let metadata = std::fs::symlink_metadata(path).map_err(|source| SandboxError::Path {
        path: path.to_path_buf(),
        source,
    })?;
    Ok((path.to_path_buf(), metadata.dev(), metadata.ino(), kind))
}

fn own_user_namespace() -> Option<IdMaps> {
    let uid = nix::unistd::geteuid();
    (!uid.is_root()).then(|| {
        let gid = nix::unistd::getegid();
        IdMaps {
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
        }
    })
}

pub(super) fn c_path(path: &Path) -> Result<CString, SandboxError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| SandboxError::Path {
        path: path.to_path_buf(),
        source: io::Error::new(io::ErrorKind::InvalidInput, "the path contains a NUL byte"),
    })
}

fn write_proc(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
    nix::unistd::write(&fd, bytes)?;
    Ok(())
}

/// `struct mount_attr` of `<linux/mount.h>` (the first version, which every kernel with
/// `mount_setattr` accepts).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 4;
const MOUNT_ATTR_RDONLY: u64 = 1;

/// A detached copy of the mount tree at `path` (with everything mounted beneath it); with
/// `link`, of the symbolic link itself rather than where it points.
#[expect(unsafe_code, reason = "open_tree(2) has no wrapper in nix")]
fn open_tree(path: &CStr, link: bool) -> io::Result<libc::c_int> {
    let mut flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint;
    if link {
        flags |= libc::AT_SYMLINK_NOFOLLOW as libc::c_uint;
    }
    // SAFETY: `path` is a valid NUL-terminated string for the duration of the call; the kernel
    // returns a new descriptor or -1 and touches no other memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    Errno::result(fd)
        .map(|fd| fd as libc::c_int)
        .map_err(io::Error::from)
}

/// Attaches the detached tree `tree` at `path` (a link there is not followed).
#[expect(unsafe_code, reason = "move_mount(2) has no wrapper in nix")]
fn move_mount(tree: libc::c_int, path: &CStr) -> io::Result<()> {
    // SAFETY: both strings are valid NUL-terminated strings for the duration of the call; `tree`
    // is a descriptor this process owns.
    let result = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree,
            c"".as_ptr(),
            libc::AT_FDCWD,
            path.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    Errno::result(result).map(drop).map_err(io::Error::from)
}

/// Makes the mount at `path` and every mount beneath it read-only, keeping their other flags.
#[expect(unsafe_code, reason = "mount_setattr(2) has no wrapper in nix")]
fn set_read_only(path: &CStr) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `path` and `attr` live for the duration of the call and the size passed is
    // `attr`'s; the kernel only reads them.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    Errno::result(result).map(drop).map_err(io::Error::from)
}

#[expect(
    unsafe_code,
    reason = "closing a raw descriptor after fork, without allocating"
)]
fn close(fd: libc::c_int) {
    // SAFETY: `fd` came from `open_tree` in this process and is closed once.
    unsafe {
        libc::close(fd);
    }
}
