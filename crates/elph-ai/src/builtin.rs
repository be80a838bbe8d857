//! The built-in providers, in one table: each row is what a provider file would say (name, wire
//! format, base URL, key variable), plus the variable that moves its base URL. A row becomes a
//! [`ProviderDef`] and is built by the same code as a catalog entry, so a built-in provider and a
//! custom one cannot drift apart; and the shell's excluded key variables are read from the table,
//! so a row added here is kept from shell commands without a second list to remember.

use std::path::PathBuf;

use crate::catalog::{Catalog, LimitsDef, ProviderDef, WireApi};

/// One built-in provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltinProvider {
    /// The name used in `PROVIDER/MODEL`.
    pub name: &'static str,
    /// The environment variable holding its key.
    pub api_key_env: &'static str,
    /// The environment variable that replaces its base URL (a proxy, a compatible server).
    pub base_url_env: &'static str,
    /// Where requests go when that variable is unset.
    pub default_base_url: &'static str,
    /// The wire format it speaks.
    pub api: WireApi,
}

/// Every built-in provider that speaks HTTP (`scripted`, offline, is not a row: it has no key and
/// no URL).
pub const BUILTIN_PROVIDERS: &[BuiltinProvider] = &[
    BuiltinProvider {
        name: "openai",
        api_key_env: "OPENAI_API_KEY",
        base_url_env: "OPENAI_BASE_URL",
        default_base_url: "https://api.openai.com/v1",
        api: WireApi::OpenAiChat,
    },
    BuiltinProvider {
        name: "anthropic",
        api_key_env: "ANTHROPIC_API_KEY",
        base_url_env: "ANTHROPIC_BASE_URL",
        default_base_url: "https://api.anthropic.com",
        api: WireApi::AnthropicMessages,
    },
];

/// The offline provider that plays a script; built in, but not a row of the table.
pub(crate) const SCRIPTED: &str = "scripted";

/// Whether a provider file may not use `name`: it is built in.
pub(crate) fn is_builtin(name: &str) -> bool {
    name == SCRIPTED || BUILTIN_PROVIDERS.iter().any(|row| row.name == name)
}

impl BuiltinProvider {
    /// The row as a catalog entry, its base URL taken from `env` when set there.
    pub fn def(&self, env: &dyn Fn(&str) -> Option<String>) -> ProviderDef {
        let base_url = env(self.base_url_env)
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| self.default_base_url.to_string());
        ProviderDef {
            name: self.name.to_string(),
            api: self.api,
            base_url,
            api_key_env: Some(self.api_key_env.to_string()),
            models: Vec::new(),
            headers: Default::default(),
            limits: LimitsDef::default(),
            path: PathBuf::new(),
        }
    }
}

/// The row named `name` in `table`.
pub(crate) fn find<'a>(table: &'a [BuiltinProvider], name: &str) -> Option<&'a BuiltinProvider> {
    table.iter().find(|row| row.name == name)
}

/// Every variable whose value a provider sends as a secret, from the built-in `table` and the
/// custom `catalog` (its skipped files included): the shell must never see them. Sorted, no
/// duplicates.
pub fn provider_secret_vars(table: &[BuiltinProvider], catalog: &Catalog) -> Vec<String> {
    let mut vars: Vec<String> = table
        .iter()
        .map(|row| row.api_key_env.to_string())
        .chain(catalog.secret_vars())
        .collect();
    vars.sort();
    vars.dedup();
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_becomes_a_catalog_entry_with_its_url_from_the_environment() {
        let openai = find(BUILTIN_PROVIDERS, "openai").unwrap();
        let def = openai.def(&|_| None);
        assert_eq!(def.base_url, "https://api.openai.com/v1");
        assert_eq!(def.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(def.api, WireApi::OpenAiChat);
        let moved = openai.def(&|name| (name == "OPENAI_BASE_URL").then(|| "http://127.0.0.1:9/v1".into()));
        assert_eq!(moved.base_url, "http://127.0.0.1:9/v1");
        let blank = openai.def(&|_| Some(" ".into()));
        assert_eq!(blank.base_url, "https://api.openai.com/v1");
    }

    #[test]
    fn every_row_and_scripted_are_reserved_names() {
        for row in BUILTIN_PROVIDERS {
            assert!(is_builtin(row.name));
        }
        assert!(is_builtin("scripted"));
        assert!(!is_builtin("local"));
    }

    #[test]
    fn secret_vars_come_from_the_table_and_the_catalog() {
        let mut table = BUILTIN_PROVIDERS.to_vec();
        table.push(BuiltinProvider {
            name: "acme",
            api_key_env: "ACME_API_KEY",
            base_url_env: "ACME_BASE_URL",
            default_base_url: "https://api.acme.test",
            api: WireApi::OpenAiChat,
        });
        let vars = provider_secret_vars(&table, &Catalog::default());
        assert_eq!(vars, ["ACME_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"]);
    }
}
