//! MCP servers start in the background (docs/mcp.md, "Life of a server"): a server that never
//! answers does not hold the first model request up, the model is told which servers are still
//! starting, and a slow server's tools join when it answers, within its `startupTimeoutMs`.

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::mcp::{
    Evidence, assert_group_gone, mcp_test_server, stderr, tool_names, wait_for_servers, write_home_mcp,
};
use super::run_e2e::run_elph;

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The text of every tool result of `request`, the wait's included.
fn all_tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_server_that_never_answers_does_not_hold_up_the_first_model_request() {
    let env = TestEnv::new();
    let pid_file = env.evidence("hung.pid");
    // Starts, and never says a word: the kind of server that used to add its whole startup limit
    // to every run. Its limit here is 10 minutes, far beyond the test's own deadline, so the run
    // finishing at all shows the request did not wait for it.
    let hung = test_support::hook_scripts::write_script(
        &env.root.path().join("servers"),
        "hung.sh",
        &format!("echo $$ > '{}'\nexec sleep 600", pid_file.display()),
    );
    write_home_mcp(
        &env,
        &json!({"mcpServers": {"hung": {"command": hung.display().to_string(), "startupTimeoutMs": 600000}}}),
    );
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("answered without it"));

    let output = run_elph(&env, &server, &["hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "answered without it"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    // The request went out while the server was still starting, and the model was told so.
    let system = system_prompt(&requests[0]);
    assert!(
        system.contains("- 'hung' is still starting; its tools (mcp_hung__*) join when it answers"),
        "{system}"
    );
    assert!(
        tool_names(&requests[0])
            .iter()
            .any(|name| name == "wait_for_mcp_servers"),
        "{:?}",
        tool_names(&requests[0])
    );
    assert!(
        !stderr(&output).contains("did not answer"),
        "the run did not wait for its limit: {}",
        stderr(&output)
    );
    // And the session's end stopped it.
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("the server started")
        .trim()
        .parse()
        .unwrap();
    let live = test_support::hook_scripts::live_group_members(pid, std::time::Duration::from_secs(10));
    assert!(live.is_empty(), "the hung server outlived the run: {live:?}");
}

#[tokio::test]
async fn a_server_that_takes_12_s_to_start_works_with_its_startup_timeout_ms() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    // A real slow start (like `npx -y` on an empty cache): 12 s, then the real server.
    let slow = test_support::hook_scripts::write_script(
        &env.root.path().join("servers"),
        "slow.sh",
        &format!("sleep 12\nexec '{}'", mcp_test_server().display()),
    );
    let mut config = evidence.server(json!({
        "command": slow.display().to_string(),
        "startupTimeoutMs": 60000,
    }));
    // The same 12 s start under a 2 s limit: given up, and the model is told why.
    config["servers"]["impatient"] = json!({"command": slow.display().to_string(), "startupTimeoutMs": 2000});
    write_home_mcp(&env, &config);
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(wait_for_servers());
    server.enqueue(FakeReply::tool_call(
        "mcp_test__echo",
        json!({"text": "late but here"}),
    ));
    server.enqueue(FakeReply::text("done"));

    let output = run_elph(&env, &server, &["use the slow server"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    let first = system_prompt(&requests[0]);
    assert!(first.contains("'test' is still starting"), "{first}");
    assert!(
        !tool_names(&requests[0])
            .iter()
            .any(|name| name.starts_with("mcp_test__")),
        "not there before it answered"
    );
    let waited = &all_tool_results(&requests[1])[0];
    assert!(
        waited.contains(
            "MCP server 'test' is ready; its tools from your next step on: mcp_test__crash, mcp_test__echo, mcp_test__guard, mcp_test__sleep"
        ),
        "{waited}"
    );
    assert!(
        waited.contains("MCP server 'impatient' is not available: did not answer within 2 s of starting"),
        "{waited}"
    );
    assert!(
        tool_names(&requests[1])
            .iter()
            .any(|name| name == "mcp_test__echo"),
        "joined once it answered: {:?}",
        tool_names(&requests[1])
    );
    let second = system_prompt(&requests[1]);
    assert!(!second.contains("'test' is still starting"), "{second}");
    assert!(
        second.contains("- 'impatient' is not available in this session: did not answer within 2 s"),
        "{second}"
    );
    assert_eq!(all_tool_results(&requests[2])[1], "late but here");
    let stderr = stderr(&output);
    assert!(stderr.contains("MCP server 'test' is ready: 4 tools"), "{stderr}");
    assert!(
        stderr.contains("MCP server 'impatient' did not answer within 2 s of starting; skipped"),
        "{stderr}"
    );
    assert_group_gone(&evidence);
}

/// mcp.json with one server, `test`, that starts test-support's server once `gate` exists; and a
/// fail-closed mcpTool hook on shell_exec that asks its `guard` tool, with `timeout_ms`.
fn gated_server_and_guard_hook(env: &TestEnv, evidence: &Evidence, gate: &std::path::Path, timeout_ms: u64) {
    let gated = test_support::hook_scripts::write_script(
        &env.root.path().join("servers"),
        "gated.sh",
        &format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done\nexec '{}'",
            gate.display(),
            mcp_test_server().display()
        ),
    );
    write_home_mcp(
        env,
        &json!({"servers": {"test": {
            "command": gated.display().to_string(),
            "startupTimeoutMs": 600000,
            "env": {"MCP_TEST_CALLS": evidence.calls.display().to_string()},
        }}}),
    );
    env.write_home_hooks(&json!({"hooks": [{
        "id": "mcp-guard",
        "event": "preToolUse",
        "matcher": {"toolNames": ["shell_exec"]},
        "mcpTool": {"server": "test", "tool": "guard"},
        "failClosed": true,
        "timeoutMs": timeout_ms,
    }]}));
}

/// The guard's calls the server recorded.
fn guard_calls(evidence: &Evidence) -> Vec<Value> {
    test_support::env::json_lines(&evidence.calls)
        .into_iter()
        .filter(|call| call["tool"] == "guard")
        .collect()
}

#[tokio::test]
async fn an_mcp_tool_hook_waits_for_its_server_still_starting_and_its_answer_blocks() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    let gate = env.evidence("gate");
    gated_server_and_guard_hook(&env, &evidence, &gate, 60_000);
    // In the project, where the command could write it.
    let marker = env.project.join("ran-marker");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("rm -f {0}; touch {0}", marker.display())}),
    ));
    server.enqueue(FakeReply::text("understood"));

    // The server cannot answer before the first model request, whose answer is the tool call the
    // hook guards: the hook starts while its server is still starting.
    let open_the_gate = async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while server.requests().is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        std::fs::write(&gate, "").unwrap();
    };
    let (output, ()) = tokio::join!(run_elph(&env, &server, &["run it"]), open_the_gate);
    assert!(output.status.success(), "{}", stderr(&output));
    let first = system_prompt(&server.requests()[0]);
    assert!(first.contains("'test' is still starting"), "{first}");
    assert!(!marker.exists(), "the blocked command did not run");
    assert!(
        stderr(&output).contains("hook 'mcp-guard' blocked the tool call: the mcp guard refuses rm"),
        "{}",
        stderr(&output)
    );
    assert_eq!(guard_calls(&evidence).len(), 1);
}

