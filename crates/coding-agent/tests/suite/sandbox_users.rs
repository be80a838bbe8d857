//! Running the real `elph` binary as root and as a user who is not, for the sandbox tests.
//!
//! CI runs as root, and the sandbox takes a different path for each (root clears its capabilities
//! and joins an identity-mapped user namespace; another user joins one that maps only itself), so
//! every test of the sandbox's promises runs twice when it can: once as root, once as a fresh
//! non-root uid that owns the test's HOME, CONFIG_DIR and project (switched to with `setpriv`, no
//! entry in /etc/passwd needed). Run as a non-root user, the tests take the non-root path only and
//! say that the root path is skipped.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply};

use super::run_e2e::elph;

/// The uid (and gid) of the non-root user the tests switch to when they run as root.
pub const TEST_UID: u32 = 64_123;

/// Who runs `elph`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// uid 0.
    Root,
    /// A user without privileges: `TEST_UID` when the tests run as root, or the tests' own user.
    User,
}

impl Who {
    pub fn uid(self) -> u32 {
        match self {
            Who::Root => 0,
            Who::User if is_root() => TEST_UID,
            Who::User => nix::unistd::geteuid().as_raw(),
        }
    }
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Root and a non-root user when the tests run as root (and `setpriv` exists); the tests' own user
/// otherwise, with a note that the root path is not covered here.
pub fn everyone(test: &str) -> Vec<Who> {
    if !is_root() {
        eprintln!("{test}: the root path is skipped: the tests do not run as root");
        return vec![Who::User];
    }
    if !Path::new(SETPRIV).exists() {
        eprintln!("{test}: the non-root path is skipped: no {SETPRIV} to switch users");
        return vec![Who::Root];
    }
    vec![Who::Root, Who::User]
}

const SETPRIV: &str = "/usr/bin/setpriv";

/// A command for the `elph` binary run by `who` in `env` (the test's layout, owned by `who`),
/// with `env.command`'s hermetic environment.
pub fn elph_as(env: &TestEnv, who: Who) -> Command {
    if who == Who::Root || !is_root() {
        return env.command(&elph());
    }
    hand_over(env);
    let mut command = env.command(Path::new(SETPRIV));
    command
        .arg(format!("--reuid={TEST_UID}"))
        .arg(format!("--regid={TEST_UID}"))
        .arg("--clear-groups")
        .arg(reachable_binary(env));
    command
}

/// Another program run by `who` (a victim process, a socket server): `setpriv` when needed.
pub fn program_as(env: &TestEnv, who: Who, program: &str) -> Command {
    if who == Who::Root || !is_root() {
        return env.command(Path::new(program));
    }
    hand_over(env);
    let mut command = env.command(Path::new(SETPRIV));
    command
        .arg(format!("--reuid={TEST_UID}"))
        .arg(format!("--regid={TEST_UID}"))
        .arg("--clear-groups")
        .arg(program);
    command
}

/// Gives the test's folders to `TEST_UID` (the root of the layout stays root's, readable by all).
fn hand_over(env: &TestEnv) {
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for dir in [&env.home, &env.config_dir, &env.project, &env.data_dir] {
        std::fs::create_dir_all(dir).unwrap();
        chown_tree(dir);
    }
}

fn chown_tree(path: &Path) {
    let uid = nix::unistd::Uid::from_raw(TEST_UID);
    let gid = nix::unistd::Gid::from_raw(TEST_UID);
    let _ = nix::unistd::fchownat(
        nix::fcntl::AT_FDCWD,
        path,
        Some(uid),
        Some(gid),
        nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    );
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            chown_tree(&entry.path());
        }
    }
}

/// The binary, where the other user can reach it (the build folder may be private).
fn reachable_binary(env: &TestEnv) -> PathBuf {
    let binary = env.root.path().join("elph");
    if !binary.exists() {
        std::fs::hard_link(elph(), &binary)
            .or_else(|_| std::fs::copy(elph(), &binary).map(|_| ()))
            .unwrap();
    }
    binary
}

/// Runs `command` to its end under a 60-second deadline.
pub fn output(command: Command) -> Output {
    assert_cmd::Command::from_std(command)
        .timeout(Duration::from_secs(60))
        .output()
        .expect("the command runs")
}

/// `elph run` by `who` against `server` (OpenAI wire), with `vars` and `args`, under a deadline.
pub async fn run_as(
    env: &TestEnv,
    who: Who,
    server: &FakeModelServer,
    vars: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let mut command = elph_as(env, who);
    command
        .env("OPENAI_API_KEY", "sk-test-secret-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .envs(vars.iter().copied())
        .args(["run", "--model", "openai/gpt-test"])
        .args(args);
    tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || command.output()),
    )
    .await
    .expect("elph run finished within 60 s")
    .unwrap()
    .unwrap()
}

/// Has the model run `script` with `shell_exec` in an `elph run` by `who`; returns the tool
/// result the model got back (the text of the second request's last message) and the output.
pub async fn shell_as(
    env: &TestEnv,
    who: Who,
    script: &str,
    vars: &[(&str, &str)],
    args: &[&str],
) -> (String, Output) {
    let server = FakeModelServer::start(test_support::fake_model::Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        serde_json::json!({"command": script}),
    ));
    server.enqueue(FakeReply::text("done"));
    let mut all_args = args.to_vec();
    all_args.push("go");
    let output = run_as(env, who, &server, vars, &all_args).await;
    let requests = server.requests();
    let result = requests
        .get(1)
        .and_then(|request| request["messages"].as_array())
        .and_then(|messages| messages.last())
        .map(|message| message["content"].to_string())
        .unwrap_or_default();
    (result, output)
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
