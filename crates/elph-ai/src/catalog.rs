//! Provider catalogs: custom providers from `CONFIG_DIR/providers/*.json`, each reusing one of the
//! two HTTP adapters, and the context windows of well-known models.
//!
//! ```json
//! {"name": "local", "api": "openai-chat", "baseUrl": "http://127.0.0.1:8080/v1",
//!  "apiKeyEnv": "LOCAL_KEY", "models": [{"id": "qwen3", "contextWindow": 32768}],
//!  "headers": {"X-Title": "Elph", "X-Gateway-Key": "${GATEWAY_KEY}"},
//!  "limits": {"idleTimeout": 300}}
//! ```
//!
//! Files are read one by one, like hook files: one that cannot be read, parsed or used is a
//! [`CatalogProblem`] for that file alone, and every other provider keeps working.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::http::ExtraHeader;
use crate::limits::StreamLimits;
use crate::provider::{DEFAULT_CONTEXT_WINDOW, ProviderError};

/// The longest timeout a provider file may set: a day.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;

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
    /// Headers sent with every request; `${NAME}` in a value is replaced by that environment
    /// variable (a secret: never logged, never shown).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Timeouts and size caps; each one left out keeps its default.
    #[serde(default)]
    pub limits: LimitsDef,
    /// The file it was read from.
    #[serde(skip)]
    pub path: PathBuf,
}

/// A model a provider file names.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelDef {
    /// The model id.
    pub id: String,
    /// Its context window in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// A provider file's `limits`: seconds for the timeouts, bytes for the caps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LimitsDef {
    /// [`StreamLimits::connect_timeout`], in seconds.
    pub connect_timeout: Option<f64>,
    /// [`StreamLimits::response_timeout`], in seconds.
    pub response_timeout: Option<f64>,
    /// [`StreamLimits::idle_timeout`], in seconds.
    pub idle_timeout: Option<f64>,
    /// [`StreamLimits::max_event_bytes`].
    pub max_event_bytes: Option<u64>,
    /// [`StreamLimits::max_response_bytes`].
    pub max_response_bytes: Option<u64>,
}

impl LimitsDef {
    fn resolve(&self) -> Result<StreamLimits, String> {
        let defaults = StreamLimits::default();
        let timeout = |field: &str, value: Option<f64>, default: Duration| match value {
            None => Ok(default),
            Some(secs) if secs > 0.0 && secs <= MAX_TIMEOUT_SECS => Duration::try_from_secs_f64(secs)
                .map_err(|_| format!("\"limits\".\"{field}\" is not a number of seconds")),
            Some(_) => Err(format!(
                "\"limits\".\"{field}\" must be more than 0 and at most {MAX_TIMEOUT_SECS} seconds"
            )),
        };
        let size = |field: &str, value: Option<u64>, default: u64| match value {
            None => Ok(default),
            Some(0) => Err(format!("\"limits\".\"{field}\" must be positive")),
            Some(bytes) => Ok(bytes),
        };
        let max_event_bytes = size(
            "maxEventBytes",
            self.max_event_bytes,
            defaults.max_event_bytes as u64,
        )?;
        Ok(StreamLimits {
            connect_timeout: timeout("connectTimeout", self.connect_timeout, defaults.connect_timeout)?,
            response_timeout: timeout(
                "responseTimeout",
                self.response_timeout,
                defaults.response_timeout,
            )?,
            idle_timeout: timeout("idleTimeout", self.idle_timeout, defaults.idle_timeout)?,
            max_event_bytes: usize::try_from(max_event_bytes).unwrap_or(usize::MAX),
            max_response_bytes: size(
                "maxResponseBytes",
                self.max_response_bytes,
                defaults.max_response_bytes,
            )?,
        })
    }
}

