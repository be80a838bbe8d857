//! `CONFIG_DIR/settings.json`: the user's defaults (model, compaction threshold, sandbox, shell
//! environment, project hooks' sandbox).

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// `PROVIDER/MODEL`, used when neither `--model` nor `ELPH_MODEL` is given.
    pub model: Option<String>,
    /// Compact automatically when the context reaches this share of the model's window (0.1 to 1.0).
    pub(crate) compaction_threshold: Option<f64>,
    /// The confinement of `shell_exec` (`--sandbox` and `--sandbox-network` override it).
    #[serde(default)]
    pub sandbox: SandboxSettings,
    /// Which variables of Elph's environment a shell command gets.
    #[serde(default)]
    pub shell_environment: ShellEnvironmentSettings,
    /// Defaults for the hooks of `PROJECT_DIR/.elph/hooks.json`.
    #[serde(default)]
    pub project_hooks: ProjectHooksSettings,
    /// Bounds of the read tools (grep, find_path, list_dir, read_file).
    #[serde(default)]
    pub(crate) read_tools: ReadToolsSettings,
    /// `false`: trust projects by path only, without pinning what they held when trusted
    /// (docs/trust.md, "Pinned trust").
    pub trust_pinning: Option<bool>,
    /// Bounds across all hooks.
    #[serde(default)]
    pub hooks: HooksSettings,
    /// Permission rules: which calls run without a question, are asked about, or are refused.
    #[serde(default)]
    pub(crate) permissions: crate::permissions::PermissionsSettings,
    /// `true`: prompt templates' `` !`command` `` lines are never run (they reach the model as
    /// written). They run only in trusted projects in any case.
    pub disable_template_shell: Option<bool>,
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
}

/// `"hooks": {"maxAddedContextBytes": 131072, "maxStopContinuations": 8, "notifyTurnAfterMs": 30000}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HooksSettings {
    /// The most context all beforeAgent hooks together may add to one request (default 128 KiB).
    pub max_added_context_bytes: Option<u64>,
    /// How many times in a row stop hooks may continue a turn (default 8).
    pub max_stop_continuations: Option<u32>,
    /// A turn that ran at least this long fires a `notification` hook (`turnDone`) when it ends
    /// (default 30 s).
    pub notify_turn_after_ms: Option<u64>,
    /// Where project url hooks may post: exact URLs, or prefixes ending in `*`. Absent: any https
    /// URL (and http to this machine).
    pub allowed_urls: Option<Vec<String>>,
}

/// `"sandbox": {"mode": "workspace-write", "network": false, "writableRoots": ["~/scratch"]}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SandboxSettings {
    pub mode: Option<elph_process::sandbox::SandboxMode>,
    /// `false`, `true`, or `"allowlist"` (HTTP(S) through the session's proxy, to the hosts of
    /// `allowedDomains`).
    pub network: Option<NetworkSetting>,
    /// With `"network": "allowlist"`: the hosts the proxy lets through (names, `*.example.com`,
    /// presets such as `npm`).
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// Hosts the proxy refuses even when `allowedDomains` matches them.
    #[serde(default)]
    pub denied_domains: Vec<String>,
    /// More folders `workspace-write` may write: absolute, or `~/...` under HOME. One that does
    /// not exist is created when a session starts.
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// Package managers' caches made writable, by name (`npm`, `pip`, `cargo`, `local`).
    #[serde(default)]
    pub writable_caches: Vec<WritableCache>,
    /// More paths protected inside the writable roots (read-only for commands, approval-only
    /// for the native tools): absolute, or `~/...` under HOME.
    #[serde(default)]
    pub protect: Vec<String>,
    /// Unix sockets sandboxed commands may reach (an ssh-agent): absolute, or `~/...`.
    #[serde(default)]
    pub allow_unix_sockets: Vec<String>,
    /// Resource limits of sandboxed commands.
    #[serde(default)]
    pub limits: LimitsSettings,
    /// Run the sandboxed modes even where this system cannot give every protection (the missing
    /// ones are said at start); without it they refuse.
    pub allow_weaker: Option<bool>,
}

