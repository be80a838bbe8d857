//! `elph sandbox [--mode M] [--network] -- CMD [ARGS…]`: runs one command under the sandbox policy
//! the project and settings give (the mode and network can be overridden), with the shell
//! environment policy applied, and exits with its status. For seeing what the policy allows.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use elph_process::sandbox::SandboxMode;

use super::exit;
use crate::hooks::discovery::resolve_command;
use crate::hooks::process::describe_spawn_error;
use crate::paths::Paths;
use crate::sandbox::{
    SandboxArgs, make_missing_roots, proxy_domains, resolve_policy, shell_env_policy, weaker_sandbox,
};
use crate::settings::Settings;

#[derive(Debug, Args)]
pub struct SandboxCommandArgs {
    /// read-only, workspace-write or full-access. Otherwise `sandbox.mode` in settings.json, then
    /// workspace-write.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<SandboxMode>,
    /// Let the command use the network.
    #[arg(long)]
    pub network: bool,
    /// Run even where this system cannot give every protection (the missing ones are said first).
    #[arg(long = "allow-weaker-sandbox")]
    pub allow_weaker: bool,
    /// Print what the policy allows on stderr before running the command.
    #[arg(long)]
    pub explain: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

#[expect(clippy::expect_used, reason = "clap requires at least one word")]
pub(super) fn run(cwd: Option<&Path>, args: SandboxCommandArgs) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    let settings = Settings::load(&paths.config_dir)?;
    crate::session_temp::remove_left_overs();
    let temp_dir = crate::session_temp::SessionTempDir::create("elph-sandbox-")
        .context("cannot create the command's temp dir")?;
    let flags = SandboxArgs {
        mode: args.mode,
        network: args.network,
        allow_weaker: args.allow_weaker,
    };
    let mut policy = resolve_policy(&paths, &settings, &flags, Some(temp_dir.path()))?;
    make_missing_roots(&policy)?;
    policy.resolver_view = crate::sandbox::resolver_view(&paths);
    for line in weaker_sandbox(&policy, &settings, &flags)? {
        eprintln!("elph sandbox: {line}");
    }
    // The child is watched through the runtime's reactor; the network proxy, when there is one,
    // runs on it too.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime that watches the command")?;
    let domains = proxy_domains(&settings, &policy)?;
    let _proxy = match domains.clone() {
        Some(domains) => {
            let _entered = runtime.enter();
            let proxy = crate::netproxy::NetProxy::start(domains, None)
                .context("cannot start the sandbox's network proxy")?;
            policy.proxy = Some(proxy.route());
            Some(proxy)
        }
        None => None,
    };
    if args.explain {
        for line in policy.describe() {
            eprintln!("elph sandbox: {line}");
        }
        if let Some(domains) = &domains {
            for line in domains.describe() {
                eprintln!("elph sandbox: {line}");
            }
        }
    }
    let env_policy = shell_env_policy(&paths, &settings);
    let env = elph_agent::tools::native::shell_environment(&policy, &env_policy);
    let (program, rest) = args
        .command
        .split_first()
        .expect("clap requires at least one word");
    let program = find_program(program, &paths.project_dir, &env);
    let rest: Vec<&OsStr> = rest.iter().map(OsString::as_os_str).collect();
    // What the command leaves behind is refused as a `shell_exec` command's is, once it is gone.
    policy.start_session();
    let missing_before = policy.missing_now();
    let status = runtime.block_on(elph_process::process::run_in_foreground(
        &program,
        &rest,
        &paths.project_dir,
        &env,
        &policy,
    ));
    let mut refused = policy.refuse_appeared(&missing_before);
    refused.extend(policy.end_session());
    for line in &refused {
        eprintln!("elph sandbox: {line}");
    }
    let status = status.map_err(|error| anyhow::anyhow!("{}", describe_spawn_error(&program, &error)))?;
    Ok(
        match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(code), _) => u8::try_from(code).unwrap_or(exit::ERROR),
            (None, Some(signal)) => 128u8.saturating_add(signal as u8),
            (None, None) => exit::ERROR,
        },
    )
}

/// The command's program as a path: a name without a `/` is looked up in the absolute entries of
/// the PATH the command gets (the way hook commands are), a path with one is taken from the
/// project folder, where the command runs. A name found nowhere stays bare, and the spawn refuses
/// it with a message that says so.
fn find_program(program: &OsStr, project_dir: &Path, env: &[(OsString, OsString)]) -> PathBuf {
    let path_var = env
        .iter()
        .find(|(name, _)| name == "PATH")
        .and_then(|(_, value)| value.to_str())
        .unwrap_or_default();
    match program.to_str() {
        Some(name) => resolve_command(name, project_dir, path_var).path,
        // Not text: only an absolute path is run (a relative one is refused by the spawn).
        None => PathBuf::from(program),
    }
}
