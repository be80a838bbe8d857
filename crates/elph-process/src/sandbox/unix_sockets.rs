//! Unix sockets and the sandbox: which sockets a sandboxed command may reach, and which of Elph's
//! variables only point at sockets it may not.
//!
//! A Unix socket is a door out of the sandbox: the ssh-agent signs with the user's keys,
//! `docker.sock` is root on the host, a D-Bus session bus starts programs, VS Code's IPC socket
//! opens terminals, and `tmux new-window -d CMD` through `$TMUX` runs CMD outside any sandbox.
//! In `read-only` and `workspace-write` a sandboxed process cannot create a Unix socket (seccomp,
//! see `seccomp`) and cannot reach an abstract one outside its sandbox (Landlock ABI 6), unless
//! the user lists sockets in `sandbox.allowUnixSockets`. The variables that only tell a program
//! where such a socket is are not passed either, so a tool does not stall or fail on a socket it
//! cannot use; one pointing at an allowed socket is passed.

use std::path::{Path, PathBuf};

use super::SandboxPolicy;

/// Variables whose only purpose is to point at a local socket (a name ending in `*` is a prefix).
const SOCKET_VARIABLES: [&str; 11] = [
    "TMUX",
    "TMUX_PANE",
    "STY",
    "DBUS_SESSION_BUS_ADDRESS",
    "VSCODE_IPC_HOOK*",
    "VSCODE_GIT_IPC_HANDLE",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "KITTY_LISTEN_ON",
];

/// Why `name=value` is not passed to a process under `policy`: it points at a socket the process
/// may not reach. `None` when it is passed.
pub fn socket_variable(policy: &SandboxPolicy, name: &str, value: &str) -> Option<String> {
    if !policy.is_confined() {
        return None;
    }
    let socket_variable = SOCKET_VARIABLES
        .iter()
        .any(|pattern| match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *pattern,
        })
        || (name == "DOCKER_HOST" && value.starts_with("unix://"));
    if !socket_variable {
        return None;
    }
    let target = value
        .strip_prefix("unix://")
        .or_else(|| value.strip_prefix("unix:path="))
        .unwrap_or(value);
    // tmux writes `socket,pid,session`; screen `pid.name`.
    let target = target.split(',').next().unwrap_or(target);
    if policy
        .allow_unix_sockets
        .iter()
        .any(|allowed| Path::new(target) == allowed.as_path())
    {
        return None;
    }
    Some(if policy.allow_unix_sockets.is_empty() {
        "points at a local socket, which sandboxed commands cannot reach (sandbox.allowUnixSockets)".into()
    } else {
        "points at a local socket that sandbox.allowUnixSockets does not list".into()
    })
}

/// Whether a sandboxed process under `policy` may create Unix sockets.
pub(crate) fn allowed(policy: &SandboxPolicy) -> bool {
    !policy.is_confined() || !policy.allow_unix_sockets.is_empty()
}

/// The sockets the user allowed, for `describe`.
pub(crate) fn describe(policy: &SandboxPolicy) -> String {
    if policy.allow_unix_sockets.is_empty() {
        return "unix sockets: none (socketpair only)".into();
    }
    let listed: Vec<String> = policy
        .allow_unix_sockets
        .iter()
        .map(|path: &PathBuf| path.display().to_string())
        .collect();
    format!(
        "unix sockets: allowed for {} (the kernel cannot tell paths apart: every pathname socket is reachable)",
        listed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::SandboxMode;

    #[test]
    fn socket_variables_are_held_back_unless_their_socket_is_allowed() {
        let mut policy = SandboxPolicy::workspace(Path::new("/p"));
        assert!(socket_variable(&policy, "TMUX", "/tmp/tmux-0/default,123,0").is_some());
        assert!(socket_variable(&policy, "VSCODE_IPC_HOOK_CLI", "/run/x.sock").is_some());
        assert!(socket_variable(&policy, "DOCKER_HOST", "unix:///var/run/docker.sock").is_some());
        assert!(socket_variable(&policy, "DOCKER_HOST", "tcp://10.0.0.1:2375").is_none());
        assert!(socket_variable(&policy, "EDITOR", "vi").is_none());
        policy.allow_unix_sockets.push("/run/agent.sock".into());
        assert!(socket_variable(&policy, "SSH_AUTH_SOCK", "/run/agent.sock").is_none());
        assert!(socket_variable(&policy, "SSH_AUTH_SOCK", "/run/other.sock").is_some());
        let full = policy.with_mode(SandboxMode::FullAccess);
        assert!(socket_variable(&full, "TMUX", "/tmp/tmux-0/default,1,0").is_none());
    }
}
