//! Size-bounded logs: `DATA_DIR/logs/hooks.jsonl` and `DATA_DIR/logs/elph.log` are appended to by
//! whole lines and rotated when they pass a size: `FILE` → `FILE.1` → `FILE.2` → `FILE.3`, and the
//! oldest is dropped. So a log never holds more than about (KEEP + 1) × the size.
//!
//! Several Elph processes may append to the same log. Appends of whole lines do not interleave
//! (`O_APPEND`, one write per line); a rotation is done under a lock on a sidecar file
//! (`FILE.lock`, never the file that is renamed) and re-checks the size under the lock, so two
//! processes that both see a full file rotate it once.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::locked_file::LockedFile;

/// The size past which a log is rotated, unless `ELPH_LOG_MAX_BYTES` says otherwise.
pub(crate) const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// How many rotated files are kept besides the live one.
pub(crate) const KEEP: usize = 3;
/// The environment variable that sets the rotation size in bytes (for tests and small disks).
pub(crate) const MAX_BYTES_VAR: &str = "ELPH_LOG_MAX_BYTES";

/// The rotation size: `ELPH_LOG_MAX_BYTES` when it is a positive number, else 10 MiB.
pub(crate) fn max_bytes() -> u64 {
    std::env::var(MAX_BYTES_VAR)
        .ok()
        .and_then(|value| value.trim().parse::<u64>().ok())
        .filter(|&bytes| bytes > 0)
        .unwrap_or(DEFAULT_MAX_BYTES)
}

/// `FILE.N`.
fn rotated(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The log and its rotated files that exist, oldest first (`FILE.3`, …, `FILE`): the order to
/// read them in.
pub(crate) fn files_oldest_first(path: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (1..=KEEP).rev().map(|n| rotated(path, n)).collect();
    files.push(path.to_path_buf());
    files.into_iter().filter(|file| file.exists()).collect()
}

/// Opens the log for appending, owner-only (it can quote prompts and tool output), creating its
/// folder (0700) when missing.
fn open_append(path: &Path) -> io::Result<File> {
    let open = || elph_config::private::open_private_append(path);
    match open() {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if let Some(dir) = path.parent() {
                elph_config::private::create_private_dir_all(dir)?;
            }
            open()
        }
        other => other,
    }
}

/// Rotates `path` if it holds at least `max` bytes, under the sidecar lock. Returns whether a
/// rotation happened (here or in another process since `file` was opened): the caller reopens.
fn rotate_if_full(path: &Path, file: &File, max: u64) -> io::Result<bool> {
    if file.metadata()?.len() < max {
        return Ok(false);
    }
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = OpenOptions::new()
        .mode(0o600)
        .create(true)
        .truncate(false)
        .write(true)
        .open(PathBuf::from(lock_name))?;
    lock.lock()?;
    let _lock = LockedFile::new(lock);
    // Under the lock: another process may have rotated already (then `path` is a new, small file,
    // and `file` is one of the rotated ones).
    use std::os::unix::fs::MetadataExt;
    let ours = file.metadata()?;
    let current = match std::fs::metadata(path) {
        Ok(current) => current,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(true),
        Err(error) => return Err(error),
    };
    if (current.dev(), current.ino()) != (ours.dev(), ours.ino()) {
        return Ok(true);
    }
    if current.len() < max {
        return Ok(false);
    }
    let _ = std::fs::remove_file(rotated(path, KEEP));
    for n in (1..KEEP).rev() {
        let from = rotated(path, n);
        if from.exists() {
            std::fs::rename(&from, rotated(path, n + 1))?;
        }
    }
    std::fs::rename(path, rotated(path, 1))?;
    Ok(true)
}

/// A log file kept open for a stream of writes (the `tracing` subscriber's, the run log's), rotated
/// when full. Each `write` should be whole lines: one write per line, so that appends of several
/// processes do not interleave.
#[derive(Debug)]
pub(crate) struct RotatingFile {
    path: PathBuf,
    file: File,
    max: u64,
}

impl RotatingFile {
    pub(crate) fn open(path: &Path, max: u64) -> io::Result<RotatingFile> {
        Ok(RotatingFile {
            path: path.to_path_buf(),
            file: open_append(path)?,
            max,
        })
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if rotate_if_full(&self.path, &self.file, self.max).unwrap_or(false) {
            self.file = open_append(&self.path)?;
        }
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
#[expect(
    clippy::string_slice,
    reason = "test code: a cut inside a character fails the test loudly"
)]
mod tests {
    use super::*;

    #[test]
    fn rotates_at_the_size_and_keeps_three() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs").join("x.log");
        // A file opened per line, as by one short process after another.
        for i in 0..50 {
            let mut file = RotatingFile::open(&path, 30).unwrap();
            file.write_all(format!("line {i:03}\n").as_bytes()).unwrap();
        }
        let files = files_oldest_first(&path);
        assert_eq!(files.len(), KEEP + 1, "{files:?}");
        for file in &files {
            let len = std::fs::metadata(file).unwrap().len();
            assert!(len <= 30 + 9, "{} has {len} bytes", file.display());
        }
        let all: String = files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect();
        assert!(all.ends_with("line 049\n"));
        let numbers: Vec<u32> = all.lines().map(|l| l[5..].parse().unwrap()).collect();
        assert!(
            numbers.windows(2).all(|w| w[1] == w[0] + 1),
            "in order, no gaps: {numbers:?}"
        );
    }

    #[test]
    fn a_kept_open_file_rotates_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("elph.log");
        let mut file = RotatingFile::open(&path, 100).unwrap();
        for i in 0..40 {
            file.write_all(format!("event {i:02}\n").as_bytes()).unwrap();
        }
        assert!(rotated(&path, 1).exists() && rotated(&path, 3).exists());
        assert!(!rotated(&path, 4).exists());
        assert!(std::fs::metadata(&path).unwrap().len() <= 100);
    }
}
