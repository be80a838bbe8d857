//! The tree walk behind `grep` and `find_path`: ripgrep's own walker (the `ignore` crate), in
//! parallel, with ripgrep's rules for what to leave out — `.gitignore` (inside a git repository),
//! `.ignore`, `.rgignore`, `.git/info/exclude`, the global git excludes, hidden files — unless the
//! call asks for ignored or hidden files. It never follows a symbolic link, never enters `.git`,
//! and never enters `/proc`, `/sys` or `/dev` unless the walk starts inside them.
//!
//! Threads find entries in no fixed order; [`FirstInOrder`] keeps the first results in path order
//! and tells the walk what it may skip, so the result of a capped search is the same on every run.
//! Also the glob rule both tools share.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkParallel};

use super::bounded::{PSEUDO_ROOTS, lock};

/// What a walk leaves out besides `.git` and the pseudo file systems.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Filters {
    /// Also walk what ignore files leave out.
    pub include_ignored: bool,
    /// Also walk hidden files and folders (names starting with '.').
    pub include_hidden: bool,
}

/// The parallel walk of the folder at `root` (its real path). Entries' paths are `root` joined
/// with the path below it; links are reported as links and never followed.
pub(crate) fn walker(root: &Path, filters: Filters) -> WalkParallel {
    // The root is a real path and links are never followed, so entries' paths are real too and
    // the pseudo file systems are recognised by their paths.
    let skipped_pseudo: Vec<PathBuf> = PSEUDO_ROOTS
        .iter()
        .map(PathBuf::from)
        .filter(|pseudo| !root.starts_with(pseudo))
        .collect();
    let mut builder = WalkBuilder::new(root);
    builder
        .standard_filters(!filters.include_ignored)
        .hidden(!filters.include_hidden)
        .follow_links(false)
        // As many threads as ripgrep would use (the cores, at most 12).
        .threads(0)
        .filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
            !(is_dir && (entry.file_name() == ".git" || skipped_pseudo.iter().any(|p| p == entry.path())))
        });
    if !filters.include_ignored {
        builder.add_custom_ignore_filename(".rgignore");
    }
    builder.build_parallel()
}

/// The first results of a walk in path order, out of a parallel walk that finds them in any order.
///
/// Results come in groups, one per path (a file's matching lines, or one found path). Once `limit`
/// results are held, every path that sorts after the last one held can be skipped — with a folder,
/// all it holds, which sorts right after it — so the walk does no more reading than an ordered one
/// would, and which results are kept does not depend on which thread found what first: a path is
/// only ever skipped when at least `limit` results sort before it.
pub(crate) struct FirstInOrder<T> {
    limit: usize,
    held: Mutex<Held<T>>,
    /// Set once `limit` results are held (the lock-free check of a walk that finds little).
    full: AtomicBool,
}

struct Held<T> {
    groups: BTreeMap<PathBuf, Vec<T>>,
    count: usize,
}

impl<T> FirstInOrder<T> {
    /// Keeps at least the first `limit` results (more only when one group holds them).
    pub fn new(limit: usize) -> Self {
        FirstInOrder {
            limit,
            held: Mutex::new(Held {
                groups: BTreeMap::new(),
                count: 0,
            }),
            full: AtomicBool::new(false),
        }
    }

    /// How many results it keeps.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `path` sorts after every result that will be kept: it and all below it can be
    /// skipped.
    pub fn beyond(&self, path: &Path) -> bool {
        if !self.full.load(Ordering::Relaxed) {
            return false;
        }
        let held = lock(&self.held);
        held.groups
            .last_key_value()
            .is_some_and(|(last, _)| path > last.as_path())
    }

    /// Adds the results found at `path`.
    pub fn add(&self, path: PathBuf, results: Vec<T>) {
        if results.is_empty() {
            return;
        }
        let mut held = lock(&self.held);
        held.count += results.len();
        if let Some(replaced) = held.groups.insert(path, results) {
            held.count -= replaced.len();
        }
        // Drop the last group while enough results sort before it.
        loop {
            let last_len = held.groups.last_key_value().map_or(0, |(_, last)| last.len());
            if held.groups.is_empty() || held.count - last_len < self.limit {
                break;
            }
            held.groups.pop_last();
            held.count -= last_len;
        }
        if held.count >= self.limit {
            self.full.store(true, Ordering::Relaxed);
        }
    }

