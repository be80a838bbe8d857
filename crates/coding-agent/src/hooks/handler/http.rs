//! A url hook: the payload POSTed as JSON, the response body read as the outcome.
//!
//! Where a hook may post is checked before anything is sent: a project hook needs https (plain
//! http only to a loopback host) and, when settings.json has `hooks.allowedUrls`, a URL it allows.
//! Redirects are never followed, so a server cannot move a payload past those checks.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::{Answer, UrlHandler};
use crate::hooks::discovery::HookScope;
use crate::mcp::expand::{ExpandError, expand};

/// Whether a header value takes only variables of `allowed` (`${NAME}`, `${NAME:-default}`).
pub(crate) fn check_header_value(value: &str, allowed: &[String]) -> Result<(), String> {
    let named = std::cell::RefCell::new(Vec::new());
    let lookup = |name: &str| {
        named.borrow_mut().push(name.to_string());
        Some("x".to_string())
    };
    expand(value, &lookup).map_err(|error| error.to_string())?;
    let named = named.into_inner();
    match named.iter().find(|name| !allowed.contains(name)) {
        Some(name) => Err(format!(
            "${{{name}}} is not in the hook's allowedEnvVars; add \"{name}\" there to send it"
        )),
        None => Ok(()),
    }
}

/// Why `url` must not be posted to by a hook of `scope`; `None` when it may.
pub(crate) fn refusal(url: &str, scope: HookScope, allowed_urls: Option<&[String]>) -> Option<String> {
    let parsed = match reqwest::Url::parse(url) {
        Ok(parsed) => parsed,
        Err(error) => return Some(format!("its url {url} is not a valid URL ({error})")),
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return Some(format!("its url {url} is not http:// or https://"));
    }
    if scope == HookScope::Home {
        return None;
    }
    if parsed.scheme() == "http" && !is_loopback(&parsed) {
        return Some(format!(
            "its url {url} is plain http to another machine; a project hook posts over https, or \
             over http only to this machine (127.0.0.1, ::1, localhost)"
        ));
    }
    match allowed_urls {
        Some(allowed) if !allowed.iter().any(|pattern| url_matches(pattern, url)) => Some(format!(
            "its url {url} is not in hooks.allowedUrls of settings.json ({}); add it there to let \
             project hooks post to it",
            if allowed.is_empty() {
                "an empty list".to_string()
            } else {
                allowed.join(", ")
            }
        )),
        _ => None,
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost") || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An allowedUrls entry: the exact URL, or a prefix ending in `*`.
pub(crate) fn url_matches(pattern: &str, url: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => url.starts_with(prefix),
        None => url == pattern,
    }
}

/// The client url hooks post with: the platform's certificates, no redirects.
pub(crate) fn client() -> Result<reqwest::Client, String> {
    elph_ai::http_client_builder()
        .map_err(|error| format!("TLS set-up failed: {error}"))?
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| format!("HTTP client set-up failed: {error}"))
}

