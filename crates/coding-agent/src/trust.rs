//! Project trust (SPEC.md §3): `CONFIG_DIR/trust.json`, and the decision for a project folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DefaultTrust {
    #[default]
    Ask,
    Always,
    Never,
}

impl DefaultTrust {
    pub fn as_str(self) -> &'static str {
        match self {
            DefaultTrust::Ask => "ask",
            DefaultTrust::Always => "always",
            DefaultTrust::Never => "never",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error(
        "{path} is corrupt: {reason}. Fix or remove it; Elph treats every project as untrusted until then"
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
}

/// The parsed trust.json. `raw` keeps every field as read, so that a write keeps what it does not know.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrustFile {
    pub default: DefaultTrust,
    /// Keys as written in the file, with `~` and `$HOME` expanded.
    pub directories: BTreeMap<PathBuf, bool>,
    pub raw: Map<String, Value>,
}

impl TrustFile {
    /// Parses trust.json text. `home` expands `~` and `$HOME` in keys.
    pub fn parse(text: &str, home: Option<&Path>) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|err| err.to_string())?;
        let Value::Object(raw) = value else {
            return Err("expected a JSON object".into());
        };
        let default = match raw
            .get("defaultProjectTrust")
            .or_else(|| raw.get("default_project_trust"))
        {
            None => DefaultTrust::Ask,
            Some(Value::String(s)) if s == "ask" => DefaultTrust::Ask,
            Some(Value::String(s)) if s == "always" => DefaultTrust::Always,
            Some(Value::String(s)) if s == "never" => DefaultTrust::Never,
            Some(other) => {
                return Err(format!(
                    "defaultProjectTrust is {other}; expected \"ask\", \"always\" or \"never\""
                ));
            }
        };
        let mut directories = BTreeMap::new();
        match raw.get("directories") {
            None | Some(Value::Null) => {}
            Some(Value::Object(entries)) => {
                for (key, value) in entries {
                    let Value::Bool(trusted) = value else {
                        return Err(format!(
                            "directories[\"{key}\"] is {value}; expected true or false"
                        ));
                    };
                    directories.insert(expand_home(key, home), *trusted);
                }
            }
            Some(other) => {
                return Err(format!(
                    "directories is {other}; expected an object of path: true|false"
                ));
            }
        }
        Ok(TrustFile {
            default,
            directories,
            raw,
        })
    }

    /// The nearest explicit entry on the way from `project` up to `/`.
    pub fn nearest_entry(&self, project: &Path) -> Option<(&Path, bool)> {
        project.ancestors().find_map(|dir| {
            self.directories
                .get_key_value(dir)
                .map(|(path, trusted)| (path.as_path(), *trusted))
        })
    }
}

/// Expands a leading `~` or `$HOME` in a trust.json key.
pub fn expand_home(key: &str, home: Option<&Path>) -> PathBuf {
    let Some(home) = home else {
        return PathBuf::from(key);
    };
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = key.strip_prefix(prefix) {
            if rest.is_empty() {
                return home.to_path_buf();
            }
            if let Some(rest) = rest.strip_prefix('/') {
                return home.join(rest);
            }
        }
    }
    PathBuf::from(key)
}

