//! Resolving the paths a model passes, and saying what went wrong with them.
//!
//! Relative paths resolve against the project folder; absolute paths are taken as they are (the
//! approval policy, not the tool, decides what may be touched).

use std::io;
use std::path::{Path, PathBuf};

use crate::tools::ToolContext;

/// How many leading bytes are checked for a NUL byte to call a file binary.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The file system path that `path` names.
pub fn resolve(ctx: &ToolContext, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        ctx.project_dir.join(path)
    }
}

/// Whether these leading bytes of a file look binary (they contain a NUL byte).
pub fn looks_binary(head: &[u8]) -> bool {
    head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// A message for a person (and a model) about an I/O failure on `shown`, the path as given.
pub fn describe_io(action: &str, shown: &str, error: &io::Error) -> String {
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
