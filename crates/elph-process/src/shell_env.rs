//! Which of Elph's environment variables a shell command gets (`shellEnvironment` in
//! settings.json).
//!
//! Elph's own environment holds the provider keys it needs; a command the model runs must not see
//! them, or `env` would send them to the provider in the next request and into the session store.
//! The policy is applied in a fixed order, each step working on the result of the one before:
//!
//! 1. `inherit`: `all` of Elph's variables (the default), only the `core` ones (PATH, HOME, …), or
//!    `none`;
//! 2. the default excludes: every name containing KEY, SECRET, TOKEN, PASSWORD or CREDENTIAL
//!    (case-insensitive), and every provider's key variable (built in or custom, whatever its name);
//! 3. the user's `exclude` patterns;
//! 4. the user's `include` patterns: variables of Elph's environment that match come back, even if
//!    step 2 or 3 removed them (the way to hand a command one token on purpose);
//! 5. the user's `set` values, last.

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

/// Name fragments that mark a variable as a secret (matched case-insensitively).
pub(crate) const SECRET_MARKERS: [&str; 5] = ["KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"];

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
            .filter(|(name, _)| match self.inherit {
                Inherit::All => true,
                Inherit::Core => CORE_VARS.iter().any(|core| OsStr::new(core) == name.as_os_str()),
                Inherit::None => false,
            })
            .filter(|(name, _)| !self.is_secret(name) && !self.user_excludes(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        for (name, value) in &all {
            if self.include.iter().any(|pattern| matches(pattern, name)) {
                kept.insert(name.clone(), value.clone());
            }
        }
        for (name, value) in &self.set {
            kept.insert(name.into(), value.into());
        }
        kept.into_iter().collect()
    }

    /// The environment a command would get from the current process's.
    pub fn apply_to_current(&self) -> Vec<(OsString, OsString)> {
        self.apply(std::env::vars_os())
    }

    /// Whether a default exclude (step 2) removes `name`.
    pub(crate) fn is_secret(&self, name: &OsStr) -> bool {
        let upper = name.to_string_lossy().to_uppercase();
        SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
            || self.provider_key_vars.iter().any(|var| OsStr::new(var) == name)
    }

    fn user_excludes(&self, name: &OsStr) -> bool {
        self.exclude.iter().any(|pattern| matches(pattern, name))
    }
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