#[tokio::test]
async fn an_mcp_tool_hook_whose_server_is_still_starting_when_its_timeout_runs_out_fails_closed() {
    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    // The gate never opens: the server is starting for the whole run.
    gated_server_and_guard_hook(&env, &evidence, &env.evidence("gate"), 1500);
    // In the project, where the command could write it.
    let marker = env.project.join("ran-marker");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("touch {}", marker.display())}),
    ));
    server.enqueue(FakeReply::text("understood"));

    let output = run_elph(&env, &server, &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "a fail-closed hook that could not ask blocks");
    let said = stderr(&output);
    assert!(
        said.contains("failed closed")
            && said.contains("MCP server 'test' was still starting when the hook's 1500 ms ran out"),
        "{said}"
    );
    assert!(guard_calls(&evidence).is_empty());
}

/// A server that answers while the terminal UI waits for the user is shown at once, without a
/// keypress: the session tells what happens between operations as it happens.
#[test]
fn the_terminal_ui_shows_a_server_that_answers_while_it_is_idle_at_once() {
    use super::tui_pty_support::{Model, Tui};

    let env = TestEnv::new();
    let evidence = Evidence::new(&env);
    let gate = env.evidence("gate");
    write_home_mcp(
        &env,
        &evidence.server(json!({"env": {
            "MCP_TEST_STARTED": evidence.started.display().to_string(),
            "MCP_TEST_START_GATE": gate.display().to_string(),
        }})),
    );
    env.trust_project();
    let model = Model::start();
    let mut tui = Tui::start(&env, &model, 24, 100);
    tui.wait_idle();
    assert!(
        !tui.contents().contains("MCP server 'test' is ready"),
        "{}",
        tui.contents()
    );
    std::fs::write(&gate, "").unwrap();
    tui.wait_for("MCP server 'test' is ready: 4 tools");
    assert!(model.server.requests().is_empty(), "nothing was sent");
    tui.send("/quit");
    assert_eq!(tui.exit_code(), 0, "screen:\n{}", tui.contents());
}
