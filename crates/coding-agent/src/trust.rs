//! Project trust (docs/trust.md): `CONFIG_DIR/trust.json`, and the decision for a project folder.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::locked_file::LockedFile;

pub mod contents;
mod keys;
mod named;
pub mod pins;
pub mod watch;
pub use keys::canonical_key;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DefaultTrust {
    #[default]
    Ask,
    Always,
    Never,
}

impl DefaultTrust {
    pub fn as_str(self) -> &'static str {
        match self {
            DefaultTrust::Ask => "ask",
            DefaultTrust::Always => "always",
            DefaultTrust::Never => "never",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error(
        "{path} is corrupt: {reason}. Fix or remove it; Elph treats every project as untrusted until then"
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    #[error("{project} is not trusted ({because}), so there is nothing to untrust")]
    NotTrusted { project: PathBuf, because: String },
}

/// The parsed trust.json. `raw` keeps every field as read, so that a write keeps what it does not know.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrustFile {
    pub default: DefaultTrust,
    /// Keys made canonical (`~` and `$HOME` expanded, symlinks, `.` and `..` resolved): the folders
    /// they really name. Two keys that name one folder with different values keep `false`.
    pub directories: BTreeMap<PathBuf, bool>,
    /// Keys that are not absolute, not canonical, or name a missing folder; and keys that clash.
    pub(crate) key_warnings: Vec<String>,
    /// Each absolute key as written, with the folder it names.
    pub(crate) canonical_keys: BTreeMap<String, PathBuf>,
    /// Each trusted key that is now a symbolic link: where it points, and the warning about it
    /// (also in `key_warnings`), which a session in that folder shows where trust is decided.
    pub(crate) link_keys: Vec<(PathBuf, String)>,
    pub raw: Map<String, Value>,
}

impl TrustFile {
    /// Parses trust.json text. `home` expands `~` and `$HOME` in keys.
    pub fn parse(text: &str, home: Option<&Path>) -> Result<Self, String> {
        let value = elph_config::parse_json(text.as_bytes()).map_err(|err| err.message)?;
        let Value::Object(raw) = value else {
            return Err("expected a JSON object".into());
        };
        let default = match raw
            .get("defaultProjectTrust")
            .or_else(|| raw.get("default_project_trust"))
        {
            None => DefaultTrust::Ask,
            Some(Value::String(s)) if s == "ask" => DefaultTrust::Ask,
            Some(Value::String(s)) if s == "always" => DefaultTrust::Always,
            Some(Value::String(s)) if s == "never" => DefaultTrust::Never,
            Some(other) => {
                return Err(format!(
                    "defaultProjectTrust is {other}; expected \"ask\", \"always\" or \"never\""
                ));
            }
        };
        let mut directories = BTreeMap::new();
        let mut key_warnings = Vec::new();
        let mut canonical_keys = BTreeMap::new();
        let mut link_keys = Vec::new();
        let mut resolver = keys::Resolver::default();
        match raw.get("directories") {
            None | Some(Value::Null) => {}
            Some(Value::Object(entries)) => {
                for (key, value) in entries {
                    let Value::Bool(trusted) = value else {
                        return Err(format!(
                            "directories[\"{key}\"] is {value}; expected true or false"
                        ));
                    };
                    let expanded = expand_home(key, home);
                    let canonical = if expanded.is_absolute() {
                        resolver.canonical(&expanded)
                    } else {
                        expanded.clone()
                    };
                    if let Some(warning) = keys::key_warning(key, &expanded, &canonical) {
                        key_warnings.push(warning);
                    }
                    if !expanded.is_absolute() {
                        continue;
                    }
                    canonical_keys.insert(key.clone(), canonical.clone());
                    // A trusted folder that has since been replaced by a symbolic link: the link's
                    // target is decided by its own entries, never by this one.
                    if *trusted && keys::ends_in_link(&expanded) {
                        let warning = format!(
                            "trust.json key \"{key}\" is now a symbolic link to {}; it trusts nothing \
                             (a trusted folder replaced by a link must not pass its trust to where the \
                             link points). If you mean to trust {0}, run `elph trust {}`",
                            canonical.display(),
                            crate::diagnostics::shell_quote(&canonical)
                        );
                        key_warnings.push(warning.clone());
                        link_keys.push((canonical, warning));
                        continue;
                    }
                    match directories.get(&canonical) {
                        Some(earlier) if earlier != trusted => {
                            key_warnings.push(format!(
                                "trust.json has two keys for {} with different values; false wins, so \
                                 it is not trusted. Keep one of them",
                                canonical.display()
                            ));
                            directories.insert(canonical, false);
                        }
                        _ => {
                            directories.insert(canonical, *trusted);
                        }
                    }
                }
            }
            Some(other) => {
                return Err(format!(
                    "directories is {other}; expected an object of path: true|false"
                ));
            }
        }
        Ok(TrustFile {
            default,
            directories,
            key_warnings,
            canonical_keys,
            link_keys,
            raw,
        })
    }

