//! Which hosts the session's proxy lets through: `sandbox.allowedDomains` and
//! `sandbox.deniedDomains`, each an exact name, `*.example.com` (every name below it, not
//! `example.com` itself), or a preset (`npm`, `pypi`, `crates`, `github`) that stands for its
//! registry's hosts. A denied host is refused even when an allowed pattern matches it.
//!
//! Only canonical names are matched: lower-case letters, digits and hyphens in dot-separated
//! labels, or an IPv4 address in dotted-quad form, or a bracketed IPv6 address. Anything else
//! (a NUL byte, a percent sign, a trailing dot, `0x7f.1`, `2130706433`, an IDN not in punycode)
//! is refused before matching, so no spelling of a name can slip past a rule written for another.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The presets and the hosts each stands for.
pub(crate) const PRESETS: [(&str, &[&str]); 4] = [
    (
        "npm",
        &["registry.npmjs.org", "*.npmjs.org", "registry.yarnpkg.com"],
    ),
    ("pypi", &["pypi.org", "files.pythonhosted.org"]),
    (
        "crates",
        &[
            "crates.io",
            "index.crates.io",
            "static.crates.io",
            "static.rust-lang.org",
        ],
    ),
    (
        "github",
        &["github.com", "*.github.com", "*.githubusercontent.com", "ghcr.io"],
    ),
];

/// One pattern of an allow or deny list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern {
    Exact(String),
    /// `*.example.com`: the suffix `.example.com`.
    Below(String),
}

impl Pattern {
    fn matches(&self, host: &str) -> bool {
        match self {
            Pattern::Exact(name) => host == name,
            Pattern::Below(suffix) => host.len() > suffix.len() && host.ends_with(suffix.as_str()),
        }
    }
}

/// A bad entry of `allowedDomains` or `deniedDomains`.
#[derive(Debug, thiserror::Error)]
#[error("{list} entry {entry:?}: {reason}")]
pub(crate) struct DomainError {
    list: &'static str,
    entry: String,
    reason: String,
}

/// The allow and deny lists, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DomainPolicy {
    allowed: Vec<(Pattern, String)>,
    denied: Vec<(Pattern, String)>,
}

/// Whether the proxy lets a host through, and why (the rule, in words for the log and the model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) allowed: bool,
    pub(crate) reason: String,
}

impl DomainPolicy {
    /// Parses the lists; the first bad entry is the error.
    pub(crate) fn parse(allowed: &[String], denied: &[String]) -> Result<DomainPolicy, DomainError> {
        Ok(DomainPolicy {
            allowed: parse_list("sandbox.allowedDomains", allowed)?,
            denied: parse_list("sandbox.deniedDomains", denied)?,
        })
    }

    /// The allowed patterns as written after presets are expanded (for doctor and the prompt).
    pub(crate) fn allowed_patterns(&self) -> Vec<String> {
        self.allowed.iter().map(|(_, shown)| shown.clone()).collect()
    }

    /// The denied patterns, likewise.
    pub(crate) fn denied_patterns(&self) -> Vec<String> {
        self.denied.iter().map(|(_, shown)| shown.clone()).collect()
    }

    /// The lists in words, for `elph doctor` and `elph sandbox --explain`.
    pub(crate) fn describe(&self) -> Vec<String> {
        let list = |patterns: Vec<String>| {
            if patterns.is_empty() {
                "none".to_string()
            } else {
                patterns.join(", ")
            }
        };
        vec![
            format!("allowed hosts: {}", list(self.allowed_patterns())),
            format!(
                "denied hosts (win over allowed): {}",
                list(self.denied_patterns())
            ),
        ]
    }

    /// Whether `host` (as a client asked for it) may be reached.
    pub(crate) fn judge(&self, host: &str) -> Verdict {
        let host = match canonical_host(host) {
            Ok(host) => host,
            Err(reason) => {
                return Verdict {
                    allowed: false,
                    reason,
                };
            }
        };
        if let Some((_, shown)) = self.denied.iter().find(|(pattern, _)| pattern.matches(&host)) {
            return Verdict {
                allowed: false,
                reason: format!("denied by {shown} in sandbox.deniedDomains"),
            };
        }
        match self.allowed.iter().find(|(pattern, _)| pattern.matches(&host)) {
            Some((_, shown)) => Verdict {
                allowed: true,
                reason: format!("allowed by {shown} in sandbox.allowedDomains"),
            },
            None => Verdict {
                allowed: false,
                reason: "not in sandbox.allowedDomains".into(),
            },
        }
    }
}

fn parse_list(list: &'static str, entries: &[String]) -> Result<Vec<(Pattern, String)>, DomainError> {
    let mut patterns = Vec::new();
    for entry in entries {
        let error = |reason: String| DomainError {
            list,
            entry: entry.clone(),
            reason,
        };
        if let Some((_, hosts)) = PRESETS.iter().find(|(name, _)| name == entry) {
            for host in *hosts {
                patterns.push((pattern(host).map_err(error)?, format!("{host} ({entry})")));
            }
            continue;
        }
        patterns.push((pattern(entry).map_err(error)?, entry.clone()));
    }
    Ok(patterns)
}

