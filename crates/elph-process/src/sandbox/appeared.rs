//! Protected paths that a sandboxed command created, and repositories it made (see
//! `repositories`).
//!
//! Why after the fact: only an existing path can be mounted over, and Landlock cannot refuse one
//! name in a folder it lets a command write, so a protected path that did not exist when the
//! session started (a `.mcp.json` the project lacks, a nested `.git`) is not held while a command
//! runs. (Where a folder can stand in for it unnoticed, Elph makes one and holds it: an empty
//! `.git` at the top of a root that is no repository, which git ignores.) What such a path could
//! do only happens later, when something outside the sandbox reads it (git on the user's next `git
//! status`, another agent at its start). So Elph looks right after each sandboxed command, hook
//! and `elph sandbox`, and once more when the session ends, after killing what its commands left
//! running: every protected path that has appeared is moved aside, to `NAME.elph-refused` beside
//! it (nothing the command wrote is lost, and nothing reads it there), and the command's result
//! says so.
//!
//! The move is made through a descriptor of the parent folder, opened without following a link
//! and checked to be the folder the policy names, so a command that swaps a folder for a link
//! cannot make Elph move something elsewhere.

use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;

use super::{SandboxMode, SandboxPolicy};

impl SandboxPolicy {
    /// Records that `path` is protected but missing now: if a command creates it, it is refused
    /// after that command (see [`SandboxPolicy::refuse_appeared`]).
    pub fn add_absent(&mut self, path: impl Into<PathBuf>, why: impl Into<String>) {
        let path = path.into();
        if !self.absent.contains(&path) {
            self.absent.push(path.clone());
        }
        if !self.reasons.iter().any(|(known, _)| *known == path) {
            self.reasons.push((path, why.into()));
        }
    }

    /// Which of the absent protected paths are missing now: take it right before a command, and
    /// pass it to [`SandboxPolicy::refuse_appeared`] after it. (One the user makes while no
    /// command runs is the user's, and stays.)
    pub fn missing_now(&self) -> Vec<PathBuf> {
        self.absent
            .iter()
            .filter(|path| std::fs::symlink_metadata(path).is_err())
            .cloned()
            .collect()
    }

    /// Records what the session starts with: the repositories in the writable roots and the
    /// protected paths missing now. Call it once, before the session's first sandboxed process;
    /// until then [`SandboxPolicy::refuse_appeared`] looks for no repository.
    pub fn start_session(&self) {
        self.watch.record(&self.writable_roots, self.missing_now());
    }

    /// Ends the session's sandbox: kills what its commands left running, refuses what they left
    /// behind (as [`SandboxPolicy::refuse_appeared`] after a command; the protected paths missing
    /// at the start only when something was left running, since the user may make them between
    /// commands), and removes the folders Elph made to hold protected places.
    pub fn end_session(&self) -> Vec<String> {
        self.watch.kill_left_running();
        // And what left its group: the session's PID namespaces end with everything in them.
        super::confine::end_namespaces(self.watch.id());
        let missing = if self.watch.ever_left_running() {
            self.watch.missing_at_start()
        } else {
            Vec::new()
        };
        let lines = self.refuse_appeared(&missing);
        self.watch.remove_placeholders();
        lines
    }

    /// Moves every path of `missing_before` that exists now aside, and makes every git repository
    /// made or redirected since the session started unusable (see `repositories`); says which,
    /// where to, and why, one line each (empty when nothing appeared).
    pub fn refuse_appeared(&self, missing_before: &[PathBuf]) -> Vec<String> {
        if self.mode == SandboxMode::FullAccess {
            return Vec::new();
        }
        let mut lines = self.watch.refuse_repositories(&self.writable_roots);
        for path in missing_before {
            if std::fs::symlink_metadata(path).is_err() {
                continue;
            }
            let why = self
                .reasons
                .iter()
                .find(|(known, _)| known == path)
                .map_or("a protected path", |(_, why)| why.as_str());
            lines.push(match move_aside(path) {
                Ok(aside) => format!(
                    "Refused: {} was created by a sandboxed command, and it is protected: {why}. It was \
                     moved to {} (nothing reads it there); ask the user to create it.",
                    path.display(),
                    aside.display()
                ),
                Err(error) => format!(
                    "{} was created by a sandboxed command, and it is protected: {why}. Elph could not \
                     move it aside ({error}); the user must remove it.",
                    path.display()
                ),
            });
        }
        lines
    }
}

/// Renames `path` to `path.elph-refused` (or `.elph-refused-2`, …) within its parent folder.
pub(super) fn move_aside(path: &Path) -> std::io::Result<PathBuf> {
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string());
    let parent = path.parent().ok_or_else(|| invalid("no parent folder"))?;
    let name = path.file_name().ok_or_else(|| invalid("no file name"))?;
    let dir = nix::fcntl::open(
        parent,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY,
        Mode::empty(),
    )?;
    // The folder opened must be the one named: a link swapped in on the way is refused.
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
    if opened != parent {
        return Err(invalid("its folder was replaced while Elph looked"));
    }
    for n in 1..100 {
        let mut aside = OsString::from(name);
        aside.push(if n == 1 {
            ".elph-refused".to_string()
        } else {
            format!(".elph-refused-{n}")
        });
        let taken = nix::sys::stat::fstatat(&dir, aside.as_bytes(), AtFlags::AT_SYMLINK_NOFOLLOW).is_ok();
        if taken {
            continue;
        }
        nix::fcntl::renameat(&dir, name, &dir, aside.as_os_str())?;
        return Ok(parent.join(aside));
    }
    Err(invalid("too many earlier refusals beside it"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_path_that_appears_is_moved_aside_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut policy = SandboxPolicy::workspace(&root);
        policy.add_absent(root.join(".mcp.json"), "MCP servers run from it");
        policy.add_absent(root.join(".git"), "git runs its hooks");
        let missing = policy.missing_now();
        assert!(policy.refuse_appeared(&missing).is_empty(), "nothing appeared");
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git.elph-refused"), "an earlier one").unwrap();
        let lines = policy.refuse_appeared(&missing);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("MCP servers run from it") && lines[0].contains(".mcp.json.elph-refused"));
        assert!(!root.join(".mcp.json").exists() && root.join(".mcp.json.elph-refused").is_file());
        assert!(root.join(".git.elph-refused-2/hooks").is_dir(), "{lines:?}");
        std::fs::write(root.join(".mcp.json"), "{}").unwrap();
        assert!(
            policy
                .with_mode(SandboxMode::FullAccess)
                .refuse_appeared(&missing)
                .is_empty(),
            "full access refuses nothing"
        );
        assert!(
            policy.refuse_appeared(&policy.missing_now()).is_empty(),
            "one that existed before the command stays"
        );
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("elsewhere/.envrc")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("sub")).unwrap();
        let mut policy = SandboxPolicy::workspace(&root);
        policy.add_absent(root.join("sub/.envrc"), "direnv runs it");
        let lines = policy.refuse_appeared(&[root.join("sub/.envrc")]);
        assert!(lines[0].contains("could not move it aside"), "{lines:?}");
        assert!(
            root.join("elsewhere/.envrc").is_dir(),
            "nothing moved through the link"
        );
    }
}
