//! The real `elph acp` binary, driven by the SDK's client over its stdin and stdout: initialize,
//! session/new, a prompt with its streamed updates, a stop hook's side effect, a cancel, and
//! sessionEnd when stdin closes. Every line the binary writes to stdout must be a protocol frame.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::ByteStreams;
use agent_client_protocol::v1::schema::StopReason;
use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::acp::{TestClient, agent_text, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_a_session_over_stdio() {
    let env = TestEnv::new();
    env.trust_project();
    let log = env.evidence("events.jsonl");
    env.project_script("record.sh", &format!("cat >> '{}'\n", log.display()));
    env.write_project_hooks(&json!({"hooks": [
        {"id": "start", "event": "sessionStart", "command": "hooks/record.sh"},
        {"id": "stop", "event": "stop", "command": "hooks/record.sh"},
        {"id": "end", "event": "sessionEnd", "command": "hooks/record.sh"},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("Hello from the fake model"));
    server.enqueue(FakeReply::text("this reply never ends").hang());

    // Started from another folder: the session's project is the cwd the client names.
    let mut command =
        tokio::process::Command::from(env.command(std::path::Path::new(env!("CARGO_BIN_EXE_elph"))));
    command
        .current_dir(env.root.path())
        .env("OPENAI_API_KEY", "sk-test-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .args(["acp", "--model", "openai/gpt-test"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("spawn elph acp");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr_text = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });

    // Every stdout line is recorded, then handed to the client.
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let (mut relay_in, client_read) = tokio::io::duplex(1 << 16);
    let recorded = lines.clone();
    tokio::spawn(async move {
        let mut stdout = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = stdout.next_line().await {
            recorded.lock().unwrap().push(line.clone());
            if relay_in.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                break;
            }
        }
    });

    let mut client = TestClient::connect(ByteStreams::new(stdin.compat_write(), client_read.compat())).await;
    assert_eq!(
        client.init.agent_info.as_ref().map(|info| info.name.as_str()),
        Some("elph")
    );
    let session = client.new_session(&env.project).await;
    assert_eq!(json_lines(&log)[0]["event"], "sessionStart");
    assert_eq!(
        json_lines(&log)[0]["projectDir"],
        env.project.display().to_string()
    );

    let response = client
        .prompt(&session, "say hello")
        .await
        .expect("prompt answered");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(agent_text(&client.drain()), "Hello from the fake model");
    let payloads = json_lines(&log);
    assert_eq!(
        payloads[1]["event"], "stop",
        "the stop hook ran before the prompt was answered"
    );
    assert_eq!(payloads[1]["status"], "completed");

    // A reply that never ends: cancel it.
    let prompt = tokio::spawn(client.prompt_future(&session, "go on forever"));
    server.wait_for_requests(2, Duration::from_secs(30)).await;
    client
        .wait_for("the streamed start of the endless reply", |update| {
            agent_text(std::slice::from_ref(update)).contains("this")
        })
        .await;
    client.cancel(&session);
    let response = within("the cancelled prompt", prompt)
        .await
        .unwrap()
        .expect("cancel answers the prompt");
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(json_lines(&log)[2]["event"], "stop");
    assert_eq!(json_lines(&log)[2]["status"], "cancelled");

    // Closing stdin ends every session and the process, with exit code 0.
    client.close().await;
    let status = within("elph acp exits", child.wait())
        .await
        .expect("wait for elph acp");
    let stderr_text = within("stderr", stderr_text).await.unwrap();
    assert!(status.success(), "exit {status:?}; stderr:\n{stderr_text}");
    let payloads = json_lines(&log);
    assert_eq!(payloads.len(), 4, "{payloads:?}");
    assert_eq!(payloads[3]["event"], "sessionEnd");
    assert_eq!(payloads[3]["reason"], "closed");

    let lines = lines.lock().unwrap().clone();
    assert!(lines.len() > 4);
    for line in &lines {
        let frame: Value =
            serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON on stdout: {line:?}: {err}"));
        assert_eq!(frame["jsonrpc"], "2.0", "not a JSON-RPC frame: {line}");
    }
}