    /// The nearest explicit entry on the way from `project` up to `/`.
    pub(crate) fn nearest_entry(&self, project: &Path) -> Option<(&Path, bool)> {
        project.ancestors().find_map(|dir| {
            self.directories
                .get_key_value(dir)
                .map(|(path, trusted)| (path.as_path(), *trusted))
        })
    }
}

/// Expands a leading `~` or `$HOME` in a trust.json key.
pub(crate) fn expand_home(key: &str, home: Option<&Path>) -> PathBuf {
    let Some(home) = home else {
        return PathBuf::from(key);
    };
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = key.strip_prefix(prefix) {
            if rest.is_empty() {
                return home.to_path_buf();
            }
            if let Some(rest) = rest.strip_prefix('/') {
                return home.join(rest);
            }
        }
    }
    PathBuf::from(key)
}

/// What decided a project's trust.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum DecisionSource {
    /// An explicit entry for the project or one of its parents.
    Entry { path: PathBuf, trusted: bool },
    /// No entry applies: the default decided.
    Default,
    /// trust.json could not be read: nothing is trusted.
    Error { message: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustDecision {
    pub project_dir: PathBuf,
    pub trusted: bool,
    pub source: DecisionSource,
    pub default: DefaultTrust,
    /// Whether the trusted content is pinned, and whether it changed since (then `trusted` is false).
    #[serde(skip_serializing_if = "PinState::is_unpinned")]
    pub pin: PinState,
    /// Trusted keys for this folder or a parent that are now symbolic links (they trust nothing),
    /// said where the decision is made: at the start of a session and in `elph trust --status`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub link_warnings: Vec<String>,
}

/// Content pinning for one decision (see [`pins`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum PinState {
    /// No pin applies: the project is not trusted by path, or was trusted before pinning existed, or
    /// trust comes from a parent folder's entry.
    #[default]
    Unpinned,
    /// `"trustPinning": false` in settings.json: trust is by path only.
    Off,
    /// What was trusted is what is there.
    Matches,
    /// Something changed since the project was trusted: its hooks and servers stay off.
    Changed { changes: pins::PinChanges },
}

impl PinState {
    pub(crate) fn is_unpinned(&self) -> bool {
        matches!(self, PinState::Unpinned)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            PinState::Unpinned => "unpinned",
            PinState::Off => "off",
            PinState::Matches => "matches",
            PinState::Changed { .. } => "changed",
        }
    }
}

impl TrustDecision {
    /// The decision came from an explicit `false` entry (as opposed to the default).
    pub fn explicitly_untrusted(&self) -> bool {
        matches!(self.source, DecisionSource::Entry { trusted: false, .. })
    }

    /// Why the project is (not) trusted, for people: `decided by entry /a = true`,
    /// `decided by the default (ask)`, or the trust.json error.
    pub fn explanation(&self) -> String {
        if let PinState::Changed { changes } = &self.pin {
            return format!(
                "{}, but it changed since it was trusted ({})",
                self.path_explanation(),
                changes.summary()
            );
        }
        self.path_explanation()
    }

    /// What changed since the project was trusted, when it did.
    pub fn changes(&self) -> Option<&pins::PinChanges> {
        match &self.pin {
            PinState::Changed { changes } => Some(changes),
            _ => None,
        }
    }

    /// Why a turn must not start without someone to ask (`elph run`, `elph acp`): the project
    /// changed since it was trusted, so its hooks are off, and among them are fail-closed hooks —
    /// guards whose author wanted what they guard stopped rather than let through unchecked.
    pub fn unguarded_refusal(&self) -> Option<String> {
        let changes = self.changes()?;
        if changes.guards.is_empty() {
            return None;
        }
        let dir = crate::diagnostics::shell_quote(&self.project_dir);
        Some(format!(
            "{} changed since you trusted it ({}), so its hooks are off, and its fail-closed hooks \
             ({}) would not guard this turn. Review the change, then run `elph trust {dir}` to trust \
             the new content; nothing was run",
            self.project_dir.display(),
            changes.summary(),
            changes.guards.join(", ")
        ))
    }

    fn path_explanation(&self) -> String {
        match &self.source {
            DecisionSource::Entry { path, trusted } => {
                format!("decided by entry {} = {trusted}", path.display())
            }
            DecisionSource::Default => {
                format!("decided by the default ({})", self.default.as_str())
            }
            DecisionSource::Error { message } => format!("trust.json cannot be used: {message}"),
        }
    }

