//! The protected paths of a session: the places inside the writable roots from which something
//! outside the sandbox later runs code, and which the model therefore must not change. One list,
//! for the sandbox (which holds them read-only with mounts) and for the native write tools (which
//! refuse them unless the user approves the exact call) alike. docs/security.md lists them.
//!
//! What is found here:
//! - every git repository under a writable root (the project's, nested ones, a worktree's or
//!   submodule's `gitdir:` target, submodules' `.git/modules/*`), and the one a root lies in:
//!   its `config`, `hooks/`, `info/`, the folder `core.hooksPath` names, and a `.git` file (the
//!   pointer to the repository);
//! - the project's `.elph/` (the link and where it points, when it is a symlink);
//! - other agents' and editors' configuration that runs commands ([`AGENT_PATHS`]);
//! - the files the project's hooks and MCP servers run (the trust pin's files);
//! - CONFIG_DIR and DATA_DIR;
//! - `sandbox.protect` from settings.json.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::paths::Paths;

/// Files and folders at the top of each writable root that other agents and editors run commands
/// from: Claude Code's settings and hooks, MCP server lists, VS Code tasks, JetBrains run
/// configurations, direnv, husky and lefthook git hooks.
pub(crate) const AGENT_PATHS: [&str; 12] = [
    ".claude",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".envrc",
    ".husky",
    ".lefthook",
    ".lefthook.yml",
    ".lefthook.yaml",
    ".lefthook.toml",
    ".lefthook.json",
    "lefthook.yml",
];

/// At most this many folders are looked at in each writable root when searching for nested git
/// repositories (a bound on the work at the start of a session, in a home folder for example);
/// docs/security.md says so.
const MAX_FOLDERS_SEARCHED: usize = 20_000;

/// One protected path and why it is protected, in words for the refusal the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProtectedPath {
    pub(crate) path: PathBuf,
    pub(crate) why: String,
    /// Made as an empty folder when missing, so the sandbox can hold it (`.elph/`, `hooks/`).
    pub(crate) make_folder: bool,
}

/// Every protected path of a session with these writable roots.
pub(crate) fn protected_paths(
    paths: &Paths,
    writable_roots: &[PathBuf],
    user_protect: &[PathBuf],
) -> Vec<ProtectedPath> {
    let mut found = Found::default();
    let project = &paths.project_dir;
    let elph = project.join(".elph");
    found.add(&elph, ELPH_WHY, true);
    if let Ok(real) = std::fs::canonicalize(&elph)
        && real != elph
    {
        found.add(&real, ELPH_WHY, false);
    }
    let mut roots: Vec<&Path> = vec![project.as_path()];
    roots.extend(writable_roots.iter().map(PathBuf::as_path));
    for root in &roots {
        for name in AGENT_PATHS {
            found.add(
                &root.join(name),
                &format!("{name}: another agent's or editor's configuration, which runs commands outside the sandbox"),
                false,
            );
        }
    }
    for root in &roots {
        // A repository a command makes here (`git init && … > .git/hooks/pre-commit`) would be
        // the model's to configure. An empty `.git` folder stands in for it, held read-only: git
        // takes an empty `.git` for no repository and looks further up, as it did before.
        // (Deeper, a repository made in the session is refused after the command: `repositories`
        // in elph-process.)
        let dot_git = root.join(".git");
        let folder_or_missing = std::fs::symlink_metadata(&dot_git).map_or(true, |m| m.is_dir());
        if folder_or_missing && gitdir_of(&dot_git).is_none() {
            found.add(&dot_git, PLACEHOLDER_WHY, true);
        }
        if let Some(gitdir) = enclosing_repository(root) {
            protect_repository(&mut found, &gitdir);
        }
        let (gitdirs, pointers) = repositories_under(root);
        for gitdir in gitdirs {
            protect_repository(&mut found, &gitdir);
        }
        for pointer in pointers {
            found.add(&pointer, &git_why("pointer file (.git: gitdir)"), false);
        }
    }
    for file in crate::trust::pins::Fingerprint::of(project).files.keys() {
        let path = project.join(file);
        if path.exists() {
            found.add(
                &path,
                "a file the project's hooks or MCP servers run or read, outside the sandbox (pinned by elph trust)",
                false,
            );
        }
    }
    for file in files_hooks_and_servers_run(paths) {
        found.add(
            &file,
            "a file Elph's hooks or MCP servers run, outside the sandbox (named in hooks.json or mcp.json)",
            false,
        );
    }
    found.add(
        &paths.config_dir,
        "CONFIG_DIR (Elph's trust, hooks and settings)",
        false,
    );
    found.add(&paths.data_dir, "DATA_DIR (Elph's sessions and logs)", false);
    for path in user_protect {
        found.add(path, "protected by sandbox.protect in settings.json", false);
    }
    found.0
}

