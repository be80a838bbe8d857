//! Which of Elph's environment variables a shell command gets (`shellEnvironment` in
//! settings.json).
//!
//! Elph's own environment holds the provider keys it needs; a command the model runs must not see
//! them, or `env` would send them to the provider in the next request and into the session store.
//! The policy is applied in a fixed order, each step working on the result of the one before:
//!
//! 1. `inherit`: `all` of Elph's variables (the default), only the `core` ones (PATH, HOME, …), or
//!    `none`;
//! 2. the default excludes: every name containing one of [`SECRET_MARKERS`] or having one of
//!    [`SECRET_WORDS`] as a `_`-separated word (case-insensitive), every value that is a URL with a
//!    user name or password in it (`postgres://u:pw@db/x`, a proxy with credentials, a Sentry DSN),
//!    and every provider's key variable (built in or custom, whatever its name);
//! 3. the user's `exclude` patterns;
//! 4. the user's `include` patterns: variables of Elph's environment that match come back, even if
//!    step 2 or 3 removed them (the way to hand a command one token on purpose);
//! 5. the user's `set` values, last.
//!
//! The CA bundle and proxy variables ([`CA_AND_PROXY_VARS`]) belong to the small sets too: `inherit:
//! core` keeps them, and hooks and MCP servers get them ([`ca_and_proxy_environment`]), so a tool
//! that downloads behind a corporate proxy or a private CA works there as it does in the user's
//! shell. A proxy value with a user name or password is still a secret (step 2) and stays behind.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Step 1: which of Elph's variables are the starting point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// Every variable of Elph's environment.
    #[default]
    All,
    /// Only the variables a shell needs to work (see `CORE_VARS`).
    Core,
    /// No variable; only what `set` adds.
    None,
}

/// The variables `inherit: core` keeps.
pub(crate) const CORE_VARS: [&str; 14] = [
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG", "LC_ALL",
    "LC_CTYPE", "TERM", "TZ",
];

/// The variables that point tools at a private CA or a proxy: passed to hooks, MCP servers and
/// shell commands (also under `inherit: core`), except a value that is a URL with credentials.
pub const CA_AND_PROXY_VARS: [&str; 14] = [
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

/// The CA and proxy variables of `parent` that are set, without those whose value carries a
/// password (`http://user:pw@proxy:3128`): the environment hooks and MCP servers get them from.
pub fn ca_and_proxy_environment(parent: &dyn Fn(&str) -> Option<OsString>) -> Vec<(OsString, OsString)> {
    CA_AND_PROXY_VARS
        .iter()
        .filter_map(|name| parent(name).map(|value| (OsString::from(name), value)))
        .filter(|(_, value)| !url_with_userinfo(&value.to_string_lossy()))
        .collect()
}

/// Name fragments that mark a variable as a secret wherever they appear (case-insensitive).
/// `PWD` marks `MYSQL_PWD` and `DB_PWD`, never `PWD` and `OLDPWD` themselves.
pub const SECRET_MARKERS: [&str; 10] = [
    "KEY",
    "SECRET",
    "TOKEN",
    "PASS",
    "CREDENTIAL",
    "PWD",
    "JWT",
    "DSN",
    "WEBHOOK",
    "COOKIE",
];

/// Words that mark a variable as a secret when they are a whole `_`-separated word of its name
/// (`GH_PAT`, `ACME_AUTH`, `OP_SESSION_X`), so that `PATH`, `GIT_AUTHOR_NAME` and the like pass.
/// A word starting with `AUTH` counts too (`AUTHORIZATION`), except `AUTHOR` and `AUTHORS`.
pub const SECRET_WORDS: [&str; 3] = ["PAT", "AUTH", "SESSION"];

/// Names that look like secrets and are not: the ssh-agent's socket path, which the sandbox's
/// socket rules decide about (`sandbox.allowUnixSockets`).
const NOT_SECRETS: [&str; 1] = ["SSH_AUTH_SOCK"];

/// Why a variable of Elph's environment is, or is not, in a command's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Passed as it is.
    Passed,
    /// Not part of what `inherit` starts from.
    NotInherited,
    /// Removed by a default exclude; the reason in words.
    Secret(String),
    /// Removed by the user's `exclude` pattern.
    Excluded(String),
    /// Removed before, brought back by the user's `include` pattern.
    Included(String),
    /// Replaced by the user's `set`.
    Set,
}

