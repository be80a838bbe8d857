//! Where Elph's files live (docs/cli.md, "Paths"): CONFIG_DIR, DATA_DIR and PROJECT_DIR.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    #[error("cannot find a home folder: set HOME (an absolute path), or ELPH_HOME and ELPH_DATA_DIR")]
    NoHome,
    // The OS error is in the message and deliberately not a `source`: anyhow's chain would print
    // it a second time.
    #[error("project folder {path} cannot be used: {error}")]
    Project { path: PathBuf, error: std::io::Error },
    #[error("project folder {0} is not a directory")]
    NotADirectory(PathBuf),
}

/// The three folders every front end works with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
    /// Absolute and canonical.
    pub project_dir: PathBuf,
}

impl Paths {
    /// Resolves the paths from the process environment and the `--cwd` flag. A relative value of
    /// one of [`FOLDER_VARIABLES`] is ignored, with a warning on stderr (once per process).
    pub(crate) fn from_env(cwd_flag: Option<&Path>) -> Result<Self, PathsError> {
        let env = |name: &str| std::env::var(name).ok();
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            for warning in ignored_variables(&env) {
                eprintln!("elph: warning: {warning}");
            }
        });
        Self::resolve(cwd_flag, &env)
    }

    /// Resolves the paths with `env` standing in for the environment, so tests stay hermetic.
    pub fn resolve(
        cwd_flag: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, PathsError> {
        let config_dir = config_dir(env)?;
        let data_dir = data_dir(env)?;
        let project = match (cwd_flag, absolute_variable(env, "ELPH_PROJECT_DIR")) {
            (Some(dir), _) => dir.to_path_buf(),
            (None, Some(dir)) => PathBuf::from(dir),
            (None, None) => PathBuf::from("."),
        };
        let project_dir = canonical_project(&project)?;
        Ok(Paths {
            config_dir,
            data_dir,
            project_dir,
        })
    }

    /// The same CONFIG_DIR and DATA_DIR with another project (ACP sessions each have their own).
    pub(crate) fn with_project(&self, project: &Path) -> Result<Self, PathsError> {
        Ok(Paths {
            project_dir: canonical_project(project)?,
            ..self.clone()
        })
    }

    pub fn home_hooks_file(&self) -> PathBuf {
        self.config_dir.join("hooks.json")
    }

    pub fn project_hooks_file(&self) -> PathBuf {
        self.project_dir.join(".elph").join("hooks.json")
    }

    pub fn trust_file(&self) -> PathBuf {
        self.config_dir.join("trust.json")
    }

    pub(crate) fn logs_dir(&self) -> PathBuf {
        self.data_dir.join("logs")
    }
}

/// The variables that name Elph's folders. Each is used only when it holds an absolute path.
pub(crate) const FOLDER_VARIABLES: [&str; 6] = [
    "ELPH_HOME",
    "XDG_CONFIG_HOME",
    "ELPH_DATA_DIR",
    "XDG_DATA_HOME",
    "ELPH_PROJECT_DIR",
    "HOME",
];

/// The value of `name` when it is an absolute path; `None` when unset, empty or relative.
///
/// A relative value is ignored, as the XDG Base Directory spec says: it would resolve against
/// whatever folder Elph was started in, so `XDG_CONFIG_HOME=.config` in an untrusted repository would
/// make the repository's files the user's own hooks and trust decisions.
pub(crate) fn absolute_variable(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|value| Path::new(value).is_absolute())
}

/// One warning for each folder variable that is set to a relative path, and so ignored.
pub(crate) fn ignored_variables(env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    FOLDER_VARIABLES
        .iter()
        .filter_map(|name| {
            let value = env(name).filter(|value| !value.is_empty())?;
            (!Path::new(&value).is_absolute()).then(|| {
                format!(
                    "ignoring {name}=\"{}\": it is a relative path, and Elph uses only absolute ones for its \
                     folders; set it to an absolute path",
                    crate::terminal_text::escape(&value)
                )
            })
        })
        .collect()
}

fn config_dir(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, PathsError> {
    if let Some(dir) = absolute_variable(env, "ELPH_HOME") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = absolute_variable(env, "XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(dir).join("elph"));
    }
    let home = absolute_variable(env, "HOME").ok_or(PathsError::NoHome)?;
    Ok(PathBuf::from(home).join(".config").join("elph"))
}

fn data_dir(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, PathsError> {
    if let Some(dir) = absolute_variable(env, "ELPH_DATA_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = absolute_variable(env, "XDG_DATA_HOME") {
        return Ok(PathBuf::from(dir).join("elph"));
    }
    let home = absolute_variable(env, "HOME").ok_or(PathsError::NoHome)?;
    Ok(PathBuf::from(home).join(".local").join("share").join("elph"))
}

fn canonical_project(path: &Path) -> Result<PathBuf, PathsError> {
    let canonical = std::fs::canonicalize(path).map_err(|error| PathsError::Project {
        path: path.to_path_buf(),
        error,
    })?;
    if !canonical.is_dir() {
        return Err(PathsError::NotADirectory(canonical));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn elph_home_wins_then_xdg_then_home() {
        let project = tempfile::tempdir().unwrap();
        let cwd = Some(project.path());
        let all = env_of(&[("ELPH_HOME", "/e"), ("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(Paths::resolve(cwd, &all).unwrap().config_dir, PathBuf::from("/e"));
        let xdg = env_of(&[("ELPH_HOME", ""), ("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(
            Paths::resolve(cwd, &xdg).unwrap().config_dir,
            PathBuf::from("/x/elph")
        );
        let home = env_of(&[("HOME", "/h")]);
        let paths = Paths::resolve(cwd, &home).unwrap();
        assert_eq!(paths.config_dir, PathBuf::from("/h/.config/elph"));
        assert_eq!(paths.data_dir, PathBuf::from("/h/.local/share/elph"));
        let data = env_of(&[("HOME", "/h"), ("ELPH_DATA_DIR", "/d"), ("XDG_DATA_HOME", "/xd")]);
        assert_eq!(Paths::resolve(cwd, &data).unwrap().data_dir, PathBuf::from("/d"));
        let xdg_data = env_of(&[("HOME", "/h"), ("XDG_DATA_HOME", "/xd")]);
        assert_eq!(
            Paths::resolve(cwd, &xdg_data).unwrap().data_dir,
            PathBuf::from("/xd/elph")
        );
    }

    #[test]
    fn project_is_flag_then_env_and_canonical() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let env = env_of(&[("HOME", "/h"), ("ELPH_PROJECT_DIR", link.to_str().unwrap())]);
        let canonical = std::fs::canonicalize(&real).unwrap();
        assert_eq!(Paths::resolve(None, &env).unwrap().project_dir, canonical);
        let other = tempfile::tempdir().unwrap();
        let flagged = Paths::resolve(Some(other.path()), &env).unwrap();
        assert_eq!(flagged.project_dir, std::fs::canonicalize(other.path()).unwrap());
    }

    #[test]
    fn missing_project_and_missing_home_are_clear_errors() {
        let err = Paths::resolve(Some(Path::new("/no/such/dir")), &env_of(&[("HOME", "/h")])).unwrap_err();
        assert!(err.to_string().contains("/no/such/dir"), "{err}");
        let err = Paths::resolve(Some(Path::new("/")), &env_of(&[])).unwrap_err();
        assert!(matches!(err, PathsError::NoHome));
    }
}