/// Why the empty `.git` at the top of a root that is no repository is held.
pub(crate) const PLACEHOLDER_WHY: &str = "the place of a git repository, which the session must not \
     make (git runs a repository's hooks and the commands its config names outside the sandbox, the \
     next time you use git there)";

const ELPH_WHY: &str = "the project's .elph folder (hooks, MCP servers and settings run from it)";

#[derive(Default)]
struct Found(Vec<ProtectedPath>);

impl Found {
    fn add(&mut self, path: &Path, why: &str, make_folder: bool) {
        if self.0.iter().any(|known| known.path == path) {
            return;
        }
        self.0.push(ProtectedPath {
            path: path.to_path_buf(),
            why: why.to_string(),
            make_folder,
        });
    }
}

fn git_why(what: &str) -> String {
    format!(
        "a git repository's {what} (git runs what it names outside the sandbox, the next time you use git)"
    )
}

/// Protects one repository's `config`, `hooks/`, `info/`, its hooks folder, and its submodules'.
fn protect_repository(found: &mut Found, gitdir: &Path) {
    // A linked worktree's own folder holds `config.worktree`; the shared one holds the rest.
    let common = common_dir(gitdir);
    for dir in [gitdir, common.as_path()] {
        found.add(&dir.join("config"), &git_why("config"), false);
        // Only when present: a worktree's own config exists only once `extensions.worktreeConfig`
        // is set, which takes writing `config`, which is held.
        if dir.join("config.worktree").exists() {
            found.add(&dir.join("config.worktree"), &git_why("config"), false);
        }
        // A `commondir` moves where git reads the config and hooks from; a new one is refused
        // after the command (`repositories` in elph-process).
        if dir.join("commondir").exists() {
            found.add(&dir.join("commondir"), &git_why("commondir"), false);
        }
        found.add(&dir.join("hooks"), &git_why("hooks"), true);
        found.add(&dir.join("info"), &git_why("info folder"), true);
    }
    let work_tree = common.parent().map(Path::to_path_buf).unwrap_or_default();
    if let Some(hooks_path) = hooks_path(&common.join("config")) {
        let folder = if hooks_path.is_absolute() {
            hooks_path
        } else {
            work_tree.join(hooks_path)
        };
        found.add(&folder, &git_why("core.hooksPath folder"), false);
    }
    if let Ok(modules) = std::fs::read_dir(common.join("modules")) {
        for module in modules.flatten() {
            let path = module.path();
            if path.join("config").is_file() {
                protect_repository(found, &path);
            }
        }
    }
}

/// The shared repository folder of a linked worktree's git folder (its `commondir`), or itself.
fn common_dir(gitdir: &Path) -> PathBuf {
    std::fs::read_to_string(gitdir.join("commondir"))
        .ok()
        .map(|text| gitdir.join(text.trim()))
        .and_then(|path| std::fs::canonicalize(path).ok())
        .unwrap_or_else(|| gitdir.to_path_buf())
}

