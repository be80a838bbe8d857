//! A model selection (`PROVIDER/MODEL`) and building the provider for it. Which selection wins
//! (flag, `ELPH_MODEL`, settings.json) is the binary's precedence rule, decided in `coding-agent`.
//! The environment is passed in as a function so callers and tests decide what it holds.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::anthropic::AnthropicProvider;
use crate::builtin::{self, BUILTIN_PROVIDERS};
use crate::catalog::{Catalog, ProviderDef, WireApi, providers_dir};
use crate::http::HttpProviderConfig;
use crate::openai::OpenAiProvider;
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

/// Builds the provider for a selection: a built-in row (`builtin.rs`) or a provider file, both as
/// a [`ProviderDef`] through [`http_provider`]. A relative `scripted/PATH` from settings.json is
/// taken relative to CONFIG_DIR; from the flag, `ELPH_MODEL` or `/model`, relative to the current
/// directory. `env` answers environment lookups (API keys, base URLs, header variables).
pub fn build(
    selection: &ModelSelection,
    origin: &ModelOrigin,
    config_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let model = selection.model.as_str();
    let name = selection.provider.as_str();
    if name == builtin::SCRIPTED {
        let path = PathBuf::from(model);
        let path = match origin {
            ModelOrigin::Settings(_) if path.is_relative() => config_dir.join(path),
            _ => path,
        };
        return Ok(Box::new(ScriptedProvider::load(path)?));
    }
    if let Some(row) = builtin::find(BUILTIN_PROVIDERS, name) {
        return http_provider(&row.def(&var), model, &var, None);
    }
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
    http_provider(def, model, &var, Some(&def.path))
}

/// The HTTP provider a definition describes, built-in or from `file`.
fn http_provider(
    def: &ProviderDef,
    model: &str,
    var: &dyn Fn(&str) -> Option<String>,
    file: Option<&Path>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let mut config = HttpProviderConfig::new(&def.name, model, &def.base_url)
        .with_context_window(def.context_window(model))
        .with_limits(def.stream_limits())
        .with_headers(def.resolve_headers(var)?);
    if let Some(file) = file {
        config = config.with_config_file(file);
    }
    if let Some(key_var) = &def.api_key_env {
        let key = var(key_var).ok_or_else(|| ProviderError::MissingApiKey { var: key_var.clone() })?;
        config = config.with_api_key(key).with_api_key_env(key_var);
    }
    Ok(match def.api {
        WireApi::OpenAiChat => Box::new(OpenAiProvider::new(config)?),
        WireApi::AnthropicMessages => Box::new(AnthropicProvider::new(config)?),
    })
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
}
