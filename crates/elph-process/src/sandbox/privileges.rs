//! No privilege inside the sandbox: a sandboxed child runs without any capability, in a user
//! namespace of its own, and Elph itself cannot be read through `/proc`.
//!
//! Why each part is there:
//! - **Capabilities.** Root is the normal case in containers and CI. A root shell that keeps its
//!   capabilities can `mknod` the raw disk inside the project, `chown` any file, and read the
//!   environment of any process (`CAP_SYS_PTRACE`). The child clears its bounding, ambient,
//!   inheritable, permitted and effective sets and locks the securebits that would give them
//!   back (`SECBIT_NOROOT`: executing anything as uid 0 grants nothing), so nothing it executes
//!   regains them. `no_new_privs` (set by Landlock) keeps setuid programs and file capabilities
//!   from doing it either.
//! - **A user namespace.** Without capabilities a process may still read `/proc/PID/environ` and
//!   the memory of every process of its own user that is dumpable (the user's shell, an editor:
//!   their environments hold tokens). The kernel lets a process inspect another one of the same
//!   user only from the same user namespace; a sandboxed child lives in one of its own (made once
//!   per Elph, identity-mapped, so files keep their owners), so every process outside is out of
//!   reach. Non-root users already get one when read-only paths are mounted; this one covers every
//!   other case, root included.
//! - **Elph is not dumpable** (`PR_SET_DUMPABLE 0`, [`make_self_undumpable`]): its memory and
//!   `/proc/ELPH/environ` hold the provider keys, and a child of the same user could read them.
//!
//! Everything the child does here is a system call on data prepared before the clone (see
//! `confine`): no allocation, no lock.

use std::io;
use std::sync::{Arc, OnceLock};

use nix::sched::CloneFlags;

/// The user namespace sandboxed children join, held open by its descriptor for Elph's life.
pub(crate) struct UserNamespace {
    file: std::fs::File,
}

/// What a child does to give up every privilege, prepared before the clone.
pub(crate) struct DropPrivileges {
    /// The namespace to join; `None` when the child is already in one (the mount namespace's)
    /// or the system has none to give.
    namespace: Option<Arc<UserNamespace>>,
    /// The highest capability number of this kernel (`/proc/sys/kernel/cap_last_cap`).
    last_cap: u32,
}

impl DropPrivileges {
    /// `in_user_namespace`: whether the child joins a user namespace anyway (the read-only
    /// mounts' one, for a non-root Elph). Fails when this system gives user namespaces (as the
    /// session was told at its start) but the shared one cannot be made: a command is then not
    /// started rather than run without one.
    pub(crate) fn prepare(in_user_namespace: bool) -> io::Result<DropPrivileges> {
        let namespace = if in_user_namespace || !super::user_namespaces_available() {
            None
        } else {
            Some(shared_user_namespace()?)
        };
        Ok(DropPrivileges {
            namespace,
            last_cap: last_cap(),
        })
    }

    /// Runs in the child, after it joined every other namespace and before Landlock and seccomp.
    pub(crate) fn apply_in_child(&self) -> io::Result<()> {
        if let Some(namespace) = &self.namespace {
            nix::sched::setns(&namespace.file, CloneFlags::CLONE_NEWUSER)?;
        }
        drop_capabilities(self.last_cap)
    }
}

/// Makes Elph's own memory and `/proc/self/environ` unreadable to its children and to every
/// process of its user without `CAP_SYS_PTRACE`. Children get their own dumpable state back when
/// they execute their program.
pub fn make_self_undumpable() -> io::Result<()> {
    nix::sys::prctl::set_dumpable(false).map_err(io::Error::from)
}

