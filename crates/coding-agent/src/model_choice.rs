//! Which model a session uses: `--model`, then `ELPH_MODEL`, then settings.json's `model` — the
//! binary's precedence rule, beside the others (`paths.rs` for the folders, `sandbox.rs` for the
//! sandbox). Building the provider for the choice is `elph_ai::build_provider`.

use std::path::Path;

use elph_ai::{ModelOrigin, ModelSelection, Provider, ProviderError};

use crate::paths::Paths;
use crate::settings::Settings;

/// The first model string that is set and non-empty: flag, then `ELPH_MODEL`, then settings.
fn choose<'a>(
    flag: Option<&'a str>,
    env_model: Option<&'a str>,
    settings_model: Option<&'a str>,
    config_dir: &Path,
) -> Option<(&'a str, ModelOrigin)> {
    let set = |value: Option<&'a str>| value.filter(|v| !v.trim().is_empty());
    set(flag)
        .map(|v| (v, ModelOrigin::Flag))
        .or_else(|| set(env_model).map(|v| (v, ModelOrigin::Env)))
        .or_else(|| set(settings_model).map(|v| (v, ModelOrigin::Settings(Settings::path(config_dir)))))
}

/// Chooses the model (flag → `ELPH_MODEL` → settings.json `model`) and builds its provider; `env`
/// answers environment lookups (`ELPH_MODEL`, keys, base URLs).
pub(crate) fn resolve(
    flag: Option<&str>,
    settings_model: Option<&str>,
    config_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let env_model = env("ELPH_MODEL");
    let (spec, origin) = choose(flag, env_model.as_deref(), settings_model, config_dir).ok_or_else(|| {
        ProviderError::NoModel {
            settings: Settings::path(config_dir),
        }
    })?;
    let selection = ModelSelection::parse(spec, &origin)?;
    elph_ai::build_provider(&selection, &origin, config_dir, env)
}

/// The model `--model` (`flag`), `ELPH_MODEL` or settings.json names, with its key: one choice for
/// the session and for the checks made before the startup trust question.
pub(crate) fn resolve_provider(
    paths: &Paths,
    flag: Option<&str>,
    settings: &Settings,
) -> Result<Box<dyn Provider>, ProviderError> {
    resolve(flag, settings.model.as_deref(), &paths.config_dir, &|name| {
        std::env::var(name).ok()
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn write_script(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, serde_json::json!({"turns": [{"text": text}]}).to_string()).unwrap();
    }

    #[test]
    fn choose_prefers_flag_then_env_then_settings() {
        let dir = Path::new("/cfg");
        assert_eq!(
            choose(Some("a/1"), Some("b/2"), Some("c/3"), dir).unwrap(),
            ("a/1", ModelOrigin::Flag)
        );
        assert_eq!(
            choose(None, Some("b/2"), Some("c/3"), dir).unwrap(),
            ("b/2", ModelOrigin::Env)
        );
        assert_eq!(
            choose(Some(""), Some(" "), Some("c/3"), dir).unwrap(),
            ("c/3", ModelOrigin::Settings(PathBuf::from("/cfg/settings.json")))
        );
        assert_eq!(choose(None, None, None, dir), None);
    }

    #[test]
    fn the_chosen_script_is_the_one_played_and_settings_paths_are_relative_to_config_dir() {
        let dir = tempfile::tempdir().unwrap();
        let config_dir = dir.path().join("config");
        let flag = dir.path().join("flag.json");
        let env = dir.path().join("env.json");
        write_script(&flag, "from flag");
        write_script(&env, "from env");
        write_script(&config_dir.join("scripts/settings.json"), "from settings");
        let env_spec = format!("scripted/{}", env.display());
        let flag_spec = format!("scripted/{}", flag.display());
        let with_env = |name: &str| (name == "ELPH_MODEL").then(|| env_spec.clone());
        let settings = Some("scripted/scripts/settings.json");
        let model_of = |provider: Box<dyn Provider>| provider.model_id().to_string();
        assert_eq!(
            model_of(resolve(Some(&flag_spec), settings, &config_dir, &with_env).unwrap()),
            flag.display().to_string()
        );
        assert_eq!(
            model_of(resolve(None, settings, &config_dir, &with_env).unwrap()),
            env.display().to_string()
        );
        assert_eq!(
            model_of(resolve(Some(""), settings, &config_dir, &|_| None).unwrap()),
            config_dir.join("scripts/settings.json").display().to_string()
        );
    }

    #[test]
    fn no_model_anywhere_says_how_to_set_one() {
        let dir = tempfile::tempdir().unwrap();
        let error = resolve(None, None, dir.path(), &|name| {
            (name == "ELPH_MODEL").then(String::new)
        })
        .err()
        .unwrap();
        assert!(matches!(error, ProviderError::NoModel { .. }));
        assert_eq!(
            error.to_string(),
            format!(
                "no model configured: pass --model PROVIDER/MODEL, set ELPH_MODEL, or set \"model\" in {} \
                 (scripted/PATH runs offline)",
                dir.path().join("settings.json").display()
            )
        );
    }
}
