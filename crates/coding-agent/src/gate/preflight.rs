//! What would make the start fail anyway, checked before the trust question: a yes is recorded in
//! trust.json, so a start that cannot happen (no model set, a missing key, a malformed
//! settings.json, a sandbox this kernel cannot enforce, an unusable DATA_DIR) must fail before it
//! asks. (A bad `--cwd` already fails while the paths are resolved.) Nothing here writes.

use std::path::Path;

use crate::paths::Paths;
use crate::runtime::SessionChoice;
use crate::sandbox::SandboxArgs;
use crate::settings::Settings;
use crate::store::{DB_FILE, SessionStore, StoreError};

/// Checks what the session would otherwise find out only after the question.
pub(crate) fn check(paths: &Paths, model: Option<&str>, sandbox: &SandboxArgs) -> anyhow::Result<()> {
    let settings = Settings::load(&paths.config_dir)?;
    crate::model_choice::resolve_provider(paths, model, &settings)?;
    crate::sandbox::resolve_policy(paths, &settings, sandbox, None)?;
    check_data_dir(&paths.data_dir)?;
    Ok(())
}

/// `-c` and `--session ID` name a stored session that exists (as opening it would find), so a
/// start that would fail on it fails before the trust question. A missing database holds none; it
/// is not created here.
pub(crate) fn check_session_choice(paths: &Paths, choice: &SessionChoice) -> anyhow::Result<()> {
    if !matches!(choice, SessionChoice::Continue | SessionChoice::Resume(_)) {
        return Ok(());
    }
    let store = if paths.data_dir.join(DB_FILE).is_file() {
        Some(SessionStore::open(&paths.data_dir)?)
    } else {
        None
    };
    let project = paths.project_dir.as_path();
    match choice {
        SessionChoice::Continue => {
            let sessions = store.map(|store| store.list(project)).transpose()?;
            if sessions.is_none_or(|sessions| sessions.is_empty()) {
                anyhow::bail!(
                    "no earlier session for {}; start one without -c",
                    crate::terminal_text::escape_path(project)
                );
            }
        }
        SessionChoice::Resume(id) => {
            let found = store.map(|store| store.session(id)).transpose()?.flatten();
            if found.is_none() {
                anyhow::bail!(
                    "no session '{}'; `elph sessions` lists this project's sessions",
                    crate::terminal_text::escape(id)
                );
            }
        }
        SessionChoice::New | SessionChoice::Ephemeral => {}
    }
    Ok(())
}

/// DATA_DIR can hold the session database: it is a folder (or can be made as one) that can be
/// written, and `sessions.db` in it is not a folder. The same errors the store gives on opening.
pub(crate) fn check_data_dir(dir: &Path) -> Result<(), StoreError> {
    // DATA_DIR itself, or the nearest folder it would be created in.
    let Some(existing) = dir.ancestors().find(|ancestor| ancestor.exists()) else {
        return Ok(());
    };
    if !existing.is_dir() {
        return Err(StoreError::CreateDir {
            path: dir.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is a file, not a folder", existing.display()),
            ),
        });
    }
    if existing == dir && dir.join(DB_FILE).is_dir() {
        return Err(StoreError::NotAFile {
            path: dir.join(DB_FILE),
        });
    }
    crate::store::refuse_read_only(
        existing,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_data_dir_under_a_folder_is_fine_and_is_not_created() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/data");
        check_data_dir(&dir).unwrap();
        assert!(!root.path().join("a").exists());
    }

    #[test]
    fn a_file_in_the_way_is_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("file"), "").unwrap();
        let error = check_data_dir(&root.path().join("file/data")).unwrap_err();
        assert!(error.to_string().contains("is a file, not a folder"), "{error}");
        let error = check_data_dir(&root.path().join("file")).unwrap_err();
        assert!(matches!(error, StoreError::CreateDir { .. }), "{error}");
    }

    #[test]
    fn a_folder_named_like_the_database_is_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(DB_FILE)).unwrap();
        let error = check_data_dir(root.path()).unwrap_err();
        assert!(matches!(error, StoreError::NotAFile { .. }), "{error}");
    }
}