/// What decided a project's trust.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum DecisionSource {
    /// An explicit entry for the project or one of its parents.
    Entry { path: PathBuf, trusted: bool },
    /// No entry applies: the default decided.
    Default,
    /// trust.json could not be read: nothing is trusted.
    Error { message: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustDecision {
    pub project_dir: PathBuf,
    pub trusted: bool,
    pub source: DecisionSource,
    pub default: DefaultTrust,
}

impl TrustDecision {
    /// The decision came from an explicit `false` entry (as opposed to the default).
    pub fn explicitly_untrusted(&self) -> bool {
        matches!(self.source, DecisionSource::Entry { trusted: false, .. })
    }
}

/// The trust store: `CONFIG_DIR/trust.json`.
#[derive(Clone, Debug)]
pub struct TrustStore {
    path: PathBuf,
    home: Option<PathBuf>,
}

impl TrustStore {
    pub fn new(config_dir: &Path) -> Self {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        TrustStore {
            path: config_dir.join("trust.json"),
            home,
        }
    }

    pub fn with_home(config_dir: &Path, home: Option<PathBuf>) -> Self {
        TrustStore {
            path: config_dir.join("trust.json"),
            home,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Reads trust.json; a missing file is the empty default.
    pub fn load(&self) -> Result<TrustFile, TrustError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(TrustFile::default()),
            Err(err) => {
                return Err(TrustError::Unreadable {
                    path: self.path.clone(),
                    reason: err.to_string(),
                });
            }
        };
        TrustFile::parse(&text, self.home.as_deref()).map_err(|reason| TrustError::Corrupt {
            path: self.path.clone(),
            reason,
        })
    }

    /// Decides trust for `project` (absolute and canonical).
    pub fn decide(&self, project: &Path) -> TrustDecision {
        match self.load() {
            Ok(file) => decide_with(&file, project),
            Err(err) => TrustDecision {
                project_dir: project.to_path_buf(),
                trusted: false,
                source: DecisionSource::Error {
                    message: err.to_string(),
                },
                default: DefaultTrust::Ask,
            },
        }
    }
}

/// The decision for `project` under `file`: the nearest explicit entry, else the default.
pub fn decide_with(file: &TrustFile, project: &Path) -> TrustDecision {
    let (trusted, source) = match file.nearest_entry(project) {
        Some((path, trusted)) => (
            trusted,
            DecisionSource::Entry {
                path: path.to_path_buf(),
                trusted,
            },
        ),
        None => (file.default == DefaultTrust::Always, DecisionSource::Default),
    };
    TrustDecision {
        project_dir: project.to_path_buf(),
        trusted,
        source,
        default: file.default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> TrustFile {
        TrustFile::parse(text, Some(Path::new("/home/u"))).unwrap()
    }

    #[test]
    fn nearest_entry_wins() {
        let f = file(r#"{"directories": {"/a": true, "/a/b": false, "/x": false, "/x/y": true}}"#);
        assert!(
            decide_with(&f, Path::new("/a/c")).trusted,
            "inherited from a trusted parent"
        );
        assert!(
            !decide_with(&f, Path::new("/a/b")).trusted,
            "explicit false under a trusted parent"
        );
        assert!(!decide_with(&f, Path::new("/a/b/c")).trusted);
        assert!(
            decide_with(&f, Path::new("/x/y/z")).trusted,
            "explicit true under an untrusted parent"
        );
        let d = decide_with(&f, Path::new("/a/c"));
        assert_eq!(
            d.source,
            DecisionSource::Entry {
                path: "/a".into(),
                trusted: true
            }
        );
    }

    #[test]
    fn defaults_decide_without_an_entry() {
        assert!(!decide_with(&file("{}"), Path::new("/p")).trusted);
        assert!(!decide_with(&file(r#"{"defaultProjectTrust": "ask"}"#), Path::new("/p")).trusted);
        assert!(!decide_with(&file(r#"{"defaultProjectTrust": "never"}"#), Path::new("/p")).trusted);
        let always = decide_with(&file(r#"{"defaultProjectTrust": "always"}"#), Path::new("/p"));
        assert!(always.trusted);
        assert_eq!(always.source, DecisionSource::Default);
        assert_eq!(
            file(r#"{"default_project_trust": "always"}"#).default,
            DefaultTrust::Always
        );
    }

    #[test]
    fn home_keys_expand() {
        let f = file(r#"{"directories": {"~/code": true, "$HOME/other": true, "${HOME}/third": true}}"#);
        assert!(decide_with(&f, Path::new("/home/u/code/p")).trusted);
        assert!(decide_with(&f, Path::new("/home/u/other")).trusted);
        assert!(decide_with(&f, Path::new("/home/u/third")).trusted);
        assert!(!decide_with(&f, Path::new("/home/u")).trusted);
    }

    #[test]
    fn corrupt_files_are_errors() {
        assert!(TrustFile::parse("{", None).is_err());
        assert!(TrustFile::parse("[]", None).is_err());
        assert!(TrustFile::parse(r#"{"defaultProjectTrust": "sometimes"}"#, None).is_err());
        assert!(TrustFile::parse(r#"{"directories": {"/a": "yes"}}"#, None).is_err());
    }

    #[test]
    fn store_reports_a_corrupt_file_as_untrusted_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trust.json"), "{not json").unwrap();
        let store = TrustStore::with_home(dir.path(), None);
        let decision = store.decide(Path::new("/p"));
        assert!(!decision.trusted);
        let DecisionSource::Error { message } = decision.source else {
            panic!()
        };
        assert!(message.contains("trust.json is corrupt"), "{message}");
    }
}
