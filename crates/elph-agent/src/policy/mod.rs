//! The file policy the native tools obey: where they may write, which places are protected even
//! inside the writable roots, and which reads are free of approval.
//!
//! Every decision is made on the real location a path leads to (see [`resolve`]), never on its
//! text, so `..`, absolute paths and symbolic links (inside the project pointing out, or a
//! not-yet-existing file under a linked folder) all land where the kernel would put them.

pub mod resolve;

use std::path::{Path, PathBuf};

pub use resolve::{ResolveError, real_path};

use elph_process::sandbox::{SandboxMode, SandboxPolicy};

/// Where the native writing tools may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteScope {
    /// Nowhere (`plan` mode, the `read-only` sandbox).
    Nowhere,
    /// Inside these folders (the project, the session's temp dir, `sandbox.writableRoots`).
    Roots(Vec<PathBuf>),
    /// Anywhere (`full-access`); protected places still need the user's approval.
    Anywhere,
}

/// A place inside the writable roots that the agent must not change on its own: Elph's own
/// configuration and data, the project's `.elph/` (hooks run from there), and `.git/hooks/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protected {
    /// The protected place (a file or a folder and everything under it), resolved.
    pub path: PathBuf,
    /// What it is, for the user: "CONFIG_DIR", "the project's .elph folder", …
    pub label: String,
}

/// What a write to one path may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum WriteAccess {
    Allowed,
    /// Only with the user's approval of this exact call, in a front end that can ask.
    Protected {
        label: String,
    },
    /// Never: the path is outside every writable root.
    Outside,
}

/// What a read of one path needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadAccess {
    /// Inside the project (or another folder whose reads are free): no approval.
    Free,
    /// Outside: it goes through approval like a change does.
    Outside,
}

/// The policy of one session. Build it with [`FilePolicy::new`]; every root is resolved to its real
/// location once, here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePolicy {
    project_dir: PathBuf,
    write_scope: WriteScope,
    protected: Vec<Protected>,
    free_reads: Vec<PathBuf>,
}

impl FilePolicy {
    /// The default for a project: writes inside the project only, its `.elph/` and `.git/hooks/`
    /// protected, reads free inside it.
    pub fn new(project_dir: &Path) -> Self {
        let project = real_or_given(project_dir, project_dir);
        let protected = vec![
            Protected {
                path: project.join(".elph"),
                label: "the project's .elph folder (hooks, MCP servers and settings run from it)".into(),
            },
            Protected {
                path: project.join(".git").join("hooks"),
                label: "the project's .git/hooks folder (git runs its scripts)".into(),
            },
        ];
        FilePolicy {
            write_scope: WriteScope::Roots(vec![project.clone()]),
            free_reads: vec![project.clone()],
            project_dir: project,
            protected,
        }
    }

    /// The native tools' side of a sandbox policy: they may write where a sandboxed command may
    /// (`read-only`: nowhere; `workspace-write`: the writable roots; `full-access`: anywhere), and
    /// the sandbox's read-only paths are protected places. Reads are free inside the project and
    /// the other writable roots (the session's temp dir among them).
    pub fn from_sandbox(project_dir: &Path, sandbox: &SandboxPolicy) -> Self {
        let scope = match sandbox.mode {
            SandboxMode::ReadOnly => WriteScope::Nowhere,
            SandboxMode::WorkspaceWrite => WriteScope::Roots(sandbox.writable_roots.clone()),
            SandboxMode::FullAccess => WriteScope::Anywhere,
        };
        let mut policy = FilePolicy::new(project_dir).with_write_scope(scope);
        // Absent ones too: a native tool must not create what the sandbox refuses after a command.
        for path in sandbox.read_only_paths.iter().chain(&sandbox.absent) {
            let reason = sandbox.reasons.iter().find(|(known, _)| known == path);
            match reason {
                Some((_, why)) => policy = policy.protect(path, why.clone()),
                None if !policy.is_protected_place(path) => {
                    let label = format!("the protected folder {}", path.display());
                    policy = policy.protect(path, label);
                }
                None => {}
            }
        }
        for root in sandbox.writable_roots.iter().chain(sandbox.temp_dir.iter()) {
            policy = policy.free_reads_in(root);
        }
        policy
    }

