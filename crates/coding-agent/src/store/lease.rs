//! One writer per session: a process that writes a session holds an exclusive `flock` on
//! `DATA_DIR/locks/SESSION_ID.lock` for as long as it has the session open. The kernel releases
//! the lock when the holder's file is closed, which happens however the holder ends (exit, crash,
//! `kill -9`), so a lock can never be left behind. The file holds a line naming the holder (pid,
//! command, start time) so that the next process can say who has the session.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::StoreError;
use crate::locked_file::LockedFile;

/// The folder of the lock files inside DATA_DIR.
pub const LOCKS_DIR: &str = "locks";

/// An exclusive hold on one session; dropping it lets the session go.
#[derive(Debug)]
pub(crate) struct SessionLease {
    // Unlocked on drop, not only closed: a child forked meanwhile must not keep the session
    // "in use" (see `LockedFile`).
    _file: LockedFile,
}

/// Whether a session could be taken.
pub(crate) enum Claim {
    Held(SessionLease),
    /// Another process has it; the holder as its lock file describes it.
    InUse(String),
}

fn lock_path(data_dir: &Path, id: &str) -> PathBuf {
    data_dir.join(LOCKS_DIR).join(format!("{id}.lock"))
}

/// Tries to take session `id` for this process, without waiting.
pub(super) fn claim(data_dir: &Path, id: &str) -> Result<Claim, StoreError> {
    let path = lock_path(data_dir, id);
    let io_error = |source| StoreError::Lock {
        path: path.clone(),
        source,
    };
    if let Some(dir) = path.parent() {
        elph_config::private::create_private_dir_all(dir).map_err(io_error)?;
    }
    let mut file = OpenOptions::new()
        .mode(0o600)
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io_error)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(Claim::InUse(read_holder(&mut file))),
        Err(TryLockError::Error(source)) => return Err(io_error(source)),
    }
    // Ours now: say who holds it, overwriting the last holder's line in place and then cutting
    // the rest, so that a reader never sees an empty file once a holder has written. A failure
    // here only makes a later message vaguer.
    let line = format!("{}\n", describe_this_process());
    let _ = file.write_all_at(line.as_bytes(), 0);
    let _ = file.set_len(line.len() as u64);
    Ok(Claim::Held(SessionLease {
        _file: LockedFile::new(file),
    }))
}

/// The holder's line; a holder that has only just taken the lock gets a moment to write it.
fn read_holder(file: &mut File) -> String {
    for _ in 0..20 {
        let mut holder = String::new();
        let _ = file.rewind();
        let _ = file.read_to_string(&mut holder);
        let holder = holder.trim();
        if !holder.is_empty() {
            return holder.to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    "another process".to_string()
}

/// "Elph process 1234 (`elph run`), started 2026-12-01 00:31:02 UTC".
fn describe_this_process() -> String {
    let command: Vec<String> = std::env::args().take(2).collect();
    let command = command
        .iter()
        .map(|arg| {
            Path::new(arg)
                .file_name()
                .map_or_else(|| arg.clone(), |name| name.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ");
    let now = time::OffsetDateTime::now_utc();
    let started = now
        .format(time::macros::format_description!(
            "[year]-[month]-[day] [hour]:[minute]:[second] UTC"
        ))
        .unwrap_or_default();
    format!(
        "Elph process {} (`{command}`), running since {started}",
        std::process::id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_held_once_and_free_again_when_the_lease_is_dropped() {
        let data = tempfile::tempdir().unwrap();
        let Claim::Held(lease) = claim(data.path(), "s1").unwrap() else {
            panic!("a free session is taken");
        };
        match claim(data.path(), "s1").unwrap() {
            Claim::InUse(holder) => {
                assert!(
                    holder.contains(&format!("Elph process {}", std::process::id())),
                    "{holder}"
                );
            }
            Claim::Held(_) => panic!("a held session cannot be taken twice"),
        }
        assert!(matches!(claim(data.path(), "s2").unwrap(), Claim::Held(_)));
        drop(lease);
        assert!(matches!(claim(data.path(), "s1").unwrap(), Claim::Held(_)));
    }

    /// A child forked while the session is held shares the lock's open file until its `exec`
    /// (the descriptor is close-on-exec, not closed at fork). The duplicate here stands for such a
    /// child, slow to reach `exec` on a loaded machine: letting go of the session must not wait
    /// for it.
    #[test]
    fn a_dropped_lease_is_free_even_while_a_forked_child_still_holds_its_descriptor() {
        let data = tempfile::tempdir().unwrap();
        let Claim::Held(lease) = claim(data.path(), "s1").unwrap() else {
            panic!("a free session is taken");
        };
        let child_copy = lease._file.file().try_clone().unwrap();
        drop(lease);
        match claim(data.path(), "s1").unwrap() {
            Claim::Held(_) => {}
            Claim::InUse(holder) => panic!("still in use by {holder} after the lease was dropped"),
        }
        drop(child_copy);
    }
}
