//! [`LockedFile`]: a file whose exclusive `flock` is let go when the guard is dropped.

use std::fs::File;

/// A file this process holds an exclusive `flock` on (taken by the caller); dropping it unlocks,
/// then closes.
///
/// Closing alone does not free a `flock` while another descriptor of the same open file still
/// exists, and every child this process forks holds one until its `exec` closes it. In the TUI or
/// `elph acp`, a hook or tool of another session starting at that moment would keep the lock held
/// by this very process: a session let go would still be "in use", and the next trust change or log
/// rotation would wait for that child. `LOCK_UN` frees the lock for every copy at once.
#[derive(Debug)]
pub(crate) struct LockedFile(File);

impl LockedFile {
    /// `file`, which the caller has just locked.
    pub(crate) fn new(locked: File) -> LockedFile {
        LockedFile(locked)
    }

    #[cfg(test)]
    pub(crate) fn file(&self) -> &File {
        &self.0
    }
}

impl Drop for LockedFile {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The duplicate descriptor stands for a child forked while the lock was held, not yet at its
    /// `exec`: once the guard is dropped, another open of the file takes the lock at once.
    #[test]
    fn a_dropped_lock_is_free_even_while_a_forked_child_still_holds_its_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let file = File::create(&path).unwrap();
        file.try_lock().unwrap();
        let held = LockedFile::new(file);
        let child_copy = held.file().try_clone().unwrap();
        drop(held);
        let other = File::open(&path).unwrap();
        assert!(other.try_lock().is_ok(), "the lock outlived its guard");
        drop(child_copy);
    }
}
