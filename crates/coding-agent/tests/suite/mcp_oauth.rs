//! OAuth for HTTP MCP servers end to end: the real `elph` binary, and a real OAuth-protected MCP
//! server (`tests/fixtures/oauth_mcp_server.py`: an MCP endpoint and its authorization server, which
//! check bearer tokens, registered redirect URIs, PKCE S256 and the resource indicator). The test
//! plays the browser: it opens the authorization URL `elph mcp login` prints and follows the
//! redirect back to Elph's loopback listener.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::run_e2e::{elph, run_elph};

/// The OAuth-protected MCP server, killed when dropped.
struct OAuthServer {
    child: Child,
    base: String,
    log: PathBuf,
}

impl OAuthServer {
    fn start(env: &TestEnv, label: &str, flags: &[&str]) -> OAuthServer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/oauth_mcp_server.py");
        let port_file = env.evidence(&format!("{label}-port"));
        let log = env.evidence(&format!("{label}-events.jsonl"));
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(&port_file)
            .arg(&log)
            .args(flags)
            .stdin(Stdio::null())
            .spawn()
            .expect("start python3 with the OAuth MCP server");
        // A loaded machine (the suite runs beside other builds) can take long to start Python.
        let deadline = Instant::now() + Duration::from_secs(120);
        let port = loop {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                break port;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the OAuth MCP server exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the OAuth MCP server listens within 120 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        OAuthServer {
            child,
            base: format!("http://127.0.0.1:{}", port.trim()),
            log,
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn events(&self, kind: &str) -> Vec<Value> {
        json_lines(&self.log)
            .into_iter()
            .filter(|event| event["event"] == kind)
            .collect()
    }

    /// The bearer tokens of the MCP requests it accepted, in order.
    fn accepted_tokens(&self) -> Vec<String> {
        self.events("mcp")
            .iter()
            .map(|event| event["token"].as_str().unwrap().to_string())
            .collect()
    }

    async fn revoke_all(&self) {
        let response = http_client()
            .post(format!("{}/test/revoke", self.base))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_client() -> reqwest::Client {
    elph_ai::http_client_builder()
        .unwrap()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn write_home_mcp(env: &TestEnv, name: &str, url: &str) {
    std::fs::write(
        env.config_dir.join("mcp.json"),
        json!({"servers": {name: {"url": url}}}).to_string(),
    )
    .expect("write mcp.json");
}

fn credentials_file(env: &TestEnv) -> PathBuf {
    env.config_dir.join("mcp-credentials.json")
}

fn stored(env: &TestEnv) -> Value {
    serde_json::from_slice(&std::fs::read(credentials_file(env)).expect("the credentials file exists"))
        .expect("the credentials file is JSON")
}

fn stored_access_token(env: &TestEnv, name: &str) -> String {
    stored(env)["servers"][name]["credentials"]["token_response"]["access_token"]
        .as_str()
        .expect("an access token is stored")
        .to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `elph mcp login NAME` under `umask 000`, with the test as the browser: it waits for the printed
/// authorization URL, opens it and follows the redirects (to Elph's loopback listener). Returns
/// Elph's output and the page the browser ended on.
async fn login(env: &TestEnv, name: &str) -> (Output, String) {
    login_with(env, name, false, &[]).await
}

/// [`login`]; with `forge`, another program of the machine first sends Elph's listener a code of
/// its own (with a state it had to guess), which must be refused without ending the login.
async fn login_with(env: &TestEnv, name: &str, forge: bool, flags: &[&str]) -> (Output, String) {
    let mut command = env.command(Path::new("/bin/sh"));
    command
        .args(["-c", "umask 000; exec \"$0\" mcp login \"$@\""])
        .arg(elph())
        .arg(name)
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start elph mcp login");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let stderr = child.stderr.take().unwrap();
    let (url_tx, url_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let trimmed = line.trim();
            if trimmed.starts_with("http://127.0.0.1") && trimmed.contains("/authorize?") {
                let _ = url_tx.send(trimmed.to_string());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let url = tokio::task::spawn_blocking(move || url_rx.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap();
    let page = match url {
        Ok(url) => {
            if forge {
                let redirect = reqwest::Url::parse(&url)
                    .unwrap()
                    .query_pairs()
                    .find(|(key, _)| key == "redirect_uri")
                    .map(|(_, value)| value.into_owned())
                    .unwrap();
                let forged = http_client()
                    .get(format!("{redirect}?code=code-forged&state=guessed"))
                    .send()
                    .await
                    .expect("the forged request is answered");
                assert_eq!(forged.status().as_u16(), 400, "a foreign state is refused");
            }
            let response = http_client()
                .get(&url)
                .send()
                .await
                .expect("the browser's requests");
            response.text().await.unwrap_or_default()
        }
        Err(_) => {
            // No address to open: end the login instead of waiting out its 5 minutes.
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            String::new()
        }
    };
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("elph mcp login ended within 60 s")
    .unwrap()
    .unwrap();
    let stderr = reader.join().unwrap();
    (
        Output {
            status: output.status,
            stdout: output.stdout,
            stderr: stderr.into_bytes(),
        },
        page,
    )
}

/// A run whose model waits for the MCP servers (they start in the background), calls
/// `mcp_NAME__whoami`, then answers "done"; returns the output and what the tool gave the model.
async fn run_whoami(env: &TestEnv, name: &str) -> (Output, Vec<String>) {
    let model = FakeModelServer::start(Wire::OpenAi).await;
    model.enqueue(super::mcp::wait_for_servers());
    model.enqueue(FakeReply::tool_call(format!("mcp_{name}__whoami"), json!({})));
    model.enqueue(FakeReply::text("done"));
    let output = run_elph(env, &model, &["who am i"]).await;
    let requests = model.requests();
    let tool_results = requests
        .get(2)
        .and_then(|request| request["messages"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|message| message["role"] == "tool")
        // The wait's answer.
        .skip(1)
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect();
    (output, tool_results)
}

#[tokio::test]
async fn mcp_login_registers_uses_pkce_refuses_a_forged_callback_and_stores_an_owner_only_token() {
    let env = TestEnv::new();
    let server = OAuthServer::start(&env, "oauth", &[]);
    write_home_mcp(&env, "remote", &server.url());

    let (output, page) = login_with(&env, "remote", true, &[]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("Logged in to MCP server 'remote'"),
        "{}",
        text(&output.stdout)
    );
    assert!(page.contains("logged in to MCP server 'remote'"), "{page}");

    // Discovery went through the resource's metadata, named by its 401 challenge.
    assert!(
        !server.events("unauthorized").is_empty(),
        "the server was asked first"
    );
    let resource = server.events("resource_metadata");
    assert_eq!(resource[0]["path"], "/.well-known/oauth-protected-resource/mcp");
    assert!(!server.events("server_metadata").is_empty());
    // Dynamic registration as a public client with a loopback redirect.
    let register = server.events("register");
    assert_eq!(register.len(), 1, "{register:?}");
    assert_eq!(register[0]["client_name"], "Elph");
    assert_eq!(register[0]["token_endpoint_auth_method"], "none");
    let redirect = register[0]["redirect_uris"][0].as_str().unwrap();
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    // PKCE S256 and the resource indicator, checked by the server at the token endpoint.
    let authorize = server.events("authorize");
    assert_eq!(authorize[0]["code_challenge_method"], "S256");
    assert_eq!(authorize[0]["resource"], server.url());
    // One exchange: the real code's (the forged one never reached the token endpoint).
    let token = server.events("token");
    assert_eq!(
        token,
        [
            json!({"event": "token", "grant": "authorization_code", "pkce_ok": true, "ok": true, "resource": server.url()})
        ]
    );

    // Stored for this server and URL, in a file only the user can read, even under umask 000.
    let file = credentials_file(&env);
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o600);
    let contents = stored(&env);
    assert_eq!(contents["servers"]["remote"]["url"], server.url());
    assert_eq!(
        contents["servers"]["remote"]["credentials"]["client_id"],
        register[0]["client_id"]
    );
    let access = stored_access_token(&env, "remote");
    assert!(access.starts_with("at-"), "{access}");
    // The token itself is not printed.
    assert!(!text(&output.stderr).contains(&access));
    assert!(!text(&output.stdout).contains(&access));
}

/// The `OAuth:` line doctor prints under server `name`.
fn doctor_oauth_line(env: &TestEnv, name: &str) -> String {
    let output = env
        .command(&super::run_e2e::elph())
        .arg("doctor")
        .output()
        .unwrap();
    let stdout = text(&output.stdout);
    let mut lines = stdout
        .lines()
        .skip_while(|line| !line.trim_start().starts_with(&format!("- {name} ")));
    lines
        .find(|line| line.trim_start().starts_with("OAuth:"))
        .map(|line| line.trim().to_string())
        .unwrap_or_else(|| panic!("no OAuth line for {name} in:\n{stdout}"))
}

#[tokio::test]
async fn a_logged_in_server_is_called_with_its_token_and_the_token_is_refreshed_after_expiry() {
    let env = TestEnv::new();
    let server = OAuthServer::start(&env, "oauth", &[]);
    write_home_mcp(&env, "remote", &server.url());
    let (output, _) = login(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let first = stored_access_token(&env, "remote");
    let client_id = stored(&env)["servers"]["remote"]["credentials"]["client_id"]
        .as_str()
        .unwrap()
        .to_string();

    let (output, results) = run_whoami(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(results, [format!("you are {client_id}")]);
    let tokens = server.accepted_tokens();
    assert!(!tokens.is_empty());
    assert!(tokens.iter().all(|token| *token == first), "{tokens:?}");
    assert!(!text(&output.stderr).contains(&first), "the token is not printed");

    // Doctor says a login is stored and still valid.
    let doctor = doctor_oauth_line(&env, "remote");
    assert!(doctor.starts_with("OAuth: login stored, valid for"), "{doctor}");

    // The stored token is past its lifetime: Elph refreshes it before using it.
    let mut contents = stored(&env);
    contents["servers"]["remote"]["credentials"]["token_received_at"] = json!(1);
    std::fs::write(credentials_file(&env), contents.to_string()).unwrap();
    let doctor = doctor_oauth_line(&env, "remote");
    assert_eq!(
        doctor,
        "OAuth: login stored, access token expired (renewed with its refresh token on the next use)"
    );
    let (output, results) = run_whoami(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(results, [format!("you are {client_id}")]);
    let refreshes: Vec<Value> = server
        .events("token")
        .into_iter()
        .filter(|event| event["grant"] == "refresh_token")
        .collect();
    assert_eq!(
        refreshes,
        [json!({"event": "token", "grant": "refresh_token", "ok": true})]
    );
    let second = stored_access_token(&env, "remote");
    assert_ne!(second, first, "the refreshed token is stored");
    assert_eq!(
        std::fs::metadata(credentials_file(&env)).unwrap().mode() & 0o777,
        0o600
    );
    let tokens = server.accepted_tokens();
    let after: Vec<&String> = tokens.iter().skip_while(|token| **token == first).collect();
    assert!(
        !after.is_empty() && after.iter().all(|token| **token == second),
        "{tokens:?}"
    );
}

#[tokio::test]
async fn a_token_the_server_revoked_is_refreshed_once_on_its_401() {
    let env = TestEnv::new();
    let server = OAuthServer::start(&env, "oauth", &[]);
    write_home_mcp(&env, "remote", &server.url());
    let (output, _) = login(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let first = stored_access_token(&env, "remote");
    server.revoke_all().await;

    let (output, results) = run_whoami(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(results.len(), 1, "{}", text(&output.stderr));
    assert!(results[0].starts_with("you are client-"), "{results:?}");
    let rejected = server.events("unauthorized");
    assert!(
        rejected.iter().any(|event| event["token"] == first.as_str()),
        "the revoked token was refused: {rejected:?}"
    );
    let second = stored_access_token(&env, "remote");
    assert_ne!(second, first);
    assert!(server.accepted_tokens().iter().all(|token| *token == second));
}

#[tokio::test]
async fn without_a_login_a_run_says_to_log_in_and_goes_on_and_logout_removes_the_token() {
    let env = TestEnv::new();
    let server = OAuthServer::start(&env, "oauth", &[]);
    write_home_mcp(&env, "remote", &server.url());

    // Never logged in: the run goes on without the server, and says what to do.
    let model = FakeModelServer::start(Wire::OpenAi).await;
    model.enqueue(FakeReply::text("answered anyway"));
    let output = run_elph(&env, &model, &["hello"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "answered anyway");
    assert!(
        text(&output.stderr).contains("MCP server 'remote' needs you to log in: run `elph mcp login remote`"),
        "{}",
        text(&output.stderr)
    );

    assert_eq!(doctor_oauth_line(&env, "remote"), "OAuth: no login stored");

    // Logged in, then out: the token is gone from the file, and the next run asks again.
    let (output, _) = login(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let logout = env
        .command(&elph())
        .args(["mcp", "logout", "remote"])
        .output()
        .unwrap();
    assert!(logout.status.success(), "{}", text(&logout.stderr));
    assert!(
        text(&logout.stdout).contains("Logged out of MCP server 'remote'"),
        "{}",
        text(&logout.stdout)
    );
    assert!(
        !credentials_file(&env).exists(),
        "the only login is gone, and its file"
    );
    let model = FakeModelServer::start(Wire::OpenAi).await;
    model.enqueue(FakeReply::text("still fine"));
    let output = run_elph(&env, &model, &["hello"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("needs you to log in: run `elph mcp login remote`"),
        "{}",
        text(&output.stderr)
    );
    let again = env
        .command(&elph())
        .args(["mcp", "logout", "remote"])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(text(&again.stdout).contains("No login was stored for MCP server 'remote'"));
}

#[tokio::test]
async fn a_token_is_never_sent_to_another_url_under_the_same_name() {
    let env = TestEnv::new();
    let server = OAuthServer::start(&env, "oauth", &[]);
    write_home_mcp(&env, "remote", &server.url());
    let (output, _) = login(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let token = stored_access_token(&env, "remote");

    // The name now points elsewhere (an edited file, or a project's mcp.json reusing the name):
    // that server sees no token, and the user is asked to log in to it.
    let other = OAuthServer::start(&env, "other", &[]);
    write_home_mcp(&env, "remote", &other.url());
    let model = FakeModelServer::start(Wire::OpenAi).await;
    model.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &model, &["hello"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("needs you to log in: run `elph mcp login remote`"),
        "{}",
        text(&output.stderr)
    );
    let seen = other.events("unauthorized");
    assert!(!seen.is_empty(), "the other server was asked");
    let doctor = doctor_oauth_line(&env, "remote");
    assert!(
        doctor.starts_with("OAuth: a login is stored for another URL") && doctor.contains(&server.url()),
        "{doctor}"
    );
    assert!(seen.iter().all(|event| event["token"].is_null()), "{seen:?}");
    assert_eq!(stored_access_token(&env, "remote"), token, "the login is kept");
}

#[tokio::test]
async fn login_explains_what_it_cannot_do() {
    let env = TestEnv::new();
    let no_registration = OAuthServer::start(&env, "noreg", &["--no-registration"]);
    std::fs::write(
        env.config_dir.join("mcp.json"),
        json!({"servers": {
            "closed": {"url": no_registration.url()},
            "plain": {"url": "http://mcp.example.com/mcp"},
            "local": {"command": "/bin/true"},
        }})
        .to_string(),
    )
    .unwrap();
    let run = |args: &[&str]| {
        env.command(&elph())
            .args(["mcp", "login"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let output = run(&["closed"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("does not offer dynamic client registration")
            && text(&output.stderr).contains("--client-id"),
        "{}",
        text(&output.stderr)
    );
    let output = run(&["plain"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("is not an https address"),
        "{}",
        text(&output.stderr)
    );
    let output = run(&["local"]);
    assert!(
        text(&output.stderr).contains("is a stdio server"),
        "{}",
        text(&output.stderr)
    );
    let output = run(&["nosuch"]);
    assert!(
        text(&output.stderr).contains("no MCP server named 'nosuch'; the HTTP servers are: closed, plain"),
        "{}",
        text(&output.stderr)
    );
    assert!(!credentials_file(&env).exists());
}

#[tokio::test]
async fn a_server_without_registration_takes_a_client_id_registered_beforehand() {
    let env = TestEnv::new();
    let server = OAuthServer::start(&env, "oauth", &["--no-registration", "--client", "elph-desktop"]);
    write_home_mcp(&env, "closed", &server.url());
    let (output, page) = login_with(&env, "closed", false, &["--client-id", "elph-desktop"]).await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(page.contains("logged in"), "{page}");
    assert!(
        server.events("register").is_empty(),
        "no registration was attempted"
    );
    assert_eq!(server.events("authorize")[0]["client_id"], "elph-desktop");
    assert_eq!(
        stored(&env)["servers"]["closed"]["credentials"]["client_id"],
        "elph-desktop"
    );
    let (output, results) = run_whoami(&env, "closed").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(results, ["you are elph-desktop"]);
}

/// Over ACP the editor is told, and the session goes on without the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_session_without_a_login_tells_the_editor_and_goes_on() {
    use super::acp::{Setup, agent_text, finish, notice_text};
    use elph_agent::harness::ApprovalPolicy;

    let setup = Setup::new().await;
    let server = OAuthServer::start(&setup.env, "oauth", &[]);
    write_home_mcp(&setup.env, "remote", &server.url());
    // Servers start in the background: the model waits for them, so the failure is known (and
    // said) within the turn.
    setup.server.enqueue(super::mcp::wait_for_servers());
    setup.server.enqueue(FakeReply::text("answered without it"));

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&setup.env.project).await;
    client
        .prompt(&session, "hello")
        .await
        .expect("the prompt is answered");
    let updates = client.drain();
    assert!(
        notice_text(&updates)
            .contains("MCP server 'remote' needs you to log in: run `elph mcp login remote`"),
        "{}",
        notice_text(&updates)
    );
    assert!(agent_text(&updates).contains("answered without it"));
    assert!(!server.events("unauthorized").is_empty(), "the server was asked");
    assert!(
        server.events("mcp").is_empty(),
        "nothing got through without a token"
    );
    finish(client, agent).await;
}

/// What `GET /mcp` with `token` gets: 405 for a token the server takes, 401 for one it refuses.
async fn bearer_status(server: &OAuthServer, token: &str) -> u16 {
    http_client()
        .get(server.url())
        .bearer_auth(token)
        .send()
        .await
        .expect("the MCP endpoint answers")
        .status()
        .as_u16()
}

fn logout(env: &TestEnv, name: &str) -> Output {
    env.command(&elph())
        .args(["mcp", "logout", name])
        .output()
        .unwrap()
}

#[tokio::test]
async fn logout_revokes_the_refresh_then_the_access_token_and_a_failed_revocation_still_removes_them() {
    let env = TestEnv::new();
    let server = OAuthServer::start(&env, "oauth", &[]);
    write_home_mcp(&env, "remote", &server.url());
    let (output, _) = login(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let access = stored_access_token(&env, "remote");
    let refresh = stored(&env)["servers"]["remote"]["credentials"]["token_response"]["refresh_token"]
        .as_str()
        .expect("a refresh token is stored")
        .to_string();
    assert_eq!(bearer_status(&server, &access).await, 405, "the token works");

    let out = logout(&env, "remote");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(
            "Logged out of MCP server 'remote': its tokens were revoked at its authorization server and removed from"
        ),
        "{}",
        text(&out.stdout)
    );
    // RFC 7009 at the endpoint the metadata names: the refresh token (which takes its grant's
    // access token with it), then the access token, each with its hint.
    let revoked: Vec<(Value, Value, Value)> = server
        .events("revoke")
        .into_iter()
        .map(|event| {
            (
                event["hint"].clone(),
                event["token"].clone(),
                event["kind"].clone(),
            )
        })
        .collect();
    assert_eq!(
        revoked,
        [
            (json!("refresh_token"), json!(refresh), json!("refresh")),
            (json!("access_token"), json!(access), json!("unknown")),
        ]
    );
    assert_eq!(
        bearer_status(&server, &access).await,
        401,
        "revoked at the server"
    );
    assert!(!credentials_file(&env).exists(), "and gone here");

    // An authorization server whose revocation fails: the tokens are still removed here, and the
    // logout says they may stay valid there.
    let failing = OAuthServer::start(&env, "failing", &["--revocation-fails"]);
    write_home_mcp(&env, "remote", &failing.url());
    let (output, _) = login(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let access = stored_access_token(&env, "remote");
    let out = logout(&env, "remote");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Logged out of MCP server 'remote': its tokens were removed from"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains(
            "elph: warning: the tokens of MCP server 'remote' could not be revoked at its authorization server"
        ) && text(&out.stderr).contains("503")
            && text(&out.stderr).contains("they stay valid there until they expire"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        failing.events("revoke").len(),
        1,
        "it stopped at the first failure"
    );
    assert!(!credentials_file(&env).exists());
    assert_eq!(bearer_status(&failing, &access).await, 405);
    assert!(
        !text(&out.stdout).contains(&access) && !text(&out.stderr).contains(&access),
        "no token is printed"
    );

    // One that offers no revocation: removed here, and said so.
    let plain = OAuthServer::start(&env, "plain", &["--no-revocation"]);
    write_home_mcp(&env, "remote", &plain.url());
    let (output, _) = login(&env, "remote").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    let out = logout(&env, "remote");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Its authorization server offers no revocation"),
        "{}",
        text(&out.stdout)
    );
    assert!(plain.events("revoke").is_empty());
    assert!(!credentials_file(&env).exists());
}
