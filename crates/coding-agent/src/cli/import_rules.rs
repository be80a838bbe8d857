//! The permission rules `elph hooks import` brings from Claude Code settings (see
//! `hooks::claude_code::permissions`): a project file's `deny` and `ask` go to the project's
//! `.elph/settings.json`, your own file's rules to `CONFIG_DIR/settings.json`. Printed, or with
//! `--write` added to those files (each rule once).

use std::io::Write;
use std::path::PathBuf;

use elph_agent::harness::permissions::RuleKind;

use crate::hooks::claude_code::plain::Target;
use crate::paths::Paths;
use crate::settings::Settings;

/// The settings files rules go to, in the order first seen, each with its rules.
#[derive(Default)]
pub(super) struct RuleTargets(Vec<(PathBuf, Target, Rules)>);

/// Rules by list, in the order found.
type Rules = Vec<(RuleKind, String)>;

impl RuleTargets {
    /// Takes the rules a settings file for `target` gave.
    pub(super) fn add(&mut self, paths: &Paths, target: Target, rules: Vec<(RuleKind, String)>) {
        if rules.is_empty() {
            return;
        }
        let path = match target {
            Target::Project => crate::permissions::project_settings_path(paths),
            Target::Home => Settings::path(&paths.config_dir),
        };
        match self.0.iter_mut().find(|(known, _, _)| *known == path) {
            Some((_, _, known)) => known.extend(rules),
            None => self.0.push((path, target, rules)),
        }
    }

    /// Prints what would be added, or (`write`) adds it and says how much was new.
    pub(super) fn finish(self, out: &mut impl Write, write: bool) -> anyhow::Result<()> {
        for (path, target, rules) in self.0 {
            if !write {
                // On stderr: stdout holds the hooks files, one JSON document each.
                eprintln!(
                    "{}: {} permission rule(s); with --write they are added to its permissions:",
                    path.display(),
                    rules.len()
                );
                for (kind, rule) in &rules {
                    eprintln!("  {}: {rule}", kind.as_str());
                }
                continue;
            }
            // Your own settings.json must still start every session; a project's is read leniently.
            let check = |text: &str| -> Result<(), String> {
                if target == Target::Home {
                    Settings::parse(path.clone(), text.as_bytes())
                        .map(drop)
                        .map_err(|error| error.to_string())
                } else {
                    Ok(())
                }
            };
            let added = crate::permissions::add_rules(&path, &rules, &check)
                .map_err(|error| anyhow::anyhow!("the permission rules were not added: {error}"))?;
            if added == 0 {
                writeln!(out, "{}: no new permission rule", path.display())?;
            } else {
                writeln!(out, "{}: added {added} permission rule(s)", path.display())?;
            }
        }
        Ok(())
    }
}