    /// Keeps only the groups `keep` says yes to.
    pub fn retain(&self, mut keep: impl FnMut(&Path) -> bool) {
        let mut held = lock(&self.held);
        held.groups.retain(|path, _| keep(path));
        held.count = held.groups.values().map(Vec::len).sum();
    }

    /// Takes what is held, in path order.
    pub fn take(&self) -> Vec<(PathBuf, Vec<T>)> {
        let mut held = lock(&self.held);
        held.count = 0;
        std::mem::take(&mut held.groups).into_iter().collect()
    }
}

/// A path below the walk's root as the model sees it: '/' separators.
pub(crate) fn shown_relative(relative: &Path) -> String {
    relative.to_string_lossy().into_owned()
}

/// A glob as the tools take it. Without a '/', it matches an entry's name at any depth
/// (`*.rs`); with one, it matches the whole path from the search root (`src/**/*.rs`), where `*`
/// stays within one folder and `**` crosses folders. A leading `/` or `./` anchors at the root.
#[derive(Clone, Debug)]
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathGlob {
    pub fn new(glob: &str) -> Result<Self, String> {
        let anchored = glob.strip_prefix("./").or_else(|| glob.strip_prefix('/'));
        let pattern = anchored.unwrap_or(glob);
        let pattern = pattern.trim_end_matches('/');
        if pattern.is_empty() {
            return Err(format!("invalid glob {glob:?}: it is empty"));
        }
        let whole_path = anchored.is_some() || pattern.contains('/');
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|error| format!("invalid glob {glob:?}: {}", error.kind()))?
            .compile_matcher();
        Ok(PathGlob { matcher, whole_path })
    }

    /// Whether the entry at `relative` (from the search root) matches.
    pub fn matches(&self, relative: &Path) -> bool {
        if self.whole_path {
            self.matcher.is_match(relative)
        } else {
            relative
                .file_name()
                .is_some_and(|name: &OsStr| self.matcher.is_match(name))
        }
    }
}

/// Counts shared by the walk's threads.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Folders or files that could not be read.
    unreadable: std::sync::atomic::AtomicUsize,
    /// FIFOs, sockets and devices passed over.
    special: std::sync::atomic::AtomicUsize,
}

impl Tally {
    pub fn unreadable(&self) {
        self.unreadable.fetch_add(1, Ordering::Relaxed);
    }

    pub fn special(&self) {
        self.special.fetch_add(1, Ordering::Relaxed);
    }

    pub fn counts(&self) -> (usize, usize) {
        (
            self.unreadable.load(Ordering::Relaxed),
            self.special.load(Ordering::Relaxed),
        )
    }
}

/// Whether a walk error is a folder or file that could not be read (rather than, say, a bad line
/// in an ignore file, which ripgrep reports and walks on).
/// Where a search's walk visitor starts with each entry: the entry's kind and path below `root`,
/// or the state to return at once — for an error (an unreadable entry is counted in `tally`), the
/// root itself, or an entry past what the search can still return (`beyond`; a folder past it is
/// not entered).
pub(crate) fn below_root<'e>(
    entry: &'e Result<ignore::DirEntry, ignore::Error>,
    root: &Path,
    tally: &Tally,
    beyond: impl Fn(&Path) -> bool,
) -> Result<(std::fs::FileType, &'e Path), ignore::WalkState> {
    let entry = match entry {
        Ok(entry) => entry,
        Err(error) => {
            if is_unreadable(error) {
                tally.unreadable();
            }
            return Err(ignore::WalkState::Continue);
        }
    };
    let (Some(kind), Ok(relative)) = (entry.file_type(), entry.path().strip_prefix(root)) else {
        return Err(ignore::WalkState::Continue);
    };
    if entry.depth() == 0 {
        return Err(ignore::WalkState::Continue);
    }
    if beyond(relative) {
        return Err(if kind.is_dir() {
            ignore::WalkState::Skip
        } else {
            ignore::WalkState::Continue
        });
    }
    Ok((kind, relative))
}

