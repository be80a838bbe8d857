//! Model selection: which `PROVIDER/MODEL` to use (flag → `ELPH_MODEL` → settings.json `model`) and
//! building the provider for it. The environment is passed in as a function so callers and tests
//! decide what it holds.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::anthropic::{self, AnthropicProvider};
use crate::catalog::{Catalog, WireApi, known_context_window, providers_dir};
use crate::http::HttpProviderConfig;
use crate::openai::{self, OpenAiProvider};
use crate::provider::{Provider, ProviderError};
use crate::scripted::ScriptedProvider;

/// Where a model string came from; named in errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelOrigin {
    /// `--model`.
    Flag,
    /// `ELPH_MODEL`.
    Env,
    /// `model` in this settings file.
    Settings(PathBuf),
    /// A running session's `/model NAME` command.
    Command,
}

impl fmt::Display for ModelOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelOrigin::Flag => f.write_str("--model"),
            ModelOrigin::Env => f.write_str("ELPH_MODEL"),
            ModelOrigin::Settings(path) => write!(f, "\"model\" in {}", path.display()),
            ModelOrigin::Command => f.write_str("/model"),
        }
    }
}

/// A parsed `PROVIDER/MODEL`. For `scripted/PATH` the model is the path, slashes and all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSelection {
    /// The provider name before the first '/'.
    pub provider: String,
    /// The model id after it (for `scripted`, the script path).
    pub model: String,
}

impl ModelSelection {
    /// Splits at the first '/'; both sides must be non-empty.
    pub fn parse(spec: &str, origin: &ModelOrigin) -> Result<Self, ProviderError> {
        let invalid = || ProviderError::InvalidModel {
            spec: spec.to_string(),
            origin: origin.to_string(),
        };
        let (provider, model) = spec.trim().split_once('/').ok_or_else(invalid)?;
        if provider.trim().is_empty() || model.trim().is_empty() {
            return Err(invalid());
        }
        Ok(ModelSelection {
            provider: provider.trim().to_string(),
            model: model.trim().to_string(),
        })
    }

    /// Whether it names the offline scripted provider.
    pub fn is_scripted(&self) -> bool {
        self.provider == "scripted"
    }
}

impl fmt::Display for ModelSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// `CONFIG_DIR/settings.json`.
pub(crate) fn settings_path(config_dir: &Path) -> PathBuf {
    config_dir.join("settings.json")
}

/// The first model string that is set and non-empty: flag, then `ELPH_MODEL`, then settings.
pub(crate) fn choose<'a>(
    flag: Option<&'a str>,
    env_model: Option<&'a str>,
    settings_model: Option<&'a str>,
    config_dir: &Path,
) -> Option<(&'a str, ModelOrigin)> {
    let set = |value: Option<&'a str>| value.filter(|v| !v.trim().is_empty());
    set(flag)
        .map(|v| (v, ModelOrigin::Flag))
        .or_else(|| set(env_model).map(|v| (v, ModelOrigin::Env)))
        .or_else(|| set(settings_model).map(|v| (v, ModelOrigin::Settings(settings_path(config_dir)))))
}

/// Chooses the model (flag → `ELPH_MODEL` → settings.json `model`) and builds its provider.
/// `env` answers environment lookups (API keys, base URLs).
pub fn resolve(
    flag: Option<&str>,
    env_model: Option<&str>,
    settings_model: Option<&str>,
    config_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let (spec, origin) =
        choose(flag, env_model, settings_model, config_dir).ok_or_else(|| ProviderError::NoModel {
            settings: settings_path(config_dir),
        })?;
    let selection = ModelSelection::parse(spec, &origin)?;
    build(&selection, &origin, config_dir, env)
}

