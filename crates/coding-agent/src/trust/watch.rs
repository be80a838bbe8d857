//! The pin check as the hook host asks it, right before every run of a project hook (docs/trust.md,
//! "Pinned trust"). The full check reads trust.json and settings.json and hashes every pinned file:
//! far more than a persistent hook's whole round trip. [`PinWatch`] keeps its answer for as long
//! as nothing the check read has changed, and runs it again as soon as anything did.
//!
//! "Nothing changed" is the metadata of every path the full check read or looked at: trust.json,
//! settings.json, each pinned file, each folder of `.elph/`, and every place a command line's
//! files were looked for, found or not. For each: device, inode, size, mode, mtime and ctime (of
//! what a symlink points to), or "absent". Every write changes a file's ctime, also when its mtime
//! is set back (`touch -d`), and ctime cannot be set by hand; a replaced file has a new inode; a
//! file created where one was looked for goes from absent to present; a file added to a folder of
//! `.elph/` changes that folder.
//!
//! Two details keep this as strict as the full check:
//! - The metadata is taken before the full check reads anything, and kept only when the check
//!   read no path beyond those: a change made while it runs is seen at the next check.
//! - File times are coarse (a clock tick, or whole seconds on some file systems), so a second
//!   write within the tick of the first may leave every time as it was. An answer is kept only
//!   when every time it rests on is at least [`SETTLED`] old (git's "racily clean" rule); until
//!   then, every check is a full one.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::TrustStore;
use super::pins::PinChanges;

/// How old every file time must be for the check's answer to be kept (see the module's comment):
/// beyond the coarsest time stamps of the file systems Linux writes (two seconds).
pub const SETTLED: Duration = Duration::from_secs(3);

/// The pin check of one project, answered from the last full check while nothing it read changed.
#[derive(Debug)]
pub(crate) struct PinWatch {
    store: TrustStore,
    project: PathBuf,
    /// [`SETTLED`], shorter in tests.
    settle: Duration,
    last: Mutex<Last>,
    /// How many full checks ran (for tests).
    full_checks: std::sync::atomic::AtomicUsize,
}

/// What the last full check read, and its answer if it can be kept.
#[derive(Debug, Default)]
struct Last {
    watched: Vec<PathBuf>,
    kept: Option<Kept>,
}

#[derive(Debug)]
struct Kept {
    /// The metadata of each of `Last::watched`, in order, taken before the check.
    stamps: Vec<Option<Stamp>>,
    /// Bare command names are looked for through PATH.
    path_var: Option<OsString>,
    changes: Option<PinChanges>,
}

/// What a path's metadata says about its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mode: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// The metadata of `path`, following symlinks; `None` when nothing is there (or it cannot be
    /// read: that too changes when the path does).
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mode: meta.mode(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }

    /// Both times are more than `settle` before `now`: a later write would show in them.
    fn settled(&self, now: SystemTime, settle: Duration) -> bool {
        let Some(limit) = now
            .checked_sub(settle)
            .and_then(|limit| limit.duration_since(UNIX_EPOCH).ok())
        else {
            return false;
        };
        let limit = (
            i64::try_from(limit.as_secs()).unwrap_or(i64::MAX),
            i64::from(limit.subsec_nanos()),
        );
        self.mtime < limit && self.ctime < limit
    }
}

impl PinWatch {
    /// Watches the pin of `project` (canonical) as `store` records it.
    pub(crate) fn new(store: TrustStore, project: &Path) -> Self {
        PinWatch {
            store,
            project: project.to_path_buf(),
            settle: SETTLED,
            last: Mutex::new(Last::default()),
            full_checks: Default::default(),
        }
    }

    /// What changed in the project since it was trusted; `None` when nothing did, or no pin
    /// applies (the same answer as `TrustStore::decide(..).changes()`, now).
    pub(crate) fn changes(&self) -> Option<PinChanges> {
        let path_var = std::env::var_os("PATH");
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(kept) = &last.kept
            && kept.path_var == path_var
            && last
                .watched
                .iter()
                .zip(&kept.stamps)
                .all(|(path, stamp)| Stamp::of(path) == *stamp)
        {
            return kept.changes.clone();
        }
        self.full_checks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = SystemTime::now();
        let stamps: Vec<Option<Stamp>> = last.watched.iter().map(|path| Stamp::of(path)).collect();
        let mut watched = Vec::new();
        let decision = self.store.decide_watching(&self.project, &mut watched);
        watched.sort();
        watched.dedup();
        let changes = decision.changes().cloned();
        let keep = watched == last.watched
            && stamps
                .iter()
                .flatten()
                .all(|stamp| stamp.settled(now, self.settle));
        *last = Last {
            kept: keep.then(|| Kept {
                stamps,
                path_var,
                changes: changes.clone(),
            }),
            watched,
        };
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    fn at(secs: u64, nanos: u32) -> Stamp {
        Stamp {
            dev: 1,
            ino: 1,
            size: 1,
            mode: 0o644,
            mtime: (secs as i64, i64::from(nanos)),
            ctime: (secs as i64, i64::from(nanos)),
        }
    }

    #[test]
    fn a_time_within_the_settling_span_is_not_settled() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert!(at(1_000_000 - 10, 0).settled(now, SETTLED));
        assert!(!at(1_000_000 - 3, 0).settled(now, SETTLED));
        assert!(!at(1_000_000 - 3, 1).settled(now, SETTLED));
        assert!(!at(1_000_000, 0).settled(now, SETTLED));
        assert!(
            !at(1_000_010, 0).settled(now, SETTLED),
            "a time in the future is not settled"
        );
    }