    fn is_protected_place(&self, path: &Path) -> bool {
        let real = real_or_given(&self.project_dir, path);
        self.protected.iter().any(|place| place.path == real)
    }

    /// Replaces where writes may go. Roots are resolved to their real locations; the project is
    /// not added implicitly (a read-only session has no writable root at all).
    pub fn with_write_scope(mut self, scope: WriteScope) -> Self {
        self.write_scope = match scope {
            WriteScope::Roots(roots) => WriteScope::Roots(
                roots
                    .iter()
                    .map(|root| real_or_given(&self.project_dir, root))
                    .collect(),
            ),
            other => other,
        };
        self
    }

    /// Adds a protected place (CONFIG_DIR, DATA_DIR, …), or renames one already there.
    pub fn protect(mut self, path: &Path, label: impl Into<String>) -> Self {
        let path = real_or_given(&self.project_dir, path);
        let label = label.into();
        match self.protected.iter_mut().find(|place| place.path == path) {
            Some(place) => place.label = label,
            None => self.protected.push(Protected { path, label }),
        }
        self
    }

    /// Adds a folder whose reads need no approval (the session temp dir, writable roots).
    pub fn free_reads_in(mut self, path: &Path) -> Self {
        let path = real_or_given(&self.project_dir, path);
        if !self.free_reads.contains(&path) {
            self.free_reads.push(path);
        }
        self
    }

    /// The project the policy was built for: relative paths resolve against it.
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// The places a write needs the user's approval for, as `elph doctor` lists them.
    pub fn protected(&self) -> &[Protected] {
        &self.protected
    }

    /// The real location `path` (relative to the project, or absolute) leads to.
    pub(crate) fn locate(&self, path: &str) -> Result<PathBuf, ResolveError> {
        real_path(&self.project_dir, Path::new(path))
    }

    /// What a write to the real location `real` may do.
    pub(crate) fn write_access(&self, real: &Path) -> WriteAccess {
        let writable = match &self.write_scope {
            WriteScope::Nowhere => false,
            WriteScope::Anywhere => true,
            WriteScope::Roots(roots) => roots.iter().any(|root| real.starts_with(root)),
        };
        if !writable {
            return WriteAccess::Outside;
        }
        match self.protected.iter().find(|place| real.starts_with(&place.path)) {
            Some(place) => WriteAccess::Protected {
                label: place.label.clone(),
            },
            None => match git_internal(real) {
                Some(what) => WriteAccess::Protected {
                    label: format!(
                        "a git repository's {what} (git runs what it names outside the sandbox, the \
                         next time you use git)"
                    ),
                },
                None => WriteAccess::Allowed,
            },
        }
    }

    /// What a read of the real location `real` needs.
    pub(crate) fn read_access(&self, real: &Path) -> ReadAccess {
        if self.free_reads.iter().any(|root| real.starts_with(root)) {
            ReadAccess::Free
        } else {
            ReadAccess::Outside
        }
    }

    /// The root `real` is judged under, which the native tools then act beneath: the deepest
    /// writable root (for a write) or free-read root (for a read) holding it, else `/`.
    pub(crate) fn root_of(&self, real: &Path, kind: crate::tools::AccessKind) -> PathBuf {
        let roots: &[PathBuf] = match (kind, &self.write_scope) {
            (crate::tools::AccessKind::Write, WriteScope::Roots(roots)) => roots,
            (crate::tools::AccessKind::Write, _) => &[],
            (crate::tools::AccessKind::Read, _) => &self.free_reads,
        };
        roots
            .iter()
            .filter(|root| real.starts_with(root))
            .max_by_key(|root| root.components().count())
            .cloned()
            .unwrap_or_else(|| PathBuf::from("/"))
    }

    /// Every root the native tools act beneath: the writable and free-read roots.
    pub fn roots(&self) -> Vec<&Path> {
        let writable: &[PathBuf] = match &self.write_scope {
            WriteScope::Roots(roots) => roots,
            _ => &[],
        };
        let mut roots: Vec<&Path> = writable
            .iter()
            .chain(&self.free_reads)
            .map(PathBuf::as_path)
            .collect();
        roots.dedup();
        roots
    }