const SECUREBITS: libc::c_int = libc::SECBIT_NOROOT
    | libc::SECBIT_NOROOT_LOCKED
    | libc::SECBIT_NO_SETUID_FIXUP
    | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
    | libc::SECBIT_KEEP_CAPS_LOCKED
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE
    | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Clears every capability set and locks the securebits. A process with no capability at all (a
/// non-root user outside any namespace) cannot change its bounding set or securebits, and needs
/// not: with `no_new_privs` nothing it executes can gain one.
#[expect(unsafe_code, reason = "prctl and capget/capset system calls on stack data")]
pub(super) fn drop_capabilities(last_cap: u32) -> io::Result<()> {
    let check = |result: libc::c_long| {
        if result < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget(2) with a v3 header and the two-element array v3 expects.
    check(unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) })?;
    // SAFETY: prctl(2) with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0).into() })?;
    let holds_any = data.iter().any(|set| set.effective != 0 || set.permitted != 0);
    if !holds_any {
        return Ok(());
    }
    // SAFETY: prctl(2) with integer arguments only.
    check(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS as libc::c_ulong, 0, 0, 0).into() })?;
    for cap in 0..=last_cap {
        // SAFETY: prctl(2) with integer arguments only.
        check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0).into() })?;
    }
    let empty = [CapData::default(); 2];
    header.version = CAPABILITY_VERSION_3;
    header.pid = 0;
    // SAFETY: capset(2) with a v3 header and the two-element array v3 expects.
    check(unsafe { libc::syscall(libc::SYS_capset, &raw mut header, empty.as_ptr()) })
}

pub(super) fn last_cap() -> u32 {
    static LAST: OnceLock<u32> = OnceLock::new();
    *LAST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|text| text.trim().parse().ok())
            // CAP_CHECKPOINT_RESTORE, the last one since Linux 5.9.
            .unwrap_or(40)
    })
}

/// The user namespace of this Elph's sandboxed children, made by the first command that joins it
/// (root's, and any whose view has no user namespace of its own) rather than at start, where the
/// fork it takes would sit on the way to the first model request: a holder process
/// unshares it, Elph (in the parent namespace, which the kernel requires for a map of more than
/// one id) writes its id maps, opens it and ends the holder. Root maps every id onto itself, so
/// files keep their owners; another user maps only its own uid and gid.
fn shared_user_namespace() -> io::Result<Arc<UserNamespace>> {
    static NAMESPACE: OnceLock<Result<Arc<UserNamespace>, (io::ErrorKind, String)>> = OnceLock::new();
    NAMESPACE
        .get_or_init(|| {
            make_user_namespace()
                .map(Arc::new)
                .map_err(|error| (error.kind(), error.to_string()))
        })
        .clone()
        .map_err(|(kind, error)| {
            io::Error::new(
                kind,
                format!(
                    "cannot make the user namespace of sandboxed commands, though this system gives \
                     one: {error}"
                ),
            )
        })
}

fn make_user_namespace() -> io::Result<UserNamespace> {
    let mut holder = crate::process::spawn_holder(|| {
        nix::sched::unshare(CloneFlags::CLONE_NEWUSER).map_err(io::Error::from)
    })?;
    let made = (|| -> io::Result<UserNamespace> {
        let pid = holder.id();
        // `spawn_holder` returns once the holder has unshared: the maps can be written now.
        let file = std::fs::File::open(format!("/proc/{pid}/ns/user"))?;
        let own = std::fs::File::open("/proc/self/ns/user")?;
        if same_namespace(&file, &own)? {
            return Err(io::Error::other("the holder did not get a namespace of its own"));
        }
        let uid = nix::unistd::geteuid();
        let gid = nix::unistd::getegid();
        let (uid_map, gid_map) = if uid.is_root() {
            ("0 0 4294967295".to_string(), "0 0 4294967295".to_string())
        } else {
            std::fs::write(format!("/proc/{pid}/setgroups"), "deny")?;
            (format!("{uid} {uid} 1"), format!("{gid} {gid} 1"))
        };
        std::fs::write(format!("/proc/{pid}/uid_map"), uid_map)?;
        std::fs::write(format!("/proc/{pid}/gid_map"), gid_map)?;
        Ok(UserNamespace { file })
    })();
    holder.end();
    made
}

fn same_namespace(a: &std::fs::File, b: &std::fs::File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let (a, b) = (a.metadata()?, b.metadata()?);
    Ok(a.dev() == b.dev() && a.ino() == b.ino())
}