/// A piece of a header value: text as written, or `${NAME}`.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// Splits a header value at its `${NAME}` references; `NAME` is letters, digits and `_`, not
/// starting with a digit. A `$` not followed by `{` is text.
fn pieces(value: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        let (text, tail) = rest.split_at(at);
        if !text.is_empty() {
            out.push(Piece::Text(text));
        }
        let tail = tail.get(2..).unwrap_or_default();
        let end = tail
            .find('}')
            .ok_or_else(|| "\"${\" without its closing \"}\"".to_string())?;
        let (name, after) = tail.split_at(end);
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!(
                "${{{name}}} is not a variable name (letters, digits and _, not starting with a digit)"
            ));
        }
        out.push(Piece::Var(name));
        rest = after.get(1..).unwrap_or_default();
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// The variables `${NAME}` names in the values of a `headers` object (lenient: for files that are
/// otherwise broken).
fn header_vars<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    values
        .filter_map(|value| pieces(value).ok())
        .flatten()
        .filter_map(|piece| match piece {
            Piece::Var(name) => Some(name.to_string()),
            Piece::Text(_) => None,
        })
        .collect()
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

    /// The environment variables whose values this provider sends: `apiKeyEnv` and every
    /// `${NAME}` in `headers`. Shell commands never see them.
    pub fn secret_vars(&self) -> Vec<String> {
        let mut vars: Vec<String> = self.api_key_env.iter().cloned().collect();
        vars.extend(header_vars(self.headers.values().map(String::as_str)));
        vars
    }

    /// The file's timeouts and caps, defaults filled in.
    pub fn stream_limits(&self) -> StreamLimits {
        // Checked when the file was read; the defaults are only a fallback for a def built by hand.
        self.limits.resolve().unwrap_or_default()
    }

    /// The headers with their `${NAME}` references filled in from `env`. A variable that is unset
    /// is an error naming the header and the variable.
    pub fn resolve_headers(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<ExtraHeader>, ProviderError> {
        let error = |message: String| ProviderError::Catalog {
            path: self.path.clone(),
            message,
        };
        let mut out = Vec::with_capacity(self.headers.len());
        for (name, template) in &self.headers {
            let mut value = String::new();
            let mut secret = false;
            for piece in pieces(template).map_err(|e| error(format!("header {name:?}: {e}")))? {
                match piece {
                    Piece::Text(text) => value.push_str(text),
                    Piece::Var(var) => {
                        let set = env(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                            error(format!(
                                "header {name:?} uses ${{{var}}}, which is not set; export it or change the header"
                            ))
                        })?;
                        value.push_str(&set);
                        secret = true;
                    }
                }
            }
            out.push(ExtraHeader::new(name, value, secret));
        }
        Ok(out)
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
        if crate::builtin::is_builtin(&self.name) {
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
        for (name, value) in &self.headers {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(format!("\"headers\": {name:?} is not a valid header name"));
            }
            for piece in pieces(value).map_err(|e| format!("\"headers\".{name:?}: {e}"))? {
                if let Piece::Text(text) = piece
                    && reqwest::header::HeaderValue::from_str(text).is_err()
                {
                    return Err(format!(
                        "\"headers\".{name:?}: the value has characters not allowed in a header"
                    ));
                }
            }
        }
        self.limits.resolve()?;
        Ok(())
    }
}

/// A provider file that was skipped, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct CatalogProblem {
    /// The file (or, when the folder cannot be listed, the folder).
    pub path: PathBuf,
    /// The provider name the file gives, when that much could be read; else the file's stem.
    pub name: Option<String>,
    /// What is wrong, for people.
    pub message: String,
    /// `apiKeyEnv` and the `${NAME}`s of `headers`, as far as the file could be read: they stay
    /// secret from shell commands even though the file is not used.
    pub secret_vars: Vec<String>,
}

impl CatalogProblem {
    /// The error `elph run` reports when this provider is asked for.
    pub fn error(&self) -> ProviderError {
        ProviderError::Catalog {
            path: self.path.clone(),
            message: self.message.clone(),
        }
    }
}

/// All custom providers found under a config dir, and the files that were skipped.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    providers: Vec<ProviderDef>,
    problems: Vec<CatalogProblem>,
}

impl Catalog {
    /// Reads `config_dir/providers/*.json` (in file-name order). A missing folder is an empty
    /// catalog; each file that cannot be read, parsed or used is a problem of its own.
    pub fn load(config_dir: &Path) -> Self {
        Self::load_dir(&providers_dir(config_dir))
    }

    /// Reads every `*.json` file of `dir`.
    pub fn load_dir(dir: &Path) -> Self {
        let mut catalog = Catalog::default();
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return catalog,
            Err(e) => {
                catalog.problems.push(CatalogProblem {
                    path: dir.to_path_buf(),
                    name: None,
                    message: format!("cannot list: {e}"),
                    secret_vars: Vec::new(),
                });
                return catalog;
            }
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            // Only folders are skipped: a FIFO or a device named *.json gets a clear error from the read.
            .filter(|path| path.extension().is_some_and(|ext| ext == "json") && !path.is_dir())
            .collect();
        paths.sort();
        for path in paths {
            match load_file(&path) {
                Ok(def) => {
                    if let Some(first) = catalog.get(&def.name) {
                        let message = format!(
                            "provider {:?} is already defined in {}; this file is not used",
                            def.name,
                            first.path.display()
                        );
                        catalog.problems.push(CatalogProblem {
                            secret_vars: def.secret_vars(),
                            name: Some(def.name),
                            path,
                            message,
                        });
                    } else {
                        catalog.providers.push(def);
                    }
                }
                Err(problem) => catalog.problems.push(problem),
            }
        }
        catalog
    }

