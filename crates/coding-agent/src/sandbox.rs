//! The session's sandbox policy and shell environment policy, resolved from the command line,
//! settings.json and the paths: the one place every front end gets them from.

use std::path::{Path, PathBuf};

use anyhow::Context;
use elph_process::sandbox::{SandboxMode, SandboxPolicy};
use elph_process::shell_env::ShellEnvPolicy;

use crate::paths::Paths;
use crate::settings::{NetworkSetting, Settings};

/// `--sandbox MODE` and `--sandbox-network`, shared by `elph`, `elph run` and `elph acp`.
#[derive(Clone, Debug, Default, PartialEq, Eq, clap::Args)]
pub struct SandboxArgs {
    /// The confinement of shell commands: read-only, workspace-write (the default: write only in
    /// the project and a session temp dir) or full-access (none). Otherwise `sandbox.mode` in
    /// settings.json.
    #[arg(long = "sandbox", value_name = "MODE")]
    pub mode: Option<SandboxMode>,
    /// Let sandboxed commands use the network (off by default in read-only and workspace-write).
    #[arg(long = "sandbox-network")]
    pub network: bool,
    /// Run the sandboxed modes even where this system cannot give every protection (the missing
    /// ones are said at start). Otherwise `sandbox.allowWeaker` in settings.json.
    #[arg(long = "allow-weaker-sandbox")]
    pub allow_weaker: bool,
}

/// The session's policy: flag, then settings.json, then `workspace-write`; network on if either
/// the flag or settings turn it on. `temp_dir` is the session's own (exported as TMPDIR).
pub(crate) fn resolve_policy(
    paths: &Paths,
    settings: &Settings,
    args: &SandboxArgs,
    temp_dir: Option<&Path>,
) -> anyhow::Result<SandboxPolicy> {
    let mode = session_mode(settings, args);
    let mut policy = SandboxPolicy::workspace(&paths.project_dir).with_mode(mode);
    policy.network = args.network || settings.sandbox.network == Some(NetworkSetting::On);
    if let Some(dir) = temp_dir {
        policy.set_temp_dir(dir);
    }
    for root in user_writable_roots(paths, settings)? {
        policy.add_writable_root(root);
    }
    let mut user_protect = Vec::new();
    for entry in &settings.sandbox.protect {
        user_protect.push(
            writable_root(entry).with_context(|| {
                format!("{}: sandbox.protect", Settings::path(&paths.config_dir).display())
            })?,
        );
    }
    for socket in &settings.sandbox.allow_unix_sockets {
        policy
            .allow_unix_sockets
            .push(writable_root(socket).with_context(|| {
                format!(
                    "{}: sandbox.allowUnixSockets",
                    Settings::path(&paths.config_dir).display()
                )
            })?);
    }
    policy.limits = settings.sandbox.limits.limits();
    // Elph's own configuration and data stay read-only even if a writable root contains them
    // (a project at ~ or a root of ~/.config): trust.json and hooks.json decide what runs next.
    // So do the places git, Elph's hooks and other agents run code from.
    // The session's temp dir is removed when the session ends: nothing runs from it later.
    let roots: Vec<PathBuf> = policy
        .writable_roots
        .iter()
        .filter(|root| Some(*root) != policy.temp_dir.as_ref())
        .cloned()
        .collect();
    for protected in crate::protected_paths::protected_paths(paths, &roots, &user_protect) {
        if protected.make_folder || std::fs::symlink_metadata(&protected.path).is_ok() {
            policy.add_protected(protected.path, protected.why, protected.make_folder);
        } else {
            policy.add_absent(protected.path, protected.why);
        }
    }
    // Said before the session starts rather than at the first command: a sandboxed mode on a
    // kernel without Landlock is refused, never run unconfined.
    if policy.is_confined() && !elph_process::sandbox::landlock_support().available() {
        return Err(elph_process::sandbox::SandboxError::LandlockUnavailable {
            mode: policy.mode,
            reason: "has none (landlock_create_ruleset fails)",
        }
        .into());
    }
    Ok(policy)
}

/// The session's sandbox mode: the flag, then settings.json, then `workspace-write`.
pub(crate) fn session_mode(settings: &Settings, args: &SandboxArgs) -> SandboxMode {
    args.mode.or(settings.sandbox.mode).unwrap_or_default()
}

/// The folders `sandbox.writableRoots` and `sandbox.writableCaches` add, absolute.
pub(crate) fn user_writable_roots(paths: &Paths, settings: &Settings) -> anyhow::Result<Vec<PathBuf>> {
    let file = Settings::path(&paths.config_dir);
    let mut roots = Vec::new();
    for root in &settings.sandbox.writable_roots {
        roots
            .push(writable_root(root).with_context(|| format!("{}: sandbox.writableRoots", file.display()))?);
    }
    for cache in &settings.sandbox.writable_caches {
        for folder in cache.folders() {
            roots.push(
                writable_root(&format!("~/{folder}"))
                    .with_context(|| format!("{}: sandbox.writableCaches", file.display()))?,
            );
        }
    }
    Ok(roots)
}