    /// The trust.json error behind this decision, if any (reported by doctor, hooks list, the TUI).
    pub fn error(&self) -> Option<&str> {
        match &self.source {
            DecisionSource::Error { message } => Some(message),
            _ => None,
        }
    }

    /// The trust.json error as a diagnostic (file: trust.json), for the hook set, doctor and notices.
    pub fn diagnostic(&self, trust_file: &Path) -> Option<crate::diagnostics::Diagnostic> {
        if let Some(changes) = self.changes() {
            return Some(crate::diagnostics::Diagnostic::new(format!(
                "project hooks and MCP servers skipped: {} changed since you trusted it ({}). Review \
                 the change, then run `elph trust {}` (or /trust in the app) to trust the new content",
                self.project_dir.display(),
                changes.summary(),
                crate::diagnostics::shell_quote(&self.project_dir)
            )));
        }
        self.error().map(|message| {
            // The message already names the file; keep it readable on its own too.
            crate::diagnostics::Diagnostic::new(format!(
                "project trust cannot be decided, so project hooks stay off: {message}"
            ))
            .in_file(trust_file)
        })
    }

    /// The slash command a palette offers for this decision: exactly one of `/trust` and `/untrust`.
    pub(crate) fn offered_command(&self) -> TrustSlashCommand {
        offered_command(self)
    }
}

/// The two trust commands of the TUI and ACP (docs/trust.md). A palette shows exactly one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum TrustSlashCommand {
    /// `/trust`: records `true` for the project.
    Trust,
    /// `/untrust`: records an explicit `false`; offered only while the project is trusted.
    Untrust,
}

impl TrustSlashCommand {
    /// The command's name without the slash: `trust` or `untrust`.
    pub const fn name(self) -> &'static str {
        match self {
            TrustSlashCommand::Trust => "trust",
            TrustSlashCommand::Untrust => "untrust",
        }
    }

    /// A one-line description for a palette or an ACP `available_commands_update`.
    pub const fn description(self) -> &'static str {
        match self {
            TrustSlashCommand::Trust => "Trust this project: load its .elph/hooks.json",
            TrustSlashCommand::Untrust => {
                "Stop trusting this project: record an explicit false and unload its hooks"
            }
        }
    }

    /// Runs the command for `project` and returns the new decision. The caller then reloads the
    /// hook set and refreshes its palette.
    pub fn run(self, store: &TrustStore, project: &Path) -> Result<TrustDecision, TrustError> {
        match self {
            TrustSlashCommand::Trust => store.trust(project),
            TrustSlashCommand::Untrust => store.untrust(project),
        }
    }
}

/// Which of `/trust` and `/untrust` to offer: `/untrust` while the project is trusted (by its own
/// entry, a parent's, or the default `always`), `/trust` otherwise — also when trust.json is corrupt,
/// so that running it reports the error.
pub(crate) fn offered_command(decision: &TrustDecision) -> TrustSlashCommand {
    if decision.trusted {
        TrustSlashCommand::Untrust
    } else {
        TrustSlashCommand::Trust
    }
}

/// The trust store: `CONFIG_DIR/trust.json`.
#[derive(Clone, Debug)]
pub struct TrustStore {
    path: PathBuf,
    home: Option<PathBuf>,
    /// Say on stderr when the lock is held by another process for more than a second (the CLI; the
    /// terminal UI owns its screen and must not).
    announce_waits: bool,
}

/// How long a writer waits quietly for `trust.json.lock` before saying so.
pub(crate) const LOCK_QUIET_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a writer waits for `trust.json.lock` before giving up.
pub(crate) const LOCK_GIVE_UP: std::time::Duration = std::time::Duration::from_secs(10);

impl TrustStore {
    /// The store in `config_dir`, expanding `~` and `$HOME` with the process's `HOME` (made canonical
    /// when it exists, so that `~/code` matches the canonical project folder).
    pub fn new(config_dir: &Path) -> Self {
        // A relative HOME is ignored here as everywhere (see `paths::absolute_variable`).
        let home = crate::paths::absolute_variable(&|name| std::env::var(name).ok(), "HOME")
            .map(PathBuf::from)
            .map(|home| std::fs::canonicalize(&home).unwrap_or(home));
        TrustStore {
            path: config_dir.join("trust.json"),
            home,
            announce_waits: false,
        }
    }

    pub fn with_home(config_dir: &Path, home: Option<PathBuf>) -> Self {
        TrustStore {
            path: config_dir.join("trust.json"),
            home,
            announce_waits: false,
        }
    }

