//! Git repositories that appear, or are redirected, inside the writable roots during a session.
//!
//! Why: git runs what a repository's `config` names (`core.fsmonitor`, `core.hooksPath`, …) and
//! the scripts in its `hooks/` the next time the user runs git there, outside the sandbox. The
//! repositories that exist when the session starts are held by the mount view (their `config`,
//! `hooks/` and `info/` read-only, their folders pinned). One that a command makes (`git init sub
//! && echo … > sub/.git/hooks/pre-commit`, a bare repository, a submodule's `.git/modules/NAME`,
//! a `.git` file or link pointing at one) cannot be held while the command makes it: no mount
//! covers a path that does not exist yet, and Landlock cannot refuse one name in a folder it lets
//! a command write. Nor can a `commondir` file written into an existing repository, which moves
//! git's config and hooks for it to the folder it names.
//!
//! So Elph looks after every sandboxed command, hook and `elph sandbox`, and once more when the
//! session ends, after killing what its commands left running: every folder git would take for a
//! repository that was not there at the start is made unusable (its `HEAD` renamed, and a `.git`
//! folder moved aside), unless it is a linked worktree of a repository that was there (whose
//! config and hooks are that repository's, held read-only); a `commondir` that changed in a
//! repository that was there is moved aside. Nothing is deleted: the model is told what was moved
//! where, and the user can move it back.
//!
//! The look is a walk of the writable roots. To keep it cheap after every command, each folder's
//! entries are remembered with the folder's change time (`ctime`, which a process cannot set
//! back: adding, removing or renaming an entry sets it to now), and read again only when it
//! changed; a folder that changed within the last two seconds of a walk is read again next time
//! (its change time has a coarse clock, so a second change in the same tick would not show).

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::process::ProcessGroup;

/// At most this many folders are walked in all the roots of one look (a bound on the work after
/// each command when a root is huge, a home folder for example); docs/security.md says so.
const MAX_FOLDERS: usize = 200_000;

/// A folder changed this recently before a walk is read again on the next one.
const RACY: Duration = Duration::from_secs(2);

/// What a session's sandbox remembers between its commands: the repositories at the start, the
/// folders' entries from the last walk, the folders Elph made to hold a protected place, and
/// the process groups its commands left running. Shared by every copy of the session's policy.
#[derive(Clone, Default)]
pub struct SessionWatch(Arc<Mutex<State>>);

impl std::fmt::Debug for SessionWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionWatch")
    }
}

/// Two policies are equal whatever they remember: the watch is state, not policy.
impl PartialEq for SessionWatch {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for SessionWatch {}

#[derive(Default)]
struct State {
    /// Every repository folder at the start (real path) and the folder its config and hooks come
    /// from (its `commondir`, or itself). `None` until [`SessionWatch::record`].
    baseline: Option<HashMap<PathBuf, PathBuf>>,
    /// Protected paths missing at the start (see `appeared`), for the look at the end.
    missing_at_start: Vec<PathBuf>,
    memo: HashMap<PathBuf, Memo>,
    /// Folders Elph made so a protected place could be held; removed at the end when still empty.
    placeholders: Vec<PathBuf>,
    left_running: Vec<ProcessGroup>,
    /// Whether any command of the session left something running.
    ever_left_running: bool,
    /// Whether a walk stopped at [`MAX_FOLDERS`] (said once).
    said_too_many: bool,
}

/// One folder's entries as the last walk read them.
struct Memo {
    stamp: (u64, u64, i64, i64),
    racy: bool,
    subdirs: Vec<OsString>,
    /// Its `.git` entry: `Some(true)` a folder, `Some(false)` a file or link.
    dot_git: Option<bool>,
    /// It has a `HEAD` and an `objects` or `commondir`: git may take it for a repository.
    looks_like_repository: bool,
}

/// What one walk found.
#[derive(Default)]
struct Found {
    repositories: Vec<PathBuf>,
    pointers: Vec<PathBuf>,
}

impl SessionWatch {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records the repositories in `roots` now (the start of the session) and the protected paths
    /// missing now; later looks compare with this.
    pub(super) fn record(&self, roots: &[PathBuf], missing: Vec<PathBuf>) {
        let mut state = self.state();
        let mut memo = std::mem::take(&mut state.memo);
        let (found, _) = walk(&real_roots(roots), &mut memo);
        state.memo = memo;
        let baseline = found
            .repositories
            .iter()
            .filter(|dir| is_repository(dir))
            .filter_map(|dir| Some((dir.clone(), common_of(dir)?)))
            .collect();
        state.baseline = Some(baseline);
        state.missing_at_start = missing;
    }

