//! What doctor warns about because someone else could change what Elph runs: trust.json keys that do
//! not say what they seem to (not canonical, missing folders, clashes), and a CONFIG_DIR, home
//! hooks.json or home hook script that the group or others can write.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use super::checks::{Finding, Level};
use crate::diagnostics::shell_quote;
use crate::hooks::{HookScope, HookSet};
use crate::paths::Paths;
use crate::trust::TrustStore;

/// `(subject, finding)` for each problem found.
pub(super) fn findings(paths: &Paths, set: &HookSet) -> Vec<(String, Finding)> {
    let mut found = Vec::new();
    if let Ok(file) = TrustStore::new(&paths.config_dir).load() {
        for warning in file.key_warnings {
            found.push((
                "trust".to_string(),
                Finding::new(Level::Warning, warning).fix(format!(
                    "edit {} so each key is the folder's real, absolute path",
                    shell_quote(&paths.trust_file())
                )),
            ));
        }
    }
    let mut check = |subject: String, path: &Path, what: &str| {
        if let Some(finding) = writable_by_others(path, what) {
            found.push((subject, finding));
        }
    };
    check("CONFIG_DIR".into(), &paths.config_dir, "CONFIG_DIR");
    check("file".into(), &paths.home_hooks_file(), "your hooks.json");
    let mut seen = std::collections::BTreeSet::new();
    for hook in set.hooks.iter().filter(|hook| hook.scope == HookScope::Home) {
        let Some(command) = hook.command() else {
            continue;
        };
        if seen.insert(command.path.clone()) {
            check(
                format!("hook '{}'", hook.id),
                &command.path,
                "this home hook's command",
            );
        }
    }
    found
}

/// A warning when `path` exists and its group or others may write it (a symlink is judged by what it
/// points to).
fn writable_by_others(path: &Path, what: &str) -> Option<Finding> {
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    if !elph_config::private::writable_by_others(mode) {
        return None;
    }
    Some(
        Finding::new(
            Level::Warning,
            format!(
                "{what} {} is writable by {} (mode {:o}): anyone who can write it can make Elph run \
                 their commands as you",
                path.display(),
                if mode & 0o002 != 0 {
                    "everyone"
                } else {
                    "its group"
                },
                mode & 0o7777
            ),
        )
        .fix(format!("chmod go-w {}", shell_quote(path))),
    )
}
