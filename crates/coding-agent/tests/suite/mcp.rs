//! MCP tools end to end: the real `elph run`, a real MCP server (`mcp-test-server` of test-support,
//! an rmcp server on stdio), real hook processes, and a fake OpenAI-compatible model that records
//! what reached it.

use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::live_group_members;

use super::run_e2e::{elph, run_elph};

/// The `mcp-test-server` binary of test-support, in the same target folder and profile as this
/// test, built with cargo first when it is not there yet.
pub fn mcp_test_server() -> PathBuf {
    test_support::hook_scripts::test_support_binary("mcp-test-server")
}

/// Evidence files the test server writes.
pub struct Evidence {
    pub started: PathBuf,
    pub calls: PathBuf,
}

impl Evidence {
    pub fn new(env: &TestEnv) -> Self {
        Evidence {
            started: env.evidence("mcp-started.jsonl"),
            calls: env.evidence("mcp-calls.jsonl"),
        }
    }

    /// The `mcp.json` entry of the test server, named `test`.
    pub fn server(&self, extra: Value) -> Value {
        let mut server = json!({
            "command": mcp_test_server().display().to_string(),
            "env": {
                "MCP_TEST_STARTED": self.started.display().to_string(),
                "MCP_TEST_CALLS": self.calls.display().to_string(),
                "MCP_TEST_GRANDCHILD": "1",
            },
        });
        if let (Value::Object(server), Value::Object(extra)) = (&mut server, extra) {
            server.extend(extra);
        }
        json!({ "servers": { "test": server } })
    }

    pub fn pids(&self) -> Vec<i32> {
        json_lines(&self.started)
            .iter()
            .map(|line| line["pid"].as_i64().expect("pid") as i32)
            .collect()
    }

    pub fn calls(&self) -> Vec<Value> {
        json_lines(&self.calls)
    }
}

pub fn write_home_mcp(env: &TestEnv, config: &Value) {
    std::fs::write(env.config_dir.join("mcp.json"), config.to_string()).expect("write mcp.json");
}

fn write_project_mcp(env: &TestEnv, config: &Value) {
    let dir = env.project.join(".elph");
    std::fs::create_dir_all(&dir).expect("create .elph");
    std::fs::write(dir.join("mcp.json"), config.to_string()).expect("write mcp.json");
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The model's first step: servers start in the background, so a model that needs their tools
/// in a one-shot run waits for them (their tools are offered from the next request on).
pub fn wait_for_servers() -> FakeReply {
    FakeReply::tool_call("wait_for_mcp_servers", json!({}))
}

/// The tool messages of the request (the model sees tool results as `role: tool`), without the
/// answer of [`wait_for_servers`].
pub fn tool_messages(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .filter(|text| {
            !text
                .lines()
                .all(|line| line.contains("is ready; its tools from your next step on"))
        })
        .collect()
}

pub fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Nothing of the server's process group (the server and the helper it started) is left.
pub fn assert_group_gone(evidence: &Evidence) {
    let pids = evidence.pids();
    assert!(!pids.is_empty(), "the server started");
    for pid in pids {
        let live = live_group_members(pid, Duration::from_secs(10));
        assert!(
            live.is_empty(),
            "processes of the server's group are left: {live:?}"
        );
    }
}

fn hook_script(env: &TestEnv, name: &str, stdout: &str) -> String {
    let body = format!("cat >/dev/null\nprintf '%s' '{stdout}'\n");
    env.project_script(name, &body);
    format!("hooks/{name}")
}

#[tokio::test]
async fn mcp_tool_is_listed_with_its_schema_and_called_then_the_group_is_stopped() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &evidence.server(json!({})));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "hello from mcp"}),
    ));
    server.enqueue(FakeReply::text("all done"));

    let output = run_elph(&env, &server, &["use the echo tool"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "all done");

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let tools = requests[1]["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp_test__echo")
        .unwrap_or_else(|| panic!("mcp_test__echo is offered: {:?}", tool_names(&requests[1])));
    assert_eq!(echo["function"]["description"], "Returns the text it is given.");
    let schema = &echo["function"]["parameters"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["text"]));
    assert_eq!(schema["properties"]["text"]["type"], "string");
    for name in ["mcp_test__sleep", "mcp_test__crash", "read_file", "shell_exec"] {
        assert!(
            tool_names(&requests[1]).iter().any(|n| n == name),
            "{name} is offered"
        );
    }
    assert_eq!(tool_messages(&requests[2]), ["hello from mcp"]);
    assert_eq!(
        evidence.calls(),
        [json!({"tool": "echo", "arguments": {"text": "hello from mcp"}})]
    );

    // The server's environment is the allowlist plus its own `env`: no API key reaches it.
    let started = json_lines(&evidence.started);
    assert_eq!(started.len(), 1, "one server process for the session");
    let names: Vec<&str> = started[0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert!(!names.contains(&"OPENAI_API_KEY"), "{names:?}");
    assert!(!names.contains(&"OPENAI_BASE_URL"), "{names:?}");
    assert!(names.contains(&"ELPH_PROJECT_DIR"), "{names:?}");
    assert!(names.contains(&"MCP_TEST_CALLS"), "{names:?}");

    assert_group_gone(&evidence);
}