/// Makes the writable roots that do not exist yet (the kernel can only grant a folder that
/// exists); one that cannot be made is an error that names it, never a root silently dropped.
pub(crate) fn make_missing_roots(policy: &SandboxPolicy) -> anyhow::Result<()> {
    if policy.mode != SandboxMode::WorkspaceWrite {
        return Ok(());
    }
    for root in &policy.writable_roots {
        if std::fs::symlink_metadata(root).is_err() {
            std::fs::create_dir_all(root).with_context(|| {
                format!(
                    "sandbox: the writable root {} does not exist and cannot be created; create it, or \
                     remove it from sandbox.writableRoots (or writableCaches) in settings.json",
                    root.display()
                )
            })?;
            tracing::info!(root = %root.display(), "sandbox: made the missing writable root");
        }
    }
    Ok(())
}

/// A copy of `/etc/nsswitch.conf` that answers host names from `/etc/hosts` only, in DATA_DIR
/// (read-only to commands), for the sandbox to bind over the real one while the network is not
/// on: a lookup then fails at once as "not found" instead of "try again", which npm and others
/// retry for over a minute. `None` when the system has no such file or it cannot be written.
pub(crate) fn resolver_view(paths: &Paths) -> Option<PathBuf> {
    let original = std::fs::read_to_string("/etc/nsswitch.conf").ok()?;
    let mut view = String::new();
    let mut replaced = false;
    for line in original.lines() {
        if line.trim_start().starts_with("hosts:") {
            if !replaced {
                view.push_str("hosts: files\n");
                replaced = true;
            }
        } else {
            view.push_str(line);
            view.push('\n');
        }
    }
    if !replaced {
        view.push_str("hosts: files\n");
    }
    let dir = paths.data_dir.join("sandbox");
    let path = dir.join("nsswitch.conf");
    if std::fs::read_to_string(&path).is_ok_and(|known| known == view) {
        return Some(path);
    }
    // Owner-only, as everything Elph makes in DATA_DIR, whatever the umask.
    let written = elph_config::private::create_private_dir_all(&dir).and_then(|()| {
        let mut file = tempfile::NamedTempFile::new_in(&dir)?;
        std::io::Write::write_all(&mut file, view.as_bytes())?;
        file.persist(&path).map(drop).map_err(|error| error.error)
    });
    match written {
        Ok(()) => Some(path),
        Err(error) => {
            tracing::warn!(%error, "sandbox: cannot write the resolver's view; lookups fail slowly");
            None
        }
    }
}

/// The hosts the session's proxy lets through, when `sandbox.network` is `"allowlist"` and
/// neither `--sandbox-network` nor a mode without confinement turns the network fully on.
pub(crate) fn proxy_domains(
    settings: &Settings,
    policy: &SandboxPolicy,
) -> anyhow::Result<Option<crate::netproxy::DomainPolicy>> {
    if settings.sandbox.network != Some(NetworkSetting::Allowlist) || policy.network || !policy.is_confined()
    {
        return Ok(None);
    }
    Ok(Some(crate::netproxy::DomainPolicy::parse(
        &settings.sandbox.allowed_domains,
        &settings.sandbox.denied_domains,
    )?))
}

/// What this system cannot give to `policy`, in one line each; an error naming them and the
/// opt-in unless the user accepted a weaker sandbox (`--allow-weaker-sandbox`,
/// `sandbox.allowWeaker`). Every front end calls it before its first command, and says the lines
/// it returns.
pub(crate) fn weaker_sandbox(
    policy: &SandboxPolicy,
    settings: &Settings,
    args: &SandboxArgs,
) -> anyhow::Result<Vec<String>> {
    let missing: Vec<String> = elph_process::sandbox::missing_protections(policy)
        .iter()
        .map(|protection| format!("sandbox weaker on this system: {protection}"))
        .collect();
    let accepted = args.allow_weaker || settings.sandbox.allow_weaker.unwrap_or(false);
    if missing.is_empty() || accepted {
        return Ok(missing);
    }
    anyhow::bail!(
        "the {mode} sandbox cannot give every protection on this system:\n  - {list}\nto run anyway, \
         pass --allow-weaker-sandbox or set \"sandbox\": {{\"allowWeaker\": true}} in settings.json; \
         `elph doctor` says how to get them back",
        mode = policy.mode,
        list = missing
            .iter()
            .map(|line| line.trim_start_matches("sandbox weaker on this system: "))
            .collect::<Vec<_>>()
            .join("\n  - "),
    )
}

