//! Which permission a failed command most likely lacked, read from the errors the sandbox's
//! refusals cause (a refused `socket`/`connect` and the resolver failing at once without it; a
//! read-only mount or Landlock's `EACCES` on a write), so that a front end can offer to run that
//! command once more with exactly that permission (docs/security.md, "Escalation").
//!
//! The words are the C library's and the common tools' own; a command that prints them for
//! another reason is offered a re-run it does not need, which the user declines. Nothing is
//! offered for a command that was not confined in that respect.

use std::path::Path;

use super::SandboxPolicy;

/// A permission the sandbox withheld from a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A connection or name lookup.
    Network,
    /// A write outside the writable roots (or to a protected path).
    Filesystem,
}

impl Refused {
    /// The word tool results carry in their details (`sandboxRefused`).
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::Network => "network",
            Refused::Filesystem => "filesystem",
        }
    }
}

/// What a failed lookup or connection prints when the sandbox keeps the network away.
const NETWORK_ERRORS: [&str; 12] = [
    "Could not resolve host",
    "Could not resolve hostname",
    "Temporary failure in name resolution",
    "Name or service not known",
    "EAI_AGAIN",
    "getaddrinfo",
    "Network is unreachable",
    "No address associated with hostname",
    "Failed to establish a new connection",
    "socket: Operation not permitted",
    "socket: Permission denied",
    "Couldn't connect to server",
];

impl SandboxPolicy {
    /// The permission `output` (a failed command's stdout and stderr) says this policy withheld,
    /// if any; `cwd` is where the command ran.
    pub fn refused_in(&self, output: &str, cwd: &Path) -> Option<Refused> {
        if !self.is_confined() {
            return None;
        }
        if !self.network_allowed() && NETWORK_ERRORS.iter().any(|words| output.contains(words)) {
            return Some(Refused::Network);
        }
        if output.contains("Read-only file system") {
            return Some(Refused::Filesystem);
        }
        let denied_outside = output
            .lines()
            .filter(|line| line.contains("Permission denied"))
            .flat_map(|line| line.split(|c: char| c.is_whitespace() || matches!(c, ':' | '\'' | '"' | '`')))
            .filter(|word| word.starts_with('/'))
            .any(|word| !self.allows_write(&cwd.join(word)));
        denied_outside.then_some(Refused::Filesystem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxMode;

    #[test]
    fn network_and_write_refusals_are_told_apart() {
        let policy = SandboxPolicy::workspace(Path::new("/p"));
        let cwd = Path::new("/p");
        assert_eq!(
            policy.refused_in("curl: (6) Could not resolve host: example.com", cwd),
            Some(Refused::Network)
        );
        assert_eq!(
            policy.refused_in("npm ERR! getaddrinfo EAI_AGAIN registry.npmjs.org", cwd),
            Some(Refused::Network)
        );
        assert_eq!(
            policy.refused_in("touch: cannot touch '/etc/x': Read-only file system", cwd),
            Some(Refused::Filesystem)
        );
        assert_eq!(
            policy.refused_in("sh: 1: cannot create /opt/out.txt: Permission denied", cwd),
            Some(Refused::Filesystem)
        );
        assert_eq!(
            policy.refused_in("sh: 1: cannot create /p/build/out: Permission denied", cwd),
            None,
            "inside a writable root the sandbox did not refuse it"
        );
        assert_eq!(policy.refused_in("error: test failed", cwd), None);
        let mut online = policy.clone();
        online.network = true;
        assert_eq!(online.refused_in("Could not resolve host: x", cwd), None);
        assert_eq!(
            policy
                .with_mode(SandboxMode::FullAccess)
                .refused_in("touch: '/etc/x': Read-only file system", cwd),
            None
        );
    }
}
