//! Discovery: the home file, then the project file (only when trusted), merged into one ordered set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use elph_agent::hooks::limits::{MAX_INPUT_BYTES, MAX_STDOUT_BYTES};
use elph_agent::hooks::{HookEvent, Matcher};
use serde::Serialize;

use super::config::{HookConfig, HooksFile, LoadError, Protocol, read_file};
pub use super::handler::Handler;
use crate::diagnostics::Diagnostic;
use crate::paths::Paths;

/// Which file a hook came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HookScope {
    Home,
    Project,
}

/// A hook's command as written and as resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedCommand {
    pub written: String,
    pub path: PathBuf,
    /// Whether `path` exists and is an executable file right now.
    pub executable: bool,
}

/// One hook, ready for the host.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDefinition {
    pub id: String,
    pub event: HookEvent,
    pub matcher: Matcher,
    /// What it runs: a command, a URL, a prompt or an MCP server's tool.
    #[serde(flatten)]
    pub handler: Handler,
    pub args: Vec<String>,
    #[serde(rename = "timeoutMs", serialize_with = "as_millis")]
    pub timeout: Duration,
    /// How long a run should take; a longer one is a warning, never a failure.
    #[serde(
        rename = "budgetMs",
        skip_serializing_if = "Option::is_none",
        serialize_with = "as_millis_opt"
    )]
    pub budget: Option<Duration>,
    pub enabled: bool,
    /// One process for the session, one JSON line per event (see `hooks::persistent`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub persistent: bool,
    /// Runs in the background, its outcome ignored (see `hooks::background`).
    #[serde(rename = "async", skip_serializing_if = "std::ops::Not::not")]
    pub run_async: bool,
    pub source: PathBuf,
    pub scope: HookScope,
    /// Elph's protocol, or Claude Code's.
    #[serde(skip_serializing_if = "Protocol::is_elph")]
    pub protocol: Protocol,
    /// The sandbox it runs in: its own `sandbox`, else (a project hook) `projectHooks.sandbox`;
    /// `None` runs it unconfined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<elph_process::sandbox::SandboxMode>,
    /// A guard: a failure stops what it guards instead of letting it through.
    pub fail_closed: bool,
    /// The largest payload sent to it, in bytes.
    pub max_input_bytes: usize,
    /// The most stdout it may print, in bytes.
    pub max_output_bytes: usize,
    /// Its own variables as written (`${NAME}` expanded when it runs). Names only when
    /// serialized: values may be secrets.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", serialize_with = "names_only")]
    pub env: BTreeMap<String, String>,
}

fn names_only<S: serde::Serializer>(
    env: &BTreeMap<String, String>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(env.keys())
}

fn as_millis_opt<S: serde::Serializer>(
    duration: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match duration {
        Some(duration) => as_millis(duration, serializer),
        None => serializer.serialize_none(),
    }
}

fn as_millis<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis() as u64)
}

impl HookDefinition {
    /// The program of a command hook; `None` for the other handlers.
    pub fn command(&self) -> Option<&ResolvedCommand> {
        match &self.handler {
            Handler::Command(command) => Some(command),
            _ => None,
        }
    }

    /// Whether this hook runs for `event` (and, for tool events, `tool_name`).
    pub(crate) fn applies_to(&self, event: HookEvent, tool_name: Option<&str>) -> bool {
        self.enabled
            && self.event == event
            && match tool_name {
                Some(name) => self.matcher.matches(name),
                None => true,
            }
    }
}

/// What became of one hook file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum FileState {
    Loaded { hooks: usize },
    Missing,
    SkippedUntrusted,
    Malformed { pointer: Option<String>, reason: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookFile {
    pub path: PathBuf,
    pub scope: HookScope,
    #[serde(flatten)]
    pub state: FileState,
}

/// The merged hook set: every definition in order (disabled ones too), the files, and diagnostics.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSet {
    pub hooks: Vec<HookDefinition>,
    pub files: Vec<HookFile>,
    pub diagnostics: Vec<Diagnostic>,
}

impl HookSet {
    /// The enabled hooks, in order.
    pub fn active(&self) -> impl Iterator<Item = &HookDefinition> {
        self.hooks.iter().filter(|hook| hook.enabled)
    }

    /// The enabled hooks that run for `payload` (its event, tool, tool input and session
    /// source), in order.
    pub fn matching(&self, payload: &elph_agent::hooks::HookPayload) -> Vec<&HookDefinition> {
        self.hooks
            .iter()
            .filter(|hook| {
                hook.applies_to(payload.event(), payload.tool_name()) && hook.matcher.matches_payload(payload)
            })
            .collect()
    }
}