/// Posts `body` to the hook's URL within `timeout` and reads at most `cap` bytes of the answer.
/// `lookup` reads Elph's environment for the headers' variables.
pub(crate) async fn post(
    client: &reqwest::Client,
    handler: &UrlHandler,
    lookup: &(dyn Fn(&str) -> Option<String> + Sync),
    body: Vec<u8>,
    timeout: Duration,
    cap: usize,
) -> Answer {
    let mut request = client
        .post(&handler.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .timeout(timeout)
        .body(body);
    for (name, value) in &handler.headers {
        if let Err(error) = check_header_value(value, &handler.allowed_env_vars) {
            return Answer::refused(format!("header {name}: {error}"));
        }
        let value = match expand(value, lookup) {
            Ok(value) => value,
            Err(ExpandError::Unset(variable)) => {
                return Answer::refused(format!(
                    "header {name} takes ${{{variable}}}, which is not set in Elph's environment"
                ));
            }
            Err(error) => return Answer::refused(format!("header {name}: {error}")),
        };
        request = request.header(name.as_str(), value);
    }
    let started = Instant::now();
    let timed_out = || format!("timed out after {} ms (timeoutMs)", timeout.as_millis());
    let response = match request.send().await {
        Ok(response) => response,
        Err(error) if error.is_timeout() => return Answer::failed(timed_out(), started.elapsed()),
        Err(error) => {
            return Answer::failed(
                format!("could not post to {}: {}", handler.url, error_chain(&error)),
                started.elapsed(),
            );
        }
    };
    let status = response.status();
    let mut stream = response.bytes_stream();
    let mut answer = Vec::new();
    let deadline = started + timeout;
    loop {
        let chunk = match tokio::time::timeout_at(deadline.into(), stream.next()).await {
            Err(_) => return Answer::failed(timed_out(), started.elapsed()),
            Ok(None) => break,
            Ok(Some(Err(error))) if error.is_timeout() => {
                return Answer::failed(timed_out(), started.elapsed());
            }
            Ok(Some(Err(error))) => {
                return Answer::failed(
                    format!(
                        "the answer from {} broke off: {}",
                        handler.url,
                        error_chain(&error)
                    ),
                    started.elapsed(),
                );
            }
            Ok(Some(Ok(chunk))) => chunk,
        };
        answer.extend_from_slice(&chunk);
        if answer.len() > cap {
            return Answer::failed(
                format!("its answer passed {cap} bytes (maxOutputBytes); ignored"),
                started.elapsed(),
            );
        }
    }
    if status.is_redirection() {
        return Answer::failed(
            format!(
                "{} answered HTTP {status}; redirects are not followed (post to the final URL)",
                handler.url
            ),
            started.elapsed(),
        );
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&answer);
        let text: String = text.chars().take(300).collect();
        return Answer::failed(
            format!("{} answered HTTP {status}: {}", handler.url, text.trim()),
            started.elapsed(),
        );
    }
    Answer::body(answer, started.elapsed())
}

/// The error and its sources, which say what reqwest's top line leaves out (refused, DNS, TLS).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_hooks_post_over_https_or_to_this_machine() {
        let project = |url| refusal(url, HookScope::Project, None);
        assert_eq!(project("https://hooks.example.com/check"), None);
        assert_eq!(project("http://127.0.0.1:8080/check"), None);
        assert_eq!(project("http://127.9.9.9/check"), None);
        assert_eq!(project("http://[::1]:9/check"), None);
        assert_eq!(project("http://localhost:9/check"), None);
        for url in [
            "http://hooks.example.com/check",
            "http://10.0.0.1/check",
            "http://127.0.0.1.example.com/check",
            "http://localhost.example.com/",
        ] {
            assert!(project(url).unwrap().contains("plain http"), "{url}");
        }
        assert_eq!(refusal("http://hooks.example.com/", HookScope::Home, None), None);
        assert!(refusal("ftp://x/", HookScope::Home, None).is_some());
    }

    #[test]
    fn allowed_urls_limit_project_hooks_only() {
        let allowed = [
            "https://hooks.example.com/*".to_string(),
            "http://127.0.0.1:9/exact".to_string(),
        ];
        let project = |url| refusal(url, HookScope::Project, Some(&allowed));
        assert_eq!(project("https://hooks.example.com/a/b"), None);
        assert_eq!(project("http://127.0.0.1:9/exact"), None);
        let refused = project("http://127.0.0.1:9/exact/more").unwrap();
        assert!(refused.contains("not in hooks.allowedUrls"), "{refused}");
        assert!(project("https://hooks.example.com.evil.example/").is_some());
        assert!(
            refusal(
                "https://hooks.example.com.evil.example/",
                HookScope::Home,
                Some(&allowed)
            )
            .is_none()
        );
        assert!(
            refusal("https://a.example/", HookScope::Project, Some(&[]))
                .unwrap()
                .contains("an empty list")
        );
    }

    #[test]
    fn headers_take_only_the_variables_they_are_allowed() {
        let allowed = ["HOOK_TOKEN".to_string()];
        assert_eq!(check_header_value("Bearer ${HOOK_TOKEN}", &allowed), Ok(()));
        assert_eq!(check_header_value("plain", &[]), Ok(()));
        let error = check_header_value("Bearer ${OPENAI_API_KEY}", &allowed).unwrap_err();
        assert!(
            error.contains("OPENAI_API_KEY") && error.contains("allowedEnvVars"),
            "{error}"
        );
        assert!(check_header_value("${", &allowed).is_err());
    }
}
