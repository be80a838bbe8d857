//! The README's install section, checked against what cargo itself reports for this workspace:
//! `cargo run` at the root runs `elph`, `cargo install --locked --path crates/coding-agent` installs
//! a binary called `elph`, and the Rust version the README asks for is the one cargo enforces. And
//! the README opens with the two commands a newcomer runs: install + demo, then the tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `cargo metadata` for the workspace, without resolving dependencies (no network).
async fn cargo_metadata() -> Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = tokio::process::Command::new(cargo);
    command
        .args(["metadata", "--no-deps", "--offline", "--format-version", "1"])
        .current_dir(workspace_root())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("cargo metadata finishes")
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn package<'a>(metadata: &'a Value, id: &str) -> &'a Value {
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|package| package["id"] == id)
        .unwrap_or_else(|| panic!("no package {id}"))
}

fn binaries(package: &Value) -> Vec<&str> {
    package["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|target| {
            target["kind"]
                .as_array()
                .unwrap()
                .iter()
                .any(|kind| kind == "bin")
        })
        .map(|target| target["name"].as_str().unwrap())
        .collect()
}

fn readme() -> String {
    std::fs::read_to_string(workspace_root().join("README.md")).unwrap()
}

#[tokio::test]
async fn cargo_run_at_the_root_runs_elph() {
    let metadata = cargo_metadata().await;
    let defaults = metadata["workspace_default_members"].as_array().unwrap();
    assert_eq!(
        defaults.len(),
        1,
        "`cargo run` needs exactly one default member: {defaults:?}"
    );
    let default = package(&metadata, defaults[0].as_str().unwrap());
    assert_eq!(binaries(default), ["elph"]);
}

#[tokio::test]
async fn the_readme_install_command_installs_elph_with_the_rust_version_cargo_enforces() {
    let metadata = cargo_metadata().await;
    let readme = readme();
    let install = "cargo install --locked --path crates/coding-agent";
    assert!(readme.contains(install), "README lacks {install:?}");
    let manifest = workspace_root().join("crates/coding-agent/Cargo.toml");
    let installed = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|package| Path::new(package["manifest_path"].as_str().unwrap()) == manifest)
        .expect("crates/coding-agent is a workspace package");
    assert_eq!(binaries(installed), ["elph"]);

    let rust_version = installed["rust_version"]
        .as_str()
        .expect("coding-agent declares rust-version");
    let prerequisite = format!("Rust {rust_version} or newer");
    assert!(readme.contains(&prerequisite), "README lacks {prerequisite:?}");
    for tool in ["a C compiler", "python3"] {
        assert!(readme.contains(tool), "README's prerequisites lack {tool:?}");
    }
}

/// The commands (not comments, not blank) of the README's first `sh` block.
fn readme_opening_commands(readme: &str) -> Vec<String> {
    let block = readme
        .split("```sh\n")
        .nth(1)
        .expect("the README has an sh block")
        .split("```")
        .next()
        .unwrap();
    block
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::from)
        .collect()
}

#[test]
fn the_readme_opens_with_install_and_demo_then_the_tests_that_ci_runs() {
    let readme = readme();
    assert_eq!(
        readme_opening_commands(&readme),
        [
            "cargo install --locked --path crates/coding-agent && examples/demo/run.sh",
            "cargo test --workspace",
        ]
    );
    assert!(
        readme.contains("~/.cargo/bin"),
        "the README says where `elph` is installed"
    );
    // CI runs the README's test command as written (`set -e`: a failure ends CI); checks that
    // come after it (`elph hooks coverage`) use what it built.
    let ci = std::fs::read_to_string(workspace_root().join(".ci/run")).unwrap();
    assert!(ci.contains("set -euo pipefail"), "a failing step fails CI");
    assert!(
        ci.lines()
            .map(str::trim)
            .any(|line| line == "cargo test --workspace"),
        "CI runs the README's test command"
    );
}

#[test]
fn ci_checks_formatting_and_clippy_warnings_before_the_tests() {
    let ci = std::fs::read_to_string(workspace_root().join(".ci/run")).unwrap();
    let commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("cargo "))
        .collect();
    let position = |command: &str| {
        commands
            .iter()
            .position(|line| *line == command)
            .unwrap_or_else(|| panic!(".ci/run lacks {command:?}: {commands:?}"))
    };
    let fmt = position("cargo fmt --all --check");
    let clippy = position("cargo clippy --workspace --all-targets -- -D warnings");
    let tests = position("cargo test --workspace");
    assert!(fmt < tests && clippy < tests, "{commands:?}");
    assert!(ci.contains("set -euo pipefail"), "a failing check stops .ci/run");
}

/// `-z pack-relative-relocs` made every Linux build need glibc 2.36's loader (`GLIBC_ABI_DT_RELR`),
/// so `elph` did not start on Ubuntu 22.04, RHEL 9 or Debian 11 (docs/building.md). The version
/// need is a string in the binary's dynamic string table exactly when the binary has it.
#[test]
fn elph_does_not_need_the_dt_relr_loader_of_glibc_2_36() {
    let binary = std::fs::read(env!("CARGO_BIN_EXE_elph")).unwrap();
    let needle = b"GLIBC_ABI_DT_RELR";
    assert!(
        !binary.windows(needle.len()).any(|window| window == needle),
        "elph needs GLIBC_ABI_DT_RELR (glibc 2.36): is `-z pack-relative-relocs` back in a build \
         script or .cargo/config.toml?"
    );
}
