//! The edges of `elph acp`, spoken as raw JSON-RPC lines to the real binary over stdio (the SDK's
//! client never pipelines, so it cannot show these): a `session/new` sent right behind
//! `initialize`, the schema's error codes for unknown sessions and bad params, and a
//! `session/load` of a session this very connection has open.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

const DEADLINE: Duration = Duration::from_secs(60);

struct Acp {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    /// Answers read so far, by id.
    answers: HashMap<i64, Value>,
    /// The ids in the order their answers came.
    order: Vec<i64>,
}

impl Acp {
    fn start(env: &TestEnv) -> Acp {
        let script = env.root.path().join("script.json");
        std::fs::write(&script, json!({"turns": [{"text": "hi"}]}).to_string()).unwrap();
        let mut command =
            tokio::process::Command::from(env.command(std::path::Path::new(env!("CARGO_BIN_EXE_elph"))));
        command
            .args(["acp", "--model", &format!("scripted/{}", script.display())])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn elph acp");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Acp {
            child,
            stdin,
            stdout,
            answers: HashMap::new(),
            order: Vec::new(),
        }
    }

    /// Writes all `frames` in one write, as a pipelining client does.
    async fn send(&mut self, frames: &[Value]) {
        let text: String = frames.iter().map(|frame| format!("{frame}\n")).collect();
        self.stdin.write_all(text.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The answer to request `id`, reading on until it comes.
    async fn answer(&mut self, id: i64) -> Value {
        tokio::time::timeout(DEADLINE, async {
            while !self.answers.contains_key(&id) {
                let line = self
                    .stdout
                    .next_line()
                    .await
                    .unwrap()
                    .expect("elph acp closed stdout");
                let frame: Value = serde_json::from_str(&line).expect("every line is JSON");
                if frame.get("method").is_none()
                    && let Some(answered) = frame["id"].as_i64()
                {
                    self.order.push(answered);
                    self.answers.insert(answered, frame);
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no answer to request {id} within {DEADLINE:?}"));
        self.answers[&id].clone()
    }

    async fn close(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .expect("elph acp exits once stdin closes")
            .unwrap();
        assert!(status.success(), "{status:?}");
    }
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn initialize(id: i64) -> Value {
    request(
        id,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
}

fn new_session(id: i64, env: &TestEnv) -> Value {
    request(id, "session/new", json!({"cwd": env.project, "mcpServers": []}))
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error: {answer}"))
}

#[tokio::test]
async fn a_session_new_sent_before_the_initialize_answer_is_served() {
    let env = TestEnv::new();
    let mut acp = Acp::start(&env);
    acp.send(&[initialize(1), new_session(2, &env)]).await;
    let init = acp.answer(1).await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let new = acp.answer(2).await;
    assert!(
        new["result"]["sessionId"].is_string(),
        "served, not refused: {new}"
    );
    assert_eq!(acp.order, [1, 2], "answered in the order asked");
    acp.close().await;
}

#[tokio::test]
async fn errors_carry_the_schema_codes() {
    let env = TestEnv::new();
    let mut acp = Acp::start(&env);
    acp.send(&[
        initialize(1),
        request(
            2,
            "session/load",
            json!({"sessionId": "no-such-session", "cwd": env.project, "mcpServers": []}),
        ),
        request(
            3,
            "session/prompt",
            json!({"sessionId": "no-such-session", "prompt": []}),
        ),
        request(4, "session/new", json!({"cwd": 7, "mcpServers": []})),
        request(5, "session/new", json!({"cwd": "relative/dir", "mcpServers": []})),
        request(
            6,
            "session/set_mode",
            json!({"sessionId": "no-such-session", "modeId": "plan"}),
        ),
    ])
    .await;
    let load = acp.answer(2).await;
    assert_eq!(
        code(&load),
        -32002,
        "an unknown session is a resource not found: {load}"
    );
    assert_eq!(load["error"]["data"]["sessionId"], "no-such-session", "{load}");
    assert!(
        load["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-session"),
        "{load}"
    );
    assert_eq!(code(&acp.answer(3).await), -32002);
    assert_eq!(code(&acp.answer(4).await), -32602, "a cwd that is not a path");
    assert_eq!(code(&acp.answer(5).await), -32602, "a relative cwd");
    assert_eq!(code(&acp.answer(6).await), -32002);

    // A known session with a mode that does not exist: bad params.
    acp.send(&[new_session(7, &env)]).await;
    let id = acp.answer(7).await["result"]["sessionId"].clone();
    acp.send(&[request(
        8,
        "session/set_mode",
        json!({"sessionId": id, "modeId": "yolo"}),
    )])
    .await;
    assert_eq!(code(&acp.answer(8).await), -32602);
    acp.close().await;
}

#[tokio::test]
async fn loading_a_session_this_connection_has_open_says_so() {
    let env = TestEnv::new();
    let mut acp = Acp::start(&env);
    acp.send(&[initialize(1), new_session(2, &env)]).await;
    let id = acp.answer(2).await["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let load = |n| {
        request(
            n,
            "session/load",
            json!({"sessionId": id, "cwd": env.project, "mcpServers": []}),
        )
    };
    // Twice at once as well: the second must not race the first into the store's lock.
    acp.send(&[load(3), load(4)]).await;
    for n in [3, 4] {
        let answer = acp.answer(n).await;
        assert_eq!(code(&answer), -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("already open on this connection"), "{message}");
        assert!(!message.contains("in use by"), "{message}");
        assert!(
            !message.contains(&acp.child.id().unwrap().to_string()),
            "names no pid: {message}"
        );
    }
    acp.close().await;
}
