//! The sandbox and shell environment part of `elph doctor`: the kernel's Landlock ABI, what the
//! configured mode allows, whether read-only paths inside the project can be held read-only, and
//! the names (never the values) of the variables a shell command would get.

use std::path::PathBuf;

use elph_process::sandbox::{
    SandboxMode, landlock_support, mount_namespaces_available, mounted_read_only_paths,
};
use serde::Serialize;

use super::checks::{Finding, Level};
use crate::paths::Paths;
use crate::sandbox::{SandboxArgs, resolve_policy, shell_env_policy};
use crate::settings::{NetworkSetting, Settings};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SandboxReport {
    /// The Landlock ABI of this kernel; `null` when it has none.
    pub(crate) landlock_abi: Option<u8>,
    /// The mode of settings.json (or the default); `--sandbox` overrides it per run.
    pub mode: Option<SandboxMode>,
    /// `off`, `on` or `allowlist` (settings.json; `--sandbox-network` turns it on per run).
    pub network: &'static str,
    /// With `allowlist`: the hosts the proxy lets through (presets expanded), and those it refuses.
    pub allowed_domains: Vec<String>,
    pub denied_domains: Vec<String>,
    /// What the mode allows, one line each.
    pub allows: Vec<String>,
    /// Read-only paths inside writable roots, held read-only by a private mount namespace.
    pub read_only_paths: Vec<PathBuf>,
    /// Whether this system lets Elph make that mount namespace.
    pub(crate) mount_namespace: bool,
    /// The variables a shell command would get, by name.
    pub shell_environment: Vec<String>,
    /// The variables of Elph's environment a shell command would not get, by name, each with why.
    pub(crate) excluded_variables: Vec<ExcludedVariable>,
    /// Whether sandboxed commands get a user namespace of their own.
    pub(crate) user_namespace: bool,
    /// Whether each sandboxed command gets a PID namespace with its own `/proc`.
    pub(crate) pid_namespace: bool,
    pub findings: Vec<Finding>,
}

/// One variable a shell command does not get, and why (never its value).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ExcludedVariable {
    pub(crate) name: String,
    pub(crate) reason: String,
}

pub(crate) fn gather(paths: &Paths) -> SandboxReport {
    let support = landlock_support();
    let mut findings = Vec::new();
    let settings = match Settings::load(&paths.config_dir) {
        Ok(settings) => settings,
        Err(error) => {
            findings.push(
                Finding::new(Level::Error, error.to_string())
                    .fix("fix settings.json; every session refuses to start until then"),
            );
            Settings::default()
        }
    };
    let mode = settings.sandbox.mode.unwrap_or_default();
    let mut report = SandboxReport {
        landlock_abi: support.abi,
        mode: Some(mode),
        network: match settings.sandbox.network {
            None | Some(NetworkSetting::Off) => "off",
            Some(NetworkSetting::On) => "on",
            Some(NetworkSetting::Allowlist) => "allowlist",
        },
        allowed_domains: Vec::new(),
        denied_domains: Vec::new(),
        allows: Vec::new(),
        read_only_paths: Vec::new(),
        mount_namespace: mount_namespaces_available(),
        shell_environment: Vec::new(),
        excluded_variables: Vec::new(),
        user_namespace: elph_process::sandbox::user_namespaces_available(),
        pid_namespace: elph_process::sandbox::pid_namespaces_available(),
        findings: Vec::new(),
    };
    let args = SandboxArgs::default();
    match resolve_policy(paths, &settings, &args, None) {
        Ok(policy) => {
            report.allows = policy.describe();
            match crate::sandbox::proxy_domains(&settings, &policy) {
                Ok(Some(domains)) => {
                    report.allows.retain(|line| !line.starts_with("network:"));
                    report.allows.push(
                        "network: allowlist (HTTP and HTTPS through the proxy each session starts on \
                         127.0.0.1; no other connection)"
                            .into(),
                    );
                    report.allows.extend(domains.describe());
                    report.allowed_domains = domains.allowed_patterns();
                    report.denied_domains = domains.denied_patterns();
                    if !landlock_support().filters_tcp() {
                        findings.push(Finding::new(
                            Level::Error,
                            "sandbox.network \"allowlist\" needs Landlock ABI 4 (Linux 6.7 or later); \
                             sandboxed commands refuse to run on this kernel",
                        ));
                    }
                }
                Ok(None) => {}
                Err(error) => findings.push(Finding::new(Level::Error, format!("{error:#}"))),
            }
            if mode == SandboxMode::WorkspaceWrite {
                for root in policy.writable_roots.iter().filter(|root| !root.exists()) {
                    findings.push(
                        Finding::new(
                            Level::Warning,
                            format!(
                                "the writable root {} does not exist yet: each session makes it when it \
                                 starts, and refuses to start if it cannot",
                                root.display()
                            ),
                        )
                        .fix("create it, or remove it from sandbox.writableRoots"),
                    );
                }
            }
            if mode == SandboxMode::WorkspaceWrite {
                report.read_only_paths = mounted_read_only_paths(&policy);
            }
            let env_policy = shell_env_policy(paths, &settings);
            for (name, verdict) in env_policy.explain(std::env::vars_os()) {
                let value = std::env::var_os(&name).unwrap_or_default();
                let socket = elph_process::sandbox::socket_variable(&policy, &name, &value.to_string_lossy());
                match (verdict.passes(), socket) {
                    (true, None) => report.shell_environment.push(name),
                    (true, Some(reason)) => report.excluded_variables.push(ExcludedVariable { name, reason }),
                    (false, _) => report.excluded_variables.push(ExcludedVariable {
                        name,
                        reason: verdict.to_string(),
                    }),
                }
            }
            for protection in elph_process::sandbox::missing_protections(&policy) {
                let accepted = settings.sandbox.allow_weaker.unwrap_or(false);
                findings.push(
                    Finding::new(
                        if accepted { Level::Warning } else { Level::Error },
                        format!("sandbox weaker on this system: {protection}"),
                    )
                    .fix(if accepted {
                        "accepted by sandbox.allowWeaker; allow user namespaces (sysctl \
                         kernel.unprivileged_userns_clone=1, or the AppArmor userns restriction) to get it back"
                    } else {
                        "sandboxed sessions refuse to start until you allow user namespaces (sysctl \
                         kernel.unprivileged_userns_clone=1, or the AppArmor userns restriction) or accept \
                         it with --allow-weaker-sandbox or \"sandbox\": {\"allowWeaker\": true}"
                    }),
                );
            }
            if policy.temp_dir.is_none() {
                report.shell_environment.push("TMPDIR".into());
            }
            report.shell_environment.sort();
            report.shell_environment.dedup();
        }
        Err(error) => findings.push(
            Finding::new(Level::Error, format!("{error:#}"))
                .fix("opt out with `--sandbox full-access` or \"sandbox\": {\"mode\": \"full-access\"}"),
        ),
    }
    if support.abi.is_some() && !support.filters_tcp() && report.mode != Some(SandboxMode::FullAccess) {
        findings.push(Finding::new(
            Level::Info,
            "Landlock below ABI 4 cannot filter TCP; the seccomp filter alone keeps the network off",
        ));
    }
    report.findings = findings;
    report
}
