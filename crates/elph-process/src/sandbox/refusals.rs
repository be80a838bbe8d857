//! Refusals that explain themselves: one line for the model when a sandboxed command failed on
//! something the sandbox refused, naming what was refused and the setting that allows it.
//!
//! The kernel says only "Read-only file system" or "Operation not permitted", and a program
//! often words it its own way; the model then guesses, retries, or works around it. The proxy
//! knows which hosts it refused (see `network`); writes and sockets are recognised from the
//! errors they cause. Protected paths have their own, more precise lines (`explain_refusals`).

use super::network::HostDecision;
use super::{SandboxMode, SandboxPolicy};

impl SandboxPolicy {
    /// The one line that explains why a failed command's output reads like a sandbox refusal, if
    /// it does: the network first (hosts the proxy refused while it ran are certain), then
    /// writes outside the writable roots, then Unix sockets.
    pub fn explain_refusal(&self, output: &str, refused_hosts: &[HostDecision]) -> Option<String> {
        if self.mode == SandboxMode::FullAccess {
            return None;
        }
        self.explain_network_refusal(output, refused_hosts)
            .or_else(|| self.explain_write_refusal(output))
            .or_else(|| self.explain_socket_refusal(output))
    }

    fn explain_write_refusal(&self, output: &str) -> Option<String> {
        if !output.contains("Read-only file system") {
            return None;
        }
        let temp = self
            .temp_dir
            .as_ref()
            .map(|dir| format!("; temporary files go in $TMPDIR ({})", dir.display()))
            .unwrap_or_default();
        Some(match self.mode {
            SandboxMode::ReadOnly => format!(
                "[sandbox] the sandbox is read-only: writes are refused{temp}. Tell the user; \
                 --sandbox workspace-write allows writing the project."
            ),
            // Plan mode's policy: nothing but the temp dir.
            _ if self
                .writable_roots
                .iter()
                .all(|root| Some(root) == self.temp_dir.as_ref()) =>
            {
                format!(
                    "[sandbox] only $TMPDIR is writable here (plan mode is read-only){temp}. Tell the \
                     user; switching to build mode (/mode build) allows changing the project."
                )
            }
            _ => {
                let roots: Vec<String> = self
                    .writable_roots
                    .iter()
                    .map(|root| root.display().to_string())
                    .collect();
                format!(
                    "[sandbox] writes outside the writable roots ({}) are refused{temp}. Tell the user; \
                     sandbox.writableRoots in settings.json adds a folder.",
                    roots.join(", ")
                )
            }
        })
    }

    fn explain_socket_refusal(&self, output: &str) -> Option<String> {
        if super::unix_sockets::allowed(self) {
            return None;
        }
        let lower = output.to_ascii_lowercase();
        let refused = lower.contains("could not open a connection to your authentication agent")
            || lower.contains("cannot connect to the docker daemon")
            || ((lower.contains("operation not permitted") || lower.contains("permission denied"))
                && ["unix", "agent", ".sock", "docker", "dbus", "d-bus"]
                    .iter()
                    .any(|word| lower.contains(word)));
        refused.then(|| {
            "[sandbox] Unix sockets (ssh-agent, Docker, D-Bus, tmux) are refused by the sandbox. Tell \
             the user; sandbox.allowUnixSockets in settings.json lets commands reach a socket."
                .to_string()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn one_line_names_the_refusal_and_its_setting() {
        let mut policy = SandboxPolicy::workspace(Path::new("/p"));
        policy.set_temp_dir("/tmp/elph-s");
        let write = policy
            .explain_refusal("touch: cannot touch '/etc/x': Read-only file system", &[])
            .unwrap();
        assert!(
            write.contains("sandbox.writableRoots") && write.contains("/tmp/elph-s"),
            "{write}"
        );
        let socket = policy
            .explain_refusal("Could not open a connection to your authentication agent.", &[])
            .unwrap();
        assert!(socket.contains("sandbox.allowUnixSockets"), "{socket}");
        assert!(
            policy
                .explain_refusal("error[E0308]: mismatched types", &[])
                .is_none()
        );
        assert!(
            policy
                .with_mode(SandboxMode::FullAccess)
                .explain_refusal("Read-only file system", &[])
                .is_none()
        );
    }
}
