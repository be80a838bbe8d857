//! `elph sandbox [--mode M] [--network] -- CMD [ARGS…]`: runs one command under the sandbox policy
//! the project and settings give (the mode and network can be overridden), with the shell
//! environment policy applied, and exits with its status. For seeing what the policy allows.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Context;
use clap::Args;
use elph_process::sandbox::SandboxMode;

use super::exit;
use crate::paths::Paths;
use crate::sandbox::{SandboxArgs, resolve_policy, shell_env_policy};
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
    let temp_dir = tempfile::Builder::new()
        .prefix("elph-sandbox-")
        .tempdir()
        .context("cannot create the command's temp dir")?;
    let flags = SandboxArgs {
        mode: args.mode,
        network: args.network,
    };
    let policy = resolve_policy(&paths, &settings, &flags, Some(temp_dir.path()))?;
    if args.explain {
        for line in policy.describe() {
            eprintln!("elph sandbox: {line}");
        }
    }
    let env_policy = shell_env_policy(&paths, &settings);
    let env = elph_agent::tools::native::shell_environment(&policy, &env_policy);
    let (program, rest) = args
        .command
        .split_first()
        .expect("clap requires at least one word");
    let status =
        elph_process::process::run_in_foreground(Path::new(program), rest, &paths.project_dir, &env, &policy)
            .map_err(|error| anyhow::anyhow!("cannot run {}: {error}", Path::new(program).display()))?;
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
