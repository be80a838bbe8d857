//! Permission rules from `CONFIG_DIR/settings.json` (`allow`, `ask`, `deny`) and from a project's
//! `.elph/settings.json` (`deny` and `ask` only), assembled for the harness, and the allow rule an
//! "always allow" answer saves (docs/security.md, "Permission rules").
//!
//! A project's rules are read whether or not the project is trusted: they can only add questions
//! and refusals. An `allow` there, or anything else, is reported and not read: a repository must
//! not be able to wave its own commands through.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use elph_agent::harness::permissions::{PermissionRule, PermissionRules, RuleBase, RuleKind};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::paths::Paths;
use crate::settings::Settings;

/// `"permissions": {"allow": ["shell_exec(git status*)"], "ask": [...], "deny": ["read_file(.env)"]}`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PermissionsSettings {
    /// Calls that run without the approval policy's question.
    #[serde(default)]
    pub(crate) allow: Vec<String>,
    /// Calls that are asked about whatever the policy.
    #[serde(default)]
    pub(crate) ask: Vec<String>,
    /// Calls that are refused whatever the policy.
    #[serde(default)]
    pub(crate) deny: Vec<String>,
}

impl PermissionsSettings {
    fn lists(&self) -> [(RuleKind, &[String]); 3] {
        [
            (RuleKind::Allow, &self.allow),
            (RuleKind::Ask, &self.ask),
            (RuleKind::Deny, &self.deny),
        ]
    }

    /// The first rule that cannot be used, as `permissions.KIND[N]: why` (for settings.json's
    /// error).
    pub(crate) fn check(&self) -> Result<(), String> {
        let base = RuleBase {
            project_dir: PathBuf::from("/"),
            home: Some(PathBuf::from("/")),
        };
        for (kind, list) in self.lists() {
            for (index, text) in list.iter().enumerate() {
                PermissionRule::parse(text, &base, "settings.json")
                    .map_err(|error| format!("permissions.{}[{index}]: {error}", kind.as_str()))?;
            }
        }
        Ok(())
    }
}

/// Where `paths`' relative and `~/` patterns lead.
fn base(paths: &Paths) -> RuleBase {
    RuleBase {
        project_dir: paths.project_dir.clone(),
        home: std::env::var_os("HOME").map(|home| {
            let home = PathBuf::from(home);
            std::fs::canonicalize(&home).unwrap_or(home)
        }),
    }
}

/// The project's own settings file.
pub(crate) fn project_settings_path(paths: &Paths) -> PathBuf {
    paths.project_dir.join(".elph").join("settings.json")
}