/// Builds the provider for a selection. A relative `scripted/PATH` from settings.json is taken
/// relative to CONFIG_DIR; from the flag, `ELPH_MODEL` or `/model`, relative to the current directory.
pub fn build(
    selection: &ModelSelection,
    origin: &ModelOrigin,
    config_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let model = selection.model.as_str();
    match selection.provider.as_str() {
        "scripted" => {
            let path = PathBuf::from(model);
            let path = match origin {
                ModelOrigin::Settings(_) if path.is_relative() => config_dir.join(path),
                _ => path,
            };
            Ok(Box::new(ScriptedProvider::load(path)?))
        }
        "openai" => {
            let key = var(openai::API_KEY_ENV).ok_or_else(|| ProviderError::MissingApiKey {
                var: openai::API_KEY_ENV.into(),
            })?;
            let base_url = var(openai::BASE_URL_ENV).unwrap_or_else(|| openai::DEFAULT_BASE_URL.into());
            let config = HttpProviderConfig::new("openai", model, base_url)
                .with_api_key(key)
                .with_api_key_env(openai::API_KEY_ENV)
                .with_context_window(known_context_window(model));
            Ok(Box::new(OpenAiProvider::new(config)?))
        }
        "anthropic" => {
            let key = var(anthropic::API_KEY_ENV).ok_or_else(|| ProviderError::MissingApiKey {
                var: anthropic::API_KEY_ENV.into(),
            })?;
            let base_url = var(anthropic::BASE_URL_ENV).unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.into());
            let config = HttpProviderConfig::new("anthropic", model, base_url)
                .with_api_key(key)
                .with_api_key_env(anthropic::API_KEY_ENV)
                .with_context_window(known_context_window(model));
            Ok(Box::new(AnthropicProvider::new(config)?))
        }
        name => {
            let catalog = Catalog::load(config_dir);
            let Some(def) = catalog.get(name) else {
                // The file meant to define it is broken: say what is wrong with that file.
                if let Some(problem) = catalog.problem_for(name) {
                    return Err(problem.error());
                }
                let names: Vec<&str> = catalog.providers().iter().map(|p| p.name.as_str()).collect();
                let mut known = if names.is_empty() {
                    " (none found".to_string()
                } else {
                    format!(" (found: {}", names.join(", "))
                };
                if !catalog.problems().is_empty() {
                    let skipped: Vec<String> = catalog
                        .problems()
                        .iter()
                        .map(|p| p.path.display().to_string())
                        .collect();
                    known.push_str(&format!(
                        "; skipped because of problems: {}; see `elph doctor`",
                        skipped.join(", ")
                    ));
                }
                known.push(')');
                return Err(ProviderError::UnknownProvider {
                    name: name.to_string(),
                    origin: origin.to_string(),
                    providers_dir: providers_dir(config_dir),
                    known,
                });
            };
            let mut config = HttpProviderConfig::new(&def.name, model, &def.base_url)
                .with_context_window(def.context_window(model))
                .with_limits(def.stream_limits())
                .with_headers(def.resolve_headers(&var)?)
                .with_config_file(&def.path);
            if let Some(key_var) = &def.api_key_env {
                let key =
                    var(key_var).ok_or_else(|| ProviderError::MissingApiKey { var: key_var.clone() })?;
                config = config.with_api_key(key).with_api_key_env(key_var);
            }
            Ok(match def.api {
                WireApi::OpenAiChat => Box::new(OpenAiProvider::new(config)?),
                WireApi::AnthropicMessages => Box::new(AnthropicProvider::new(config)?),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_keeps_slashes_in_the_model() {
        let selection =
            ModelSelection::parse("scripted/examples/demo/script.json", &ModelOrigin::Flag).unwrap();
        assert_eq!(selection.provider, "scripted");
        assert_eq!(selection.model, "examples/demo/script.json");
        assert!(selection.is_scripted());
        let selection = ModelSelection::parse("openrouter/meta/llama", &ModelOrigin::Env).unwrap();
        assert_eq!(selection.model, "meta/llama");
        assert_eq!(selection.to_string(), "openrouter/meta/llama");
    }

    #[test]
    fn parse_rejects_half_specs() {
        for spec in ["gpt-4o", "/gpt-4o", "openai/", ""] {
            let error = ModelSelection::parse(spec, &ModelOrigin::Flag).unwrap_err();
            assert!(error.to_string().contains("expected PROVIDER/MODEL"), "{error}");
            assert!(error.to_string().contains("--model"), "{error}");
        }
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
        assert_eq!(choose(Some(""), Some(" "), Some("c/3"), dir).unwrap().0, "c/3");
        assert_eq!(choose(None, None, None, dir), None);
    }
}
