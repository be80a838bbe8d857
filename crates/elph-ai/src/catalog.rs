//! Provider catalogs: custom providers from `CONFIG_DIR/providers/*.json`, each reusing one of the
//! two HTTP adapters, and the context windows of well-known models.
//!
//! ```json
//! {"name": "local", "api": "openai-chat", "baseUrl": "http://127.0.0.1:8080/v1",
//!  "apiKeyEnv": "LOCAL_KEY", "models": [{"id": "qwen3", "contextWindow": 32768}]}
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::provider::{DEFAULT_CONTEXT_WINDOW, ProviderError};

/// Provider names that are built in and cannot be redefined by a file.
pub(crate) const BUILTIN_PROVIDERS: [&str; 3] = ["openai", "anthropic", "scripted"];

/// The wire format a custom provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireApi {
    #[serde(rename = "openai-chat")]
    /// OpenAI's chat completions (`openai-chat`).
    OpenAiChat,
    #[serde(rename = "anthropic-messages")]
    /// Anthropic's messages (`anthropic-messages`).
    AnthropicMessages,
}

/// One custom provider file.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProviderDef {
    /// The name used in `PROVIDER/MODEL`.
    pub name: String,
    /// The wire format it speaks.
    pub api: WireApi,
    /// Where requests go (for OpenAI-compatible servers, up to and including `/v1`).
    pub base_url: String,
    /// The environment variable holding the key; none for servers that need no key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    /// Models with known context windows.
    pub models: Vec<ModelDef>,
    /// The file it was read from.
    #[serde(skip)]
    pub path: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelDef {
    pub id: String,
    #[serde(default)]
    pub context_window: Option<u64>,
}

impl ProviderDef {
    /// The model's context window as the file gives it, else the well-known one, else the default.
    pub fn context_window(&self, model: &str) -> u64 {
        self.models
            .iter()
            .find(|m| m.id == model)
            .and_then(|m| m.context_window)
            .unwrap_or_else(|| known_context_window(model))
    }

    fn validate(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(format!(
                "\"name\" {:?} must be non-empty and use only letters, digits, '-', '_' and '.'",
                self.name
            ));
        }
        if BUILTIN_PROVIDERS.contains(&self.name.as_str()) {
            return Err(format!(
                "\"name\" {:?} is a built-in provider; choose another name",
                self.name
            ));
        }
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(format!(
                "\"baseUrl\" {:?} must start with http:// or https://",
                self.base_url
            ));
        }
        if self.api_key_env.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err("\"apiKeyEnv\" is empty; name an environment variable or leave the field out".into());
        }
        for model in &self.models {
            if model.id.trim().is_empty() {
                return Err("a model has an empty \"id\"".into());
            }
            if model.context_window == Some(0) {
                return Err(format!(
                    "model {:?}: \"contextWindow\" must be positive",
                    model.id
                ));
            }
        }
        Ok(())
    }
}

/// All custom providers found under a config dir.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    providers: Vec<ProviderDef>,
}

impl Catalog {
    /// Reads `config_dir/providers/*.json` (in file-name order). A missing folder is an empty catalog;
    /// a file that cannot be read, parsed or used is an error naming it.
    pub fn load(config_dir: &Path) -> Result<Self, ProviderError> {
        Self::load_dir(&providers_dir(config_dir))
    }

    /// Reads every `*.json` file of `dir`.
    pub fn load_dir(dir: &Path) -> Result<Self, ProviderError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Catalog::default()),
            Err(e) => {
                return Err(ProviderError::Catalog {
                    path: dir.to_path_buf(),
                    message: format!("cannot list: {e}"),
                });
            }
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            // Only folders are skipped: a FIFO or a device named *.json gets a clear error from the read.
            .filter(|path| path.extension().is_some_and(|ext| ext == "json") && !path.is_dir())
            .collect();
        paths.sort();
        let mut catalog = Catalog::default();
        for path in paths {
            let def = load_file(&path)?;
            if let Some(first) = catalog.get(&def.name) {
                return Err(ProviderError::Catalog {
                    path,
                    message: format!(
                        "provider {:?} is already defined in {}",
                        def.name,
                        first.path.display()
                    ),
                });
            }
            catalog.providers.push(def);
        }
        Ok(catalog)
    }

    /// The provider defined under this name, if any.
    pub fn get(&self, name: &str) -> Option<&ProviderDef> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// Every provider defined, in file-name order.
    pub fn providers(&self) -> &[ProviderDef] {
        &self.providers
    }
}

/// `config_dir/providers`.
pub(crate) fn providers_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("providers")
}

fn load_file(path: &Path) -> Result<ProviderDef, ProviderError> {
    let error = |message: String| ProviderError::Catalog {
        path: path.to_path_buf(),
        message,
    };
    // Bounded and non-blocking: a catalog is a config file like any other.
    let bytes = match elph_config::read_config(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(error("cannot read: the file disappeared".into())),
        Err(err) => return Err(error(err.reason())),
    };
    let value = elph_config::parse_json(&bytes).map_err(|e| error(e.message))?;
    let mut def: ProviderDef = serde_json::from_value(value).map_err(|e| error(e.to_string()))?;
    def.validate().map_err(error)?;
    def.path = path.to_path_buf();
    Ok(def)
}

/// Context windows of well-known model families; [`DEFAULT_CONTEXT_WINDOW`] for the rest.
pub(crate) fn known_context_window(model: &str) -> u64 {
    let model = model.rsplit('/').next().unwrap_or(model);
    let table: [(&str, u64); 7] = [
        ("claude-", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
    ];
    table
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(DEFAULT_CONTEXT_WINDOW, |(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_windows() {
        assert_eq!(known_context_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(known_context_window("gpt-4.1-mini"), 1_047_576);
        assert_eq!(known_context_window("mystery"), DEFAULT_CONTEXT_WINDOW);
    }

    #[test]
    fn wire_api_names() {
        assert_eq!(
            serde_json::from_str::<WireApi>("\"openai-chat\"").unwrap(),
            WireApi::OpenAiChat
        );
        assert_eq!(
            serde_json::from_str::<WireApi>("\"anthropic-messages\"").unwrap(),
            WireApi::AnthropicMessages
        );
        assert!(serde_json::from_str::<WireApi>("\"grpc\"").is_err());
    }
}