/// The repository folder a `.git` entry stands for: the folder itself, or the target of a
/// `gitdir: PATH` file (worktrees and submodules).
fn gitdir_of(dot_git: &Path) -> Option<PathBuf> {
    let metadata = std::fs::symlink_metadata(dot_git).ok()?;
    if metadata.is_dir() {
        // An empty `.git` (Elph's stand-in) is no repository for git either.
        if std::fs::symlink_metadata(dot_git.join("HEAD")).is_err() {
            return None;
        }
        return std::fs::canonicalize(dot_git).ok();
    }
    let text = std::fs::read_to_string(dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let parent = dot_git.parent()?;
    std::fs::canonicalize(parent.join(target)).ok()
}

/// The repository `root` lies inside, if any (its `.git` is above the root).
fn enclosing_repository(root: &Path) -> Option<PathBuf> {
    root.ancestors()
        .skip(1)
        .find_map(|dir| gitdir_of(&dir.join(".git")))
}

/// Every repository under `root`, and every `.git` file pointing at one (a worktree's or a
/// submodule's, which the model must not redirect), breadth first, up to
/// [`MAX_FOLDERS_SEARCHED`] folders; links are not followed, nor is a repository's own folder
/// searched.
fn repositories_under(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut found = Vec::new();
    let mut pointers = Vec::new();
    let mut queue = VecDeque::from([root.to_path_buf()]);
    let mut searched = 0;
    while let Some(dir) = queue.pop_front() {
        searched += 1;
        if searched > MAX_FOLDERS_SEARCHED {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if name == ".git" {
                if kind.is_file() {
                    pointers.push(entry.path());
                }
                if let Some(gitdir) = gitdir_of(&entry.path())
                    && !found.contains(&gitdir)
                {
                    found.push(gitdir);
                }
            } else if kind.is_dir() {
                queue.push_back(entry.path());
            }
        }
    }
    (found, pointers)
}

/// `core.hooksPath` of one git config file (the last one wins, as in git); `~/` is HOME.
fn hooks_path(config: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut value = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        if let Some((key, raw)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("hookspath")
        {
            let raw = raw.trim().trim_matches('"');
            value = Some(match raw.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME").map(PathBuf::from)?.join(rest),
                None => PathBuf::from(raw),
            });
        }
    }
    value
}