    /// Says "waiting for …trust.json.lock" on stderr when another process holds the lock for more
    /// than [`LOCK_QUIET_WAIT`] (for the command line).
    pub(crate) fn announcing_waits(mut self) -> Self {
        self.announce_waits = true;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sidecar lock file, `trust.json.lock`: writers lock it, never the file they rename over.
    pub(crate) fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_os_string();
        name.push(".lock");
        PathBuf::from(name)
    }

    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Reads trust.json; a missing file is the empty default.
    pub fn load(&self) -> Result<TrustFile, TrustError> {
        let bytes = match elph_config::read_config(&self.path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(TrustFile::default()),
            Err(err) => {
                let cause = match &err {
                    elph_config::ReadError::Io { source, .. } => source.to_string(),
                    other => other.reason(),
                };
                let reason = match err.io_kind() {
                    Some(std::io::ErrorKind::NotADirectory) => format!(
                        "{cause}: a part of {} is a file, not a folder. Move that file away, or set \
                         ELPH_HOME to a folder",
                        self.path.parent().unwrap_or(Path::new("/")).display()
                    ),
                    Some(std::io::ErrorKind::PermissionDenied) => {
                        format!("{cause}. Check the permissions of the file and its folder")
                    }
                    _ => cause,
                };
                return Err(TrustError::Unreadable {
                    path: self.path.clone(),
                    reason,
                });
            }
        };
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text,
            Err(err) => {
                return Err(TrustError::Corrupt {
                    path: self.path.clone(),
                    reason: format!("is not valid UTF-8 (at byte {})", err.valid_up_to()),
                });
            }
        };
        TrustFile::parse(text, self.home.as_deref()).map_err(|reason| TrustError::Corrupt {
            path: self.path.clone(),
            reason,
        })
    }

    /// Decides trust for `project` (absolute and canonical).
    pub fn decide(&self, project: &Path) -> TrustDecision {
        self.decide_watching(project, &mut Vec::new())
    }

    /// [`decide`](Self::decide), and every path it read or looked at into `watched` (see `watch`).
    fn decide_watching(&self, project: &Path, watched: &mut Vec<PathBuf>) -> TrustDecision {
        watched.push(self.path.clone());
        match self.load() {
            Ok(file) => {
                let mut decision = decide_with(&file, project);
                if decision.trusted {
                    decision.pin = self.check_pin(&file, project, watched);
                    if matches!(decision.pin, PinState::Changed { .. }) {
                        decision.trusted = false;
                    }
                }
                decision
            }
            Err(err) => TrustDecision {
                project_dir: project.to_path_buf(),
                trusted: false,
                source: DecisionSource::Error {
                    message: err.to_string(),
                },
                default: DefaultTrust::Ask,
                pin: PinState::Unpinned,
                link_warnings: Vec::new(),
            },
        }
    }

    /// Whether pinning is on: everything but `"trustPinning": false` in settings.json (an unreadable
    /// settings.json keeps it on).
    pub(crate) fn pinning_enabled(&self) -> bool {
        let config_dir = self.path.parent().unwrap_or(Path::new("/"));
        crate::settings::Settings::load(config_dir)
            .map_or(true, |settings| settings.trust_pinning != Some(false))
    }

    fn check_pin(&self, file: &TrustFile, project: &Path, watched: &mut Vec<PathBuf>) -> PinState {
        let Some(pinned) = pins::recorded(&file.raw, project) else {
            return PinState::Unpinned;
        };
        watched.push(crate::settings::Settings::path(
            self.path.parent().unwrap_or(Path::new("/")),
        ));
        if !self.pinning_enabled() {
            return PinState::Off;
        }
        let (now, read) = pins::Fingerprint::watched(project);
        watched.extend(read);
        match pinned.changes_to(&now) {
            None => PinState::Matches,
            Some(changes) => PinState::Changed { changes },
        }
    }
}

impl TrustStore {
    /// Whether `project` (absolute and canonical) is trusted now. A corrupt file trusts nothing.
    #[cfg(test)]
    pub(crate) fn is_trusted(&self, project: &Path) -> bool {
        self.decide(project).trusted
    }

    /// Records `true` for `project` (`/trust`, `elph trust`).
    pub fn trust(&self, project: &Path) -> Result<TrustDecision, TrustError> {
        self.set_trust(project, true)
    }

