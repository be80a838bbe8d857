//! `elph acp` at its edges, through the real binary and raw JSON-RPC lines: a relative `cwd`, a
//! session of another project, a line that is not UTF-8 and one over 16 MiB each get a JSON-RPC
//! error, and the connection goes on.

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::lifecycle_support::{Running, acp_new_session, acp_open_session};
use super::run_e2e::run_elph;

const INVALID_PARAMS: i64 = -32602;
const PARSE_ERROR: i64 = -32700;

fn acp(env: &TestEnv, server: &FakeModelServer) -> Running {
    Running::start(env, server, &["acp", "--model", "openai/gpt-test"], true)
}

async fn answer(running: &mut Running, id: Value) -> Value {
    running
        .wait_json("the answer", |frame| {
            frame["id"] == id && frame.get("method").is_none()
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_cwd_is_invalid_params() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let mut running = acp(&env, &server);
    acp_open_session(&mut running, &env.project).await;
    running
        .send(&json!({"jsonrpc": "2.0", "id": 7, "method": "session/new",
            "params": {"cwd": "project", "mcpServers": []}}))
        .await;
    let refused = answer(&mut running, json!(7)).await;
    assert_eq!(refused["error"]["code"], INVALID_PARAMS, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cwd must be an absolute path"),
        "{refused}"
    );
    let (code, _, stderr) = running.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_another_project_is_not_loaded() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("the secret plan of project A"));
    let output = run_elph(&env, &server, &["plan"]).await;
    assert!(output.status.success());
    let listed = env
        .command(&super::run_e2e::elph())
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_string();

    let other = env.root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let mut running = acp(&env, &server);
    acp_open_session(&mut running, &other).await;
    running
        .send(&json!({"jsonrpc": "2.0", "id": 8, "method": "session/load",
            "params": {"sessionId": id, "cwd": other, "mcpServers": []}}))
        .await;
    let refused = answer(&mut running, json!(8)).await;
    assert_eq!(refused["error"]["code"], INVALID_PARAMS, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("belongs to the project"),
        "{refused}"
    );
    let (_, lines, _) = running.finish().await;
    assert!(
        !lines.iter().any(|line| line.contains("secret plan")),
        "nothing of project A was replayed: {lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_lines_get_an_error_and_the_connection_goes_on() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let mut running = acp(&env, &server);
    acp_open_session(&mut running, &env.project).await;

    running
        .send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\xff\"}\n")
        .await;
    let error = answer(&mut running, Value::Null).await;
    assert_eq!(error["error"]["code"], PARSE_ERROR, "{error}");
    assert!(error.to_string().contains("not valid UTF-8"), "{error}");
    acp_new_session(&mut running, &env.project, 10).await;

    // 16 MiB and one byte, then a newline: discarded without being kept whole.
    let mut long = vec![b' '; 16 * 1024 * 1024 + 1];
    long.push(b'\n');
    running.send_raw(&long).await;
    let error = answer(&mut running, Value::Null).await;
    assert_eq!(error["error"]["code"], PARSE_ERROR, "{error}");
    assert!(
        error.to_string().contains("is longer than 16777216 bytes"),
        "{error}"
    );
    acp_new_session(&mut running, &env.project, 11).await;

    let (code, _, stderr) = running.finish().await;
    assert_eq!(code, Some(0), "{stderr}");
}
