//! The real location a path names, the way the kernel would walk it: every symbolic link on the
//! way is followed (also a link whose target does not exist yet, and a link in the middle of the
//! path), `..` steps back from where a link led rather than from the text, and the part of the
//! path that does not exist yet is appended as written. The policy decides on this location, and
//! the writing tools write to it, so what was checked is what is written.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Links followed in one resolution before giving up (the kernel's own limit is 40).
const MAX_LINKS: usize = 40;

/// Why a path could not be resolved to the real place it names; the tool call is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "each variant's fields are the words of its #[error] message"
)]
pub enum ResolveError {
    /// More links than the kernel would follow.
    #[error("{path}: too many levels of symbolic links (a link loop?)")]
    LinkLoop { path: PathBuf },
    /// A link whose target could not be read.
    #[error("{path}: the symbolic link cannot be read: {reason}")]
    UnreadableLink { path: PathBuf, reason: String },
}

/// The absolute path `path` leads to, with `base` as the folder relative paths start from.
pub fn real_path(base: &Path, path: &Path) -> Result<PathBuf, ResolveError> {
    let start = if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    };
    // Components still to walk, in reverse order so the next one is popped from the end.
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&start, &mut pending);
    let mut resolved = PathBuf::from("/");
    let mut links = 0;
    // Once a component is missing, nothing below it exists either: no more links to follow.
    let mut missing = false;
    while let Some(component) = pending.pop() {
        if component == ".." {
            resolved.pop();
            continue;
        }
        if component == "." {
            continue;
        }
        let candidate = resolved.join(&component);
        if missing {
            resolved = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(ResolveError::LinkLoop { path: start });
                }
                let target =
                    std::fs::read_link(&candidate).map_err(|error| ResolveError::UnreadableLink {
                        path: candidate.clone(),
                        reason: error.to_string(),
                    })?;
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                push_components(&target, &mut pending);
            }
            Ok(_) => resolved = candidate,
            Err(_) => {
                missing = true;
                resolved = candidate;
            }
        }
    }
    Ok(resolved)
}

/// Appends `path`'s components to the reversed work list (the first component ends up last).
fn push_components(path: &Path, pending: &mut Vec<OsString>) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    pending.extend(parts.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn canonical_temp() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn plain_relative_and_absolute_paths() {
        let (_dir, root) = canonical_temp();
        std::fs::create_dir(root.join("src")).unwrap();
        assert_eq!(
            real_path(&root, Path::new("src/a.rs")).unwrap(),
            root.join("src/a.rs")
        );
        assert_eq!(
            real_path(&root, Path::new("./src/./a.rs")).unwrap(),
            root.join("src/a.rs")
        );
        assert_eq!(
            real_path(&root, Path::new("/etc/hosts")).unwrap(),
            PathBuf::from("/etc/hosts")
        );
    }

    #[test]
    fn dot_dot_climbs_out() {
        let (_dir, root) = canonical_temp();
        let outside = root.parent().unwrap().join("x");
        assert_eq!(real_path(&root, Path::new("../x")).unwrap(), outside);
        assert_eq!(real_path(&root, Path::new("a/b/../../../x")).unwrap(), outside);
        assert_eq!(
            real_path(&root, Path::new("/../../etc")).unwrap(),
            PathBuf::from("/etc")
        );
    }

    #[test]
    fn a_link_to_a_folder_outside_is_followed_also_for_new_files() {
        let (_dir, root) = canonical_temp();
        let (_other, elsewhere) = canonical_temp();
        symlink(&elsewhere, root.join("out")).unwrap();
        assert_eq!(
            real_path(&root, Path::new("out/new/file")).unwrap(),
            elsewhere.join("new/file")
        );
        // `..` after a link steps back from where the link led.
        assert_eq!(
            real_path(&root, Path::new("out/../sibling")).unwrap(),
            elsewhere.parent().unwrap().join("sibling")
        );
    }

    #[test]
    fn a_dangling_link_resolves_to_its_target() {
        let (_dir, root) = canonical_temp();
        let (_other, elsewhere) = canonical_temp();
        symlink(elsewhere.join("not-yet"), root.join("dangling")).unwrap();
        assert_eq!(
            real_path(&root, Path::new("dangling")).unwrap(),
            elsewhere.join("not-yet")
        );
        // A relative link target is relative to the link's folder.
        std::fs::create_dir(root.join("d")).unwrap();
        symlink("../target", root.join("d/rel")).unwrap();
        assert_eq!(real_path(&root, Path::new("d/rel")).unwrap(), root.join("target"));
    }

    #[test]
    fn link_loops_are_errors() {
        let (_dir, root) = canonical_temp();
        symlink("b", root.join("a")).unwrap();
        symlink("a", root.join("b")).unwrap();
        assert!(matches!(
            real_path(&root, Path::new("a/x")),
            Err(ResolveError::LinkLoop { .. })
        ));
    }
}