    /// Records an explicit `false` for `project` (`/untrust`, `elph untrust`). Refused with
    /// [`TrustError::NotTrusted`] unless the project is trusted right now.
    pub fn untrust(&self, project: &Path) -> Result<TrustDecision, TrustError> {
        self.update(project, false, |file, project| {
            let decision = decide_with(file, project);
            if decision.trusted {
                Ok(())
            } else {
                Err(TrustError::NotTrusted {
                    project: project.to_path_buf(),
                    because: decision.explanation(),
                })
            }
        })
    }

    /// Records `trusted` for `project` and returns the decision that follows from the new file.
    ///
    /// The project is made canonical. An existing key that names it (`~/code`, `$HOME/code`, or the
    /// path itself) is updated in place, as written; otherwise the canonical path becomes a new key.
    /// Every other entry and every unknown field is kept. The write is atomic (a temporary file in
    /// the same folder, fsync, rename) under an exclusive lock on `trust.json.lock`, and leaves the
    /// file mode 0600. A corrupt or unreadable trust.json is never overwritten: its error comes back.
    pub(crate) fn set_trust(&self, project: &Path, trusted: bool) -> Result<TrustDecision, TrustError> {
        self.update(project, trusted, |_, _| Ok(()))
    }

    fn update(
        &self,
        project: &Path,
        trusted: bool,
        check: impl Fn(&TrustFile, &Path) -> Result<(), TrustError>,
    ) -> Result<TrustDecision, TrustError> {
        let project = std::fs::canonicalize(project)
            .or_else(|_| std::path::absolute(project))
            .map_err(|err| self.write_error(format!("cannot resolve {}: {err}", project.display())))?;
        let Some(key) = project.to_str() else {
            return Err(self.write_error(format!(
                "{} is not valid UTF-8, and trust.json keys are JSON strings",
                project.display()
            )));
        };
        // Report a corrupt file or a refusal before anything touches CONFIG_DIR.
        check(&self.load()?, &project)?;
        let _lock = self.lock()?;
        // Read again under the lock: another process may have written in between.
        let file = self.load()?;
        check(&file, &project)?;
        let TrustFile {
            default,
            directories: mut decided,
            key_warnings,
            canonical_keys,
            link_keys,
            mut raw,
        } = file;
        let directories = raw
            .entry("directories")
            .or_insert_with(|| Value::Object(Map::new()));
        if !directories.is_object() {
            // Only `null` gets here: anything else failed to parse.
            *directories = Value::Object(Map::new());
        }
        let Value::Object(directories) = directories else {
            unreachable!("directories was just made an object");
        };
        let mut found = false;
        // A key that is now a link trusts nothing: it gives way to the folder's own key.
        directories.retain(|written, _| {
            canonical_keys.get(written) != Some(&project)
                || !keys::ends_in_link(&expand_home(written, self.home.as_deref()))
        });
        for (written, value) in directories.iter_mut() {
            if canonical_keys.get(written) == Some(&project) {
                *value = Value::Bool(trusted);
                found = true;
            }
        }
        if !found {
            directories.insert(key.to_string(), Value::Bool(trusted));
        }
        // Trusting pins what is there now; an explicit false drops the pin.
        let pin = trusted.then(|| pins::Fingerprint::of(&project));
        pins::record(&mut raw, &project, pin.as_ref());
        let mut text = serde_json::to_string_pretty(&Value::Object(raw))
            .map_err(|err| self.write_error(err.to_string()))?;
        text.push('\n');
        self.replace(&text)?;
        // Every key naming the project now holds `trusted`; the rest is as read under the lock.
        decided.insert(project.clone(), trusted);
        let written = TrustFile {
            default,
            directories: decided,
            key_warnings,
            canonical_keys,
            link_keys,
            raw: Map::new(),
        };
        let mut decision = decide_with(&written, &project);
        if decision.trusted && pin.is_some() {
            decision.pin = if self.pinning_enabled() {
                PinState::Matches
            } else {
                PinState::Off
            };
        }
        Ok(decision)
    }

