//! The providers section of `elph doctor`: the built-in providers, each custom provider file of
//! CONFIG_DIR/providers/ with what it defines, and each file skipped with why. Only reads the files
//! and asks whether the key variables are set; it never contacts a server.

use std::io::{self, Write};
use std::path::PathBuf;

use serde::Serialize;

use super::checks::{Finding, Level};
use crate::paths::Paths;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProvidersReport {
    /// CONFIG_DIR/providers.
    pub dir: PathBuf,
    pub providers: Vec<ProviderReport>,
    /// Files skipped because they cannot be read, parsed or used.
    pub problems: Vec<ProviderFileProblem>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProviderReport {
    pub name: String,
    /// `openai-chat` or `anthropic-messages`.
    pub api: elph_ai::WireApi,
    /// Where it is defined; `null` for a built-in provider.
    pub file: Option<PathBuf>,
    /// `null` for a built-in provider, whose URL is the default or `*_BASE_URL`.
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    /// Whether that variable is set (and not empty); `null` when there is none.
    pub api_key_set: Option<bool>,
    /// The names of the extra headers sent (never their values).
    pub headers: Vec<String>,
    pub finding: Finding,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProviderFileProblem {
    pub file: PathBuf,
    /// The provider it would define, when that much could be read.
    pub name: Option<String>,
    pub finding: Finding,
}

pub(crate) fn gather(paths: &Paths, env: &dyn Fn(&str) -> Option<String>) -> ProvidersReport {
    let is_set = |var: &str| env(var).is_some_and(|v| !v.trim().is_empty());
    let key_finding = |var: &str, set: bool| {
        if set {
            Finding::new(Level::Ok, format!("{var} is set"))
        } else {
            Finding::new(
                Level::Info,
                format!("{var} is not set; export it to use this provider"),
            )
        }
    };
    let mut providers: Vec<ProviderReport> = elph_ai::BUILTIN_PROVIDERS
        .iter()
        .map(|row| (row.name, row.api, row.api_key_env))
        .map(|(name, api, var)| ProviderReport {
            name: name.into(),
            api,
            file: None,
            base_url: None,
            api_key_env: Some(var.into()),
            api_key_set: Some(is_set(var)),
            headers: Vec::new(),
            finding: key_finding(var, is_set(var)),
        })
        .collect();
    let catalog = elph_ai::Catalog::load(&paths.config_dir);
    for def in catalog.providers() {
        let unset_header_vars: Vec<String> = def
            .secret_vars()
            .into_iter()
            .filter(|var| Some(var) != def.api_key_env.as_ref() && !is_set(var))
            .collect();
        let finding = if !unset_header_vars.is_empty() {
            Finding::new(
                Level::Info,
                format!(
                    "its headers use {}, not set; export them to use this provider",
                    unset_header_vars.join(", ")
                ),
            )
        } else if let Some(var) = &def.api_key_env {
            key_finding(var, is_set(var))
        } else {
            Finding::new(Level::Ok, "needs no key")
        };
        providers.push(ProviderReport {
            name: def.name.clone(),
            api: def.api,
            file: Some(def.path.clone()),
            base_url: Some(def.base_url.clone()),
            api_key_env: def.api_key_env.clone(),
            api_key_set: def.api_key_env.as_deref().map(is_set),
            headers: def.headers.keys().cloned().collect(),
            finding,
        });
    }
    let problems = catalog
        .problems()
        .iter()
        .map(|problem| ProviderFileProblem {
            file: problem.path.clone(),
            name: problem.name.clone(),
            finding: Finding::new(Level::Warning, format!("skipped: {}", problem.message)).fix(format!(
                "fix {} (see \"Custom providers\" in docs/cli.md); the other providers work meanwhile",
                crate::diagnostics::shell_quote(&problem.path)
            )),
        })
        .collect();
    ProvidersReport {
        dir: paths.config_dir.join("providers"),
        providers,
        problems,
    }
}

pub(crate) fn render(out: &mut impl Write, report: &ProvidersReport) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "Providers: {} ({} file(s) skipped)",
        report.providers.len(),
        report.problems.len()
    )?;
    for provider in &report.providers {
        let from = match &provider.file {
            Some(file) => file.display().to_string(),
            None => "built in".into(),
        };
        writeln!(
            out,
            "  {} {} ({from}): {}",
            provider.finding.level.mark(),
            provider.name,
            provider.finding.message
        )?;
        if !provider.headers.is_empty() {
            writeln!(out, "    headers: {}", provider.headers.join(", "))?;
        }
    }
    for problem in &report.problems {
        writeln!(
            out,
            "  {} {}: {}",
            problem.finding.level.mark(),
            problem.file.display(),
            problem.finding.message
        )?;
        if let Some(fix) = &problem.finding.fix {
            writeln!(out, "    → {fix}")?;
        }
    }
    Ok(())
}