pub(crate) fn is_unreadable(error: &ignore::Error) -> bool {
    error.io_error().is_some()
}

/// Set when the tool call's future is dropped, so a walk on a blocking thread stops soon after.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// A guard that sets the flag when dropped: hold it across the await of the walk.
    pub(crate) fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

pub(crate) struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use ignore::WalkState;

    use super::*;

    /// The entries right below `root` (the walk goes no deeper).
    fn names_below(root: &str) -> Vec<String> {
        let seen = Mutex::new(Vec::new());
        walker(Path::new(root), Filters::default()).run(|| {
            Box::new(|entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                if entry.depth() == 0 {
                    return WalkState::Continue;
                }
                lock(&seen).push(entry.file_name().to_string_lossy().into_owned());
                WalkState::Skip
            })
        });
        seen.into_inner().unwrap()
    }

    #[test]
    fn pseudo_file_systems_are_entered_only_when_asked_for() {
        let from_root = names_below("/");
        assert!(from_root.iter().any(|name| name == "usr"), "{from_root:?}");
        for pseudo in ["dev", "proc", "sys"] {
            assert!(!from_root.iter().any(|name| name == pseudo), "{from_root:?}");
        }
        // Asked for, /dev is walked.
        assert!(!names_below("/dev").is_empty());
    }

    #[test]
    fn first_in_order_keeps_the_first_results_whatever_order_they_come_in() {
        let paths = ["b/x", "a", "c", "b", "a/z", "d"];
        for rotation in 0..paths.len() {
            let kept = FirstInOrder::new(3);
            for (n, path) in paths.iter().cycle().skip(rotation).take(paths.len()).enumerate() {
                if !kept.beyond(Path::new(path)) {
                    kept.add(PathBuf::from(path), vec![n]);
                }
            }
            let order: Vec<String> = kept
                .take()
                .into_iter()
                .map(|(path, _)| path.to_string_lossy().into_owned())
                .collect();
            // Component order: a folder's contents right after it, before its next sibling.
            assert_eq!(order, ["a", "a/z", "b"], "rotation {rotation}");
        }
        let kept = FirstInOrder::new(2);
        kept.add(PathBuf::from("m"), vec![1, 2]);
        assert!(kept.beyond(Path::new("n")));
        assert!(kept.beyond(Path::new("m/inner")));
        assert!(!kept.beyond(Path::new("l/deep")));
    }

    #[test]
    fn globs_without_a_slash_match_names_at_any_depth() {
        let glob = PathGlob::new("*.rs").unwrap();
        assert!(glob.matches(Path::new("a.rs")));
        assert!(glob.matches(Path::new("src/deep/b.rs")));
        assert!(!glob.matches(Path::new("src/b.rsx")));
    }

    #[test]
    fn globs_with_a_slash_match_the_whole_path() {
        let glob = PathGlob::new("src/*.rs").unwrap();
        assert!(glob.matches(Path::new("src/a.rs")));
        assert!(!glob.matches(Path::new("src/x/a.rs")));
        assert!(!glob.matches(Path::new("lib/src/a.rs")));
        let deep = PathGlob::new("**/*.rs").unwrap();
        assert!(deep.matches(Path::new("a.rs")));
        assert!(deep.matches(Path::new("x/y/a.rs")));
        let anchored = PathGlob::new("/Cargo.toml").unwrap();
        assert!(anchored.matches(Path::new("Cargo.toml")));
        assert!(!anchored.matches(Path::new("crates/a/Cargo.toml")));
    }

    #[test]
    fn braces_and_classes_work_and_bad_globs_are_errors() {
        let glob = PathGlob::new("*.{rs,toml}").unwrap();
        assert!(glob.matches(Path::new("Cargo.toml")));
        assert!(glob.matches(Path::new("a/b.rs")));
        assert!(PathGlob::new("a[").unwrap_err().contains("invalid glob"));
        assert!(PathGlob::new("").is_err());
    }
}