    /// The writable roots, for messages.
    pub(crate) fn describe_write_scope(&self) -> String {
        match &self.write_scope {
            WriteScope::Nowhere => "nowhere (this session is read-only)".into(),
            WriteScope::Anywhere => "anywhere (full access)".into(),
            WriteScope::Roots(roots) => roots
                .iter()
                .map(|root| root.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// Which part of a git repository `real` is, when it is one git runs commands from: a `.git`
/// file (the pointer to a repository), or inside a `.git` folder its `config`, `commondir`,
/// `hooks/` or `info/` (also of a submodule under `.git/modules/`). Judged by name, so a repository made
/// during the session is covered before anything lists it.
fn git_internal(real: &Path) -> Option<&'static str> {
    let names: Vec<&std::ffi::OsStr> = real.iter().collect();
    let git = names.iter().position(|name| *name == ".git")?;
    let inside = &names[git + 1..];
    if inside.is_empty() {
        return Some("pointer file (.git)");
    }
    // The part that counts is the last repository folder's: `.git/modules/a/modules/b/hooks/x`.
    let mut rest = inside;
    while rest
        .first()
        .is_some_and(|name| *name == "modules" || *name == "worktrees")
        && rest.len() > 2
    {
        rest = &rest[2..];
    }
    match rest {
        [name, ..] if *name == "hooks" => Some("hooks"),
        [name, ..] if *name == "info" => Some("info folder"),
        [name] if *name == "config" || *name == "config.worktree" => Some("config"),
        // It moves where git reads the config and hooks from.
        [name] if *name == "commondir" => Some("commondir"),
        _ => None,
    }
}

/// A root's real location; if it cannot be resolved (a link loop), the path as given, made absolute.
fn real_or_given(base: &Path, path: &Path) -> PathBuf {
    real_path(base, path).unwrap_or_else(|_| base.join(path))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    struct Layout {
        _dir: tempfile::TempDir,
        project: PathBuf,
        config: PathBuf,
        outside: PathBuf,
    }

    fn layout() -> Layout {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let layout = Layout {
            project: root.join("project"),
            config: root.join("config"),
            outside: root.join("outside"),
            _dir: dir,
        };
        for dir in [&layout.project, &layout.config, &layout.outside] {
            std::fs::create_dir(dir).unwrap();
        }
        layout
    }

    fn policy(layout: &Layout) -> FilePolicy {
        FilePolicy::new(&layout.project).protect(&layout.config, "CONFIG_DIR")
    }

    fn write(policy: &FilePolicy, path: &str) -> WriteAccess {
        policy.write_access(&policy.locate(path).unwrap())
    }

    #[test]
    fn writes_inside_the_project_are_allowed_and_outside_refused() {
        let layout = layout();
        let policy = policy(&layout);
        assert_eq!(write(&policy, "src/new.rs"), WriteAccess::Allowed);
        assert_eq!(write(&policy, "../outside/x"), WriteAccess::Outside);
        assert_eq!(write(&policy, "/etc/passwd"), WriteAccess::Outside);
        assert_eq!(write(&policy, "src/../../outside/x"), WriteAccess::Outside);
    }

    #[test]
    fn protected_places_inside_the_roots_need_approval() {
        let layout = layout();
        let policy = policy(&layout).with_write_scope(WriteScope::Roots(vec![
            layout.project.clone(),
            layout.config.clone(),
        ]));
        assert!(matches!(
            write(&policy, ".elph/hooks.json"),
            WriteAccess::Protected { .. }
        ));
        assert!(matches!(
            write(&policy, ".git/hooks/pre-commit"),
            WriteAccess::Protected { .. }
        ));
        let trust = layout.config.join("trust.json");
        assert!(matches!(
            write(&policy, trust.to_str().unwrap()),
            WriteAccess::Protected { label } if label == "CONFIG_DIR"
        ));
        assert_eq!(write(&policy, ".elphx/file"), WriteAccess::Allowed);
    }

    #[test]
    fn links_inside_the_project_pointing_out_are_judged_by_their_target() {
        let layout = layout();
        let policy = policy(&layout);
        symlink(&layout.outside, layout.project.join("out")).unwrap();
        symlink(
            layout.config.join("trust.json"),
            layout.project.join("trust-link"),
        )
        .unwrap();
        symlink(layout.project.join(".elph"), layout.project.join("innocent")).unwrap();
        assert_eq!(write(&policy, "out/new-file"), WriteAccess::Outside);
        assert_eq!(write(&policy, "trust-link"), WriteAccess::Outside);
        assert!(matches!(
            write(&policy, "innocent/hooks.json"),
            WriteAccess::Protected { .. }
        ));
        assert_eq!(
            policy.read_access(&policy.locate("out/x").unwrap()),
            ReadAccess::Outside
        );
        assert_eq!(
            policy.read_access(&policy.locate("src/x").unwrap()),
            ReadAccess::Free
        );
    }

    #[test]
    fn scopes_nowhere_and_anywhere() {
        let layout = layout();
        let read_only = policy(&layout).with_write_scope(WriteScope::Nowhere);
        assert_eq!(write(&read_only, "src/a.rs"), WriteAccess::Outside);
        let full = policy(&layout).with_write_scope(WriteScope::Anywhere);
        assert_eq!(write(&full, "/tmp/anything"), WriteAccess::Allowed);
        let trust = layout.config.join("trust.json");
        assert!(matches!(
            write(&full, trust.to_str().unwrap()),
            WriteAccess::Protected { .. }
        ));
    }

    #[test]
    fn follows_the_sandbox_policy() {
        let layout = layout();
        let mut sandbox = SandboxPolicy::workspace(&layout.project);
        sandbox.set_temp_dir(&layout.outside);
        sandbox.add_read_only_path(&layout.config);
        let policy =
            FilePolicy::from_sandbox(&layout.project, &sandbox).protect(&layout.config, "CONFIG_DIR");
        assert_eq!(write(&policy, "a.txt"), WriteAccess::Allowed);
        let in_temp = layout.outside.join("t");
        assert_eq!(write(&policy, in_temp.to_str().unwrap()), WriteAccess::Allowed);
        assert_eq!(policy.read_access(&in_temp), ReadAccess::Free);
        assert!(matches!(write(&policy, ".elph/x"), WriteAccess::Protected { .. }));
        assert_eq!(policy.protected().len(), 3, "{:?}", policy.protected());
        assert_eq!(policy.protected()[2].label, "CONFIG_DIR");
        let read_only = FilePolicy::from_sandbox(&layout.project, &sandbox.with_mode(SandboxMode::ReadOnly));
        assert_eq!(write(&read_only, "a.txt"), WriteAccess::Outside);
        let full = FilePolicy::from_sandbox(&layout.project, &sandbox.with_mode(SandboxMode::FullAccess));
        assert_eq!(write(&full, "/tmp/x"), WriteAccess::Allowed);
    }

    #[test]
    fn any_repository_s_config_hooks_and_info_are_protected_by_name() {
        let layout = layout();
        let policy = policy(&layout);
        for path in [
            "fresh/.git/hooks/pre-commit",
            "fresh/.git/config",
            "a/b/.git/info/attributes",
            ".git/modules/sub/hooks/post-checkout",
            ".git/worktrees/w/config.worktree",
            ".git/commondir",
            "sub/.git",
        ] {
            assert!(
                matches!(write(&policy, path), WriteAccess::Protected { label } if label.contains("git repository")),
                "{path}"
            );
        }
        for path in [
            "fresh/.git/objects/ab/cd",
            ".git/index",
            ".git/refs/heads/main",
            "config",
            "hooks/x",
        ] {
            assert_eq!(write(&policy, path), WriteAccess::Allowed, "{path}");
        }
    }

    #[test]
    fn a_linked_project_folder_is_resolved_once() {
        let layout = layout();
        let alias = layout.outside.join("alias");
        symlink(&layout.project, &alias).unwrap();
        let policy = FilePolicy::new(&alias);
        assert_eq!(policy.project_dir(), layout.project);
        assert_eq!(write(&policy, "a.txt"), WriteAccess::Allowed);
        let through_alias = alias.join("a.txt");
        assert_eq!(
            write(&policy, through_alias.to_str().unwrap()),
            WriteAccess::Allowed
        );
    }
}
