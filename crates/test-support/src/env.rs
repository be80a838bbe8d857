//! A hermetic layout for CLI tests: HOME, CONFIG_DIR, DATA_DIR and a project folder in one temp dir.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub struct TestEnv {
    pub root: tempfile::TempDir,
    pub home: PathBuf,
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
    /// Canonical, as Elph sees it.
    pub project: PathBuf,
}

impl Default for TestEnv {
    fn default() -> Self {
        TestEnv::new()
    }
}

impl TestEnv {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        let home = root.path().join("home");
        let config_dir = root.path().join("config");
        let data_dir = root.path().join("data");
        let project = root.path().join("project");
        for dir in [&home, &config_dir, &project] {
            std::fs::create_dir_all(dir).expect("create test folder");
        }
        let project = std::fs::canonicalize(&project).expect("canonical project");
        TestEnv {
            root,
            home,
            config_dir,
            data_dir,
            project,
        }
    }

    /// Records the project as trusted in trust.json.
    pub fn trust_project(&self) {
        let trust = serde_json::json!({ "directories": { self.project.display().to_string(): true } });
        std::fs::write(self.config_dir.join("trust.json"), trust.to_string()).expect("write trust.json");
    }

    pub fn write_project_hooks(&self, hooks: &Value) {
        let dir = self.project.join(".elph");
        std::fs::create_dir_all(&dir).expect("create .elph");
        std::fs::write(
            dir.join("hooks.json"),
            serde_json::to_string_pretty(hooks).unwrap(),
        )
        .expect("write hooks.json");
    }

    pub fn write_home_hooks(&self, hooks: &Value) {
        std::fs::write(
            self.config_dir.join("hooks.json"),
            serde_json::to_string_pretty(hooks).unwrap(),
        )
        .expect("write hooks.json");
    }

    /// Writes an executable `#!/bin/sh` script under `PROJECT/.elph/hooks/` and returns its path.
    pub fn project_script(&self, name: &str, body: &str) -> PathBuf {
        let dir = self.project.join(".elph").join("hooks");
        crate::hook_scripts::write_script(&dir, name, body)
    }

    /// A file under the temp root (outside the project) for hooks to write evidence into.
    pub fn evidence(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// A command for `bin` with a cleared environment: HOME, ELPH_HOME, ELPH_DATA_DIR, PATH, and the
    /// project as the working directory; and `ELPH_SPAWN` when the tests run with it, so that CI
    /// can run the whole suite with every child started through the fork (`ELPH_SPAWN=fork`).
    pub fn command(&self, bin: &Path) -> Command {
        let mut command = Command::new(bin);
        command
            .env_clear()
            .env("HOME", &self.home)
            .env("ELPH_HOME", &self.config_dir)
            .env("ELPH_DATA_DIR", &self.data_dir)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(&self.project);
        if let Some(path) = std::env::var_os("ELPH_SPAWN") {
            command.env("ELPH_SPAWN", path);
        }
        command
    }
}

/// Reads a file of JSON lines (none when the file does not exist yet).
///
/// The file may be being appended to while it is read (a hook or server still writing its
/// evidence): an unterminated last line that is not yet valid JSON is a write in progress and is
/// left out; every complete line must be valid JSON.
pub fn json_lines(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let (complete, tail) = match bytes.iter().rposition(|&byte| byte == b'\n') {
        Some(end) => bytes.split_at(end + 1),
        None => (&[][..], &bytes[..]),
    };
    let complete =
        std::str::from_utf8(complete).unwrap_or_else(|err| panic!("{} is not UTF-8: {err}", path.display()));
    let mut values: Vec<Value> = complete
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("bad JSON line {line:?}: {err}")))
        .collect();
    let tail = String::from_utf8_lossy(tail);
    if !tail.trim().is_empty()
        && let Ok(value) = serde_json::from_str(&tail)
    {
        values.push(value);
    }
    values
}

#[cfg(test)]
mod tests {
    use super::json_lines;
    use serde_json::json;

    #[test]
    fn json_lines_leaves_out_a_line_still_being_written_but_not_a_bad_complete_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        assert!(json_lines(&path).is_empty(), "no file yet: no lines");
        std::fs::write(&path, "{\"n\":1}\n{\"n\":2,\"te").unwrap();
        assert_eq!(
            json_lines(&path),
            [json!({"n": 1})],
            "the half-written line is left out"
        );
        std::fs::write(&path, "{\"n\":1}\n{\"n\":2}").unwrap();
        assert_eq!(
            json_lines(&path),
            [json!({"n": 1}), json!({"n": 2})],
            "a complete last line counts"
        );
        std::fs::write(&path, "{\"n\":1\n{\"n\":2}\n").unwrap();
        let bad = std::panic::catch_unwind(|| json_lines(&path));
        assert!(bad.is_err(), "a complete line that is not JSON is an error");
    }
}
