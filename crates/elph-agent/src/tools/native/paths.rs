//! Resolving the paths a model passes, and saying what went wrong with them.
//!
//! Relative paths resolve against the project folder; absolute paths are taken as they are. Reads
//! are judged by the harness (approval) before the tool runs; writes are judged there and again
//! here, on the real location the path leads to, which is also where the tool then writes.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::policy::WriteAccess;
use crate::tools::ToolContext;

/// How many leading bytes are checked for a NUL byte to call a file binary.
pub(crate) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The file system path that `path` names.
pub fn resolve(ctx: &ToolContext, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.project_dir.join(path)
    }
}

/// The real location a writing tool may write `shown` to, or why it may not.
pub(crate) fn locate_for_write(ctx: &ToolContext, tool: &str, shown: &str) -> Result<PathBuf, String> {
    let real = ctx
        .policy
        .locate(shown)
        .map_err(|error| format!("cannot write {shown}: {error}"))?;
    match ctx.policy.write_access(&real) {
        WriteAccess::Allowed => Ok(real),
        WriteAccess::Protected { .. } if ctx.exact_call_approved => Ok(real),
        WriteAccess::Protected { label } => Err(format!(
            "{tool} refused: {shown} is in {label}, which the agent may change only when the user \
             approves that exact call in an interactive front end"
        )),
        WriteAccess::Outside => Err(format!(
            "{tool} refused: {shown} (which is {}) is outside the folders this session may write: {}",
            real.display(),
            ctx.policy.describe_write_scope()
        )),
    }
}

/// Replaces `real` with `bytes` in one step: a temp file beside it, renamed over it. A reader never
/// sees half a file, and a hard link to the old file (which may live anywhere) is not written
/// through. An existing file keeps its permissions.
pub fn write_atomically(real: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = real.parent().unwrap_or(Path::new("/"));
    let permissions = std::fs::metadata(real)
        .ok()
        .map(|metadata| metadata.permissions());
    // A new file gets the usual 0666 less the umask, as `std::fs::write` would give it.
    let mut temp = tempfile::Builder::new()
        .prefix(".elph-write-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_data()?;
    if let Some(permissions) = permissions {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.persist(real).map_err(|error| error.error)?;
    Ok(())
}

/// Whether these leading bytes of a file look binary (they contain a NUL byte).
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// A message for a person (and a model) about an I/O failure on `shown`, the path as given.
pub(crate) fn describe_io(action: &str, shown: &str, error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => format!("cannot {action} {shown}: no such file or directory"),
        io::ErrorKind::PermissionDenied => format!("cannot {action} {shown}: permission denied"),
        io::ErrorKind::IsADirectory => {
            format!("cannot {action} {shown}: it is a directory (use list_dir to see its entries)")
        }
        io::ErrorKind::NotADirectory => {
            format!("cannot {action} {shown}: a component of the path is a file, not a directory")
        }
        _ => format!("cannot {action} {shown}: {error}"),
    }
}

/// How paths found under a search root are shown: joined to the root as the model wrote it, so
/// they can be passed straight back to another tool ("." and "./" add nothing).
#[derive(Clone, Debug)]
pub struct Shown {
    prefix: String,
}

impl Shown {
    pub fn new(root_as_given: &str) -> Self {
        let trimmed = root_as_given.trim_end_matches('/');
        let prefix = match trimmed {
            "" if root_as_given.starts_with('/') => "/".to_string(),
            "" | "." => String::new(),
            other => format!("{}/", other.strip_prefix("./").unwrap_or(other)),
        };
        Shown { prefix }
    }

    /// `relative` (with '/' separators) as the model should see it.
    pub fn show(&self, relative: &str) -> String {
        format!("{}{relative}", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_against_the_project() {
        let ctx = ToolContext::new("/p");
        assert_eq!(resolve(&ctx, "src/a.rs"), PathBuf::from("/p/src/a.rs"));
        assert_eq!(resolve(&ctx, "/etc/hosts"), PathBuf::from("/etc/hosts"));
    }

    #[test]
    fn shown_paths_keep_the_root_as_given() {
        assert_eq!(Shown::new(".").show("a/b.rs"), "a/b.rs");
        assert_eq!(Shown::new("./").show("a.rs"), "a.rs");
        assert_eq!(Shown::new("src").show("a.rs"), "src/a.rs");
        assert_eq!(Shown::new("./src/").show("a.rs"), "src/a.rs");
        assert_eq!(Shown::new("/tmp/x").show("a.rs"), "/tmp/x/a.rs");
        assert_eq!(Shown::new("/").show("etc"), "/etc");
    }

    #[test]
    fn nul_bytes_mean_binary() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary("plain text é".as_bytes()));
        let mut late = vec![b'a'; BINARY_SNIFF_BYTES];
        late.push(0);
        assert!(!looks_binary(&late));
    }
}
