//! What the file policy says about one tool call, before approval: the paths it will touch,
//! judged on their real locations.

use crate::policy::{FilePolicy, ReadAccess, WriteAccess};
use crate::tools::{AccessKind, PathAccess};

/// The policy's verdict on one call's paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct AccessVerdict {
    /// Refused whatever the approval policy says (a write outside the writable roots).
    pub refusal: Option<String>,
    /// Writes to protected places: allowed only if the user approves this exact call.
    pub protected: Vec<String>,
    /// Reads outside the project: they go through approval like a change.
    pub(crate) outside_reads: Vec<String>,
    /// Every path's real location as judged here: the tool acts on these or on nothing.
    pub judged: Vec<std::path::PathBuf>,
}

impl AccessVerdict {
    pub(crate) fn judge(policy: &FilePolicy, tool: &str, accesses: &[PathAccess]) -> Self {
        let mut verdict = AccessVerdict::default();
        for access in accesses {
            let real = match policy.locate(&access.path) {
                Ok(real) => real,
                Err(error) => {
                    verdict.refusal = Some(format!("Tool call refused: {error}"));
                    return verdict;
                }
            };
            verdict.judged.push(real.clone());
            match access.kind {
                AccessKind::Write => match policy.write_access(&real) {
                    WriteAccess::Allowed => {}
                    WriteAccess::Protected { label } => {
                        verdict.protected.push(format!("{} ({label})", access.path));
                    }
                    WriteAccess::Outside => {
                        verdict.refusal = Some(format!(
                            "Tool call refused: {tool} would write {} (which is {}), outside the folders \
                             this session may write: {}. No approval can allow this; work inside the \
                             project folder.",
                            access.path,
                            real.display(),
                            policy.describe_write_scope()
                        ));
                        return verdict;
                    }
                },
                AccessKind::Read => {
                    if policy.read_access(&real) == ReadAccess::Outside {
                        let shown = if real.to_string_lossy() == access.path {
                            access.path.clone()
                        } else {
                            format!("{} (which is {})", access.path, real.display())
                        };
                        verdict.outside_reads.push(shown);
                    }
                }
            }
        }
        verdict
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn sorts_each_access() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().canonicalize().unwrap();
        let policy = FilePolicy::new(&project);
        let inside = AccessVerdict::judge(&policy, "read_file", &[PathAccess::read("src/a.rs")]);
        assert_eq!(inside.outside_reads, Vec::<String>::new());
        assert_eq!(inside.judged, [project.join("src/a.rs")]);
        let outside = AccessVerdict::judge(&policy, "read_file", &[PathAccess::read("/etc/passwd")]);
        assert_eq!(outside.outside_reads, ["/etc/passwd"]);
        let protected = AccessVerdict::judge(&policy, "write_file", &[PathAccess::write(".elph/hooks.json")]);
        assert_eq!(protected.protected.len(), 1);
        assert!(protected.refusal.is_none());
        let refused = AccessVerdict::judge(&policy, "write_file", &[PathAccess::write("../x")]);
        assert!(refused.refusal.unwrap().contains("outside the folders"));
        symlink("/etc", project.join("etc")).unwrap();
        let linked = AccessVerdict::judge(&policy, "list_dir", &[PathAccess::read("etc")]);
        assert_eq!(linked.outside_reads, ["etc (which is /etc)"]);
    }
}