    /// Creates CONFIG_DIR if needed and takes the exclusive lock on the sidecar; dropping the
    /// guard releases it.
    fn lock(&self) -> Result<LockedFile, TrustError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        elph_config::private::create_private_dir_all(dir).map_err(|err| {
            self.write_error(format!(
                "cannot create the folder {}: {err}. Make sure it can be created, or set ELPH_HOME \
                 to a writable folder",
                dir.display()
            ))
        })?;
        let lock_path = self.lock_path();
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let lock = options.open(&lock_path).map_err(|err| {
            self.write_error(format!(
                "cannot open the lock file {}: {err}. Check that {} is writable",
                lock_path.display(),
                dir.display()
            ))
        })?;
        let mut started = std::time::Instant::now();
        let mut announced = false;
        // Each holder stamps the lock file with its pid and the time it got the lock, and renames a
        // new trust.json into place. While either keeps changing, the wait is a queue that moves
        // (fifty `elph trust` at once on a busy machine), not a stuck holder, so the clock restarts.
        let identity = |path: &Path| {
            use std::os::unix::fs::MetadataExt;
            let file = std::fs::metadata(path)
                .ok()
                .map(|meta| (meta.ino(), meta.mtime_nsec(), meta.mtime()));
            (file, std::fs::read(&lock_path).unwrap_or_default())
        };
        let mut last_change = identity(&self.path);
        loop {
            match lock.try_lock() {
                Ok(()) => {
                    stamp(&lock);
                    return Ok(LockedFile::new(lock));
                }
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(err)) => {
                    return Err(self.write_error(format!("cannot lock {}: {err}", lock_path.display())));
                }
            }
            let now = identity(&self.path);
            if now != last_change {
                last_change = now;
                started = std::time::Instant::now();
            }
            let waited = started.elapsed();
            if waited >= LOCK_GIVE_UP {
                return Err(self.write_error(format!(
                    "another process has held the lock {} for {} s without finishing a change, so \
                     nothing was recorded. Finish or stop the other elph (for example one waiting in \
                     `elph trust`), then try again",
                    crate::terminal_text::escape_path(&lock_path),
                    LOCK_GIVE_UP.as_secs()
                )));
            }
            if self.announce_waits && !announced && waited >= LOCK_QUIET_WAIT {
                eprintln!(
                    "elph: waiting for {} (another elph process is changing trust; giving up after {} s)",
                    crate::terminal_text::escape_path(&lock_path),
                    LOCK_GIVE_UP.as_secs()
                );
                announced = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Atomically replaces trust.json (or the file it links to) with `text`, mode 0600.
    fn replace(&self, text: &str) -> Result<(), TrustError> {
        let is_link = std::fs::symlink_metadata(&self.path)
            .map(|meta| meta.file_type().is_symlink())
            .unwrap_or(false);
        let target = if is_link {
            std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone())
        } else {
            self.path.clone()
        };
        let dir = target.parent().unwrap_or(Path::new("."));
        let fail = |what: &str, err: std::io::Error| {
            self.write_error(format!(
                "{what}: {err}. Check that {} is writable and has space",
                dir.display()
            ))
        };
        let mut temp = tempfile::Builder::new()
            .prefix(".trust.json.")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|err| {
                fail(
                    &format!("cannot create a temporary file in {}", dir.display()),
                    err,
                )
            })?;
        temp.write_all(text.as_bytes())
            .map_err(|err| fail("cannot write the temporary file", err))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            temp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(|err| fail("cannot set mode 0600", err))?;
        }
        temp.as_file()
            .sync_all()
            .map_err(|err| fail("cannot flush the temporary file to disk", err))?;
        temp.persist(&target)
            .map_err(|err| fail(&format!("cannot rename over {}", target.display()), err.error))?;
        // Make the rename itself durable. Not every platform can open a folder; that is not an error.
        if let Ok(folder) = File::open(dir) {
            let _ = folder.sync_all();
        }
        Ok(())
    }

    fn write_error(&self, reason: String) -> TrustError {
        TrustError::Write {
            path: self.path.clone(),
            reason,
        }
    }
}

/// Writes who holds the lock, and since when, into the (held) lock file: waiters read a change of
/// holder as progress. Best effort: the lock works without it.
fn stamp(mut lock: &File) {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let _ = lock.set_len(0);
    let _ = std::io::Seek::rewind(&mut lock);
    let _ = lock.write_all(format!("{} {since}\n", std::process::id()).as_bytes());
}

