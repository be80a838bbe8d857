//! Owner-only folders and files, whatever the umask.
//!
//! CONFIG_DIR holds trust decisions and hook commands; DATA_DIR holds transcripts. Under `umask 000` a
//! plain `create_dir_all` makes them world-writable, and then anyone on the machine can add a hook.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

/// Creates `dir` and any missing parents with mode 0700. An existing folder is left as it is (the
/// user may have chosen its mode); `doctor` reports one that others can write.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    // The mode given to mkdir is masked by the umask; 0700 survives any umask that leaves the owner's
    // bits, and this makes it exact for the rest.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Opens `path` for appending, creating it with mode 0600 (exactly, whatever the umask).
pub fn open_private_append(path: &Path) -> io::Result<File> {
    let existed = path.exists();
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    if !existed {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Whether `mode` lets the group or others write.
pub fn writable_by_others(mode: u32) -> bool {
    mode & 0o022 != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_owner_only_and_existing_ones_are_kept() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/elph");
        create_private_dir_all(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        create_private_dir_all(&dir).unwrap();
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o750
        );
    }

    #[test]
    fn appended_files_are_created_0600() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("log.jsonl");
        drop(open_private_append(&path).unwrap());
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(writable_by_others(0o775) && writable_by_others(0o702) && !writable_by_others(0o755));
    }
}
