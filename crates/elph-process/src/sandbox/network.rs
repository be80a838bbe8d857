//! The network of a sandboxed process: off, on, or only through the session's proxy.
//!
//! With a proxy ([`ProxyRoute`]), a sandboxed process may open TCP sockets but connect to one port
//! only, the proxy's (Landlock ABI 4 `ConnectTcp` with a single port rule); every other socket
//! family and type, UDP included, is refused by seccomp. Its environment points every HTTP client
//! at the proxy (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, in both cases: curl and git read only
//! the lower-case `http_proxy`), and no `NO_PROXY` exempts loopback names, so a request for
//! `localhost` goes through the proxy's allowlist like any other. The proxy itself (which hosts it
//! lets through) is the front end's; what it decided is written to the route's [`HostJournal`], so
//! a command's result can say which hosts were refused while it ran.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::sync::{Arc, Mutex};

use super::{SandboxMode, SandboxPolicy};

/// How many decisions a journal keeps (the newest).
const JOURNAL_LEN: usize = 256;

/// The way out of the sandbox when the network is off but a proxy is running: its port on
/// 127.0.0.1, and the journal it writes its decisions to.
#[derive(Clone, Debug)]
pub struct ProxyRoute {
    /// The proxy's TCP port on 127.0.0.1.
    pub port: u16,
    /// The hosts it let through or refused.
    pub journal: Arc<HostJournal>,
}

impl PartialEq for ProxyRoute {
    fn eq(&self, other: &Self) -> bool {
        self.port == other.port && Arc::ptr_eq(&self.journal, &other.journal)
    }
}

impl Eq for ProxyRoute {}

impl ProxyRoute {
    /// A route to the proxy listening on `127.0.0.1:port`, with an empty journal.
    pub fn new(port: u16) -> Self {
        ProxyRoute {
            port,
            journal: Arc::new(HostJournal::default()),
        }
    }

    /// The proxy's URL, as the proxy variables give it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

/// One host the proxy let through or refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostDecision {
    /// The host as the client asked for it (after the proxy's checks, lower case).
    pub host: String,
    /// The port it asked for.
    pub port: u16,
    /// Whether the proxy let it through.
    pub allowed: bool,
    /// Why, in words: the matching rule, or what was wrong with the request.
    pub reason: String,
}

/// The proxy's decisions, newest last, numbered from the start of the session.
#[derive(Debug, Default)]
pub struct HostJournal {
    inner: Mutex<Journal>,
}

#[derive(Debug, Default)]
struct Journal {
    /// How many decisions were ever recorded.
    recorded: u64,
    kept: VecDeque<HostDecision>,
}

impl HostJournal {
    /// Records one decision.
    pub fn record(&self, decision: HostDecision) {
        let mut journal = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        journal.recorded += 1;
        if journal.kept.len() == JOURNAL_LEN {
            journal.kept.pop_front();
        }
        journal.kept.push_back(decision);
    }

    /// A mark to ask [`HostJournal::since`] about later.
    pub fn mark(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .recorded
    }

    /// The decisions recorded after `mark` (those still kept).
    pub fn since(&self, mark: u64) -> Vec<HostDecision> {
        let journal = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let newer = usize::try_from(journal.recorded.saturating_sub(mark)).unwrap_or(usize::MAX);
        let skip = journal.kept.len().saturating_sub(newer);
        journal.kept.iter().skip(skip).cloned().collect()
    }
}

/// What a sandboxed process's network is, in one word for the model and for `elph doctor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkAccess {
    /// No network at all.
    Off,
    /// Only through the session's proxy, to the hosts its allowlist names.
    Allowlist,
    /// Every connection (`--sandbox-network`, `full-access`).
    On,
}

impl SandboxPolicy {
    /// Whether and how a process under this policy reaches the network.
    pub fn network_access(&self) -> NetworkAccess {
        if self.network_allowed() {
            NetworkAccess::On
        } else if self.proxy.is_some() {
            NetworkAccess::Allowlist
        } else {
            NetworkAccess::Off
        }
    }

    /// The variables that send a process's HTTP clients through the proxy, when there is one
    /// (and the network is not simply on). Whoever builds the environment also drops the
    /// process's own proxy variables and `NO_PROXY` ([`PROXY_VARIABLES`]).
    pub fn proxy_environment(&self) -> Vec<(OsString, OsString)> {
        let Some(route) = self
            .proxy
            .as_ref()
            .filter(|_| self.network_access() == NetworkAccess::Allowlist)
        else {
            return Vec::new();
        };
        let url = route.url();
        PROXY_VARIABLES
            .iter()
            .filter(|name| !name.eq_ignore_ascii_case("no_proxy"))
            .map(|name| (OsString::from(*name), OsString::from(&url)))
            .collect()
    }

    /// With the network off: the variables that make package managers give up at once instead
    /// of retrying a connection that can never work (npm waits 70 seconds between its retries).
    /// Whoever builds the environment adds each one the command does not already set.
    pub fn offline_environment(&self) -> Vec<(OsString, OsString)> {
        if self.network_access() != NetworkAccess::Off || !self.is_confined() {
            return Vec::new();
        }
        OFFLINE_VARIABLES
            .iter()
            .map(|(name, value)| (OsString::from(*name), OsString::from(*value)))
            .collect()
    }

