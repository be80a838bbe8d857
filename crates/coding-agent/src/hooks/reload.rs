//! Loading and reloading the hook set in one place, for every front end (docs/contract.md, "Reload and tools for hook authors").
//!
//! A reload re-reads trust and both files, builds the new set completely, then swaps it into the
//! host in one step. A file that loaded before and now fails keeps its previous hooks active, with a
//! diagnostic that says so; a project that is no longer trusted loses its hooks at once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::config::HooksFile;
use super::discovery::{FileLoad, HookScope, HookSet, assemble};
use super::host::HookHost;
use crate::diagnostics::Diagnostic;
use crate::paths::Paths;
use crate::trust::{TrustDecision, TrustStore};

/// Reads the hook files and remembers the last good contents of each.
#[derive(Debug)]
pub struct HookLoader {
    paths: Paths,
    last_good: Mutex<HashMap<PathBuf, HooksFile>>,
}

impl HookLoader {
    pub fn new(paths: Paths) -> Self {
        HookLoader {
            paths,
            last_good: Mutex::new(HashMap::new()),
        }
    }

    pub fn paths(&self) -> &Paths {
        &self.paths
    }

    /// The trust decision and the hook set as of now.
    pub fn load(&self) -> (TrustDecision, HookSet) {
        let store = TrustStore::new(&self.paths.config_dir);
        let decision = store.decide(&self.paths.project_dir);
        let mut kept: Vec<Diagnostic> = decision.diagnostic(store.path()).into_iter().collect();
        // Said where trust is decided, not only in `elph trust --status`.
        kept.extend(
            decision
                .link_warnings
                .iter()
                .map(|warning| Diagnostic::new(warning.clone()).in_file(store.path())),
        );
        let home = self.read(self.paths.home_hooks_file(), HookScope::Home, &mut kept);
        let project = decision
            .trusted
            .then(|| self.read(self.paths.project_hooks_file(), HookScope::Project, &mut kept));
        let mut set = assemble(&self.paths, home, project);
        set.diagnostics.extend(kept);
        (decision, set)
    }

    /// Loads the set and swaps it into `host` in one step.
    pub fn reload(&self, host: &HookHost) -> (TrustDecision, Arc<HookSet>) {
        let (decision, set) = self.load();
        let set = Arc::new(set);
        host.replace_set(set.clone());
        (decision, set)
    }

    fn read(&self, path: PathBuf, scope: HookScope, kept: &mut Vec<Diagnostic>) -> FileLoad {
        let mut load = FileLoad::read(path.clone(), scope);
        let mut last_good = self
            .last_good
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match &load.result {
            Ok(Some(contents)) => {
                last_good.insert(path, contents.clone());
            }
            Ok(None) => {
                last_good.remove(&path);
            }
            Err(error) => {
                if let Some(previous) = last_good.get(&path) {
                    kept.push(
                        Diagnostic::new(format!(
                            "now fails to load ({}{}); its {} previously loaded hook(s) stay active until it is fixed",
                            error.pointer.as_deref().map(|p| format!("at {p}: ")).unwrap_or_default(),
                            error.message,
                            previous.hooks.len()
                        ))
                        .in_file(&path),
                    );
                    load.result = Ok(Some(previous.clone()));
                }
            }
        }
        load
    }
}