/// The outcome of reading one file: its hooks, or why it has none.
#[derive(Clone, Debug)]
pub struct FileLoad {
    pub path: PathBuf,
    pub scope: HookScope,
    pub result: Result<Option<HooksFile>, LoadError>,
}

impl FileLoad {
    pub fn read(path: PathBuf, scope: HookScope) -> Self {
        let result = read_file(&path);
        FileLoad { path, scope, result }
    }

    fn skipped(path: PathBuf) -> Self {
        FileLoad {
            path,
            scope: HookScope::Project,
            result: Ok(None),
        }
    }
}

/// Loads the home file and, when `project_trusted`, the project file, and merges them.
pub fn discover(paths: &Paths, project_trusted: bool) -> HookSet {
    let home = FileLoad::read(paths.home_hooks_file(), HookScope::Home);
    let project = project_trusted.then(|| FileLoad::read(paths.project_hooks_file(), HookScope::Project));
    assemble(paths, home, project)
}

/// Merges the home file and the project file (`None`: the project is not trusted, so its file is
/// skipped with the diagnostic that says how to trust it).
pub(crate) fn assemble(paths: &Paths, home: FileLoad, project: Option<FileLoad>) -> HookSet {
    let mut set = assemble_files(paths, home, project);
    refuse_home_hooks_in_project(&mut set, paths);
    set
}

/// A home hook is the user's own code; one whose command resolves to a file inside the current
/// project (through PATH, a symlink, or a path written into it) would run the project's file with
/// the user's trust, trusted project or not. It is taken out of the set, with a diagnostic.
///
/// Files under CONFIG_DIR are the user's own even when CONFIG_DIR lies inside the project (Elph
/// started in the home folder itself), so they are not refused.
fn refuse_home_hooks_in_project(set: &mut HookSet, paths: &Paths) {
    let project_dir = &paths.project_dir;
    let config_dir = std::fs::canonicalize(&paths.config_dir).unwrap_or_else(|_| paths.config_dir.clone());
    let mut refused = Vec::new();
    set.hooks.retain(|hook| {
        if hook.scope != HookScope::Home {
            return true;
        }
        let Some(command) = hook.command() else {
            return true;
        };
        // A bare name was found in no absolute PATH entry and never runs; don't resolve it against
        // the current folder here either.
        if !command.path.is_absolute() {
            return true;
        }
        let resolved = std::fs::canonicalize(&command.path).unwrap_or_else(|_| command.path.clone());
        if !resolved.starts_with(project_dir) || resolved.starts_with(&config_dir) {
            return true;
        }
        refused.push(
            Diagnostic::new(format!(
                "home hook refused: its command '{}' resolves to {}, inside the current project; a \
                 project's files never run as your own hook. Give the command as an absolute path \
                 outside the project, or move the hook to the project's .elph/hooks.json",
                command.written,
                resolved.display()
            ))
            .in_file(&hook.source)
            .for_hook(&hook.id),
        );
        false
    });
    set.diagnostics.extend(refused);
}

fn assemble_files(paths: &Paths, home: FileLoad, project: Option<FileLoad>) -> HookSet {
    let project_path = paths.project_hooks_file();
    match project {
        Some(project) => {
            let mut set = merge(vec![home, project], None);
            // A malformed settings.json stops every session before a hook runs; here it only
            // means no default.
            let default = crate::settings::Settings::load(&paths.config_dir)
                .ok()
                .and_then(|settings| settings.project_hooks.sandbox)
                .filter(|mode| *mode != elph_process::sandbox::SandboxMode::FullAccess);
            for hook in &mut set.hooks {
                if hook.scope == HookScope::Project && hook.sandbox.is_none() {
                    hook.sandbox = default;
                }
            }
            set
        }
        None => {
            let mut set = merge(vec![home, FileLoad::skipped(project_path.clone())], None);
            if let Some(file) = set.files.last_mut() {
                file.state = FileState::SkippedUntrusted;
            }
            // Only worth saying when there is something to skip: an untrusted folder without
            // project hooks is the common case and needs no warning.
            if !project_path.exists() {
                return set;
            }
            // Which hooks are off, by id and event: a guard that silently does not run is the
            // surprise to prevent. The file is only read here, never run.
            let off: Vec<String> = match read_file(&project_path) {
                Ok(Some(file)) => file
                    .hooks
                    .iter()
                    .filter(|hook| hook.enabled)
                    .map(|hook| format!("{} ({})", hook.id, hook.event))
                    .collect(),
                _ => Vec::new(),
            };
            let off = if off.is_empty() {
                String::new()
            } else {
                format!("; off: {}", off.join(", "))
            };
            set.diagnostics.push(
                Diagnostic::new(format!(
                    "project hooks skipped until {} is trusted (run `elph trust` there, or /trust in the app){off}",
                    paths.project_dir.display()
                ))
                .in_file(project_path),
            );
            set
        }
    }
}