impl Verdict {
    /// Whether the variable reaches the command.
    pub fn passes(&self) -> bool {
        matches!(self, Verdict::Passed | Verdict::Included(_) | Verdict::Set)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Passed => f.write_str("passed"),
            Verdict::NotInherited => f.write_str("not inherited (shellEnvironment.inherit)"),
            Verdict::Secret(reason) => f.write_str(reason),
            Verdict::Excluded(pattern) => write!(f, "your exclude pattern {pattern:?}"),
            Verdict::Included(pattern) => write!(f, "passed: your include pattern {pattern:?}"),
            Verdict::Set => f.write_str("set by shellEnvironment.set"),
        }
    }
}

/// A shell environment policy. [`ShellEnvPolicy::default`] is `inherit: all` with the default
/// excludes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellEnvPolicy {
    /// Where the environment starts from, before excludes and `set`.
    pub inherit: Inherit,
    /// The providers' key variables (`OPENAI_API_KEY`, a custom provider's `apiKeyEnv`, …):
    /// excluded whatever their names.
    pub provider_key_vars: Vec<String>,
    /// The user's exclude patterns (`*` and `?`, case-insensitive).
    pub exclude: Vec<String>,
    /// The user's include patterns: matching variables of Elph's environment are kept.
    pub include: Vec<String>,
    /// Set last.
    pub set: BTreeMap<String, String>,
}

impl ShellEnvPolicy {
    /// The environment a command gets, from `vars` (Elph's own), sorted by name.
    pub fn apply<I>(&self, vars: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let all: BTreeMap<OsString, OsString> = vars.into_iter().collect();
        let mut kept: BTreeMap<OsString, OsString> = all
            .iter()
            .filter(|(name, value)| self.verdict(name, value).passes())
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        for (name, value) in &self.set {
            kept.insert(name.into(), value.into());
        }
        kept.into_iter().collect()
    }

    /// Why each of `vars` (Elph's own) is or is not passed, and what `set` adds, by name; values
    /// are never part of the answer (for `elph doctor`).
    pub fn explain<I>(&self, vars: I) -> Vec<(String, Verdict)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let mut verdicts: BTreeMap<String, Verdict> = vars
            .into_iter()
            .map(|(name, value)| {
                let verdict = self.verdict(&name, &value);
                (name.to_string_lossy().into_owned(), verdict)
            })
            .collect();
        for name in self.set.keys() {
            verdicts.insert(name.clone(), Verdict::Set);
        }
        verdicts.into_iter().collect()
    }

    /// The environment a command would get from the current process's.
    pub fn apply_to_current(&self) -> Vec<(OsString, OsString)> {
        self.apply(std::env::vars_os())
    }

    /// Steps 1 to 4 for one variable of Elph's environment.
    fn verdict(&self, name: &OsStr, value: &OsStr) -> Verdict {
        if let Some(pattern) = self.include.iter().find(|pattern| matches(pattern, name)) {
            let removed =
                !self.inherits(name) || self.secret_reason(name, value).is_some() || self.user_excludes(name);
            return if removed {
                Verdict::Included(pattern.clone())
            } else {
                Verdict::Passed
            };
        }
        if !self.inherits(name) {
            return Verdict::NotInherited;
        }
        if let Some(reason) = self.secret_reason(name, value) {
            return Verdict::Secret(reason);
        }
        if let Some(pattern) = self.exclude.iter().find(|pattern| matches(pattern, name)) {
            return Verdict::Excluded(pattern.clone());
        }
        Verdict::Passed
    }

    fn inherits(&self, name: &OsStr) -> bool {
        match self.inherit {
            Inherit::All => true,
            Inherit::Core => CORE_VARS
                .iter()
                .chain(&CA_AND_PROXY_VARS)
                .any(|core| OsStr::new(core) == name),
            Inherit::None => false,
        }
    }

    /// Why a default exclude (step 2) removes `name=value`, in words.
    fn secret_reason(&self, name: &OsStr, value: &OsStr) -> Option<String> {
        if self.provider_key_vars.iter().any(|var| OsStr::new(var) == name) {
            return Some("a provider's key variable".into());
        }
        let upper = name.to_string_lossy().to_uppercase();
        if NOT_SECRETS.contains(&upper.as_str()) {
            return None;
        }
        if let Some(marker) = SECRET_MARKERS.iter().find(|marker| {
            upper.contains(*marker) && !(**marker == "PWD" && (upper == "PWD" || upper == "OLDPWD"))
        }) {
            return Some(format!("its name contains {marker}"));
        }
        let words = upper.split(|c: char| !c.is_ascii_alphanumeric());
        for word in words {
            let secret = SECRET_WORDS.contains(&word)
                || (word.starts_with("AUTH") && word != "AUTHOR" && word != "AUTHORS");
            if secret {
                return Some(format!("its name has the word {word}"));
            }
        }
        if url_with_userinfo(&value.to_string_lossy()) {
            return Some("its value is a URL with a user name or password".into());
        }
        None
    }

    fn user_excludes(&self, name: &OsStr) -> bool {
        self.exclude.iter().any(|pattern| matches(pattern, name))
    }
}