    /// A trusted project whose hook runs `tools/guard.sh`, watched with no settling span (the
    /// files are written before the checks, and the file system's times are fine-grained here).
    struct Project {
        _dir: tempfile::TempDir,
        project: PathBuf,
        watch: PinWatch,
    }

    impl Project {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(dir.path()).unwrap();
            let project = root.join("project");
            let config = root.join("config");
            std::fs::create_dir_all(project.join(".elph")).unwrap();
            std::fs::create_dir_all(project.join("tools")).unwrap();
            std::fs::create_dir_all(&config).unwrap();
            std::fs::write(
                project.join(".elph/hooks.json"),
                r#"{"hooks": [{"id": "guard", "event": "preToolUse", "command": "/bin/sh", "args": ["tools/guard.sh"]}]}"#,
            )
            .unwrap();
            std::fs::write(project.join("tools/guard.sh"), "exit 0 # A\n").unwrap();
            let store = TrustStore::with_home(&config, None);
            store.trust(&project).unwrap();
            let mut watch = PinWatch::new(store, &project);
            watch.settle = Duration::ZERO;
            Project {
                _dir: dir,
                project,
                watch,
            }
        }

        fn full_checks(&self) -> usize {
            self.watch.full_checks.load(Ordering::Relaxed)
        }

        /// Checks until the answer is kept, and asserts that it then is.
        fn settle(&self) {
            assert_eq!(self.watch.changes(), None);
            assert_eq!(self.watch.changes(), None);
            let full = self.full_checks();
            assert_eq!(self.watch.changes(), None);
            assert_eq!(
                self.full_checks(),
                full,
                "an unchanged project is answered without a full check"
            );
        }

        fn changed_paths(&self) -> Vec<String> {
            let changes = self.watch.changes().expect("the change is caught");
            changes.files.iter().map(|file| file.path.clone()).collect()
        }
    }

    #[test]
    fn a_rewrite_that_keeps_size_and_mtime_is_caught_at_the_next_check() {
        let project = Project::new();
        project.settle();
        let script = project.project.join("tools/guard.sh");
        let before = std::fs::metadata(&script).unwrap();
        // Same size, same inode, mtime set back as `touch -d` does: only ctime tells.
        let file = std::fs::OpenOptions::new().write(true).open(&script).unwrap();
        std::os::unix::fs::FileExt::write_at(&file, b"B", 9).unwrap();
        file.set_modified(before.modified().unwrap()).unwrap();
        drop(file);
        let after = std::fs::metadata(&script).unwrap();
        assert_eq!(
            (after.len(), after.ino(), after.modified().unwrap()),
            (before.len(), before.ino(), before.modified().unwrap())
        );
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "exit 0 # B\n");
        assert_eq!(project.changed_paths(), ["tools/guard.sh"]);
        assert_eq!(project.changed_paths(), ["tools/guard.sh"], "and stays caught");
    }

    #[test]
    fn a_file_added_to_elph_or_where_a_command_is_looked_for_is_caught() {
        let project = Project::new();
        project.settle();
        std::fs::create_dir_all(project.project.join(".elph/lib")).unwrap();
        std::fs::write(project.project.join(".elph/lib/new.sh"), "true\n").unwrap();
        assert_eq!(project.changed_paths(), [".elph/lib/new.sh"]);

        let project = Project::new();
        project.settle();
        std::fs::write(project.project.join(".mcp.json"), "{}").unwrap();
        assert_eq!(project.changed_paths(), [".mcp.json"]);
    }

    #[test]
    fn trusting_again_is_seen_without_a_restart() {
        let project = Project::new();
        project.settle();
        std::fs::write(project.project.join("tools/guard.sh"), "exit 0 # changed\n").unwrap();
        assert_eq!(project.changed_paths(), ["tools/guard.sh"]);
        project.watch.store.trust(&project.project).unwrap();
        assert_eq!(project.watch.changes(), None);
    }
}