/// The files Elph's hooks and MCP servers run, as their configuration names them: each `command`
/// and each argument (or an argument's `--opt=VALUE`) naming an existing file, relative to the
/// folder the configuration lives in or to the project, `~/` under HOME. Home hooks and servers
/// run in every project, so a script of theirs inside a writable root is protected too.
fn files_hooks_and_servers_run(paths: &Paths) -> Vec<PathBuf> {
    let project = &paths.project_dir;
    let elph = project.join(".elph");
    // (file, folders its relative names resolve against, whether it is an MCP file: those may
    // hold comments, and are read as their loader reads them)
    let sources: [(PathBuf, Vec<&Path>, bool); 4] = [
        (
            paths.config_dir.join("hooks.json"),
            vec![paths.config_dir.as_path()],
            false,
        ),
        (
            paths.config_dir.join("mcp.json"),
            vec![paths.config_dir.as_path()],
            true,
        ),
        (
            elph.join("hooks.json"),
            vec![project.as_path(), elph.as_path()],
            false,
        ),
        (
            elph.join("mcp.json"),
            vec![project.as_path(), elph.as_path()],
            true,
        ),
    ];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut found = Vec::new();
    for (file, bases, mcp) in &sources {
        let Ok(Some(bytes)) = elph_config::read_config(file) else {
            continue;
        };
        let parsed = if *mcp {
            crate::mcp::file::parse_jsonc(&bytes)
        } else {
            elph_config::parse_json(&bytes)
        };
        let Ok(value) = parsed else {
            continue;
        };
        let mut entries: Vec<&serde_json::Value> = value
            .get("hooks")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        for key in ["mcpServers", "servers"] {
            entries.extend(
                value
                    .get(key)
                    .and_then(serde_json::Value::as_object)
                    .into_iter()
                    .flat_map(|m| m.values()),
            );
        }
        for entry in entries {
            let words = entry
                .get("command")
                .into_iter()
                .chain(
                    entry
                        .get("args")
                        .and_then(serde_json::Value::as_array)
                        .into_iter()
                        .flatten(),
                )
                .filter_map(serde_json::Value::as_str);
            for word in words {
                let value = word.split_once('=').map(|(_, value)| value);
                let mut candidates = Vec::new();
                for word in std::iter::once(word).chain(value) {
                    match (word.strip_prefix("~/"), &home) {
                        (Some(rest), Some(home)) => candidates.push(home.join(rest)),
                        _ if Path::new(word).is_absolute() => candidates.push(PathBuf::from(word)),
                        _ => candidates.extend(bases.iter().map(|base| base.join(word))),
                    }
                }
                for candidate in candidates {
                    if candidate.is_file() && !found.contains(&candidate) {
                        found.push(candidate);
                    }
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_repositories_worktree_pointers_hooks_paths_and_submodules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let git = root.join(".git");
        std::fs::create_dir_all(git.join("modules/lib/hooks")).unwrap();
        std::fs::write(git.join("modules/lib/config"), "").unwrap();
        std::fs::write(
            git.join("config"),
            "[core]\n\tbare = false\n[Core]\n\thooksPath = \"tools/hooks\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("deep/er/nested/.git")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere/.git/worktrees/wt")).unwrap();
        std::fs::write(root.join("elsewhere/.git/worktrees/wt/commondir"), "../..").unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(root.join("wt/.git"), "gitdir: ../elsewhere/.git/worktrees/wt\n").unwrap();
        for repository in [
            &git,
            &root.join("deep/er/nested/.git"),
            &root.join("elsewhere/.git"),
        ] {
            std::fs::write(repository.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        // An empty `.git` is no repository: it is held as the place of one.
        std::fs::create_dir_all(root.join("empty/.git")).unwrap();
        let paths = Paths {
            config_dir: root.join("cfg"),
            data_dir: root.join("data"),
            project_dir: root.clone(),
        };
        let found = protected_paths(&paths, &[], &[root.join("mine")]);
        let has = |path: PathBuf| found.iter().any(|p| p.path == path);
        assert!(has(git.join("config")) && has(git.join("hooks")) && has(git.join("info")));
        assert!(has(root.join("tools/hooks")), "core.hooksPath");
        assert!(has(git.join("modules/lib/config")) && has(git.join("modules/lib/hooks")));
        assert!(has(root.join("deep/er/nested/.git/hooks")));
        assert!(has(root.join("wt/.git")), "a worktree's pointer");
        assert!(has(root.join("elsewhere/.git/worktrees/wt/hooks")));
        assert!(
            has(root.join("elsewhere/.git/config")),
            "the worktree's shared repository"
        );
        assert!(has(root.join(".claude")) && has(root.join(".mcp.json")) && has(root.join(".envrc")));
        assert!(has(root.join("mine")) && has(root.join("cfg")) && has(root.join("data")));
        assert!(!has(root.join("deep")), "a plain folder is not protected");
        assert!(
            has(root.join("elsewhere/.git/worktrees/wt/commondir")),
            "a worktree's commondir"
        );
        assert!(
            !has(root.join("empty/.git/hooks")),
            "an empty .git is no repository"
        );
    }

    #[test]
    fn finds_the_files_hooks_and_servers_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let project = root.join("project");
        let config = root.join("cfg");
        std::fs::create_dir_all(project.join(".elph")).unwrap();
        std::fs::create_dir_all(project.join("tools")).unwrap();
        std::fs::create_dir_all(&config).unwrap();
        for file in ["tools/hook.py", "tools/server.js", "tools/rules.txt"] {
            std::fs::write(project.join(file), "").unwrap();
        }
        std::fs::write(root.join("home-hook.sh"), "").unwrap();
        std::fs::write(
            project.join(".elph/hooks.json"),
            r#"{"hooks": [{"command": "/usr/bin/python3", "args": ["tools/hook.py", "--rules=tools/rules.txt"]}]}"#,
        )
        .unwrap();
        std::fs::write(
            project.join(".elph/mcp.json"),
            r#"{"mcpServers": {"s": {"command": "node", "args": ["tools/server.js"]}}}"#,
        )
        .unwrap();
        let home_hook = root.join("home-hook.sh");
        std::fs::write(
            config.join("hooks.json"),
            format!(r#"{{"hooks": [{{"command": "{}"}}]}}"#, home_hook.display()),
        )
        .unwrap();
        let paths = Paths {
            config_dir: config,
            data_dir: root.join("data"),
            project_dir: project.clone(),
        };
        let found = files_hooks_and_servers_run(&paths);
        for file in [
            project.join("tools/hook.py"),
            project.join("tools/server.js"),
            project.join("tools/rules.txt"),
            home_hook,
        ] {
            assert!(found.contains(&file), "{file:?} in {found:?}");
        }
    }
}