    /// One line for the model when a command that failed ran into the network's refusal: what
    /// the sandbox refused and which setting allows it. `refused` are the hosts the proxy refused
    /// while the command ran; without any, the command's output must show a network error.
    pub fn explain_network_refusal(&self, output: &str, refused: &[HostDecision]) -> Option<String> {
        if self.mode == SandboxMode::FullAccess {
            return None;
        }
        match self.network_access() {
            NetworkAccess::On => None,
            NetworkAccess::Allowlist => {
                let mut hosts: Vec<String> = Vec::new();
                for decision in refused.iter().filter(|decision| !decision.allowed) {
                    let shown = format!("{} ({})", decision.host, decision.reason);
                    if !hosts.contains(&shown) {
                        hosts.push(shown);
                    }
                }
                if hosts.is_empty() {
                    return looks_like_network_error(output).then(|| {
                        "[sandbox] the network is allowlisted: only HTTP(S) through the proxy in \
                         HTTPS_PROXY/HTTP_PROXY reaches the internet, and direct connections and DNS \
                         lookups are refused. Tell the user; a host is allowed by adding it to \
                         sandbox.allowedDomains in settings.json."
                            .to_string()
                    });
                }
                hosts.truncate(5);
                Some(format!(
                    "[sandbox] the network allowlist refused {}. Tell the user; a host is allowed by \
                     adding it to sandbox.allowedDomains in settings.json (and removing it from \
                     sandbox.deniedDomains).",
                    hosts.join(", ")
                ))
            }
            NetworkAccess::Off => looks_like_network_error(output).then(|| {
                "[sandbox] the network is off: connections and DNS lookups are refused by the \
                 sandbox. Tell the user; --sandbox-network or \"sandbox\": {\"network\": true} in \
                 settings.json turns it on (or \"network\": \"allowlist\" with sandbox.allowedDomains \
                 for a few hosts)."
                    .to_string()
            }),
        }
    }
}

/// Every proxy variable a process may bring from Elph's environment; the policy's own replace
/// them, and `NO_PROXY` is never passed (a `localhost` exemption would bypass the allowlist).
pub const PROXY_VARIABLES: [&str; 8] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// No retries for npm (and pnpm, which reads its settings), pip and cargo.
const OFFLINE_VARIABLES: [(&str, &str); 3] = [
    ("npm_config_fetch_retries", "0"),
    ("PIP_RETRIES", "0"),
    ("CARGO_NET_RETRY", "0"),
];

/// Whether a command's output reads like a refused connection or name lookup. The words of the
/// C library, curl, Python, Node, git, pip, npm and cargo.
fn looks_like_network_error(output: &str) -> bool {
    const WORDS: [&str; 16] = [
        "Could not resolve host",
        "Couldn't resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
        "No address associated with hostname",
        "nodename nor servname",
        "EAI_AGAIN",
        "ENOTFOUND",
        "getaddrinfo",
        "Network is unreachable",
        "ENETUNREACH",
        "Failed to connect",
        "Couldn't connect to server",
        "Could not connect to server",
        "failed to establish a new connection",
        "NewConnectionError",
    ];
    let lower = output.to_ascii_lowercase();
    WORDS
        .iter()
        .any(|words| lower.contains(&words.to_ascii_lowercase()))
        || ((lower.contains("operation not permitted") || lower.contains("permission denied"))
            && (lower.contains("socket") || lower.contains("connect")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_journal_gives_what_came_after_a_mark() {
        let journal = HostJournal::default();
        let decision = |host: &str| HostDecision {
            host: host.into(),
            port: 443,
            allowed: false,
            reason: "not allowed".into(),
        };
        journal.record(decision("a"));
        let mark = journal.mark();
        journal.record(decision("b"));
        journal.record(decision("c"));
        let hosts: Vec<String> = journal.since(mark).into_iter().map(|d| d.host).collect();
        assert_eq!(hosts, ["b", "c"]);
        for n in 0..2 * JOURNAL_LEN {
            journal.record(decision(&n.to_string()));
        }
        assert_eq!(journal.since(mark).len(), JOURNAL_LEN);
        assert!(journal.since(journal.mark()).is_empty());
    }

    #[test]
    fn a_network_error_is_explained_by_the_setting_that_allows_it() {
        let mut policy = SandboxPolicy::workspace(Path::new("/p"));
        let curl = "curl: (6) Could not resolve host: example.com";
        let off = policy.explain_network_refusal(curl, &[]).unwrap();
        assert!(off.contains("--sandbox-network"), "{off}");
        assert!(
            policy
                .explain_network_refusal("error: file not found", &[])
                .is_none()
        );
        policy.proxy = Some(ProxyRoute::new(3128));
        let refused = HostDecision {
            host: "evil.example".into(),
            port: 443,
            allowed: false,
            reason: "not in sandbox.allowedDomains".into(),
        };
        let line = policy
            .explain_network_refusal("curl: (56) CONNECT tunnel failed, response 403", &[refused])
            .unwrap();
        assert!(
            line.contains("evil.example (not in sandbox.allowedDomains)"),
            "{line}"
        );
        assert!(line.contains("sandbox.allowedDomains"), "{line}");
        policy.network = true;
        assert!(policy.explain_network_refusal(curl, &[]).is_none());
    }

    #[test]
    fn the_proxy_variables_come_in_both_cases_without_no_proxy() {
        let mut policy = SandboxPolicy::workspace(Path::new("/p"));
        assert!(policy.proxy_environment().is_empty());
        policy.proxy = Some(ProxyRoute::new(4000));
        let env = policy.proxy_environment();
        let names: Vec<_> = env
            .iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"http_proxy".to_string()) && names.contains(&"HTTPS_PROXY".to_string()));
        assert!(!names.iter().any(|name| name.eq_ignore_ascii_case("no_proxy")));
        assert!(env.iter().all(|(_, value)| value == "http://127.0.0.1:4000"));
        assert!(policy.offline_environment().is_empty(), "not off: allowlisted");
        policy.proxy = None;
        assert!(
            policy
                .offline_environment()
                .contains(&("npm_config_fetch_retries".into(), "0".into()))
        );
    }
}
