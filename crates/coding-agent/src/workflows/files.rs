//! Reading skill and template files: regular files only, never blocking, never unbounded.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest `SKILL.md` or template read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The file's text. A FIFO, a device or a folder is refused before anything is read (the open does
/// not block), and a file over [`MAX_FILE_BYTES`] is refused whole.
pub fn read_bounded(path: &Path) -> Result<String, String> {
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| format!("could not be opened ({error})"))?;
    let metadata = file
        .metadata()
        .map_err(|error| format!("could not be read ({error})"))?;
    if !metadata.is_file() {
        return Err("is not a regular file".into());
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(format!(
            "is {} bytes; the limit is {MAX_FILE_BYTES}",
            metadata.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| format!("could not be read ({error})"))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("is over {MAX_FILE_BYTES} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "is not valid UTF-8".into())
}

/// The entries of `dir` in name order; a missing folder has none.
pub fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(format!("could not be listed ({error})")),
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    Ok(paths)
}
