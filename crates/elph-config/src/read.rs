//! One bounded, non-blocking read of a config file.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// The largest config file Elph reads: 4 MiB, far above any real hooks.json or trust.json.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// Why a config file could not be read. The message names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path} is a directory, not a file")]
    Directory { path: PathBuf },
    #[error(
        "{path} is a {kind}, not a regular file; Elph reads config only from regular files (a symlink to one is fine)"
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path} is larger than {limit} bytes; a config file this big is refused")]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ReadError {
    /// The cause without the path, for messages that already name the file.
    pub fn reason(&self) -> String {
        match self {
            ReadError::Directory { .. } => "is a directory, not a file".into(),
            ReadError::NotRegular { kind, .. } => format!(
                "is a {kind}, not a regular file; Elph reads config only from regular files (a symlink to one is fine)"
            ),
            ReadError::TooLarge { limit, .. } => {
                format!("is larger than {limit} bytes; a config file this big is refused")
            }
            ReadError::Io { source, .. } => format!("cannot be read: {source}"),
        }
    }

    /// The I/O error kind, when the failure was one.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            ReadError::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}

/// Reads a config file: `Ok(None)` when it does not exist.
///
/// The file is opened with `O_NONBLOCK`, so opening a FIFO with no writer returns at once instead of
/// waiting for one; anything but a regular file (after following symlinks) is refused before a byte
/// is read; and at most [`MAX_CONFIG_BYTES`] are read, so `/dev/zero` or a multi-gigabyte file cannot
/// exhaust memory.
pub fn read_config(path: &Path) -> Result<Option<Vec<u8>>, ReadError> {
    read_config_capped(path, MAX_CONFIG_BYTES)
}

/// [`read_config`] with another cap (tests use a small one).
pub fn read_config_capped(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    let io = |source: std::io::Error| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.kind() == std::io::ErrorKind::IsADirectory => {
            return Err(ReadError::Directory {
                path: path.to_path_buf(),
            });
        }
        Err(err) => return Err(io(err)),
    };
    check_regular(path, &file)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(Some(bytes))
}

fn check_regular(path: &Path, file: &File) -> Result<(), ReadError> {
    let meta = file.metadata().map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok(());
    }
    if kind.is_dir() {
        return Err(ReadError::Directory {
            path: path.to_path_buf(),
        });
    }
    let kind = if kind.is_fifo() {
        "FIFO (named pipe)"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_socket() {
        "socket"
    } else {
        "special file"
    };
    Err(ReadError::NotRegular {
        path: path.to_path_buf(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_is_none_and_a_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_config(&dir.path().join("nope.json")).unwrap().is_none());
        std::fs::write(dir.path().join("a.json"), "{}").unwrap();
        assert_eq!(read_config(&dir.path().join("a.json")).unwrap().unwrap(), b"{}");
    }

    #[test]
    fn a_symlink_to_a_regular_file_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.json"), "{}").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.json"), dir.path().join("link.json")).unwrap();
        assert_eq!(
            read_config(&dir.path().join("link.json")).unwrap().unwrap(),
            b"{}"
        );
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("hooks.json");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let err = read_config(&fifo).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { .. }), "{err}");
        assert!(err.to_string().contains("FIFO"), "{err}");
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let err = read_config(Path::new("/dev/zero")).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_config(dir.path()).unwrap_err(),
            ReadError::Directory { .. }
        ));
    }

    #[test]
    fn the_cap_holds_at_one_byte_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        std::fs::write(&path, vec![b' '; 10]).unwrap();
        assert_eq!(read_config_capped(&path, 10).unwrap().unwrap().len(), 10);
        std::fs::write(&path, vec![b' '; 11]).unwrap();
        let err = read_config_capped(&path, 10).unwrap_err();
        assert!(err.to_string().contains("larger than 10 bytes"), "{err}");
    }
}