/// `sandbox.network`: a boolean, as before, or `"allowlist"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkSetting {
    Off,
    On,
    Allowlist,
}

impl<'de> Deserialize<'de> for NetworkSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = NetworkSetting;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("false, true or \"allowlist\"")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<NetworkSetting, E> {
                Ok(if on {
                    NetworkSetting::On
                } else {
                    NetworkSetting::Off
                })
            }
            fn visit_str<E: serde::de::Error>(self, word: &str) -> Result<NetworkSetting, E> {
                match word {
                    "allowlist" => Ok(NetworkSetting::Allowlist),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A package manager's cache `sandbox.writableCaches` makes writable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WritableCache {
    /// `~/.npm`
    Npm,
    /// `~/.cache/pip`
    Pip,
    /// `~/.cargo/registry` and `~/.cargo/git`
    Cargo,
    /// `~/.local` (`pip install --user`, pipx)
    Local,
}

impl WritableCache {
    /// The folders, relative to HOME.
    pub(crate) fn folders(self) -> &'static [&'static str] {
        match self {
            WritableCache::Npm => &[".npm"],
            WritableCache::Pip => &[".cache/pip"],
            WritableCache::Cargo => &[".cargo/registry", ".cargo/git"],
            WritableCache::Local => &[".local"],
        }
    }
}

/// `"limits": {"fileSizeMiB": 1024, "addressSpaceMiB": "none", "processes": 4096, "cpuSeconds": 600}`:
/// each a number or `"none"`; a limit left out keeps its default.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsSettings {
    #[serde(rename = "fileSizeMiB")]
    pub file_size_mib: Option<LimitValue>,
    #[serde(rename = "addressSpaceMiB")]
    pub address_space_mib: Option<LimitValue>,
    pub processes: Option<LimitValue>,
    pub cpu_seconds: Option<LimitValue>,
}

/// A limit: a positive number, or `"none"` for no limit.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum LimitValue {
    Number(std::num::NonZeroU64),
    None(NoLimit),
}

/// The word `"none"`.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NoLimit {
    None,
}

impl LimitsSettings {
    /// The limits these settings give, each one left out at its default.
    pub(crate) fn limits(&self) -> elph_process::sandbox::Limits {
        let defaults = elph_process::sandbox::Limits::default();
        let pick = |value: Option<LimitValue>, default: Option<u64>, unit: u64| match value {
            None => default,
            Some(LimitValue::None(_)) => None,
            Some(LimitValue::Number(n)) => Some(n.get().saturating_mul(unit)),
        };
        elph_process::sandbox::Limits {
            file_size: pick(self.file_size_mib, defaults.file_size, 1 << 20),
            address_space: pick(self.address_space_mib, defaults.address_space, 1 << 20),
            processes: pick(self.processes, defaults.processes, 1),
            cpu_seconds: pick(self.cpu_seconds, defaults.cpu_seconds, 1),
        }
    }
}

/// `"shellEnvironment": {"inherit": "core", "exclude": ["AWS_*"], "include": [], "set": {}}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShellEnvironmentSettings {
    pub inherit: Option<elph_process::shell_env::Inherit>,
    /// Name patterns (`*` and `?`, case-insensitive) removed after the default excludes.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Name patterns kept even though an exclude matched them.
    #[serde(default)]
    pub include: Vec<String>,
    /// Variables set last, whatever the rest says.
    #[serde(default)]
    pub set: std::collections::BTreeMap<String, String>,
}

/// `"projectHooks": {"sandbox": "read-only"}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectHooksSettings {
    /// The sandbox of project hooks that do not declare one.
    pub sandbox: Option<elph_process::sandbox::SandboxMode>,
}

/// `"readTools": {"deadlineSeconds": 60}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReadToolsSettings {
    /// After this many seconds a read tool returns what it found, with a note (default 60).
    pub(crate) deadline_seconds: Option<f64>,
}

impl ReadToolsSettings {
    /// The longest deadline accepted: an hour.
    pub(crate) const MAX_DEADLINE_SECONDS: f64 = 3600.0;

