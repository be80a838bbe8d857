//! `CONFIG_DIR/settings.json`: the user's defaults (model, compaction threshold).

use std::path::{Path, PathBuf};

use serde::Deserialize;

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// `PROVIDER/MODEL`, used when neither `--model` nor `ELPH_MODEL` is given.
    pub model: Option<String>,
    /// Compact automatically when the context reaches this share of the model's window (0.1 to 1.0).
    pub compaction_threshold: Option<f64>,
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
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
        let value = elph_config::parse_json(&bytes).map_err(|err| SettingsError {
            path: path.clone(),
            reason: err.message,
        })?;
        let settings: Settings = serde_json::from_value(value).map_err(|err| SettingsError {
            path: path.clone(),
            reason: err.to_string(),
        })?;
        if let Some(threshold) = settings.compaction_threshold
            && !(0.1..=1.0).contains(&threshold)
        {
            return Err(SettingsError {
                path,
                reason: format!("compactionThreshold is {threshold}; it must be between 0.1 and 1.0"),
            });
        }
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        std::fs::write(dir.path().join("settings.json"), r#"{"modle": "x"}"#).unwrap();
        assert!(
            Settings::load(dir.path())
                .unwrap_err()
                .to_string()
                .contains("unknown field")
        );
    }
}