fn pattern(entry: &str) -> Result<Pattern, String> {
    if let Some(rest) = entry.strip_prefix("*.") {
        let name = canonical_host(rest)?;
        if name.parse::<Ipv4Addr>().is_ok() || name.starts_with('[') {
            return Err("a wildcard goes before a name, not an address".into());
        }
        return Ok(Pattern::Below(format!(".{name}")));
    }
    if entry.contains('*') {
        return Err("a wildcard is only allowed as the first label: *.example.com".into());
    }
    let name = canonical_host(entry)?;
    if name != entry {
        return Err(format!("write it as {name}"));
    }
    Ok(Pattern::Exact(name))
}

/// `host` in its canonical form (ASCII letters lowered), or why it is not a host name the proxy
/// accepts.
pub(crate) fn canonical_host(host: &str) -> Result<String, String> {
    if host.contains('\0') {
        return Err("the host name has a NUL byte".into());
    }
    if host.is_empty() || host.len() > 253 {
        return Err("the host name is empty or longer than 253 bytes".into());
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
        let address: Ipv6Addr = inner
            .parse()
            .map_err(|_| format!("{host:?} is not an IPv6 address"))?;
        let canonical = format!("[{address}]");
        return if canonical.eq_ignore_ascii_case(host) {
            Ok(canonical)
        } else {
            Err(format!("{host:?} is not in canonical form ({canonical})"))
        };
    }
    let lower = host.to_ascii_lowercase();
    for label in lower.split('.') {
        let valid = !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-');
        if !valid {
            return Err(format!(
                "{host:?} is not a canonical host name (letters, digits and hyphens in dot-separated \
                 labels, no trailing dot)"
            ));
        }
    }
    // A last label of digits is an address: only the dotted quad, never `127.1` or `2130706433`.
    let numeric = lower
        .rsplit('.')
        .next()
        .is_some_and(|label| label.bytes().all(|byte| byte.is_ascii_digit()));
    if numeric {
        let address: Ipv4Addr = lower
            .parse()
            .map_err(|_| format!("{host:?} is not a canonical IPv4 address (write all four parts)"))?;
        if address.to_string() != lower {
            return Err(format!("{host:?} is not a canonical IPv4 address ({address})"));
        }
    }
    Ok(lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

    #[test]
    fn deny_wins_and_wildcards_cover_only_names_below() {
        let policy = DomainPolicy::parse(
            &strings(&["*.example.com", "localhost", "npm"]),
            &strings(&["evil.example.com"]),
        )
        .unwrap();
        assert!(policy.judge("api.example.com").allowed);
        assert!(policy.judge("API.Example.com").allowed, "case does not matter");
        assert!(!policy.judge("example.com").allowed, "*. is below the name only");
        assert!(!policy.judge("notexample.com").allowed);
        let denied = policy.judge("evil.example.com");
        assert!(
            !denied.allowed && denied.reason.contains("deniedDomains"),
            "{denied:?}"
        );
        assert!(policy.judge("localhost").allowed);
        assert!(policy.judge("registry.npmjs.org").allowed, "the npm preset");
        assert!(!policy.judge("127.0.0.1").allowed);
    }

    #[test]
    fn non_canonical_names_are_refused() {
        let policy = DomainPolicy::parse(&strings(&["localhost", "127.0.0.1"]), &[]).unwrap();
        for bad in [
            "localhost\0.evil.com",
            "localhost.",
            "127.1",
            "2130706433",
            "0x7f.0.0.1",
            "127.000.000.001",
            "local%68ost",
            "bücher.de",
            "-a.com",
            "",
        ] {
            let verdict = policy.judge(bad);
            assert!(!verdict.allowed, "{bad:?} was let through");
        }
        assert!(policy.judge("127.0.0.1").allowed);
        assert!(!policy.judge("[::1]").allowed);
        assert!(canonical_host("[::1]").is_ok());
        assert!(canonical_host("[0:0::1]").is_err());
    }

    #[test]
    fn bad_entries_are_errors_that_name_them() {
        for bad in ["exa*mple.com", "*.1.2.3.4", "Example.com", "a..b", "*"] {
            let error = DomainPolicy::parse(&strings(&[bad]), &[])
                .unwrap_err()
                .to_string();
            assert!(error.contains("sandbox.allowedDomains"), "{bad}: {error}");
        }
        let github = DomainPolicy::parse(&strings(&["github"]), &[]).unwrap();
        assert!(github.judge("codeload.github.com").allowed);
        assert!(
            github
                .allowed_patterns()
                .contains(&"github.com (github)".to_string())
        );
    }
}
