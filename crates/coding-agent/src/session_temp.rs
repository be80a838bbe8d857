//! The temp dir of a session or of `elph sandbox` (the `TMPDIR` of sandboxed commands): private to
//! the user, and never left behind for long.
//!
//! The folder is made `0700` (other local users must not read what the model puts there) under
//! the system temp dir, beside a lock file of the same name plus `.lock` that the owning Elph
//! holds locked (`flock`) for the folder's life. The lock sits outside the folder on purpose: the
//! folder is writable by sandboxed commands, which must not be able to make a live session's folder
//! look abandoned. When Elph dies without cleaning up (a crash, `kill -9`), the kernel releases the
//! lock, and the next Elph to start ([`remove_left_overs`]) removes the folder: a lock it can take
//! belongs to nobody alive, whatever pid happens to be reused.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The prefixes of Elph's temp dirs.
const PREFIXES: [&str; 2] = ["elph-session-", "elph-sandbox-"];

/// A private temp dir, removed on drop, with the lock that marks it as in use.
pub(crate) struct SessionTempDir {
    dir: PathBuf,
    lock_path: PathBuf,
    /// Held, not read: the lock lasts as long as this descriptor.
    _lock: File,
}

impl SessionTempDir {
    /// Makes one under the system temp dir, named `PREFIX` and a random part. `prefix` is one of
    /// [`PREFIXES`].
    pub(crate) fn create(prefix: &str) -> io::Result<SessionTempDir> {
        Self::create_in(&std::env::temp_dir(), prefix)
    }

    fn create_in(parent: &Path, prefix: &str) -> io::Result<SessionTempDir> {
        for _ in 0..16 {
            // The lock first, so a folder is never without its lock (an Elph cleaning up at that
            // moment skips a folder whose lock does not exist yet).
            let (lock, lock_path) = tempfile::Builder::new()
                .prefix(prefix)
                .suffix(".lock")
                .tempfile_in(parent)?
                .keep()
                .map_err(|error| error.error)?;
            lock.try_lock().map_err(io::Error::from)?;
            // Whose lock it is: a process forked from this Elph without executing (a namespace
            // holder, a probe) shares the lock until it exits, which can be a moment after a
            // `kill -9` of this Elph; the pid lets the next start tell that remnant from a live Elph.
            (&lock).write_all(format!("{}\n", std::process::id()).as_bytes())?;
            let name = lock_path
                .file_name()
                .and_then(|name| name.to_str())
                .and_then(|name| name.strip_suffix(".lock"))
                .map(str::to_owned)
                .ok_or_else(|| io::Error::other("a lock file without its suffix"))?;
            let dir = parent.join(name);
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    return Ok(SessionTempDir {
                        dir,
                        lock_path,
                        _lock: lock,
                    });
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    let _ = std::fs::remove_file(&lock_path);
                }
                Err(error) => {
                    let _ = std::fs::remove_file(&lock_path);
                    return Err(error);
                }
            }
        }
        Err(io::Error::other("no free name for a temp dir"))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for SessionTempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// Removes the temp dirs of Elph processes that are gone: each of this user's `elph-session-*`
/// and `elph-sandbox-*` folders under the system temp dir whose lock nobody holds. Returns how
/// many it removed. Never fails: a folder it cannot judge or remove is left.
/// Whether the Elph that wrote its pid into this lock file still runs. A pid that cannot be read
/// counts as alive, and so does a pid reused by another process: only a certainly dead owner lets
/// a held lock's folder go (its holder is then a remnant of that Elph on its way out).
fn owner_is_alive(lock_path: &Path) -> bool {
    let Some(pid) = std::fs::read_to_string(lock_path)
        .ok()
        .and_then(|text| text.trim().parse::<i32>().ok())
        .filter(|pid| *pid > 0)
    else {
        return true;
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) != Err(nix::errno::Errno::ESRCH)
}

pub(crate) fn remove_left_overs() -> usize {
    remove_left_overs_in(&std::env::temp_dir())
}

fn remove_left_overs_in(parent: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let uid = nix::unistd::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let lock_path = entry.path();
        let Some(name) = lock_path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_suffix(".lock"))
        else {
            continue;
        };
        if !PREFIXES.iter().any(|prefix| name.starts_with(prefix)) {
            continue;
        }
        // Never follow a link someone else planted, never touch another user's files.
        let Ok(metadata) = std::fs::symlink_metadata(&lock_path) else {
            continue;
        };
        if !metadata.is_file() || metadata.uid() != uid {
            continue;
        }
        let Ok(lock) = File::open(&lock_path) else {
            continue;
        };
        if lock.try_lock().is_err() && owner_is_alive(&lock_path) {
            continue; // its Elph is alive
        }
        let dir = parent.join(name);
        let owned_folder =
            std::fs::symlink_metadata(&dir).is_ok_and(|metadata| metadata.is_dir() && metadata.uid() == uid);
        if owned_folder && std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
        if owned_folder || !dir.exists() {
            let _ = std::fs::remove_file(&lock_path);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_temp_dir_is_private_and_gone_after_drop() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SessionTempDir::create_in(parent.path(), "elph-session-").unwrap();
        let path = dir.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::write(path.join("x"), "y").unwrap();
        drop(dir);
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_lock_held_by_a_remnant_of_a_dead_elph_does_not_keep_its_folder() {
        let parent = tempfile::tempdir().unwrap();
        // A pid that certainly ended: a child that was waited for.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id();
        child.wait().unwrap();
        let left = parent.path().join("elph-sandbox-remnant");
        std::fs::create_dir(&left).unwrap();
        let lock_path = parent.path().join("elph-sandbox-remnant.lock");
        std::fs::write(&lock_path, format!("{dead_pid}\n")).unwrap();
        // Held, as a process forked from that Elph would still hold it for a moment.
        let remnant = File::open(&lock_path).unwrap();
        remnant.try_lock().unwrap();
        // A live Elph's folder, its lock held and naming a live pid, stays.
        let alive = SessionTempDir::create_in(parent.path(), "elph-session-").unwrap();
        assert_eq!(remove_left_overs_in(parent.path()), 1);
        assert!(!left.exists());
        assert!(alive.path().exists());
        drop(remnant);
    }

    #[test]
    fn only_folders_whose_lock_is_free_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        let alive = SessionTempDir::create_in(parent.path(), "elph-session-").unwrap();
        // A dead Elph's folder: its lock file exists and nobody holds it.
        let dead = parent.path().join("elph-sandbox-dead");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join("f"), "x").unwrap();
        std::fs::write(parent.path().join("elph-sandbox-dead.lock"), "").unwrap();
        // Something else's folder with a similar name but no lock: not Elph's to judge.
        let other = parent.path().join("elph-session-nolock");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(remove_left_overs_in(parent.path()), 1);
        assert!(!dead.exists());
        assert!(!parent.path().join("elph-sandbox-dead.lock").exists());
        assert!(alive.path().exists());
        assert!(other.exists());
    }
}
