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
    /// project as the working directory.
    pub fn command(&self, bin: &Path) -> Command {
        let mut command = Command::new(bin);
        command
            .env_clear()
            .env("HOME", &self.home)
            .env("ELPH_HOME", &self.config_dir)
            .env("ELPH_DATA_DIR", &self.data_dir)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(&self.project);
        command
    }
}

/// Reads a file of JSON lines.
pub fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("bad JSON line {line:?}: {err}")))
        .collect()
}