    pub(super) fn missing_at_start(&self) -> Vec<PathBuf> {
        self.state().missing_at_start.clone()
    }

    /// Remembers a folder Elph made to hold a protected place.
    pub(super) fn note_placeholder(&self, path: &Path) {
        let mut state = self.state();
        if !state.placeholders.iter().any(|known| known == path) {
            state.placeholders.push(path.to_path_buf());
        }
    }

    /// Which session this is, for the namespaces that are the session's own (`confine`).
    pub(super) fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    pub(crate) fn note_left_running(&self, group: ProcessGroup) {
        let mut state = self.state();
        state.ever_left_running = true;
        state.left_running.push(group);
    }

    pub(super) fn ever_left_running(&self) -> bool {
        self.state().ever_left_running
    }

    /// Kills every group the session's commands left running and waits (up to two seconds) until
    /// they are gone, so that nothing writes after the last look.
    pub(super) fn kill_left_running(&self) {
        let groups = std::mem::take(&mut self.state().left_running);
        for group in &groups {
            group.kill();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while groups.iter().any(|group| group.exists()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Removes the folders Elph made, newest first, each only if still empty.
    pub(super) fn remove_placeholders(&self) {
        let placeholders = std::mem::take(&mut self.state().placeholders);
        for path in placeholders.iter().rev() {
            let _ = std::fs::remove_dir(path);
        }
    }

    /// Looks at `roots` and makes every repository that appeared or was redirected since the
    /// start unusable; says what was done, one line each. Nothing before [`SessionWatch::record`].
    pub(super) fn refuse_repositories(&self, roots: &[PathBuf]) -> Vec<String> {
        let mut state = self.state();
        let Some(baseline) = state.baseline.clone() else {
            return Vec::new();
        };
        let mut memo = std::mem::take(&mut state.memo);
        let (found, complete) = walk(&real_roots(roots), &mut memo);
        state.memo = memo;
        let mut lines = Vec::new();
        if !complete && !state.said_too_many {
            state.said_too_many = true;
            tracing::warn!(
                max = MAX_FOLDERS,
                "the writable roots hold more folders than Elph looks through after each command"
            );
        }
        let mut refused: Vec<PathBuf> = Vec::new();
        for dir in &found.repositories {
            if !is_repository(dir) {
                continue;
            }
            let common = common_of(dir);
            match baseline.get(dir) {
                Some(known) if Some(known) == common.as_ref() => {}
                Some(_) => lines.push(refuse_commondir(dir)),
                None if common.as_ref().is_some_and(|common| {
                    common != dir
                        && baseline.values().any(|known| known == common)
                        && !worktree_config(common)
                }) => {} // A linked worktree of a repository that was there: its config and hooks.
                None => {
                    lines.push(refuse_repository(dir));
                    refused.push(dir.clone());
                }
            }
        }
        for pointer in &found.pointers {
            let target = pointer_target(pointer);
            if target.is_some_and(|target| refused.contains(&target)) {
                lines.push(match super::appeared::move_aside(pointer) {
                    Ok(aside) => format!(
                        "Refused: {} points git at that repository; it was moved to {}.",
                        pointer.display(),
                        aside.display()
                    ),
                    Err(error) => format!(
                        "{} points git at that repository, and Elph could not move it aside ({error}); the \
                         user must remove it.",
                        pointer.display()
                    ),
                });
            }
        }
        lines
    }
}

const WHY: &str = "git runs a repository's hooks and the commands its config names (core.fsmonitor, \
                   core.hooksPath, …) outside the sandbox, the next time you use git there";

/// Makes a repository made in the session unusable: a `.git` folder is moved aside, and the
/// `HEAD` of what remains is renamed, so git no longer takes it for a repository.
fn refuse_repository(dir: &Path) -> String {
    let (place, moved) = if dir.file_name().is_some_and(|name| name == ".git") {
        match super::appeared::move_aside(dir) {
            Ok(aside) => (aside.clone(), Some(aside)),
            Err(_) => (dir.to_path_buf(), None),
        }
    } else {
        (dir.to_path_buf(), None)
    };
    let head = super::appeared::move_aside(&place.join("HEAD"));
    match (moved, head) {
        (Some(aside), _) => format!(
            "Refused: {} is a git repository made by a sandboxed command, and {WHY}. It was moved to {} \
             (git does not find it there); ask the user to create the repository.",
            dir.display(),
            aside.display()
        ),
        (None, Ok(head)) => format!(
            "Refused: {} is a git repository made by a sandboxed command, and {WHY}. Its HEAD was \
             renamed to {} so that git does not take it for a repository; ask the user to create it.",
            dir.display(),
            head.display()
        ),
        (None, Err(error)) => format!(
            "{} is a git repository made by a sandboxed command, and {WHY}. Elph could not make it \
             unusable ({error}); the user must remove it.",
            dir.display()
        ),
    }
}

/// Moves aside the `commondir` written into a repository that was there at the start.
fn refuse_commondir(dir: &Path) -> String {
    let file = dir.join("commondir");
    match super::appeared::move_aside(&file) {
        Ok(aside) => format!(
            "Refused: {} was written by a sandboxed command: it points git's config and hooks for that \
             repository at another folder, and {WHY}. It was moved to {}.",
            file.display(),
            aside.display()
        ),
        Err(error) => format!(
            "{} was written by a sandboxed command: it points git's config and hooks for that repository \
             at another folder, and {WHY}. Elph could not move it aside ({error}); the user must remove \
             it.",
            file.display()
        ),
    }
}

/// The roots as real paths, without those inside another root (walked with it).
fn real_roots(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut real: Vec<PathBuf> = roots
        .iter()
        .filter_map(|root| std::fs::canonicalize(root).ok())
        .collect();
    real.sort();
    real.dedup();
    let all = real.clone();
    real.retain(|root| !all.iter().any(|other| other != root && root.starts_with(other)));
    real
}

/// Whether git takes `dir` for a repository folder: a `HEAD`, and `objects` or a `commondir`.
fn is_repository(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("HEAD")).is_ok()
        && (dir.join("objects").is_dir() || dir.join("commondir").is_file())
}

/// The folder git reads `dir`'s config and hooks from: the one its `commondir` names, or itself.
/// `None` when the `commondir` cannot be read or resolved.
fn common_of(dir: &Path) -> Option<PathBuf> {
    match std::fs::read_to_string(dir.join("commondir")) {
        Ok(text) => std::fs::canonicalize(dir.join(text.trim())).ok(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Some(dir.to_path_buf()),
        Err(_) => None,
    }
}

/// Whether a repository's config turns on `extensions.worktreeConfig` (then each worktree's own
/// `config.worktree` counts, which a new worktree's folder would hold).
fn worktree_config(common: &Path) -> bool {
    std::fs::read_to_string(common.join("config")).is_ok_and(|text| {
        text.lines().any(|line| {
            let line = line.trim().to_ascii_lowercase();
            line.starts_with("worktreeconfig") && !line.ends_with("false")
        })
    })
}

/// The repository folder a `.git` file (`gitdir: PATH`) or link points at.
fn pointer_target(pointer: &Path) -> Option<PathBuf> {
    let metadata = std::fs::symlink_metadata(pointer).ok()?;
    if metadata.file_type().is_symlink() {
        return std::fs::canonicalize(pointer).ok();
    }
    let text = std::fs::read_to_string(pointer).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    std::fs::canonicalize(pointer.parent()?.join(target)).ok()
}

/// Walks `roots` without following links, reading again only the folders that changed since
/// `memo` was made; returns what it found and whether it walked everything.
fn walk(roots: &[PathBuf], memo: &mut HashMap<PathBuf, Memo>) -> (Found, bool) {
    let started = SystemTime::now();
    let mut seen: HashMap<PathBuf, Memo> = HashMap::new();
    let mut found = Found::default();
    let mut pending: Vec<PathBuf> = roots.to_vec();
    let mut complete = true;
    while let Some(dir) = pending.pop() {
        if seen.contains_key(&dir) {
            continue;
        }
        if seen.len() >= MAX_FOLDERS {
            complete = false;
            break;
        }
        let Ok(metadata) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !metadata.is_dir() {
            continue;
        }
        let stamp = (
            metadata.dev(),
            metadata.ino(),
            metadata.ctime(),
            metadata.ctime_nsec(),
        );
        let entry = match memo.remove(&dir) {
            Some(known) if known.stamp == stamp && !known.racy => known,
            _ => read(&dir, stamp, started),
        };
        match entry.dot_git {
            Some(true) => found.repositories.push(dir.join(".git")),
            Some(false) => found.pointers.push(dir.join(".git")),
            None => {}
        }
        if entry.looks_like_repository && dir.file_name().is_none_or(|name| name != ".git") {
            found.repositories.push(dir.clone());
        }
        pending.extend(entry.subdirs.iter().map(|name| dir.join(name)));
        seen.insert(dir, entry);
    }
    *memo = seen;
    (found, complete)
}

/// Reads one folder's entries.
fn read(dir: &Path, stamp: (u64, u64, i64, i64), started: SystemTime) -> Memo {
    let changed = SystemTime::UNIX_EPOCH
        + Duration::new(
            u64::try_from(stamp.2).unwrap_or(0),
            u32::try_from(stamp.3).unwrap_or(0),
        );
    let mut memo = Memo {
        stamp,
        racy: changed + RACY > started,
        subdirs: Vec::new(),
        dot_git: None,
        looks_like_repository: false,
    };
    let (mut head, mut objects) = (false, false);
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Unreadable now: read again next time.
        memo.racy = true;
        return memo;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if name == ".git" {
            memo.dot_git = Some(kind.is_dir());
        }
        head |= name == "HEAD";
        objects |= name == "objects" || name == "commondir";
        if kind.is_dir() {
            memo.subdirs.push(name);
        }
    }
    memo.looks_like_repository = head && objects;
    memo
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn repositories_made_or_redirected_after_the_start_are_made_unusable() {
        if Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        git(&root, &["init", "-q", "."]);
        git(
            &root,
            &[
                "-c",
                "user.name=u",
                "-c",
                "user.email=u@x",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
        git(&root, &["init", "-q", "kept"]);
        let watch = SessionWatch::default();
        watch.record(std::slice::from_ref(&root), Vec::new());
        assert!(watch.refuse_repositories(std::slice::from_ref(&root)).is_empty());

        git(&root, &["init", "-q", "sub"]);
        git(&root, &["init", "-q", "--bare", "bare"]);
        git(&root, &["worktree", "add", "-q", "--detach", "wt"]);
        std::fs::write(root.join("kept/.git/commondir"), "../../bare\n").unwrap();
        std::fs::create_dir(root.join("pointed")).unwrap();
        std::fs::write(root.join("pointed/.git"), "gitdir: ../bare\n").unwrap();
        let lines = watch.refuse_repositories(std::slice::from_ref(&root));
        let all = lines.join("\n");
        assert!(
            all.contains("sub/.git is a git repository made by a sandboxed command"),
            "{all}"
        );
        assert!(
            root.join("sub/.git.elph-refused/HEAD.elph-refused").is_file(),
            "{all}"
        );
        assert!(!root.join("sub/.git").exists());
        assert!(root.join("bare/HEAD.elph-refused").is_file(), "{all}");
        assert!(root.join("pointed/.git.elph-refused").is_file(), "{all}");
        assert!(root.join("kept/.git/commondir.elph-refused").is_file(), "{all}");
        assert!(
            root.join("wt/.git").is_file() && root.join(".git/worktrees/wt/HEAD").is_file(),
            "a linked worktree of the project's repository stays: {all}"
        );
        assert_eq!(lines.len(), 4, "{all}");
        assert!(
            watch.refuse_repositories(std::slice::from_ref(&root)).is_empty(),
            "nothing twice"
        );
    }

    #[test]
    fn a_folder_is_read_again_only_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let mut memo = HashMap::new();
        let (_, complete) = walk(std::slice::from_ref(&root), &mut memo);
        assert!(complete);
        assert_eq!(memo.len(), 3);
        // Just made: read again (racy), and a change shows.
        std::fs::create_dir_all(root.join("a/b/.git/objects")).unwrap();
        std::fs::write(root.join("a/b/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let (found, _) = walk(std::slice::from_ref(&root), &mut memo);
        assert_eq!(found.repositories, vec![root.join("a/b/.git")]);
    }
}