/// Merges loaded files in order: ids are unique across all files, the first definition wins.
/// `path_var` is the PATH used to resolve bare command names (`None`: the process's PATH).
pub fn merge(files: Vec<FileLoad>, path_var: Option<&str>) -> HookSet {
    let mut set = HookSet::default();
    // Where each id was first defined: a lookup per hook, not a scan of every earlier hook.
    let mut first_source: std::collections::HashMap<String, PathBuf> = std::collections::HashMap::new();
    let path_var = path_var
        .map(str::to_string)
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    for file in files {
        let state = match file.result {
            Ok(None) => FileState::Missing,
            Err(error) => {
                set.diagnostics.push(error.clone().into_diagnostic(&file.path));
                FileState::Malformed {
                    pointer: error.pointer,
                    reason: error.message,
                }
            }
            Ok(Some(contents)) => {
                let mut loaded = 0;
                for config in contents.hooks {
                    if let Some(first) = first_source.get(&config.id) {
                        set.diagnostics.push(
                            Diagnostic::new(format!(
                                "duplicate hook id '{}' in {} (first defined in {})",
                                config.id,
                                file.path.display(),
                                first.display()
                            ))
                            .in_file(&file.path)
                            .for_hook(&config.id),
                        );
                        continue;
                    }
                    first_source.insert(config.id.clone(), file.path.clone());
                    set.hooks
                        .push(definition(config, &file.path, file.scope, &path_var));
                    loaded += 1;
                }
                FileState::Loaded { hooks: loaded }
            }
        };
        set.files.push(HookFile {
            path: file.path,
            scope: file.scope,
            state,
        });
    }
    set
}

#[expect(clippy::expect_used, reason = "the schema already checked every pattern")]
fn definition(config: HookConfig, source: &Path, scope: HookScope, path_var: &str) -> HookDefinition {
    let folder = source.parent().unwrap_or(Path::new("/"));
    let handler = Handler::of(&config, folder, path_var);
    let matcher = config
        .matcher
        .map(|matcher| {
            let names = matcher.tool_names.as_deref().unwrap_or_default();
            Matcher::parse(names)
                .expect("patterns were checked by the schema")
                .with_input(
                    matcher
                        .input_conditions()
                        .expect("input patterns were checked on load"),
                )
                .with_sources(matcher.source.unwrap_or_default())
        })
        .unwrap_or_default();
    HookDefinition {
        id: config.id,
        event: config.event,
        matcher,
        handler,
        args: config.args,
        timeout: Duration::from_millis(config.timeout_ms),
        budget: config.budget_ms.map(Duration::from_millis),
        enabled: config.enabled,
        persistent: config.persistent,
        run_async: config.run_async,
        source: source.to_path_buf(),
        scope,
        protocol: config.protocol,
        sandbox: config.sandbox.map(Into::into),
        fail_closed: config.fail_closed,
        max_input_bytes: config.max_input_bytes.map_or(MAX_INPUT_BYTES, |bytes| {
            usize::try_from(bytes).unwrap_or(MAX_INPUT_BYTES)
        }),
        max_output_bytes: config.max_output_bytes.map_or(MAX_STDOUT_BYTES, |bytes| {
            usize::try_from(bytes).unwrap_or(MAX_STDOUT_BYTES)
        }),
        env: config.env,
    }
}

/// Resolves a command: absolute stays, a relative path with a separator is relative to `folder`,
/// a bare name is looked up in the absolute entries of `path_var`.
///
/// Empty and relative PATH entries (`/usr/bin:`, `.:`, `./node_modules/.bin`) are skipped: they name
/// the folder Elph runs in, which is the project, so a home hook `elph-audit` would otherwise run the
/// repository's `./elph-audit`. A name found nowhere stays bare, and the host refuses to spawn it.
pub fn resolve_command(command: &str, folder: &Path, path_var: &str) -> ResolvedCommand {
    let written = Path::new(command);
    let path = if written.is_absolute() {
        written.to_path_buf()
    } else if command.contains('/') {
        folder.join(written)
    } else {
        std::env::split_paths(path_var)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(command))
            .find(|candidate| is_executable(candidate))
            .unwrap_or_else(|| written.to_path_buf())
    };
    // A bare name that was not found is never executable, whatever the current folder holds.
    let executable = path.is_absolute() && is_executable(&path);
    ResolvedCommand {
        written: command.to_string(),
        path,
        executable,
    }
}

/// An existing regular file with an execute bit.
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
