//! The tree walk behind `grep` and `find_path`: depth first, in name order (so results are
//! stable), never following symbolic links into folders, skipping `.git`, `target` and
//! `node_modules`, never entering `/proc`, `/sys` or `/dev` unless the walk starts inside them,
//! and stopping early when asked to, when the deadline passes or when the call is cancelled.
//! Also the glob rule both tools share.

use std::ffi::OsString;
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use globset::{GlobBuilder, GlobMatcher};

use super::beneath::{self, EntryKind};
use super::bounded::{Budget, PSEUDO_ROOTS};

/// Folders that are never entered: version control data, build output, installed packages.
pub(crate) const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules"];

/// What kind of entry the walk found. Links are reported as links and never followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    Other,
}

/// One entry below the root.
#[derive(Debug)]
pub struct Entry {
    /// The path from the root, with '/' separators.
    pub relative: String,
    pub full: PathBuf,
    pub name: String,
    /// The name as the file system has it (`name` is for people and globs).
    pub file_name: OsString,
    pub kind: Kind,
    /// The folder holding the entry, held open: the entry is opened beneath it, never by its path.
    pub parent: Arc<OwnedFd>,
}

/// What the visitor wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Stop,
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

/// Visits every entry below the folder `root_dir` (whose real path is `root`; not the root
/// itself) until the budget is spent. Returns how many folders could not be read. Each folder is
/// opened beneath the one holding it without following links, so a folder swapped for a link
/// during the walk is counted as unreadable rather than followed.
pub fn walk(root: &Path, root_dir: OwnedFd, budget: &Budget, visit: &mut dyn FnMut(&Entry) -> Flow) -> usize {
    // The root is a real path and links are never followed, so entries' full paths are real too
    // and the pseudo file systems are recognised by their paths.
    let skipped_pseudo: Vec<&Path> = PSEUDO_ROOTS
        .iter()
        .map(Path::new)
        .filter(|pseudo| !root.starts_with(pseudo))
        .collect();
    let mut unreadable = 0;
    let mut stack: Vec<Entry> = Vec::new();
    push_children(Ok(root_dir), root, "", &mut stack, &mut unreadable);
    while let Some(entry) = stack.pop() {
        if budget.exhausted() {
            break;
        }
        if entry.kind == Kind::Dir
            && (SKIPPED_DIRS.contains(&entry.name.as_str()) || skipped_pseudo.contains(&entry.full.as_path()))
        {
            continue;
        }
        if visit(&entry) == Flow::Stop {
            break;
        }
        if entry.kind == Kind::Dir {
            let opened = beneath::open_dir_in(entry.parent.as_fd(), &entry.file_name);
            push_children(opened, &entry.full, &entry.relative, &mut stack, &mut unreadable);
        }
    }
    unreadable
}

/// Pushes the entries of the open folder `dir` (at `path`) so that they pop in name order.
fn push_children(
    dir: std::io::Result<OwnedFd>,
    path: &Path,
    relative: &str,
    stack: &mut Vec<Entry>,
    unreadable: &mut usize,
) {
    let Ok(dir) = dir else {
        *unreadable += 1;
        return;
    };
    let Ok(listed) = beneath::entries(&dir) else {
        *unreadable += 1;
        return;
    };
    let parent = Arc::new(dir);
    let mut children: Vec<Entry> = listed
        .into_iter()
        .map(|(file_name, kind)| {
            let name = file_name.to_string_lossy().into_owned();
            let kind = match kind {
                EntryKind::Link => Kind::Link,
                EntryKind::Dir => Kind::Dir,
                EntryKind::File => Kind::File,
                EntryKind::Other => Kind::Other,
            };
            let relative = if relative.is_empty() {
                name.clone()
            } else {
                format!("{relative}/{name}")
            };
            Entry {
                relative,
                full: path.join(&file_name),
                name,
                file_name,
                kind,
                parent: parent.clone(),
            }
        })
        .collect();
    children.sort_by(|a, b| b.name.cmp(&a.name));
    stack.extend(children);
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

    pub fn matches(&self, entry: &Entry) -> bool {
        if self.whole_path {
            self.matcher.is_match(&entry.relative)
        } else {
            self.matcher.is_match(&entry.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(relative: &str) -> Entry {
        let name = relative.rsplit('/').next().unwrap().to_string();
        Entry {
            relative: relative.into(),
            full: PathBuf::from(relative),
            file_name: OsString::from(&name),
            name,
            kind: Kind::File,
            parent: Arc::new(open("/")),
        }
    }

    fn open(path: &str) -> OwnedFd {
        std::fs::File::open(path).unwrap().into()
    }

    #[test]
    fn pseudo_file_systems_are_entered_only_when_asked_for() {
        // From '/', in name order "dev" comes before "etc": stop at "etc" and see that nothing
        // below /dev was visited.
        let budget = Budget::new(std::time::Duration::from_secs(60), Cancel::default());
        let mut seen = Vec::new();
        walk(Path::new("/"), open("/"), &budget, &mut |entry| {
            if entry.relative == "etc" {
                return Flow::Stop;
            }
            seen.push(entry.relative.clone());
            Flow::Continue
        });
        assert!(
            !seen.iter().any(|path| path == "dev" || path.starts_with("dev/")),
            "{seen:?}"
        );
        // Asked for, /dev is walked.
        let mut inside = 0;
        walk(Path::new("/dev"), open("/dev"), &budget, &mut |_| {
            inside += 1;
            Flow::Continue
        });
        assert!(inside > 0);
    }

    #[test]
    fn a_spent_budget_stops_the_walk() {
        let cancel = Cancel::default();
        cancel.set();
        let budget = Budget::new(std::time::Duration::from_secs(60), cancel);
        let mut visited = 0;
        walk(Path::new("/usr"), open("/usr"), &budget, &mut |_| {
            visited += 1;
            Flow::Continue
        });
        assert_eq!(visited, 0);
    }

    #[test]
    fn globs_without_a_slash_match_names_at_any_depth() {
        let glob = PathGlob::new("*.rs").unwrap();
        assert!(glob.matches(&entry("a.rs")));
        assert!(glob.matches(&entry("src/deep/b.rs")));
        assert!(!glob.matches(&entry("src/b.rsx")));
    }

    #[test]
    fn globs_with_a_slash_match_the_whole_path() {
        let glob = PathGlob::new("src/*.rs").unwrap();
        assert!(glob.matches(&entry("src/a.rs")));
        assert!(!glob.matches(&entry("src/x/a.rs")));
        assert!(!glob.matches(&entry("lib/src/a.rs")));
        let deep = PathGlob::new("**/*.rs").unwrap();
        assert!(deep.matches(&entry("a.rs")));
        assert!(deep.matches(&entry("x/y/a.rs")));
        let anchored = PathGlob::new("/Cargo.toml").unwrap();
        assert!(anchored.matches(&entry("Cargo.toml")));
        assert!(!anchored.matches(&entry("crates/a/Cargo.toml")));
    }

    #[test]
    fn braces_and_classes_work_and_bad_globs_are_errors() {
        let glob = PathGlob::new("*.{rs,toml}").unwrap();
        assert!(glob.matches(&entry("Cargo.toml")));
        assert!(glob.matches(&entry("a/b.rs")));
        assert!(PathGlob::new("a[").unwrap_err().contains("invalid glob"));
        assert!(PathGlob::new("").is_err());
    }
}
