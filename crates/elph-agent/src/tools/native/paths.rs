//! Resolving the paths a model passes, and saying what went wrong with them.
//!
//! Relative paths resolve against the project folder; absolute paths are taken as they are. The
//! harness judges every path on its real location before the tool runs (approval); the tool
//! resolves it again, refuses if it now leads anywhere else, and then acts beneath the root it was
//! judged under (see [`super::beneath`]), so what was checked is what is touched.

use std::io;
use std::path::PathBuf;

use super::beneath::{self, Place};
use crate::policy::WriteAccess;
use crate::tools::{AccessKind, ToolContext};

/// How many leading bytes are checked for a NUL byte to call a file binary.
pub(crate) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The real location of `shown`, which must be where it led when the harness judged the call.
fn locate(ctx: &ToolContext, action: &str, tool: &str, shown: &str) -> Result<PathBuf, String> {
    let real = ctx
        .policy
        .locate(shown)
        .map_err(|error| format!("cannot {action} {shown}: {error}"))?;
    if let Some(judged) = &ctx.judged
        && !judged.contains(&real)
    {
        return Err(format!(
            "{tool} refused: {shown} now leads to {}, not where it led when the call was checked (a \
             symbolic link or a moved folder changed it in between); nothing was done",
            real.display()
        ));
    }
    Ok(real)
}

/// The place beneath its held root where a reading tool reads `shown`.
pub(crate) fn place_for_read(ctx: &ToolContext, tool: &str, shown: &str) -> Result<Place, String> {
    let real = locate(ctx, "read", tool, shown)?;
    let root = ctx.policy.root_of(&real, AccessKind::Read);
    Place::new(&ctx.roots, &root, &real).map_err(|error| describe_io("read", shown, &error))
}

/// The place beneath its held root where a writing tool may write `shown`, or why it may not.
pub(crate) fn place_for_write(ctx: &ToolContext, tool: &str, shown: &str) -> Result<Place, String> {
    let real = locate(ctx, "write", tool, shown)?;
    match ctx.policy.write_access(&real) {
        WriteAccess::Allowed => {}
        WriteAccess::Protected { .. } if ctx.exact_call_approved => {}
        WriteAccess::Protected { label } => {
            return Err(format!(
                "{tool} refused: {shown} is in {label}, which the agent may change only when the user \
                 approves that exact call in an interactive front end"
            ));
        }
        WriteAccess::Outside => {
            return Err(format!(
                "{tool} refused: {shown} (which is {}) is outside the folders this session may write: {}",
                real.display(),
                ctx.policy.describe_write_scope()
            ));
        }
    }
    let root = ctx.policy.root_of(&real, AccessKind::Write);
    Place::new(&ctx.roots, &root, &real).map_err(|error| describe_io("write", shown, &error))
}

/// Whether these leading bytes of a file look binary (they contain a NUL byte).
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// A message for a person (and a model) about an I/O failure on `shown`, the path as given.
pub(crate) fn describe_io(action: &str, shown: &str, error: &io::Error) -> String {
    if beneath::changed_under_us(error) {
        return format!(
            "cannot {action} {shown}: a symbolic link now stands in its path, which changed after the \
             call was checked; it was not followed, and nothing was done"
        );
    }
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
