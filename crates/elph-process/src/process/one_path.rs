//! "Every kind of child starts through one function" (issue 25), held by reading the workspace's
//! product code: nothing outside this crate's `spawn.rs` creates a process, so a step added to
//! [`super::spawn`] reaches every child, and no second path can skip one.

use std::path::{Path, PathBuf};

/// What creates a process, in any of the ways Rust code can.
const CREATES_A_PROCESS: [&str; 11] = [
    "Command::new(",
    "process::Command",
    "CommandExt",
    "pre_exec(",
    "fork(",
    "posix_spawn",
    "libc::clone",
    "SYS_clone",
    "SYS_fork",
    "clone3",
    "execv",
];

/// The files allowed to: the one spawn path, and the confined child it starts sharing Elph's
/// memory (`sandbox/start.rs`) or through its view's starter (`sandbox/starter.rs`); the PID namespace's init and command, cloned inside that path's
/// child before its exec; and the orphan watcher (forked once, it runs no program).
const ALLOWED: [&str; 8] = [
    "elph-process/src/process/spawn.rs",
    "elph-process/src/process/vfork.rs",
    "elph-process/src/sandbox/pid_namespace/mod.rs",
    "elph-process/src/sandbox/pid_namespace/init.rs",
    "elph-process/src/sandbox/pid_namespace/command.rs",
    "elph-process/src/sandbox/start.rs",
    "elph-process/src/sandbox/starter.rs",
    "elph-process/src/orphans.rs",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Whether `code` names `pattern` itself, not a longer name ending in it (`AvailableCommand::new(`).
fn names(code: &str, pattern: &str) -> bool {
    code.match_indices(pattern).any(|(at, _)| {
        !code
            .get(..at)
            .and_then(|before| before.chars().next_back())
            .is_some_and(|before| before.is_alphanumeric() || before == '_')
    })
}

#[test]
fn names_match_whole_words() {
    assert!(names("let c = std::process::Command::new(p);", "Command::new("));
    assert!(names("Command::new(p)", "Command::new("));
    assert!(!names("AvailableCommand::new(a, b)", "Command::new("));
}

#[test]
fn no_product_code_outside_the_spawn_path_creates_a_process() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in std::fs::read_dir(&crates).unwrap().flatten() {
        // test-support is test code: it starts fake servers and hook fixtures for the tests.
        if krate.file_name() != "test-support" && krate.path().join("src").is_dir() {
            rust_files(&krate.path().join("src"), &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "the workspace's sources were found: {}",
        files.len()
    );
    let mut found = Vec::new();
    for file in &files {
        let shown = file.strip_prefix(&crates).unwrap_or(file).display().to_string();
        if ALLOWED.contains(&shown.as_str()) || shown.ends_with("process/one_path.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        // Unit tests sit at the end of a file, after `#[cfg(test)]`; what they start is theirs.
        let product = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (number, line) in product.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if let Some(pattern) = CREATES_A_PROCESS.iter().find(|pattern| names(code, pattern)) {
                found.push(format!("{shown}:{}: {pattern}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "product code that creates a process outside elph_process::process::spawn:\n{}",
        found.join("\n")
    );
}