/// `sandbox.writableRoots` entries: absolute, or `~/...` under HOME.
fn writable_root(entry: &str) -> anyhow::Result<PathBuf> {
    let path = if let Some(rest) = entry.strip_prefix("~/") {
        let home = std::env::var_os("HOME").context("\"~/\" needs HOME to be set")?;
        PathBuf::from(home).join(rest)
    } else {
        PathBuf::from(entry)
    };
    anyhow::ensure!(
        path.is_absolute(),
        "{entry:?} is not absolute; write an absolute path or one starting with ~/"
    );
    Ok(path)
}

/// The session's shell environment policy: settings.json's `shellEnvironment`, with every
/// provider's key variable (built in and custom) excluded.
pub(crate) fn shell_env_policy(paths: &Paths, settings: &Settings) -> ShellEnvPolicy {
    shell_env_policy_for(elph_ai::BUILTIN_PROVIDERS, paths, settings)
}

/// [`shell_env_policy`] with `table` as the built-in providers.
fn shell_env_policy_for(
    table: &[elph_ai::BuiltinProvider],
    paths: &Paths,
    settings: &Settings,
) -> ShellEnvPolicy {
    // The table's keys and every variable a provider file sends as a secret (its key, its headers'
    // `${NAME}`s), also from files skipped as broken: a file this version cannot use still names
    // the user's key.
    let mut provider_key_vars =
        elph_ai::provider_secret_vars(table, &elph_ai::Catalog::load(&paths.config_dir));
    // A file that is not even valid JSON names its key all the same: every `"apiKeyEnv": "NAME"`
    // written in any provider file is excluded, file by file.
    provider_key_vars.extend(api_key_envs_written_in(&paths.config_dir.join("providers")));
    provider_key_vars.sort();
    provider_key_vars.dedup();
    let user = &settings.shell_environment;
    ShellEnvPolicy {
        inherit: user.inherit.unwrap_or_default(),
        provider_key_vars,
        exclude: user.exclude.clone(),
        include: user.include.clone(),
        set: user.set.clone(),
    }
}

/// Every `"apiKeyEnv": "NAME"` written in a `*.json` file of `dir`, read as text so that a file
/// that does not parse still gives its names.
fn api_key_envs_written_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "json") || !path.is_file() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let mut rest = text.as_str();
        while let Some((_, after)) = rest.split_once("\"apiKeyEnv\"") {
            rest = after;
            let value = rest.trim_start().strip_prefix(':').map(str::trim_start);
            if let Some(name) = value
                .and_then(|value| value.strip_prefix('"'))
                .and_then(|value| value.split_once('"'))
                .map(|(name, _)| name.trim())
                .filter(|name| !name.is_empty())
            {
                names.push(name.to_string());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_variables_are_found_in_files_that_do_not_parse() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.json"),
            r#"{"name": "acme", "apiKeyEnv" : "ACME_ACCESS", "wireApi": "openai"}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.json"),
            r#"{"name": "broken", "apiKeyEnv": "BROKEN_ONE", "#,
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), r#""apiKeyEnv": "NOT_A_PROVIDER""#).unwrap();
        let mut names = api_key_envs_written_in(dir.path());
        names.sort();
        assert_eq!(names, ["ACME_ACCESS", "BROKEN_ONE"]);
    }

    /// A row added to the providers' table is kept from shell commands with nothing else to edit:
    /// its variable (a name no default exclude would catch) passes without the row and not with it.
    #[test]
    fn a_provider_added_to_the_table_has_its_key_excluded_from_the_shell() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths {
            config_dir: dir.path().join("config"),
            data_dir: dir.path().join("data"),
            project_dir: dir.path().to_path_buf(),
        };
        let settings = Settings::default();
        let environment = || {
            [
                ("ACME_ACCESS", "sk-acme"),
                ("OPENAI_API_KEY", "sk-o"),
                ("LANG", "C"),
            ]
            .map(|(name, value)| (name.into(), value.into()))
        };
        let names = |policy: &ShellEnvPolicy| -> Vec<String> {
            policy
                .apply(environment())
                .into_iter()
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .collect()
        };
        let today = shell_env_policy(&paths, &settings);
        assert_eq!(names(&today), ["ACME_ACCESS", "LANG"]);
        let mut table = elph_ai::BUILTIN_PROVIDERS.to_vec();
        table.push(elph_ai::BuiltinProvider {
            name: "acme",
            api_key_env: "ACME_ACCESS",
            base_url_env: "ACME_URL",
            default_base_url: "https://api.acme.test/v1",
            api: elph_ai::WireApi::OpenAiChat,
        });
        let with_acme = shell_env_policy_for(&table, &paths, &settings);
        assert_eq!(names(&with_acme), ["LANG"]);
        assert!(with_acme.provider_key_vars.contains(&"ACME_ACCESS".to_string()));
    }
}
