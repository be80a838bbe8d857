//! Reading skill and template files: regular files only, never blocking, never unbounded.

use std::path::{Path, PathBuf};

/// The largest `SKILL.md` or template read.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The file's text, read through the one bounded, non-blocking config read: a FIFO, a device or
/// a folder is refused before anything is read, and a file over [`MAX_FILE_BYTES`] is refused.
pub(crate) fn read_bounded(path: &Path) -> Result<String, String> {
    let bytes = elph_config::read::read_config_capped(path, MAX_FILE_BYTES)
        .map_err(|error| error.reason())?
        .ok_or("does not exist")?;
    String::from_utf8(bytes).map_err(|_| "is not valid UTF-8".into())
}

/// The entries of `dir` in name order; a missing folder has none.
pub(crate) fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(format!("could not be listed ({error})")),
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    Ok(paths)
}
