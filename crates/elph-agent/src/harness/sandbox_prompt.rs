//! What the model is told about the sandbox: one short block, in the system prompt and in the
//! shell tool's description, made from the policy in force (so it changes with the agent mode).
//!
//! A model that is not told guesses: it writes to `/tmp`, retries a download that can never work,
//! or reaches for a workaround. Told the rules, it uses `$TMPDIR` and, when the sandbox refuses
//! something the task needs, says so with the setting that would allow it, so the user can
//! decide instead of switching the sandbox off.

use elph_process::sandbox::{NetworkAccess, SandboxMode, SandboxPolicy};

use super::AgentMode;

/// The most writable roots listed by name; more are counted.
const ROOTS_SHOWN: usize = 6;

/// The block for `policy` (the shell's effective policy in `mode`).
pub(crate) fn sandbox_block(policy: &SandboxPolicy, mode: AgentMode) -> String {
    let tmpdir = policy
        .temp_dir
        .as_ref()
        .map(|dir| format!("$TMPDIR ({})", dir.display()));
    let mut lines = Vec::new();
    let confinement = match (policy.mode, mode) {
        (SandboxMode::FullAccess, _) => {
            lines.push(
                "Sandbox: off (full-access). Commands run with the user's own permissions; be careful."
                    .to_string(),
            );
            return lines.join("\n");
        }
        (_, AgentMode::Plan) => format!(
            "plan mode: read-only everywhere except {}",
            tmpdir.as_deref().unwrap_or("nowhere")
        ),
        (SandboxMode::ReadOnly, AgentMode::Build) => format!(
            "read-only: writes are refused{}",
            tmpdir
                .as_deref()
                .map(|dir| format!(" except in {dir}"))
                .unwrap_or_default()
        ),
        (SandboxMode::WorkspaceWrite, AgentMode::Build) => {
            let mut roots: Vec<String> = policy
                .writable_roots
                .iter()
                .filter(|root| Some(*root) != policy.temp_dir.as_ref())
                .take(ROOTS_SHOWN)
                .map(|root| root.display().to_string())
                .collect();
            let more = policy.writable_roots.len().saturating_sub(roots.len() + 1);
            if more > 0 {
                roots.push(format!("{more} more"));
            }
            if let Some(dir) = &tmpdir {
                roots.push(dir.clone());
            }
            format!(
                "workspace-write: writable are {}; everything else is read-only (/tmp too), and so are \
                 .git/config, .git/hooks and .elph/",
                roots.join(", ")
            )
        }
    };
    lines.push(format!(
        "Sandbox (enforced by the kernel on shell_exec and everything it starts): {confinement}."
    ));
    if let Some(dir) = &tmpdir {
        lines.push(format!("Put temporary files in {dir}."));
    }
    lines.push(match policy.network_access() {
        NetworkAccess::Off => {
            "Network: off (connections and DNS lookups fail at once; do not retry them).".to_string()
        }
        NetworkAccess::Allowlist => "Network: allowlisted: HTTP(S) only through the proxy in \
             HTTP_PROXY/HTTPS_PROXY, to the hosts of sandbox.allowedDomains; other hosts and direct \
             connections are refused."
            .to_string(),
        NetworkAccess::On => "Network: on.".to_string(),
    });
    if policy.allow_unix_sockets.is_empty() {
        lines.push("Unix sockets (ssh-agent, Docker, D-Bus): refused.".to_string());
    }
    lines.push(
        "When the sandbox refuses something the task needs, do not work around it: tell the user \
         what was refused and the setting that would allow it (the refusal's [sandbox] line names it)."
            .to_string(),
    );
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_block_states_mode_network_roots_and_tmpdir() {
        let mut policy = SandboxPolicy::workspace(Path::new("/p"));
        policy.set_temp_dir("/tmp/elph-session-1");
        let build = sandbox_block(&policy, AgentMode::Build);
        assert!(
            build.contains("workspace-write: writable are /p, $TMPDIR (/tmp/elph-session-1)"),
            "{build}"
        );
        assert!(build.contains("Network: off"), "{build}");
        assert!(build.contains("the setting that would allow it"), "{build}");
        let plan = sandbox_block(&policy.planning(), AgentMode::Plan);
        assert!(
            plan.contains("plan mode: read-only everywhere except $TMPDIR"),
            "{plan}"
        );
        policy.proxy = Some(elph_process::sandbox::ProxyRoute::new(9));
        assert!(sandbox_block(&policy, AgentMode::Build).contains("Network: allowlisted"));
        let full = sandbox_block(&policy.with_mode(SandboxMode::FullAccess), AgentMode::Build);
        assert!(full.starts_with("Sandbox: off"), "{full}");
    }
}
