//! A sandbox people keep on (issue 30): the model is told the rules, a refusal explains itself at
//! once, the network allowlist lets one host through its proxy and refuses the others, plan mode
//! can still write its temp dir, and writable roots that do not exist yet work. Through the real
//! `elph` binary, on the real kernel, as root and as a user who is not (`sandbox_users`); local
//! HTTP servers on 127.0.0.1 stand in for the internet.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::run_elph;
use super::sandbox_e2e::landlock;
use super::sandbox_users::{Who, elph_as, everyone, output, shell_as, text};

/// A tiny HTTP server on 127.0.0.1 that answers every request with `body` and counts the
/// connections it accepted.
struct LocalSite {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl LocalSite {
    fn start(body: &'static str) -> LocalSite {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|window| window == b"\r\n\r\n") {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        LocalSite { port, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn write_settings(env: &TestEnv, settings: &Value) {
    std::fs::create_dir_all(&env.config_dir).unwrap();
    std::fs::write(env.config_dir.join("settings.json"), settings.to_string()).unwrap();
}

fn has_curl(test: &str) -> bool {
    let found = std::path::Path::new("/usr/bin/curl").exists();
    if !found {
        eprintln!("{test}: skipped: no /usr/bin/curl");
    }
    found
}

#[tokio::test]
async fn the_model_is_told_the_sandbox_rules_in_the_prompt_and_the_shell_tool() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("noted"));
    server.enqueue(FakeReply::text("planned"));
    let build = run_elph(&env, &server, &["hello"]).await;
    assert!(build.status.success(), "{}", text(&build.stderr));
    let plan = run_elph(&env, &server, &["--mode", "plan", "hello"]).await;
    assert!(plan.status.success(), "{}", text(&plan.stderr));
    let requests = server.requests();
    let system = |request: &Value| request["messages"][0]["content"].as_str().unwrap().to_string();
    let shell_description = |request: &Value| {
        request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["function"]["name"] == "shell_exec")
            .map(|tool| tool["function"]["description"].as_str().unwrap().to_string())
            .unwrap()
    };
    let prompt = system(&requests[0]);
    for words in [
        "Sandbox (enforced by the kernel",
        "workspace-write: writable are",
        "$TMPDIR (",
        "Network: off",
        "tell the user what was refused and the setting that would allow it",
    ] {
        assert!(prompt.contains(words), "{words:?} in the system prompt: {prompt}");
    }
    assert!(
        prompt.contains(&env.project.display().to_string()),
        "the project is named writable: {prompt}"
    );
    assert!(
        shell_description(&requests[0]).contains("Network: off"),
        "the shell tool's description carries the block"
    );
    // Plan mode changes the block: read-only everywhere but $TMPDIR.
    let planning = system(&requests[1]);
    assert!(
        planning.contains("plan mode: read-only everywhere except $TMPDIR"),
        "{planning}"
    );
    assert!(shell_description(&requests[1]).contains("plan mode: read-only everywhere except $TMPDIR"));

    // An allowlist is said as such.
    write_settings(
        &env,
        &json!({"sandbox": {"network": "allowlist", "allowedDomains": ["npm"]}}),
    );
    server.enqueue(FakeReply::text("ok"));
    let allow = run_elph(&env, &server, &["hello"]).await;
    assert!(allow.status.success(), "{}", text(&allow.stderr));
    let allowlisted = system(&server.requests()[2]);
    assert!(allowlisted.contains("Network: allowlisted"), "{allowlisted}");
}

#[tokio::test]
async fn a_refused_connect_or_lookup_returns_at_once_with_the_line_that_explains_it() {
    let test = "a_refused_connect_or_lookup_returns_at_once_with_the_line_that_explains_it";
    if !landlock(test) || !has_curl(test) {
        return;
    }
    let site = LocalSite::start("reached");
    for who in everyone(test) {
        let env = TestEnv::new();
        // The C library's answer to a lookup: "not found" (EAI_NONAME, -2), which no package
        // manager retries, rather than "try again" (EAI_AGAIN, -3), which npm retries for 73 s.
        let lookup = if std::path::Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3 -c 'import socket; socket.getaddrinfo(\"registry.npmjs.org\", 443)'; "
        } else {
            ""
        };
        let script = format!(
            "{lookup}curl -sS --max-time 100 http://example.invalid/; echo \"lookup=$?\"; \
             curl -sS --max-time 100 http://127.0.0.1:{port}/",
            port = site.port
        );
        let started = Instant::now();
        let (result, out) = shell_as(&env, who, &script, &[], &[]).await;
        let took = started.elapsed();
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(result.contains("lookup="), "{who:?}: the command ran: {result}");
        if !lookup.is_empty() && elph_process::sandbox::mount_namespaces_available() {
            assert!(
                result.contains("[Errno -2]"),
                "{who:?}: not found, not try again: {result}"
            );
        }
        assert!(
            !result.contains("reached"),
            "{who:?}: the site was reached: {result}"
        );
        assert!(
            result.contains("[sandbox] the network is off")
                && result.contains("--sandbox-network")
                && result.contains("\\\"network\\\": true"),
            "{who:?}: the explaining line: {result}"
        );
        // Not a timing claim: curl was given 100 s per attempt; a refusal must not wait for it.
        assert!(took < Duration::from_secs(60), "{who:?}: it hung ({took:?})");
    }
    assert_eq!(site.connections(), 0, "no connection got out");
}

