//! Canonical trust.json keys: every key is compared as the folder it really names.
//!
//! With `{"/x/code": true, "/x/codelink/fork": false}` (`codelink` → `code`), comparing keys as
//! written would miss the explicit `false` for `/x/code/fork`, and the fork's hooks would run. So keys
//! are resolved (symlinks followed, `.` and `..` removed, a trailing slash dropped) on read and on
//! write, and a key that is not written canonically, or names a folder that does not exist, is reported
//! by `elph trust --status` and `elph doctor`.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// The folder `path` (absolute) names: `fs::canonicalize` when it exists; otherwise `.` and `..`
/// removed by hand and the longest existing ancestor canonicalized, so `/x/codelink/gone` still
/// becomes `/x/code/gone`.
pub fn canonical_key(path: &Path) -> PathBuf {
    Resolver::default().canonical(path)
}

/// [`canonical_key`] for many keys at once: a trust.json with thousands of entries under a few
/// folders resolves each missing ancestor once, which keeps the time a writer holds the lock short.
#[derive(Default)]
pub(crate) struct Resolver {
    known: HashMap<PathBuf, Option<PathBuf>>,
}

impl Resolver {
    fn resolve(&mut self, path: &Path) -> Option<PathBuf> {
        if let Some(known) = self.known.get(path) {
            return known.clone();
        }
        let resolved = std::fs::canonicalize(path).ok();
        self.known.insert(path.to_path_buf(), resolved.clone());
        resolved
    }

    pub(super) fn canonical(&mut self, path: &Path) -> PathBuf {
        if let Some(canonical) = self.resolve(path) {
            return canonical;
        }
        let lexical = lexically_normal(path);
        if let Some(canonical) = self.resolve(&lexical) {
            return canonical;
        }
        let mut rest = Vec::new();
        let mut base = lexical.as_path();
        while let Some(parent) = base.parent() {
            if let Some(name) = base.file_name() {
                rest.push(name.to_os_string());
            }
            if let Some(canonical) = self.resolve(parent) {
                return rest.iter().rev().fold(canonical, |path, name| path.join(name));
            }
            base = parent;
        }
        lexical
    }
}

/// Whether `path` (absolute), read lexically, ends in a symbolic link.
pub(crate) fn ends_in_link(path: &Path) -> bool {
    std::fs::symlink_metadata(lexically_normal(path)).is_ok_and(|meta| meta.file_type().is_symlink())
}

/// `path` without `.` components, with each `..` taking away the component before it, and without a
/// trailing slash.
pub(crate) fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Why a key deserves a warning, if it does: not absolute (ignored), not written canonically, or
/// naming a folder that no longer exists.
pub(crate) fn key_warning(written: &str, expanded: &Path, canonical: &Path) -> Option<String> {
    if !expanded.is_absolute() {
        return Some(format!(
            "trust.json key \"{written}\" is not an absolute path, so it never matches; write the full path"
        ));
    }
    // Compared as text: `Path` equality skips a trailing slash and interior `.` components.
    if expanded.as_os_str() != canonical.as_os_str() {
        return Some(format!(
            "trust.json key \"{written}\" is not canonical: it names {} (symlinks, '.', '..' or a trailing \
             slash resolved), and is compared as that; write it as {0}",
            canonical.display()
        ));
    }
    if !canonical.exists() {
        return Some(format!(
            "trust.json key \"{written}\" names a folder that does not exist (any more); remove the entry \
             if the folder is gone, or it applies to whatever is created there"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_forms_are_normalised() {
        assert_eq!(
            lexically_normal(Path::new("/x/code/a/../fork/")),
            PathBuf::from("/x/code/fork")
        );
        assert_eq!(
            lexically_normal(Path::new("/x/./code//fork")),
            PathBuf::from("/x/code/fork")
        );
        assert_eq!(lexically_normal(Path::new("/..")), PathBuf::from("/"));
    }

    #[test]
    fn symlinks_resolve_even_below_a_missing_folder() {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        std::fs::create_dir_all(base.join("code/fork")).unwrap();
        std::os::unix::fs::symlink(base.join("code"), base.join("codelink")).unwrap();
        assert_eq!(canonical_key(&base.join("codelink/fork")), base.join("code/fork"));
        assert_eq!(
            canonical_key(&base.join("code/a/../fork")),
            base.join("code/fork")
        );
        assert_eq!(
            canonical_key(&base.join("codelink/gone/x")),
            base.join("code/gone/x")
        );
        assert_eq!(canonical_key(&base.join("code/fork/")), base.join("code/fork"));
    }

    #[test]
    fn warnings_name_the_key_as_written() {
        let warning = key_warning("/a/../b", Path::new("/a/../b"), Path::new("/b")).unwrap();
        assert!(warning.contains("\"/a/../b\" is not canonical"), "{warning}");
        assert!(
            key_warning("rel", Path::new("rel"), Path::new("rel"))
                .unwrap()
                .contains("not an absolute")
        );
        assert!(key_warning("/", Path::new("/"), Path::new("/")).is_none());
    }
}