/// Whether `value` holds a URL whose authority has user information (`scheme://user:pw@host`,
/// `https://key@sentry.example/1`): such a URL carries its credentials with it.
fn url_with_userinfo(value: &str) -> bool {
    value.split_whitespace().any(|word| {
        let Some((scheme, rest)) = word.split_once("://") else {
            return false;
        };
        let scheme_ok = !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        scheme_ok && authority.contains('@')
    })
}

/// A glob over a variable name: `*` any run, `?` one character, case-insensitive.
fn matches(pattern: &str, name: &OsStr) -> bool {
    let pattern: Vec<char> = pattern.to_uppercase().chars().collect();
    let name: Vec<char> = name.to_string_lossy().to_uppercase().chars().collect();
    glob(&pattern, &name)
}

fn glob(pattern: &[char], name: &[char]) -> bool {
    // Iterative wildcard matching with one backtrack point: linear in practice, no recursion.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some((p, n));
            p += 1;
        } else if let Some((star_p, star_n)) = star {
            p = star_p + 1;
            n = star_n + 1;
            star = Some((star_p, star_n + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    fn names(vars: &[(OsString, OsString)]) -> Vec<String> {
        vars.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn default_excludes_every_secret_marker_case_insensitively_and_provider_keys() {
        let policy = ShellEnvPolicy {
            provider_key_vars: vec!["LOCAL_LLM".into()],
            ..ShellEnvPolicy::default()
        };
        let out = policy.apply(env(&[
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "k"),
            ("aws_secret_access_key", "s"),
            ("GITHUB_TOKEN", "t"),
            ("DB_Password", "p"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "c"),
            ("LOCAL_LLM", "custom provider key with an innocent name"),
            ("EDITOR", "vi"),
        ]));
        assert_eq!(names(&out), ["EDITOR", "PATH"]);
    }

    #[test]
    fn the_wider_patterns_and_urls_with_credentials_are_secrets_and_ordinary_names_pass() {
        let policy = ShellEnvPolicy::default();
        let out = policy.apply(env(&[
            ("DATABASE_URL", "postgres://u:pw@db.internal/app"),
            ("DB_PASS", "p"),
            ("MYSQL_PWD", "p"),
            ("GH_PAT", "p"),
            ("CI_JOB_JWT", "j"),
            (
                "SLACK_WEBHOOK_URL",
                "https://hooks.slack.example/services/T0/B0/x",
            ),
            ("SENTRY_DSN", "https://abc@o1.ingest.sentry.example/2"),
            ("HTTPS_PROXY", "http://user:pw@proxy:3128"),
            ("OP_SESSION_my", "s"),
            ("DOCKER_AUTH_CONFIG", "{}"),
            ("ACME_AUTH", "a"),
            ("SESSION_COOKIE", "c"),
            ("PATH", "/bin"),
            ("MANPATH", "/man"),
            ("PWD", "/p"),
            ("OLDPWD", "/q"),
            ("GIT_AUTHOR_NAME", "me"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("REPO", "git@github.com:o/r.git"),
        ]));
        assert_eq!(
            names(&out),
            [
                "GIT_AUTHOR_NAME",
                "HTTP_PROXY",
                "MANPATH",
                "OLDPWD",
                "PATH",
                "PWD",
                "REPO"
            ]
        );
    }

    #[test]
    fn explain_gives_each_name_its_reason_and_never_a_value() {
        let policy = ShellEnvPolicy {
            provider_key_vars: vec!["ACME_LLM".into()],
            exclude: vec!["AWS_*".into()],
            include: vec!["NPM_TOKEN".into()],
            set: [("CI".to_string(), "1".to_string())].into(),
            ..ShellEnvPolicy::default()
        };
        let explained = policy.explain(env(&[
            ("ACME_LLM", "k"),
            ("GH_PAT", "k"),
            ("DATABASE_URL", "mysql://root:hunter2@db/x"),
            ("AWS_REGION", "eu"),
            ("NPM_TOKEN", "t"),
            ("EDITOR", "vi"),
        ]));
        let words: Vec<String> = explained
            .iter()
            .map(|(name, verdict)| format!("{name}: {verdict}"))
            .collect();
        assert_eq!(
            words,
            [
                "ACME_LLM: a provider's key variable",
                "AWS_REGION: your exclude pattern \"AWS_*\"",
                "CI: set by shellEnvironment.set",
                "DATABASE_URL: its value is a URL with a user name or password",
                "EDITOR: passed",
                "GH_PAT: its name has the word PAT",
                "NPM_TOKEN: passed: your include pattern \"NPM_TOKEN\"",
            ]
        );
        assert!(!words.concat().contains("hunter2"));
    }

    #[test]
    fn inherit_core_none_then_exclude_include_and_set() {
        let vars = env(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("EDITOR", "vi"),
            ("AWS_REGION", "eu"),
            ("NPM_TOKEN", "t"),
        ]);
        let core = ShellEnvPolicy {
            inherit: Inherit::Core,
            ..ShellEnvPolicy::default()
        };
        assert_eq!(names(&core.apply(vars.clone())), ["HOME", "PATH"]);
        let none = ShellEnvPolicy {
            inherit: Inherit::None,
            set: [("A".to_string(), "1".to_string())].into(),
            ..ShellEnvPolicy::default()
        };
        assert_eq!(none.apply(vars.clone()), env(&[("A", "1")]));
        let user = ShellEnvPolicy {
            exclude: vec!["aws_*".into(), "ED?TOR".into()],
            include: vec!["npm_token".into()],
            set: [("PATH".to_string(), "/opt/bin".to_string())].into(),
            ..ShellEnvPolicy::default()
        };
        assert_eq!(
            user.apply(vars),
            env(&[("HOME", "/h"), ("NPM_TOKEN", "t"), ("PATH", "/opt/bin")])
        );
    }

    #[test]
    fn ca_and_proxy_variables_pass_under_core_and_to_hooks_but_not_a_proxy_with_a_password() {
        let vars = env(&[
            ("PATH", "/bin"),
            ("SSL_CERT_FILE", "/etc/corp-ca.pem"),
            ("NODE_EXTRA_CA_CERTS", "/etc/corp-ca.pem"),
            ("https_proxy", "http://proxy.corp:3128"),
            ("HTTPS_PROXY", "http://me:hunter2@proxy.corp:3128"),
            ("NO_PROXY", "localhost,.corp"),
            ("EDITOR", "vi"),
        ]);
        let core = ShellEnvPolicy {
            inherit: Inherit::Core,
            ..ShellEnvPolicy::default()
        };
        assert_eq!(
            names(&core.apply(vars.clone())),
            [
                "NODE_EXTRA_CA_CERTS",
                "NO_PROXY",
                "PATH",
                "SSL_CERT_FILE",
                "https_proxy"
            ]
        );
        let lookup = |name: &str| {
            vars.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        };
        let hooks = ca_and_proxy_environment(&lookup);
        assert_eq!(
            names(&hooks),
            ["SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "NO_PROXY", "https_proxy"]
        );
        assert!(!format!("{hooks:?}").contains("hunter2"));
    }

    #[test]
    fn globs() {
        let yes = |p: &str, n: &str| matches(p, OsStr::new(n));
        assert!(yes("*", "ANY"));
        assert!(yes("a*b*c", "AxxBxxC"));
        assert!(yes("*_KEY", "MY_KEY"));
        assert!(!yes("*_KEY", "MY_KEYS"));
        assert!(yes("?", "A"));
        assert!(!yes("?", "AB"));
        assert!(!yes("AB", "A"));
    }
}