#[tokio::test]
async fn an_allowlisted_host_is_reached_through_the_proxy_and_another_is_refused() {
    let test = "an_allowlisted_host_is_reached_through_the_proxy_and_another_is_refused";
    if !landlock(test) || !has_curl(test) {
        return;
    }
    if !elph_process::sandbox::landlock_support().filters_tcp() {
        eprintln!("{test}: skipped: the allowlist needs Landlock ABI 4");
        return;
    }
    let allowed = LocalSite::start("hello from the allowed site");
    let other = LocalSite::start("hello from the other site");
    for who in everyone(test) {
        let env = TestEnv::new();
        write_settings(
            &env,
            &json!({"sandbox": {"network": "allowlist", "allowedDomains": ["localhost"],
                                "deniedDomains": ["blocked.localhost"]}}),
        );
        let script = format!(
            "env | grep -i '^no_proxy=' ; echo \"no_proxy=$?\"; \
             curl -sSf http://localhost:{a}/; echo \"forwarded=$?\"; \
             curl -sSf -p http://localhost:{a}/; echo \"tunnel=$?\"; \
             curl -sS --noproxy '*' --max-time 100 http://127.0.0.1:{b}/; echo \"direct=$?\"; \
             curl -sSf http://127.0.0.1:{b}/",
            a = allowed.port,
            b = other.port
        );
        let before = other.connections();
        let (result, out) = shell_as(&env, who, &script, &[], &[]).await;
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(result.contains("no_proxy=1"), "{who:?}: no NO_PROXY: {result}");
        assert!(
            result.contains("hello from the allowed site") && result.contains("forwarded=0"),
            "{who:?}: forwarded through the proxy: {result}"
        );
        assert!(result.contains("tunnel=0"), "{who:?}: CONNECT tunnel: {result}");
        assert!(
            !result.contains("direct=0") && result.contains("direct="),
            "{who:?}: a direct connection is refused: {result}"
        );
        assert!(
            !result.contains("hello from the other site"),
            "{who:?}: the other site was reached: {result}"
        );
        assert_eq!(
            other.connections(),
            before,
            "{who:?}: nothing reached the other site"
        );
        assert!(
            result.contains(
                "[sandbox] the network allowlist refused 127.0.0.1 (not in sandbox.allowedDomains)"
            ),
            "{who:?}: the explaining line names the host and the setting: {result}"
        );
        // The refusal is said to the session too.
        assert!(
            text(&out.stderr).contains("sandbox proxy refused 127.0.0.1"),
            "{who:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn elph_sandbox_explains_the_allowlist_and_runs_through_the_proxy() {
    let test = "elph_sandbox_explains_the_allowlist_and_runs_through_the_proxy";
    if !landlock(test) || !has_curl(test) || !elph_process::sandbox::landlock_support().filters_tcp() {
        return;
    }
    let site = LocalSite::start("sandbox cli reached it");
    let env = TestEnv::new();
    write_settings(
        &env,
        &json!({"sandbox": {"network": "allowlist", "allowedDomains": ["localhost", "github"],
                            "writableRoots": ["~/not-yet/made"]}}),
    );
    let doctor = output({
        let mut command = elph_as(&env, Who::Root);
        command.args(["doctor"]);
        command
    });
    let doctor = text(&doctor.stdout) + &text(&doctor.stderr);
    assert!(doctor.contains("network: allowlist"), "{doctor}");
    assert!(
        doctor.contains("allowed hosts: localhost, github.com (github)"),
        "{doctor}"
    );
    assert!(
        doctor.contains("not-yet/made does not exist yet"),
        "doctor says the root is missing: {doctor}"
    );
    let mut command = elph_as(&env, Who::Root);
    command.args([
        "sandbox",
        "--explain",
        "--",
        "sh",
        "-c",
        &format!(
            "curl -sSf http://localhost:{}/ && touch ~/not-yet/made/written",
            site.port
        ),
    ]);
    let out = output(command);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("sandbox cli reached it"));
    assert!(text(&out.stderr).contains("elph sandbox: allowed hosts: localhost"));
    assert!(
        env.home.join("not-yet/made/written").exists(),
        "the missing root was made and is writable"
    );
}

#[tokio::test]
async fn plan_mode_writes_only_its_temp_dir_and_caches_are_writable_when_opted_in() {
    let test = "plan_mode_writes_only_its_temp_dir_and_caches_are_writable_when_opted_in";
    if !landlock(test) {
        return;
    }
    for who in everyone(test) {
        let env = TestEnv::new();
        let script = "echo scratch > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"; echo \"tmp=$?\"; \
                      echo x > planned.txt; echo \"project=$?\"";
        let (result, out) = shell_as(&env, who, script, &[], &["--mode", "plan"]).await;
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(
            result.contains("scratch") && result.contains("tmp=0"),
            "{who:?}: {result}"
        );
        assert!(!result.contains("project=0"), "{who:?}: {result}");
        assert!(!env.project.join("planned.txt").exists());

        write_settings(&env, &json!({"sandbox": {"writableCaches": ["npm", "pip"]}}));
        let script = "mkdir -p ~/.npm/_cacache && echo c > ~/.npm/_cacache/x; echo \"npm=$?\"; \
                      echo c > ~/.cache/pip/y; echo \"pip=$?\"; echo c > ~/.bashrc; echo \"home=$?\"";
        let (result, out) = shell_as(&env, who, script, &[], &[]).await;
        assert!(out.status.success(), "{who:?}: {}", text(&out.stderr));
        assert!(
            result.contains("npm=0") && result.contains("pip=0"),
            "{who:?}: {result}"
        );
        assert!(
            !result.contains("home=0"),
            "{who:?}: the rest of HOME stays read-only: {result}"
        );
    }
}
