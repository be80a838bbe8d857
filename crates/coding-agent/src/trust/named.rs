//! The project files a command line names, for pinning (docs/trust.md, "What is pinned"): the
//! program itself (written as a path, or a bare name found through a PATH entry inside the project),
//! every argument naming an existing file (also the `path` of `--opt=path`), the module of
//! `python -m pkg.mod` as far as it resolves in the project, and the words of a `sh -c` script that
//! name existing project files. What a program opens at run time cannot be seen from its command
//! line; [`Named::unseen`] says so in words, for the trust question and `elph trust --status`.

use std::path::{Path, PathBuf};

/// What one command line names.
#[derive(Debug, Default)]
pub(crate) struct Named {
    /// Existing regular files inside the project, canonical.
    pub files: Vec<PathBuf>,
    /// What is not pinned, in words (each names `label`).
    pub unseen: Vec<String>,
    /// Every place looked at for a file, found or not (before symlinks are followed): a file
    /// created, removed or changed at one of them can change what is named (see `watch`).
    pub probed: Vec<PathBuf>,
}

/// Interpreters: a command line running one of these runs code that can load more at run time.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "fish", "python", "python3", "node", "deno", "bun", "ruby", "perl",
    "php", "lua", "Rscript", "uv", "npx", "env",
];

const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

/// The files inside `project` (canonical) that `command args`, run from `project` with the command
/// resolved as hooks and servers resolve it (a path with `/` against `folder`, a bare name through
/// the absolute entries of `path_var`), names. `label` says whose command line it is.
pub(crate) fn named_files(
    label: &str,
    command: &str,
    args: &[String],
    project: &Path,
    folder: &Path,
    path_var: &str,
) -> Named {
    let mut named = Named::default();
    if !command.contains('/') {
        named.probe_path_var(command, path_var);
    }
    let program = crate::hooks::discovery::resolve_command(command, folder, path_var).path;
    let program_in_project = named.take(project, &program);
    let name = program
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let interpreted = INTERPRETERS.contains(&name.as_str()) || INTERPRETERS.contains(&base);
    let mut args_iter = args.iter().peekable();
    while let Some(arg) = args_iter.next() {
        if base == "python" && arg.starts_with("-m") {
            let module = match arg.strip_prefix("-m").filter(|rest| !rest.is_empty()) {
                Some(module) => Some(module.to_string()),
                None => args_iter.next().cloned(),
            };
            if let Some(module) = module {
                named.python_module(project, &module);
            }
            continue;
        }
        if SHELLS.contains(&base) && arg.starts_with('-') && !arg.starts_with("--") && arg.contains('c') {
            if let Some(script) = args_iter.next() {
                named.script_words(project, script, path_var);
            }
            continue;
        }
        named.path_word(project, folder, arg);
    }
    if interpreted || program_in_project {
        named.unseen.push(format!(
            "files that {label} sources, imports or opens at run time beyond those named on its command line"
        ));
    }
    named
}

/// The files inside `project` that the values of a hook's `env` name (a value as a whole, or
/// each part of a `:`-separated list such as `PYTHONPATH`), relative to the project or `folder`:
/// a variable can point a tool at a file it then runs (`BASH_ENV`, `NODE_OPTIONS=--require=…`).
pub(crate) fn named_in_env<'a>(
    values: impl IntoIterator<Item = &'a str>,
    project: &Path,
    folder: &Path,
) -> Named {
    let mut named = Named::default();
    for value in values {
        for word in std::iter::once(value)
            .chain(value.split(':'))
            .chain(value.split_whitespace())
        {
            if !word.is_empty() {
                named.path_word(project, folder, word);
            }
        }
    }
    named
}

impl Named {
    /// Pins `path` if it is an existing regular file inside the project; true when it is.
    fn take(&mut self, project: &Path, path: &Path) -> bool {
        if !self.probed.iter().any(|probed| probed == path) {
            self.probed.push(path.to_path_buf());
        }
        let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if resolved.starts_with(project) && resolved.is_file() {
            if !self.files.contains(&resolved) {
                self.files.push(resolved);
            }
            return true;
        }
        false
    }

    /// An argument that may name a file: as written (relative to the project, where the command
    /// runs, or to `folder`), or the value of `--opt=path`.
    fn path_word(&mut self, project: &Path, folder: &Path, word: &str) {
        let mut candidates = vec![word];
        if let Some((_, value)) = word.split_once('=')
            && !value.is_empty()
        {
            candidates.push(value);
        }
        for candidate in candidates {
            let written = Path::new(candidate);
            if written.is_absolute() {
                self.take(project, written);
            } else {
                self.take(project, &project.join(written));
                self.take(project, &folder.join(written));
            }
        }
    }

    /// Where a bare command name is looked for: each absolute PATH entry, in order, up to the one
    /// it is found in. The entries after that one cannot change what runs unless one of these
    /// changes first (a file appears, goes, or gains an execute bit), which the watch sees; and
    /// each probed path is one `stat` before every run of a project hook.
    fn probe_path_var(&mut self, name: &str, path_var: &str) {
        for dir in std::env::split_paths(path_var).filter(|dir| dir.is_absolute()) {
            let candidate = dir.join(name);
            let found = crate::hooks::discovery::is_executable(&candidate);
            if !self.probed.contains(&candidate) {
                self.probed.push(candidate);
            }
            if found {
                break;
            }
        }
    }