/// The decision for `project` under `file`: the nearest explicit entry, else the default.
pub(crate) fn decide_with(file: &TrustFile, project: &Path) -> TrustDecision {
    let (trusted, source) = match file.nearest_entry(project) {
        Some((path, trusted)) => (
            trusted,
            DecisionSource::Entry {
                path: path.to_path_buf(),
                trusted,
            },
        ),
        None => (file.default == DefaultTrust::Always, DecisionSource::Default),
    };
    TrustDecision {
        project_dir: project.to_path_buf(),
        trusted,
        source,
        default: file.default,
        pin: PinState::Unpinned,
        link_warnings: file
            .link_keys
            .iter()
            .filter(|(target, _)| project.starts_with(target))
            .map(|(_, warning)| warning.clone())
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The duplicate descriptor stands for a child forked while the lock was held, not yet at its
    /// `exec`: the next change must not wait for it (it would give up after LOCK_GIVE_UP).
    #[test]
    fn a_released_lock_is_free_even_while_a_forked_child_still_holds_its_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::new(dir.path());
        let held = store.lock().unwrap();
        let child_copy = held.file().try_clone().unwrap();
        drop(held);
        let again = store.lock();
        assert!(
            again.is_ok(),
            "the next change waited for the child's copy: {:?}",
            again.err()
        );
        drop(child_copy);
    }

    fn file(text: &str) -> TrustFile {
        TrustFile::parse(text, Some(Path::new("/home/u"))).unwrap()
    }

    #[test]
    fn nearest_entry_wins() {
        let f = file(r#"{"directories": {"/a": true, "/a/b": false, "/x": false, "/x/y": true}}"#);
        assert!(
            decide_with(&f, Path::new("/a/c")).trusted,
            "inherited from a trusted parent"
        );
        assert!(
            !decide_with(&f, Path::new("/a/b")).trusted,
            "explicit false under a trusted parent"
        );
        assert!(!decide_with(&f, Path::new("/a/b/c")).trusted);
        assert!(
            decide_with(&f, Path::new("/x/y/z")).trusted,
            "explicit true under an untrusted parent"
        );
        let d = decide_with(&f, Path::new("/a/c"));
        assert_eq!(
            d.source,
            DecisionSource::Entry {
                path: "/a".into(),
                trusted: true
            }
        );
    }

    #[test]
    fn defaults_decide_without_an_entry() {
        assert!(!decide_with(&file("{}"), Path::new("/p")).trusted);
        assert!(!decide_with(&file(r#"{"defaultProjectTrust": "ask"}"#), Path::new("/p")).trusted);
        assert!(!decide_with(&file(r#"{"defaultProjectTrust": "never"}"#), Path::new("/p")).trusted);
        let always = decide_with(&file(r#"{"defaultProjectTrust": "always"}"#), Path::new("/p"));
        assert!(always.trusted);
        assert_eq!(always.source, DecisionSource::Default);
        assert_eq!(
            file(r#"{"default_project_trust": "always"}"#).default,
            DefaultTrust::Always
        );
    }

    #[test]
    fn home_keys_expand() {
        let f = file(r#"{"directories": {"~/code": true, "$HOME/other": true, "${HOME}/third": true}}"#);
        assert!(decide_with(&f, Path::new("/home/u/code/p")).trusted);
        assert!(decide_with(&f, Path::new("/home/u/other")).trusted);
        assert!(decide_with(&f, Path::new("/home/u/third")).trusted);
        assert!(!decide_with(&f, Path::new("/home/u")).trusted);
    }

    #[test]
    fn corrupt_files_are_errors() {
        assert!(TrustFile::parse("{", None).is_err());
        assert!(TrustFile::parse("[]", None).is_err());
        assert!(TrustFile::parse(r#"{"defaultProjectTrust": "sometimes"}"#, None).is_err());
        assert!(TrustFile::parse(r#"{"directories": {"/a": "yes"}}"#, None).is_err());
    }

    #[test]
    fn store_reports_a_corrupt_file_as_untrusted_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trust.json"), "{not json").unwrap();
        let store = TrustStore::with_home(dir.path(), None);
        let decision = store.decide(Path::new("/p"));
        assert!(!decision.trusted);
        let DecisionSource::Error { message } = decision.source else {
            panic!()
        };
        assert!(message.contains("trust.json is corrupt"), "{message}");
        let decision = store.decide(Path::new("/p"));
        let diagnostic = decision.diagnostic(store.path()).unwrap();
        assert_eq!(diagnostic.file.as_deref(), Some(store.path()));
        assert!(diagnostic.message.contains("project hooks stay off"));
    }

    fn project_in(root: &Path, name: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(dir).unwrap()
    }

    fn read_json(path: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn set_trust_writes_a_new_file_with_mode_0600_and_no_leftovers() {
        let config = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let project = project_in(root.path(), "p");
        let store = TrustStore::with_home(&config.path().join("elph"), None);
        let decision = store.trust(&project).unwrap();
        assert!(decision.trusted);
        let written = read_json(store.path());
        assert_eq!(
            written["directories"],
            serde_json::json!({project.to_str().unwrap(): true})
        );
        assert_eq!(
            written["pins"][project.to_str().unwrap()]["files"][".elph/hooks.json"],
            "absent",
            "trusting pins what is there"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let mut names: Vec<String> = std::fs::read_dir(config.path().join("elph"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["trust.json", "trust.json.lock"]);
    }

    #[test]
    fn set_trust_keeps_other_entries_unknown_fields_and_keys_as_written() {
        let config = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let home_dir = std::fs::canonicalize(home.path()).unwrap();
        let code = project_in(&home_dir, "code");
        let other = project_in(&home_dir, "other");
        let store = TrustStore::with_home(config.path(), Some(home_dir));
        std::fs::write(
            store.path(),
            r#"{"default_project_trust": "never", "note": {"keep": [1, 2]},
                "directories": {"/elsewhere": false, "~/code": true}}"#,
        )
        .unwrap();
        let decision = store.untrust(&code).unwrap();
        assert!(!decision.trusted);
        assert!(decision.explicitly_untrusted());
        store.trust(&other).unwrap();
        let mut written = read_json(store.path());
        let pins = written.as_object_mut().unwrap().remove("pins").unwrap();
        assert_eq!(
            pins.as_object().unwrap().len(),
            1,
            "only the trusted folder is pinned: {pins}"
        );
        assert_eq!(
            written,
            serde_json::json!({
                "default_project_trust": "never",
                "note": {"keep": [1, 2]},
                "directories": {
                    "/elsewhere": false,
                    "~/code": false,
                    other.to_str().unwrap(): true,
                }
            })
        );
        // Order is kept as well.
        let keys: Vec<&String> = written["directories"].as_object().unwrap().keys().collect();
        assert_eq!(keys[..2], ["/elsewhere", "~/code"]);
    }

    #[test]
    fn a_corrupt_file_is_never_overwritten() {
        let config = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let project = project_in(root.path(), "p");
        let store = TrustStore::with_home(config.path(), None);
        std::fs::write(store.path(), "{\"directories\": {").unwrap();
        let err = store.trust(&project).unwrap_err();
        assert!(matches!(err, TrustError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains(&store.path().display().to_string()));
        assert_eq!(
            std::fs::read_to_string(store.path()).unwrap(),
            "{\"directories\": {"
        );
        assert!(
            !store.lock_path().exists(),
            "nothing is written for a corrupt file"
        );
        assert_eq!(
            offered_command(&store.decide(&project)),
            TrustSlashCommand::Trust,
            "a corrupt file offers /trust, which then reports the error"
        );
    }

    #[test]
    fn untrust_needs_a_trusted_project_and_overrides_a_parent() {
        let config = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let parent = project_in(root.path(), "parent");
        let child = project_in(&parent, "child");
        let store = TrustStore::with_home(config.path(), None);
        let err = store.untrust(&child).unwrap_err();
        assert!(matches!(err, TrustError::NotTrusted { .. }), "{err}");
        assert!(err.to_string().contains("decided by the default (ask)"), "{err}");
        assert!(!store.path().exists(), "a refused untrust writes nothing");

        store.trust(&parent).unwrap();
        let inherited = store.decide(&child);
        assert!(inherited.trusted);
        assert_eq!(offered_command(&inherited), TrustSlashCommand::Untrust);
        let after = TrustSlashCommand::Untrust.run(&store, &child).unwrap();
        assert!(!after.trusted);
        assert_eq!(after.offered_command(), TrustSlashCommand::Trust);
        assert!(store.is_trusted(&parent));
        assert!(!store.is_trusted(&child));
        assert!(TrustSlashCommand::Trust.run(&store, &child).unwrap().trusted);
    }

    #[test]
    fn untrust_under_the_default_always_records_false() {
        let config = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let project = project_in(root.path(), "p");
        let store = TrustStore::with_home(config.path(), None);
        std::fs::write(store.path(), r#"{"defaultProjectTrust": "always"}"#).unwrap();
        assert_eq!(
            store.decide(&project).offered_command(),
            TrustSlashCommand::Untrust
        );
        let decision = store.untrust(&project).unwrap();
        assert!(decision.explicitly_untrusted());
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_trust_file_stays_a_link() {
        let config = tempfile::tempdir().unwrap();
        let dotfiles = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        let project = project_in(root.path(), "p");
        let real = dotfiles.path().join("trust.json");
        std::fs::write(&real, "{}").unwrap();
        let store = TrustStore::with_home(config.path(), None);
        std::os::unix::fs::symlink(&real, store.path()).unwrap();
        store.trust(&project).unwrap();
        assert!(
            std::fs::symlink_metadata(store.path())
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(read_json(&real)["directories"][project.to_str().unwrap()] == true);
    }

    #[test]
    fn explanations_name_the_entry_or_the_default() {
        let f = file(r#"{"defaultProjectTrust": "never", "directories": {"/a": true}}"#);
        assert_eq!(
            decide_with(&f, Path::new("/a/b")).explanation(),
            "decided by entry /a = true"
        );
        assert_eq!(
            decide_with(&f, Path::new("/b")).explanation(),
            "decided by the default (never)"
        );
    }
}
