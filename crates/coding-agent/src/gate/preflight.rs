//! What would make the start fail anyway, checked before the trust question: a yes is recorded in
//! trust.json, so a start that cannot happen (no model set, a missing key, a malformed
//! settings.json, a sandbox this kernel cannot enforce, an unusable DATA_DIR) must fail before it
//! asks. (A bad `--cwd` already fails while the paths are resolved.) Nothing here writes.

use std::path::Path;

use crate::paths::Paths;
use crate::sandbox::SandboxArgs;
use crate::settings::Settings;
use crate::store::{DB_FILE, StoreError};

/// Checks what the session would otherwise find out only after the question.
pub(crate) fn check(paths: &Paths, model: Option<&str>, sandbox: &SandboxArgs) -> anyhow::Result<()> {
    let settings = Settings::load(&paths.config_dir)?;
    crate::runtime::resolve_provider(paths, model, &settings)?;
    crate::sandbox::resolve_policy(paths, &settings, sandbox, None)?;
    check_data_dir(&paths.data_dir)?;
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
    if nix::unistd::access(
        existing,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .is_err_and(|e| e == nix::errno::Errno::EROFS || e == nix::errno::Errno::EACCES)
    {
        return Err(StoreError::ReadOnly {
            dir: existing.to_path_buf(),
        });
    }
    Ok(())
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