#[tokio::test]
async fn a_pre_tool_use_hook_blocks_mcp_sleep_before_the_server_sees_it() {
    let env = TestEnv::new();
    env.trust_project();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &evidence.server(json!({})));
    let command = hook_script(
        &env,
        "no-sleep.sh",
        r#"{"block": true, "reason": "no sleeping on the job"}"#,
    );
    env.write_project_hooks(&json!({"hooks": [{
        "id": "no-sleep", "event": "preToolUse", "command": command,
        "matcher": {"toolNames": ["mcp_test__sleep"]}
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_test__sleep", json!({"ms": 10})));
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "still works"}),
    ));
    server.enqueue(FakeReply::text("ok"));

    let output = run_elph(&env, &server, &["sleep a little"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    let blocked = &tool_messages(&requests[2])[0];
    assert!(blocked.contains("no sleeping on the job"), "{blocked}");
    assert!(
        blocked.contains("no-sleep"),
        "the message names the hook: {blocked}"
    );
    assert_eq!(
        tool_messages(&requests[3])[1],
        "still works",
        "the matcher is exact"
    );
    assert_eq!(
        evidence.calls(),
        [json!({"tool": "echo", "arguments": {"text": "still works"}})],
        "the server never saw the sleep call"
    );
    assert_group_gone(&evidence);
}

#[tokio::test]
async fn a_hook_matching_mcp_star_rewrites_the_echo_input() {
    let env = TestEnv::new();
    env.trust_project();
    let evidence = Evidence::new(&env);
    // A project server this time: the project is trusted, so it starts.
    write_project_mcp(&env, &evidence.server(json!({})));
    let command = hook_script(
        &env,
        "rewrite.sh",
        r#"{"toolInput": {"text": "rewritten by a hook"}}"#,
    );
    env.write_project_hooks(&json!({"hooks": [{
        "id": "rewrite", "event": "preToolUse", "command": command,
        "matcher": {"toolNames": ["mcp_*"]}
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "original"}),
    ));
    server.enqueue(FakeReply::text("ok"));

    let output = run_elph(&env, &server, &["echo something"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(tool_messages(&requests[2]), ["rewritten by a hook"]);
    assert_eq!(
        evidence.calls(),
        [json!({"tool": "echo", "arguments": {"text": "rewritten by a hook"}})]
    );
    assert_group_gone(&evidence);
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_gives_a_clear_error_and_the_run_completes() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &evidence.server(json!({})));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_test__crash", json!({})));
    server.enqueue(FakeReply::text("recovered"));

    let started = Instant::now();
    let output = run_elph(&env, &server, &["crash it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(20), "no hung turn");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "recovered");

    let requests = server.requests();
    let crashed = &tool_messages(&requests[2])[0];
    assert!(
        crashed.contains("MCP server 'test' stopped during tool 'crash'"),
        "{crashed}"
    );
    assert!(crashed.contains("exited with status 3"), "{crashed}");
    assert!(
        crashed.contains("crashing on purpose"),
        "the server's stderr is shown: {crashed}"
    );
    // The server stays down: the next request no longer offers its tools and says why, and the
    // user is told.
    let offered = tool_names(&requests[2]);
    assert!(
        !offered.iter().any(|name| name.starts_with("mcp_test__")),
        "{offered:?}"
    );
    let system = requests[2]["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains("- 'test' is not available in this session: ")
            && system.contains("exited with status 3"),
        "{system}"
    );
    let said = stderr(&output);
    assert!(
        said.contains("MCP server 'test' stopped running: ")
            && said.contains("Its tools, prompts and resources are no longer offered in this session"),
        "{said}"
    );
    assert_eq!(evidence.calls().len(), 1, "only the crash call reached a server");
    assert_group_gone(&evidence);
}

#[tokio::test]
async fn a_hung_call_times_out_with_a_clear_error() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    // The timeout also bounds the echo after it: long enough for a loaded machine to answer an
    // echo well within it (500 ms was not safe), far below the 60 s sleep.
    write_home_mcp(&env, &evidence.server(json!({"timeoutMs": 3000})));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_test__sleep", json!({"ms": 60000})));
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "after the timeout"}),
    ));
    server.enqueue(FakeReply::text("done"));

    let started = Instant::now();
    let output = run_elph(&env, &server, &["sleep long"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the turn did not wait for the sleep"
    );
    let requests = server.requests();
    let timed_out = &tool_messages(&requests[2])[0];
    assert_eq!(
        timed_out,
        "MCP server 'test' did not answer tool 'sleep' within 3 s; the call was cancelled"
    );
    assert_eq!(
        tool_messages(&requests[3])[1],
        "after the timeout",
        "the server keeps serving"
    );
    assert_group_gone(&evidence);
}

#[tokio::test]
async fn an_untrusted_project_does_not_start_its_server() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_project_mcp(&env, &evidence.server(json!({})));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("fine"));

    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let stderr = stderr(&output);
    assert!(
        stderr.contains(&format!(
            "project MCP servers skipped until {} is trusted",
            env.project.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(".elph/mcp.json"),
        "the diagnostic names the file: {stderr}"
    );
    assert!(!evidence.started.exists(), "the server never started");
    let requests = server.requests();
    assert!(
        !tool_names(&requests[0])
            .iter()
            .any(|name| name.starts_with("mcp_")),
        "{:?}",
        tool_names(&requests[0])
    );
    assert!(!env.project.join(".elph").join("hooks.json").exists());
}

#[tokio::test]
async fn bad_config_and_a_server_that_cannot_start_are_diagnostics_not_failures() {
    let env = TestEnv::new();
    env.trust_project();
    write_home_mcp(
        &env,
        &json!({"servers": {"missing": {"command": "/no/such/mcp-server"}}}),
    );
    write_project_mcp(&env, &json!({"servers": {"x": {"command": "y", "bogus": true}}}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("fine"));

    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let stderr = stderr(&output);
    assert!(
        stderr.contains("MCP server 'missing' command not found: /no/such/mcp-server does not exist"),
        "{stderr}"
    );
    assert!(
        stderr.contains("mcp.json at /servers/x: unknown field `bogus`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn interrupting_a_run_during_an_mcp_call_stops_the_server() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    write_home_mcp(&env, &evidence.server(json!({})));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call("mcp_test__sleep", json!({"ms": 60000})));
    server.enqueue(FakeReply::text("unreachable"));

    let mut command = env.command(&elph());
    command
        .env("OPENAI_API_KEY", "sk-test-secret-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["run", "--model", "openai/gpt-test", "sleep"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().expect("start elph run");
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !evidence.calls().iter().any(|call| call["tool"] == "sleep") {
        assert!(Instant::now() < deadline, "the sleep call reached the server");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("interrupt elph");
    let output = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("elph stopped within 20 s of the interrupt")
    .unwrap()
    .unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert_group_gone(&evidence);
}

/// A minimal streamable-HTTP MCP server: JSON responses to POSTed JSON-RPC requests, 202 to
/// notifications, 405 to the optional GET stream. It offers one tool, `shout {text}`, and records
/// the `authorization` header of each tools/call.
pub struct HttpMcpServer {
    pub url: String,
    pub authorizations: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpMcpServer {
    pub async fn start() -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let authorizations = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = authorizations.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut buffer = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let (head, body) = loop {
                        let Ok(read) = socket.read(&mut chunk).await else {
                            return;
                        };
                        if read == 0 {
                            return;
                        }
                        buffer.extend_from_slice(&chunk[..read]);
                        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buffer[..end]).to_string();
                        let length = head
                            .lines()
                            .find_map(|line| {
                                let (name, value) = line.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if buffer.len() >= end + 4 + length {
                            break (head, buffer[end + 4..end + 4 + length].to_vec());
                        }
                    };
                    let header = |name: &str| {
                        head.lines().find_map(|line| {
                            let (key, value) = line.split_once(':')?;
                            key.eq_ignore_ascii_case(name).then(|| value.trim().to_string())
                        })
                    };
                    let (status, reply) = if !head.starts_with("POST ") {
                        ("405 Method Not Allowed", None)
                    } else {
                        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let result = match request["method"].as_str().unwrap_or_default() {
                            "initialize" => Some(json!({
                                "protocolVersion": request["params"]["protocolVersion"],
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "http-test", "version": "1.0.0"}
                            })),
                            "tools/list" => Some(json!({"tools": [{
                                "name": "shout",
                                "description": "Upper-cases text.",
                                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                                "annotations": {"readOnlyHint": true}
                            }]})),
                            "tools/call" => {
                                seen.lock()
                                    .unwrap()
                                    .push(header("authorization").unwrap_or_default());
                                let text = request["params"]["arguments"]["text"]
                                    .as_str()
                                    .unwrap_or_default();
                                Some(
                                    json!({"content": [{"type": "text", "text": text.to_uppercase()}], "isError": false}),
                                )
                            }
                            _ => None,
                        };
                        match (request.get("id"), result) {
                            (Some(id), Some(result)) => (
                                "200 OK",
                                Some(json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()),
                            ),
                            (Some(id), None) => (
                                "200 OK",
                                Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}).to_string()),
                            ),
                            (None, _) => ("202 Accepted", None),
                        }
                    };
                    let body = reply.unwrap_or_default();
                    let content_type = if body.is_empty() {
                        ""
                    } else {
                        "Content-Type: application/json\r\n"
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\n{content_type}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        HttpMcpServer { url, authorizations }
    }
}

#[tokio::test]
async fn a_streamable_http_server_is_listed_and_called_with_its_headers() {
    let env = TestEnv::new();
    let http = HttpMcpServer::start().await;
    write_home_mcp(
        &env,
        &json!({"servers": {"remote": {"url": http.url, "headers": {"Authorization": "Bearer mcp-token"}}}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_remote__shout",
        json!({"text": "quiet"}),
    ));
    server.enqueue(FakeReply::text("ok"));

    let output = run_elph(&env, &server, &["shout"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert!(
        tool_names(&requests[1])
            .iter()
            .any(|name| name == "mcp_remote__shout"),
        "{:?} / {}",
        tool_names(&requests[1]),
        stderr(&output)
    );
    assert_eq!(tool_messages(&requests[2]), ["QUIET"]);
    assert_eq!(*http.authorizations.lock().unwrap(), ["Bearer mcp-token"]);
}

fn text_of(output: &elph_agent::tools::ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|block| match block {
            elph_agent::messages::ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The manager in-process: a cancelled call (its future dropped) does not wedge the client, the
/// project's servers stop when the project stops being trusted, and `stop` ends every group.
#[tokio::test]
async fn cancelled_calls_do_not_wedge_the_client_and_stop_ends_every_group() {
    use coding_agent::mcp::{McpManager, ServerState};
    let env = TestEnv::new();
    let home = Evidence::new(&env);
    write_home_mcp(&env, &home.server(json!({})));
    let project = Evidence {
        started: env.evidence("project-started.jsonl"),
        calls: env.evidence("project-calls.jsonl"),
    };
    let mut project_config = project.server(json!({}));
    project_config["servers"]["proj"] = project_config["servers"]["test"].take();
    project_config["servers"].as_object_mut().unwrap().remove("test");
    write_project_mcp(&env, &project_config);
    let paths = coding_agent::paths::Paths {
        config_dir: env.config_dir.clone(),
        data_dir: env.data_dir.clone(),
        project_dir: env.project.clone(),
    };

    // Called straight from a current-thread runtime's task: the manager has a runtime of its own.
    let (manager, tools, diagnostics) = McpManager::start(&paths, true);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let tool = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name() == name)
            .unwrap_or_else(|| panic!("{name} is registered"))
            .clone()
    };
    assert!(!tool("mcp_test__echo").mutates(), "echo is marked read-only");
    assert!(tool("mcp_test__sleep").mutates());
    let ctx = elph_agent::tools::ToolContext::new(env.project.clone());

    // The abandoned sleep would go on for 10 minutes: an echo answered within the deadline below
    // was not queued behind it.
    let sleep = tool("mcp_test__sleep");
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        sleep.execute(json!({"ms": 600_000}), &ctx),
    )
    .await;
    assert!(
        abandoned.is_err(),
        "the sleep was still running when its future was dropped"
    );
    let echo = tokio::time::timeout(
        Duration::from_secs(30),
        tool("mcp_test__echo").execute(json!({"text": "still here"}), &ctx),
    )
    .await
    .expect("the next call is answered, not queued behind the abandoned one");
    assert_eq!(text_of(&echo), "still here");
    assert!(!echo.is_error);

    // Untrusting the project stops its servers; the home server keeps serving.
    manager.stop_project_servers();
    let refused = tool("mcp_proj__echo").execute(json!({"text": "x"}), &ctx).await;
    assert!(refused.is_error);
    assert!(
        text_of(&refused)
            .contains("MCP server 'proj' is not available: stopped because the project is no longer trusted"),
        "{}",
        text_of(&refused)
    );
    assert_group_gone(&project);
    let statuses = manager.statuses();
    assert!(
        matches!(&statuses[0].state, ServerState::Running { tools } if tools.len() == 4),
        "{statuses:?}"
    );

    manager.stop();
    assert_group_gone(&home);
    let after = tool("mcp_test__echo").execute(json!({"text": "x"}), &ctx).await;
    assert!(after.is_error);
    assert!(
        text_of(&after).contains("MCP server 'test' is not available"),
        "{}",
        text_of(&after)
    );
}

#[tokio::test]
async fn an_mcp_servers_file_with_type_and_variables_works() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    // The common shape, as Claude Desktop and Cursor write it: the paths come from Elph's
    // environment through ${VAR}, one with a default that is not needed.
    let config = json!({"mcpServers": {
        "test": {
            "type": "stdio",
            "command": "${MCP_SERVER_BIN}",
            "env": {
                "MCP_TEST_STARTED": "${EVIDENCE_DIR}/mcp-started.jsonl",
                "MCP_TEST_CALLS": "${CALLS_FILE:-/nonexistent/unused}",
            },
        },
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    }});
    write_home_mcp(&env, &config);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "expanded"}),
    ));
    server.enqueue(FakeReply::text("ok"));
    let vars = [
        ("MCP_SERVER_BIN", mcp_test_server().display().to_string()),
        ("EVIDENCE_DIR", env.root.path().display().to_string()),
        ("CALLS_FILE", evidence.calls.display().to_string()),
    ];
    let output = super::run_e2e::run_elph_with(&env, &server, &vars, &["echo"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(tool_messages(&server.requests()[2]), ["expanded"]);
    assert_eq!(
        evidence.calls(),
        [json!({"tool": "echo", "arguments": {"text": "expanded"}})]
    );
    assert_eq!(evidence.pids().len(), 1);
    let stderr = stderr(&output);
    assert!(
        stderr.contains("'legacy' uses the legacy SSE transport"),
        "{stderr}"
    );

    // Without the variable (and no default) the file is malformed, and the diagnostic names both.
    server.enqueue(FakeReply::text("ok"));
    let output = run_elph(&env, &server, &["again"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/mcpServers/test/command") && stderr.contains("MCP_SERVER_BIN is not set"),
        "{stderr}"
    );
}