    /// The provider defined under this name, if any.
    pub fn get(&self, name: &str) -> Option<&ProviderDef> {
        self.providers.iter().find(|p| p.name == name)
    }

    /// Every provider defined, in file-name order.
    pub fn providers(&self) -> &[ProviderDef] {
        &self.providers
    }

    /// Every file that was skipped, in file-name order.
    pub fn problems(&self) -> &[CatalogProblem] {
        &self.problems
    }

    /// The skipped file that would have defined `name`: one that says so, else one named so.
    pub fn problem_for(&self, name: &str) -> Option<&CatalogProblem> {
        let stem_is = |p: &CatalogProblem| p.path.file_stem().is_some_and(|stem| stem == name);
        self.problems
            .iter()
            .find(|p| p.name.as_deref() == Some(name))
            .or_else(|| self.problems.iter().find(|p| stem_is(p)))
    }

    /// Every environment variable any provider file sends as a secret, from the files in use and
    /// from those skipped alike.
    pub fn secret_vars(&self) -> Vec<String> {
        let mut vars: Vec<String> = self
            .providers
            .iter()
            .flat_map(ProviderDef::secret_vars)
            .chain(self.problems.iter().flat_map(|p| p.secret_vars.iter().cloned()))
            .collect();
        vars.sort();
        vars.dedup();
        vars
    }
}

/// `config_dir/providers`.
pub(crate) fn providers_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("providers")
}

fn load_file(path: &Path) -> Result<ProviderDef, CatalogProblem> {
    let stem = path.file_stem().map(|stem| stem.to_string_lossy().into_owned());
    let problem = |message: String, value: Option<&Value>| {
        let object = value.and_then(Value::as_object);
        let name = object
            .and_then(|o| o.get("name"))
            .and_then(Value::as_str)
            .map(String::from)
            .or_else(|| stem.clone());
        let mut secret_vars: Vec<String> = object
            .and_then(|o| o.get("apiKeyEnv"))
            .and_then(Value::as_str)
            .filter(|v| !v.trim().is_empty())
            .map(String::from)
            .into_iter()
            .collect();
        if let Some(headers) = object.and_then(|o| o.get("headers")).and_then(Value::as_object) {
            secret_vars.extend(header_vars(headers.values().filter_map(Value::as_str)));
        }
        CatalogProblem {
            path: path.to_path_buf(),
            name,
            message,
            secret_vars,
        }
    };
    // Bounded and non-blocking: a catalog is a config file like any other.
    let bytes = match elph_config::read_config(path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(problem("cannot read: the file disappeared".into(), None)),
        Err(err) => return Err(problem(err.reason(), None)),
    };
    let value = elph_config::parse_json(&bytes).map_err(|e| problem(e.message, None))?;
    let mut def: ProviderDef =
        ProviderDef::deserialize(&value).map_err(|e| problem(e.to_string(), Some(&value)))?;
    def.path = path.to_path_buf();
    def.validate().map_err(|e| problem(e, Some(&value)))?;
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
    fn header_values_are_split_at_their_variables() {
        assert_eq!(
            pieces("Bearer ${KEY}-x$y").unwrap(),
            vec![Piece::Text("Bearer "), Piece::Var("KEY"), Piece::Text("-x$y")]
        );
        assert!(pieces("${KEY").is_err());
        assert!(pieces("${1A}").is_err());
        assert!(pieces("${}").is_err());
        assert_eq!(
            header_vars(["${A}${B_2}", "plain", "${bad"].into_iter()),
            ["A", "B_2"]
        );
    }

    #[test]
    fn limits_are_checked_and_filled_in() {
        let limits = LimitsDef {
            idle_timeout: Some(0.5),
            ..LimitsDef::default()
        };
        let resolved = limits.resolve().unwrap();
        assert_eq!(resolved.idle_timeout, Duration::from_millis(500));
        assert_eq!(resolved.connect_timeout, StreamLimits::default().connect_timeout);
        for bad in [0.0, -1.0, 1e300, f64::NAN] {
            let limits = LimitsDef {
                response_timeout: Some(bad),
                ..LimitsDef::default()
            };
            assert!(limits.resolve().unwrap_err().contains("responseTimeout"), "{bad}");
        }
        let limits = LimitsDef {
            max_event_bytes: Some(0),
            ..LimitsDef::default()
        };
        assert!(limits.resolve().unwrap_err().contains("maxEventBytes"));
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