    pub(crate) fn deadline(&self) -> std::time::Duration {
        self.deadline_seconds.map_or(
            elph_agent::tools::DEFAULT_READ_DEADLINE,
            std::time::Duration::from_secs_f64,
        )
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct SettingsError {
    pub path: PathBuf,
    pub reason: String,
}

impl Settings {
    pub fn path(config_dir: &Path) -> PathBuf {
        config_dir.join("settings.json")
    }

    /// Reads settings.json; a missing file is the defaults.
    pub fn load(config_dir: &Path) -> Result<Settings, SettingsError> {
        let path = Settings::path(config_dir);
        let bytes = match elph_config::read_config(&path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(Settings::default()),
            Err(err) => {
                return Err(SettingsError {
                    path,
                    reason: err.reason(),
                });
            }
        };
        Settings::parse(path, &bytes)
    }

    /// Parses the bytes of settings.json (`path` is for messages).
    pub(crate) fn parse(path: PathBuf, bytes: &[u8]) -> Result<Settings, SettingsError> {
        let value = elph_config::parse_json(bytes).map_err(|err| SettingsError {
            path: path.clone(),
            reason: err.message,
        })?;
        let settings: Settings = serde_json::from_value(value).map_err(|err| SettingsError {
            path: path.clone(),
            reason: shorten_long_numbers(&err.to_string()),
        })?;
        if let Some(threshold) = settings.compaction_threshold
            && !(0.1..=1.0).contains(&threshold)
        {
            return Err(SettingsError {
                path,
                reason: format!(
                    "compactionThreshold is {}; it must be between 0.1 and 1.0",
                    figure(threshold)
                ),
            });
        }
        if let Err(reason) = settings.permissions.check() {
            return Err(SettingsError { path, reason });
        }
        if let Err(error) = crate::netproxy::DomainPolicy::parse(
            &settings.sandbox.allowed_domains,
            &settings.sandbox.denied_domains,
        ) {
            return Err(SettingsError {
                path,
                reason: error.to_string(),
            });
        }
        if let Some(seconds) = settings.read_tools.deadline_seconds
            && !(seconds > 0.0 && seconds <= ReadToolsSettings::MAX_DEADLINE_SECONDS)
        {
            return Err(SettingsError {
                path,
                reason: format!(
                    "readTools.deadlineSeconds is {}; it must be more than 0 and at most {}",
                    figure(seconds),
                    ReadToolsSettings::MAX_DEADLINE_SECONDS
                ),
            });
        }
        Ok(settings)
    }
}

/// A number from the file as a message shows it: Rust writes `1e300` out as 301 digits, so a very
/// large or very small one is shown in exponent form (`1e300`).
fn figure(number: f64) -> String {
    let magnitude = number.abs();
    if magnitude != 0.0 && !(1e-4..1e9).contains(&magnitude) {
        format!("{number:e}")
    } else {
        number.to_string()
    }
}

/// `text` with each run of more than 24 digits cut to its first 12 and a count: serde's messages
/// quote a value as Rust writes it, and a number like `1e300` in the file is 301 digits there.
fn shorten_long_numbers(text: &str) -> String {
    const LONGEST: usize = 24;
    let mut out = String::with_capacity(text.len().min(4096));
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        let count = digits.chars().count();
        if count > LONGEST {
            out.extend(digits.chars().take(12));
            out.push_str(&format!("… ({count} digits)"));
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            flush(&mut digits, &mut out);
            out.push(c);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_numbers_in_messages_are_cut() {
        let long = format!("1{}", "0".repeat(300));
        assert_eq!(
            shorten_long_numbers(&format!("invalid type: floating point `{long}.0`, expected u64")),
            "invalid type: floating point `100000000000… (301 digits).0`, expected u64"
        );
        assert_eq!(shorten_long_numbers("line 3 column 12"), "line 3 column 12");
    }

    #[test]
    fn a_huge_or_tiny_figure_is_shown_short() {
        assert_eq!(figure(1e300), "1e300");
        assert_eq!(figure(-2.5e-30), "-2.5e-30");
        assert_eq!(figure(5.0), "5");
        assert_eq!(figure(0.05), "0.05");
        assert_eq!(figure(0.0), "0");
    }

    #[test]
    fn missing_is_default_and_bad_values_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Settings::load(dir.path()).unwrap(), Settings::default());
        std::fs::write(
            dir.path().join("settings.json"),
            r#"{"model": "scripted/x.json", "compactionThreshold": 0.5}"#,
        )
        .unwrap();
        let settings = Settings::load(dir.path()).unwrap();
        assert_eq!(settings.model.as_deref(), Some("scripted/x.json"));
        std::fs::write(dir.path().join("settings.json"), r#"{"compactionThreshold": 5}"#).unwrap();
        assert!(
            Settings::load(dir.path())
                .unwrap_err()
                .to_string()
                .contains("between 0.1 and 1.0")
        );
        std::fs::write(
            dir.path().join("settings.json"),
            r#"{"sandbox": {"mode": "read-only", "network": true, "writableRoots": ["/srv"]},
                "shellEnvironment": {"inherit": "core", "exclude": ["AWS_*"], "set": {"A": "1"}},
                "projectHooks": {"sandbox": "workspace-write"}}"#,
        )
        .unwrap();
        let settings = Settings::load(dir.path()).unwrap();
        assert_eq!(
            settings.sandbox.mode,
            Some(elph_process::sandbox::SandboxMode::ReadOnly)
        );
        assert_eq!(settings.sandbox.network, Some(NetworkSetting::On));
        assert_eq!(settings.sandbox.writable_roots, ["/srv"]);
        assert_eq!(settings.shell_environment.exclude, ["AWS_*"]);
        assert_eq!(
            settings.project_hooks.sandbox,
            Some(elph_process::sandbox::SandboxMode::WorkspaceWrite)
        );
        std::fs::write(
            dir.path().join("settings.json"),
            r#"{"sandbox": {"mode": "danger"}}"#,
        )
        .unwrap();
        let error = Settings::load(dir.path()).unwrap_err().to_string();
        assert!(error.contains("unknown variant `danger`"), "{error}");
        std::fs::write(
            dir.path().join("settings.json"),
            r#"{"readTools": {"deadlineSeconds": 0.5}}"#,
        )
        .unwrap();
        let settings = Settings::load(dir.path()).unwrap();
        assert_eq!(
            settings.read_tools.deadline(),
            std::time::Duration::from_millis(500)
        );
        assert_eq!(Settings::default().read_tools.deadline().as_secs(), 60);
        for bad in ["0", "-1", "7200"] {
            std::fs::write(
                dir.path().join("settings.json"),
                format!(r#"{{"readTools": {{"deadlineSeconds": {bad}}}}}"#),
            )
            .unwrap();
            let error = Settings::load(dir.path()).unwrap_err().to_string();
            assert!(error.contains("readTools.deadlineSeconds"), "{error}");
        }
        std::fs::write(
            dir.path().join("settings.json"),
            r#"{"sandbox": {"network": "allowlist", "allowedDomains": ["npm", "*.example.com"],
                "deniedDomains": ["evil.example.com"], "writableCaches": ["npm", "cargo"]}}"#,
        )
        .unwrap();
        let settings = Settings::load(dir.path()).unwrap();
        assert_eq!(settings.sandbox.network, Some(NetworkSetting::Allowlist));
        assert_eq!(
            settings.sandbox.writable_caches,
            [WritableCache::Npm, WritableCache::Cargo]
        );
        for (bad, words) in [
            (
                r#"{"sandbox": {"network": "some"}}"#,
                "false, true or \"allowlist\"",
            ),
            (
                r#"{"sandbox": {"allowedDomains": ["Evil.com."]}}"#,
                "sandbox.allowedDomains",
            ),
            (
                r#"{"sandbox": {"writableCaches": ["maven"]}}"#,
                "unknown variant `maven`",
            ),
        ] {
            std::fs::write(dir.path().join("settings.json"), bad).unwrap();
            let error = Settings::load(dir.path()).unwrap_err().to_string();
            assert!(error.contains(words), "{bad}: {error}");
        }
        std::fs::write(dir.path().join("settings.json"), r#"{"modle": "x"}"#).unwrap();
        assert!(
            Settings::load(dir.path())
                .unwrap_err()
                .to_string()
                .contains("unknown field")
        );
    }
}