    /// `python -m a.b.c`: `a/__init__.py`, `a/b/__init__.py`, and `a/b/c.py` or the package
    /// `a/b/c/` (`__init__.py`, `__main__.py`), as far as they exist in the project.
    fn python_module(&mut self, project: &Path, module: &str) {
        let parts: Vec<&str> = module.split('.').filter(|part| !part.is_empty()).collect();
        let mut dir = project.to_path_buf();
        for (index, part) in parts.iter().enumerate() {
            if index + 1 == parts.len() {
                self.take(project, &dir.join(format!("{part}.py")));
                self.take(project, &dir.join(part).join("__init__.py"));
                self.take(project, &dir.join(part).join("__main__.py"));
            } else {
                dir.push(part);
                self.take(project, &dir.join("__init__.py"));
            }
        }
    }

    /// The words of a shell script that name existing project files: paths (also after `=` and
    /// after `$CLAUDE_PROJECT_DIR/`), and bare command names found through a PATH entry inside the
    /// project.
    fn script_words(&mut self, project: &Path, script: &str, path_var: &str) {
        for word in script
            .split(|c: char| c.is_whitespace() || "|&;<>()`".contains(c))
            .map(|word| word.replace(['"', '\''], ""))
            .filter(|word| !word.is_empty())
        {
            let word = ["$CLAUDE_PROJECT_DIR/", "${CLAUDE_PROJECT_DIR}/"]
                .iter()
                .find_map(|prefix| word.strip_prefix(prefix))
                .unwrap_or(&word);
            if !word.contains('/') {
                self.probe_path_var(word, path_var);
                let found = std::env::split_paths(path_var)
                    .filter(|dir| dir.is_absolute())
                    .map(|dir| dir.join(word))
                    .find(|candidate| crate::hooks::discovery::is_executable(candidate));
                if let Some(found) = found {
                    self.take(project, &found);
                }
            }
            self.path_word(project, project, word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        for file in [
            "tools/hook.py",
            "tools/lib.sh",
            "pkg/__init__.py",
            "pkg/sub/__init__.py",
            "pkg/sub/run.py",
            "conf/rules.toml",
            "bin/guard",
        ] {
            let path = project.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x").unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(project.join("bin/guard"), std::fs::Permissions::from_mode(0o755)).unwrap();
        (dir, project)
    }

    fn names(project: &Path, command: &str, args: &[&str], path_var: &str) -> Vec<String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let mut found: Vec<String> = named_files(
            "hook h",
            command,
            &args,
            project,
            &project.join(".elph"),
            path_var,
        )
        .files
        .iter()
        .map(|path| path.strip_prefix(project).unwrap().display().to_string())
        .collect();
        found.sort();
        found
    }

    #[test]
    fn each_form_of_command_line_names_its_files() {
        let (_dir, project) = project();
        assert_eq!(
            names(&project, "/usr/bin/python3", &["tools/hook.py"], "/usr/bin"),
            ["tools/hook.py"]
        );
        assert_eq!(
            names(&project, "/bin/x", &["--config=conf/rules.toml"], ""),
            ["conf/rules.toml"]
        );
        assert_eq!(
            names(&project, "/usr/bin/python3", &["-m", "pkg.sub.run"], ""),
            ["pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/run.py"]
        );
        assert_eq!(
            names(
                &project,
                "/bin/sh",
                &[
                    "-c",
                    "source tools/lib.sh && python3 \"$CLAUDE_PROJECT_DIR\"/tools/hook.py"
                ],
                ""
            ),
            ["tools/hook.py", "tools/lib.sh"]
        );
        let path_var = format!("/usr/bin:{}", project.join("bin").display());
        assert_eq!(names(&project, "guard", &[], &path_var), ["bin/guard"]);
        assert_eq!(
            names(&project, "/bin/sh", &["-c", "guard --fast"], &path_var),
            ["bin/guard"]
        );
        assert_eq!(
            names(&project, "/bin/true", &["../outside", "/etc/hostname"], ""),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_bare_name_is_watched_in_the_path_entries_up_to_the_one_it_runs_from() {
        let (_dir, project) = project();
        let entries: Vec<PathBuf> = ["early", "bin", "late"]
            .iter()
            .map(|entry| project.join(entry))
            .collect();
        let path_var = std::env::join_paths(&entries).unwrap().into_string().unwrap();
        let probed =
            |command: &str| named_files("hook g", command, &[], &project, &project, &path_var).probed;
        let guard = project.join("bin/guard");
        assert_eq!(
            probed("guard"),
            [project.join("early/guard"), guard.clone()],
            "where a new `guard` would run instead, and the one that runs; never a later entry"
        );
        // Not executable: the search goes on past it, and so does the watch.
        std::fs::create_dir_all(project.join("early")).unwrap();
        std::fs::write(project.join("early/guard"), "#!/bin/sh\n").unwrap();
        assert_eq!(probed("guard"), [project.join("early/guard"), guard]);
        assert_eq!(
            probed("missing")[..entries.len()],
            entries
                .iter()
                .map(|entry| entry.join("missing"))
                .collect::<Vec<_>>(),
            "a name found nowhere is watched in every entry"
        );
    }

    #[test]
    fn interpreters_and_project_programs_say_what_is_not_seen() {
        let (_dir, project) = project();
        let python = named_files(
            "hook h",
            "/usr/bin/python3",
            &["tools/hook.py".into()],
            &project,
            &project,
            "",
        );
        assert_eq!(python.unseen.len(), 1);
        assert!(
            python.unseen[0].contains("hook h sources, imports or opens"),
            "{:?}",
            python.unseen
        );
        let true_ = named_files("hook t", "/bin/true", &[], &project, &project, "");
        assert!(true_.unseen.is_empty());
    }
}