/// The session's rules: the user's (already checked when settings.json was read) and the
/// project's `deny` and `ask`; each problem with the project's file in one notice line.
pub(crate) fn session_rules(paths: &Paths, settings: &Settings) -> (PermissionRules, Vec<String>) {
    let base = base(paths);
    let mut rules = PermissionRules::default();
    let mut notices = Vec::new();
    let user_file = Settings::path(&paths.config_dir).display().to_string();
    for (kind, list) in settings.permissions.lists() {
        for text in list {
            match PermissionRule::parse(text, &base, user_file.clone()) {
                Ok(rule) => rules.add(kind, rule),
                Err(error) => notices.push(format!("{user_file}: {error}; the rule is not used")),
            }
        }
    }
    let project_file = project_settings_path(paths);
    let shown = project_file.display().to_string();
    let value = match elph_config::read_config(&project_file) {
        Ok(None) => return (rules, notices),
        Ok(Some(bytes)) => elph_config::parse_json(&bytes).map_err(|error| error.message),
        Err(error) => Err(error.reason()),
    };
    let value = match value {
        Ok(Value::Object(value)) => value,
        Ok(_) => {
            notices.push(format!("{shown} is not a JSON object; its rules are not used"));
            return (rules, notices);
        }
        Err(reason) => {
            notices.push(format!("{shown}: {reason}; its rules are not used"));
            return (rules, notices);
        }
    };
    for key in value
        .keys()
        .filter(|key| !matches!(key.as_str(), "permissions" | "$schema"))
    {
        notices.push(format!(
            "{shown}: \"{key}\" is not read from a project's settings (only permissions.deny and \
             permissions.ask are); set it in {user_file}"
        ));
    }
    let Some(permissions) = value.get("permissions") else {
        return (rules, notices);
    };
    let Value::Object(permissions) = permissions else {
        notices.push(format!(
            "{shown}: permissions is not an object; its rules are not used"
        ));
        return (rules, notices);
    };
    for (key, list) in permissions {
        let kind = match key.as_str() {
            "deny" => RuleKind::Deny,
            "ask" => RuleKind::Ask,
            "allow" => {
                notices.push(format!(
                    "{shown}: permissions.allow ignored: a project's settings may add only deny and ask \
                     rules; an allow rule you want goes in {user_file}"
                ));
                continue;
            }
            other => {
                notices.push(format!(
                    "{shown}: permissions.{other} is not a list Elph knows (deny, ask); ignored"
                ));
                continue;
            }
        };
        let Value::Array(list) = list else {
            notices.push(format!(
                "{shown}: permissions.{key} is not a list of rules; ignored"
            ));
            continue;
        };
        for (index, text) in list.iter().enumerate() {
            let parsed = text
                .as_str()
                .ok_or_else(|| "not a string".to_string())
                .and_then(|text| {
                    PermissionRule::parse(text, &base, shown.clone()).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(rule) => rules.add(kind, rule),
                Err(why) => notices.push(format!("{shown}: permissions.{key}[{index}]: {why}; not used")),
            }
        }
    }
    (rules, notices)
}

/// Appends `rule` to `permissions.allow` of `CONFIG_DIR/settings.json` (unless it is there),
/// keeping the rest of the file; under a sidecar lock, replaced in one step.
pub(crate) fn save_allow_rule(config_dir: &Path, rule: &str) -> Result<PathBuf, String> {
    let path = Settings::path(config_dir);
    elph_config::private::create_private_dir_all(config_dir)
        .map_err(|error| format!("cannot create {}: {error}", config_dir.display()))?;
    let lock = OpenOptions::new()
        .mode(0o600)
        .create(true)
        .truncate(false)
        .write(true)
        .open(config_dir.join("settings.json.lock"))
        .and_then(|lock| lock.lock().map(|()| lock))
        .map_err(|error| format!("cannot lock {}: {error}", path.display()))?;
    let _lock = crate::locked_file::LockedFile::new(lock);
    add_rules(&path, &[(RuleKind::Allow, rule.to_string())], &|text| {
        // What is written must still be a settings file every session can start with.
        Settings::parse(path.clone(), text.as_bytes())
            .map(drop)
            .map_err(|error| error.to_string())
    })?;
    Ok(path)
}

/// Adds `rules` to the `permissions` lists of the settings file at `path` (created if missing),
/// each once, keeping everything else; `check` vets the new text before it replaces the file.
/// Returns how many were new.
pub(crate) fn add_rules(
    path: &Path,
    rules: &[(RuleKind, String)],
    check: &dyn Fn(&str) -> Result<(), String>,
) -> Result<usize, String> {
    let shown = path.display().to_string();
    let mut root = match elph_config::read_config(path) {
        Ok(None) => Map::new(),
        Ok(Some(bytes)) => match elph_config::parse_json(&bytes) {
            Ok(Value::Object(root)) => root,
            Ok(_) => return Err(format!("{shown} is not a JSON object; fix it first")),
            Err(error) => return Err(format!("{shown}: {}; fix it first", error.message)),
        },
        Err(error) => return Err(format!("{shown}: {}", error.reason())),
    };
    let permissions = root
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(permissions) = permissions else {
        return Err(format!("{shown}: permissions is not an object; fix it first"));
    };
    let mut added = 0;
    for (kind, rule) in rules {
        let list = permissions
            .entry(kind.as_str())
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(list) = list else {
            return Err(format!(
                "{shown}: permissions.{} is not a list; fix it first",
                kind.as_str()
            ));
        };
        if !list.iter().any(|known| known.as_str() == Some(rule)) {
            list.push(Value::String(rule.clone()));
            added += 1;
        }
    }
    if added == 0 {
        return Ok(0);
    }
    let text = serde_json::to_string_pretty(&Value::Object(root)).map_err(|error| error.to_string())? + "\n";
    check(&text)?;
    let folder = path.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(folder)
        .map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
    let mut file = tempfile::NamedTempFile::new_in(folder)
        .map_err(|error| format!("cannot write in {}: {error}", folder.display()))?;
    file.write_all(text.as_bytes())
        .map_err(|error| format!("cannot write {shown}: {error}"))?;
    file.persist(path)
        .map_err(|error| format!("cannot replace {shown}: {}", error.error))?;
    Ok(added)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn paths(root: &Path) -> Paths {
        let project = root.join("project");
        std::fs::create_dir_all(project.join(".elph")).unwrap();
        Paths {
            config_dir: root.join("config"),
            data_dir: root.join("data"),
            project_dir: std::fs::canonicalize(project).unwrap(),
        }
    }

    #[test]
    fn a_project_adds_deny_and_ask_but_never_allow() {
        let dir = tempfile::tempdir().unwrap();
        let paths = paths(dir.path());
        std::fs::write(
            project_settings_path(&paths),
            json!({"permissions": {"allow": ["shell_exec"], "deny": ["read_file(.env)", "bad("],
                                   "ask": ["shell_exec(git push*)"]},
                   "model": "x/y"})
            .to_string(),
        )
        .unwrap();
        let settings: Settings =
            serde_json::from_value(json!({"permissions": {"allow": ["shell_exec(ls*)"]}})).unwrap();
        let (rules, notices) = session_rules(&paths, &settings);
        let texts = |kind| {
            rules
                .list(kind)
                .iter()
                .map(|r| r.text.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(RuleKind::Allow), ["shell_exec(ls*)"]);
        assert_eq!(texts(RuleKind::Deny), ["read_file(.env)"]);
        assert_eq!(texts(RuleKind::Ask), ["shell_exec(git push*)"]);
        let said = notices.join("\n");
        for expected in [
            "permissions.allow ignored",
            "\"model\" is not read",
            "permissions.deny[1]",
        ] {
            assert!(said.contains(expected), "{expected} in:\n{said}");
        }
    }

    #[test]
    fn saving_a_rule_keeps_the_file_and_adds_it_once() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("settings.json"), r#"{"model": "scripted/x.json"}"#).unwrap();
        save_allow_rule(&config, "shell_exec(git status*)").unwrap();
        save_allow_rule(&config, "shell_exec(git status*)").unwrap();
        let settings = Settings::load(&config).unwrap();
        assert_eq!(settings.model.as_deref(), Some("scripted/x.json"));
        assert_eq!(settings.permissions.allow, ["shell_exec(git status*)"]);
        std::fs::write(config.join("settings.json"), "{broken").unwrap();
        assert!(
            save_allow_rule(&config, "shell_exec(ls*)")
                .unwrap_err()
                .contains("fix it first")
        );
        assert_eq!(
            std::fs::read_to_string(config.join("settings.json")).unwrap(),
            "{broken"
        );
    }
}
