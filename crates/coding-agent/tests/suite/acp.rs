//! `elph acp` in process: the SDK's own client talks to `coding_agent::acp::serve` over in-memory
//! pipes, against a local server that speaks the OpenAI wire format, with real hook processes.

use std::future::Future;
use std::path::Path;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, InitializeResponse, LoadSessionRequest,
    NewSessionRequest, PermissionOptionKind, PromptRequest, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification,
    SessionUpdate, StopReason, ToolCallContent, ToolCallStatus, ToolKind,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client, ConnectTo, Error};
use coding_agent::acp::AcpConfig;
use coding_agent::paths::Paths;
use elph_agent::harness::ApprovalPolicy;
use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

pub const DEADLINE: Duration = Duration::from_secs(30);

/// Awaits `future` under the test deadline.
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(DEADLINE, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {DEADLINE:?}"))
}

pub type PermissionAsk = (RequestPermissionRequest, Responder<RequestPermissionResponse>);

/// The SDK's client side: requests go out through `cx`; updates and permission requests are
/// collected in order.
pub struct TestClient {
    pub cx: ConnectionTo<Agent>,
    pub init: InitializeResponse,
    updates: mpsc::UnboundedReceiver<SessionNotification>,
    permissions: mpsc::UnboundedReceiver<PermissionAsk>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), Error>>,
}

impl TestClient {
    /// Connects over `transport` and initializes.
    pub async fn connect(transport: impl ConnectTo<Client> + 'static) -> TestClient {
        Self::connect_initialized(transport, InitializeRequest::new(ProtocolVersion::V1)).await
    }

    /// Connects over `transport` and initializes with `initialize` (the client's capabilities).
    pub async fn connect_initialized(
        transport: impl ConnectTo<Client> + 'static,
        initialize: InitializeRequest,
    ) -> TestClient {
        let (updates_tx, updates) = mpsc::unbounded_channel();
        let (permissions_tx, permissions) = mpsc::unbounded_channel();
        let (cx_tx, cx_rx) = oneshot::channel();
        let (stop, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(
            Client
                .v1()
                .name("elph-test-client")
                .on_receive_notification(
                    async move |notification: SessionNotification, _cx| {
                        let _ = updates_tx.send(notification);
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |request: RequestPermissionRequest, responder, _cx| {
                        let _ = permissions_tx.send((request, responder));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .connect_with(transport, async move |cx| {
                    let _ = cx_tx.send(cx);
                    let _ = stop_rx.await;
                    Ok(())
                }),
        );
        let cx = within("client connection", cx_rx)
            .await
            .expect("the client connected");
        let init = within("initialize", cx.send_request(initialize).block_task())
            .await
            .expect("initialize answered");
        TestClient {
            cx,
            init,
            updates,
            permissions,
            stop: Some(stop),
            task,
        }
    }

    pub async fn new_session(&self, cwd: &Path) -> String {
        let response = within(
            "session/new",
            self.cx.send_request(NewSessionRequest::new(cwd)).block_task(),
        )
        .await
        .expect("session/new answered");
        response.session_id.0.to_string()
    }

    pub async fn load_session(&self, session_id: &str, cwd: &Path) -> Result<(), Error> {
        within(
            "session/load",
            self.cx
                .send_request(LoadSessionRequest::new(session_id.to_string(), cwd))
                .block_task(),
        )
        .await
        .map(|_| ())
    }

    pub async fn prompt(&self, session_id: &str, text: &str) -> Result<PromptResponse, Error> {
        within("session/prompt", self.prompt_future(session_id, text)).await
    }

    /// The prompt as a future the test can run beside other work (a cancel, a permission answer).
    pub fn prompt_future(
        &self,
        session_id: &str,
        text: &str,
    ) -> impl Future<Output = Result<PromptResponse, Error>> + Send + 'static {
        self.cx
            .send_request(PromptRequest::new(
                session_id.to_string(),
                vec![ContentBlock::from(text.to_string())],
            ))
            .block_task()
    }

    pub fn cancel(&self, session_id: &str) {
        self.cx
            .send_notification(CancelNotification::new(session_id.to_string()))
            .expect("session/cancel sent");
    }

    /// Every update received so far.
    pub fn drain(&mut self) -> Vec<SessionNotification> {
        let mut updates = Vec::new();
        while let Ok(update) = self.updates.try_recv() {
            updates.push(update);
        }
        updates
    }

    /// Waits for an update that satisfies `matches`, returning it and everything before it.
    pub async fn wait_for(
        &mut self,
        what: &str,
        matches: impl Fn(&SessionNotification) -> bool,
    ) -> Vec<SessionNotification> {
        let mut seen = Vec::new();
        loop {
            let update = within(what, self.updates.recv())
                .await
                .expect("the client is still connected");
            let done = matches(&update);
            seen.push(update);
            if done {
                return seen;
            }
        }
    }

    pub async fn next_permission(&mut self) -> PermissionAsk {
        within("session/request_permission", self.permissions.recv())
            .await
            .expect("the client is still connected")
    }

    pub fn no_pending_permission(&mut self) -> bool {
        self.permissions.try_recv().is_err()
    }

    /// Closes the client's side of the connection.
    pub async fn close(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        within("client shutdown", self.task)
            .await
            .expect("client task")
            .expect("client connection ended cleanly");
    }
}

/// Answers a permission request with the option of `kind`.
pub fn answer(ask: PermissionAsk, kind: PermissionOptionKind) {
    let (request, responder) = ask;
    let option = request
        .options
        .iter()
        .find(|option| option.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?} option in {:?}", request.options));
    responder
        .respond(RequestPermissionResponse::new(
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option.option_id.clone())),
        ))
        .expect("permission answered");
}

/// All agent message text of `updates`, in order.
pub fn agent_text(updates: &[SessionNotification]) -> String {
    updates
        .iter()
        .filter_map(|update| match &update.update {
            SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// All notice text of `updates` (`[hook] …`, `[elph] …`): agent thought chunks, outside the answer.
pub fn notice_text(updates: &[SessionNotification]) -> String {
    updates
        .iter()
        .filter_map(|update| match &update.update {
            SessionUpdate::AgentThoughtChunk(chunk) => match &chunk.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The command names of the last available-commands update in `updates`.
pub fn last_commands(updates: &[SessionNotification]) -> Option<Vec<String>> {
    updates.iter().rev().find_map(|update| match &update.update {
        SessionUpdate::AvailableCommandsUpdate(commands) => Some(
            commands
                .available_commands
                .iter()
                .map(|command| command.name.clone())
                .collect(),
        ),
        _ => None,
    })
}

pub fn is_commands_update(update: &SessionNotification) -> bool {
    matches!(update.update, SessionUpdate::AvailableCommandsUpdate(_))
}

pub fn tool_text(content: &[ToolCallContent]) -> String {
    content
        .iter()
        .filter_map(|content| match content {
            ToolCallContent::Content(content) => match &content.content {
                ContentBlock::Text(text) => Some(text.text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One agent serving in process, and the model server it talks to.
pub struct Setup {
    pub env: TestEnv,
    pub server: FakeModelServer,
}

impl Setup {
    pub async fn new() -> Setup {
        let env = TestEnv::new();
        let server = FakeModelServer::start(Wire::OpenAi).await;
        // A custom provider that reuses the OpenAI adapter and needs no key: nothing from the
        // process environment is involved.
        let providers = env.config_dir.join("providers");
        std::fs::create_dir_all(&providers).unwrap();
        std::fs::write(
            providers.join("fake.json"),
            json!({"name": "fake", "api": "openai-chat", "baseUrl": server.base_url()}).to_string(),
        )
        .unwrap();
        Setup { env, server }
    }

    fn config(&self, approval: ApprovalPolicy) -> AcpConfig {
        AcpConfig {
            paths: Paths {
                config_dir: self.env.config_dir.clone(),
                data_dir: self.env.data_dir.clone(),
                project_dir: self.env.project.clone(),
            },
            model: Some("fake/gpt-test".into()),
            approval,
            sandbox: Default::default(),
            mode: Default::default(),
            shutdown: None,
        }
    }

    /// Starts an agent and connects a client to it over an in-memory pipe.
    pub async fn connect(&self, approval: ApprovalPolicy) -> (TestClient, JoinHandle<Result<(), Error>>) {
        self.connect_with(approval, InitializeRequest::new(ProtocolVersion::V1))
            .await
    }

    /// [`Setup::connect`], initializing with `initialize`.
    pub async fn connect_with(
        &self,
        approval: ApprovalPolicy,
        initialize: InitializeRequest,
    ) -> (TestClient, JoinHandle<Result<(), Error>>) {
        let (client_end, agent_end) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_end);
        let agent = tokio::spawn(coding_agent::acp::serve(
            self.config(approval),
            ByteStreams::new(agent_write.compat_write(), agent_read.compat()),
        ));
        let (client_read, client_write) = tokio::io::split(client_end);
        let client = TestClient::connect_initialized(
            ByteStreams::new(client_write.compat_write(), client_read.compat()),
            initialize,
        )
        .await;
        (client, agent)
    }
}

/// Closes the client and waits for the agent to finish (every sessionEnd has run by then).
pub async fn finish(client: TestClient, agent: JoinHandle<Result<(), Error>>) {
    client.close().await;
    within("agent shutdown", agent)
        .await
        .expect("agent task")
        .expect("the agent ends cleanly when the client closes");
}

/// A `#!/bin/sh` hook that appends its payload to `log`.
pub fn recorder(env: &TestEnv, name: &str, log: &Path) -> String {
    env.project_script(name, &format!("cat >> '{}'\n", log.display()));
    format!("hooks/{name}")
}

pub fn hook(id: &str, event: &str, command: &str) -> Value {
    json!({"id": id, "event": event, "command": command})
}

pub fn events_of(log: &Path) -> Vec<String> {
    json_lines(log)
        .iter()
        .map(|payload| payload["event"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// Writes hooks for `events` that record into `log`, in `project`.
pub fn recording_hooks(project: &Path, log: &Path, events: &[&str]) {
    let dir = project.join(".elph");
    test_support::hook_scripts::write_script(
        &dir.join("hooks"),
        "record.sh",
        &format!("cat >> '{}'\n", log.display()),
    );
    let hooks: Vec<Value> = events
        .iter()
        .map(|event| hook(&format!("rec-{event}"), event, "hooks/record.sh"))
        .collect();
    std::fs::write(dir.join("hooks.json"), json!({"hooks": hooks}).to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_advertises_capabilities_and_needs_no_auth() {
    let setup = Setup::new().await;
    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let init = &client.init;
    assert_eq!(init.protocol_version, ProtocolVersion::V1);
    assert!(
        init.auth_methods.is_empty(),
        "no authentication for local providers"
    );
    assert!(init.agent_capabilities.load_session);
    assert!(init.agent_capabilities.prompt_capabilities.embedded_context);
    assert_eq!(
        init.agent_info.as_ref().map(|info| info.name.as_str()),
        Some("elph")
    );
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_messages_and_tool_calls_and_runs_the_lifecycle_hooks() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    let log = env.evidence("events.jsonl");
    let pwd = env.evidence("pwd.txt");
    let record = recorder(env, "record.sh", &log);
    env.project_script(
        "pwd.sh",
        &format!("cat > /dev/null\npwd >> '{}'\n", pwd.display()),
    );
    env.write_project_hooks(&json!({"hooks": [
        hook("start", "sessionStart", &record),
        hook("where", "sessionStart", "hooks/pwd.sh"),
        hook("stop", "stop", &record),
        hook("end", "sessionEnd", &record),
    ]}));
    std::fs::write(env.project.join("README.md"), "hello from the readme\n").unwrap();
    setup
        .server
        .enqueue(FakeReply::tool_call("read_file", json!({"path": "README.md"})));
    setup
        .server
        .enqueue(FakeReply::text("All done, the readme says hello."));

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    let started = json_lines(&log);
    assert_eq!(
        events_of(&log),
        ["sessionStart"],
        "sessionStart ran before session/new answered"
    );
    assert_eq!(started[0]["source"], "new");
    assert_eq!(started[0]["sessionId"], session.as_str());
    assert_eq!(started[0]["projectDir"], env.project.display().to_string());
    assert_eq!(
        std::fs::read_to_string(&pwd).unwrap().trim(),
        env.project.display().to_string()
    );
    let opening = client.wait_for("available commands", is_commands_update).await;
    assert_eq!(
        last_commands(&opening).unwrap(),
        ["reload", "untrust", "compact", "model"],
        "a trusted project offers /untrust, not /trust"
    );

    let response = client
        .prompt(&session, "what does the readme say?")
        .await
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.drain();
    assert!(
        updates
            .iter()
            .all(|update| update.session_id.0.as_ref() == session)
    );
    let start = updates
        .iter()
        .position(|update| matches!(&update.update, SessionUpdate::ToolCall(_)))
        .expect("a tool call update");
    let SessionUpdate::ToolCall(call) = &updates[start].update else {
        unreachable!()
    };
    assert_eq!(call.kind, ToolKind::Read);
    // Pending while hooks and approval decide, in progress once it runs.
    assert_eq!(call.status, ToolCallStatus::Pending);
    assert_eq!(call.title, "Read README.md");
    assert_eq!(call.raw_input, Some(json!({"path": "README.md"})));
    let running = updates
        .iter()
        .position(|update| matches!(&update.update, SessionUpdate::ToolCallUpdate(u) if u.tool_call_id == call.tool_call_id))
        .expect("a tool call update for the call");
    let SessionUpdate::ToolCallUpdate(running_update) = &updates[running].update else {
        unreachable!()
    };
    assert_eq!(running_update.fields.status, Some(ToolCallStatus::InProgress));
    let done = updates
        .iter()
        .position(|update| matches!(&update.update, SessionUpdate::ToolCallUpdate(u) if u.tool_call_id == call.tool_call_id && u.fields.content.is_some()))
        .expect("the finished update for the call");
    assert!(done > running && running > start);
    let SessionUpdate::ToolCallUpdate(finished) = &updates[done].update else {
        unreachable!()
    };
    assert_eq!(finished.fields.status, Some(ToolCallStatus::Completed));
    assert!(
        tool_text(finished.fields.content.as_deref().unwrap()).contains("hello from the readme"),
        "{finished:?}"
    );
    assert_eq!(agent_text(&updates[done..]), "All done, the readme says hello.");

    assert_eq!(
        events_of(&log),
        ["sessionStart", "stop"],
        "stop ran when the prompt ended"
    );
    assert_eq!(json_lines(&log)[1]["status"], "completed");

    finish(client, agent).await;
    assert_eq!(events_of(&log), ["sessionStart", "stop", "sessionEnd"]);
    assert_eq!(json_lines(&log)[2]["reason"], "closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hook_notices_and_blocked_calls_reach_the_client() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    env.project_script(
        "block.sh",
        "cat > /dev/null\nprintf '%s' '{\"block\": true, \"reason\": \"no shell here\"}'\n",
    );
    env.project_script(
        "broken.sh",
        "cat > /dev/null\necho 'something broke' >&2\nexit 3\n",
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "no-shell", "event": "preToolUse", "command": "hooks/block.sh", "matcher": {"toolNames": ["shell_exec"]}},
        hook("broken", "userPromptSubmit", "hooks/broken.sh"),
    ]}));
    setup.server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": "touch pwned"}),
    ));
    setup.server.enqueue(FakeReply::text("I could not run it."));

    let (mut client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    let response = client.prompt(&session, "run it").await.unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    let updates = client.drain();
    // Notices travel as thoughts, never inside the model's answer.
    assert!(
        !agent_text(&updates).contains("[hook"),
        "{}",
        agent_text(&updates)
    );
    let text = notice_text(&updates);
    assert!(
        text.contains("[hook] hook 'no-shell' blocked the tool call: no shell here"),
        "{text}"
    );
    assert!(
        text.contains("[hook warning] hook 'broken' (userPromptSubmit) failed open"),
        "{text}"
    );
    let call = updates
        .iter()
        .find_map(|update| match &update.update {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call.kind, ToolKind::Execute);
    let finished = updates
        .iter()
        .find_map(|update| match &update.update {
            SessionUpdate::ToolCallUpdate(update) if update.fields.status.is_some() => Some(update.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished.fields.status, Some(ToolCallStatus::Failed));
    assert!(tool_text(finished.fields.content.as_deref().unwrap()).contains("no shell here"));
    assert!(
        !env.project.join("pwned").exists(),
        "the blocked command never ran"
    );
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_hook_asks_become_permission_requests() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    env.project_script(
        "ask.sh",
        "cat > /dev/null\nprintf '%s' '{\"decision\": \"ask\", \"reason\": \"reading is audited\"}'\n",
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "audit", "event": "preToolUse", "command": "hooks/ask.sh", "matcher": {"toolNames": ["read_file"]}},
    ]}));
    std::fs::write(env.project.join("b.txt"), "bee\n").unwrap();
    setup.server.enqueue_all([
        FakeReply::tool_call("write_file", json!({"path": "a.txt", "content": "a"})),
        FakeReply::tool_call("read_file", json!({"path": "b.txt"})),
        FakeReply::tool_call("write_file", json!({"path": "c.txt", "content": "c"})),
        FakeReply::tool_call("write_file", json!({"path": "d.txt", "content": "d"})),
        FakeReply::text("done"),
    ]);

    let (mut client, agent) = setup.connect(ApprovalPolicy::Ask).await;
    let session = client.new_session(&env.project).await;
    let prompt = tokio::spawn(client.prompt_future(&session, "write some files"));

    // Native policy `ask`: the user rejects.
    let ask = client.next_permission().await;
    let kinds: Vec<_> = ask.0.options.iter().map(|option| option.kind).collect();
    assert_eq!(
        kinds,
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::RejectOnce
        ]
    );
    assert_eq!(ask.0.session_id.0.as_ref(), session);
    assert_eq!(ask.0.tool_call.fields.kind, Some(ToolKind::Edit));
    let first_call = ask.0.tool_call.tool_call_id.clone();
    let before = client.drain();
    assert!(
        before
            .iter()
            .any(|update| matches!(&update.update, SessionUpdate::ToolCall(call) if call.tool_call_id == first_call)),
        "the client saw the tool call before the question about it"
    );
    answer(ask, PermissionOptionKind::RejectOnce);

    // A preToolUse hook's `ask` on a read-only tool: the user allows it once.
    let ask = client.next_permission().await;
    assert_eq!(ask.0.tool_call.fields.kind, Some(ToolKind::Read));
    let question = tool_text(ask.0.tool_call.fields.content.as_deref().unwrap());
    assert!(question.contains("reading is audited"), "{question}");
    answer(ask, PermissionOptionKind::AllowOnce);

    // Allowed for the session: the next write_file runs without a question.
    let ask = client.next_permission().await;
    assert_eq!(ask.0.tool_call.fields.title.as_deref(), Some("Write c.txt"));
    answer(ask, PermissionOptionKind::AllowAlways);

    let response = within("prompt", prompt).await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(client.no_pending_permission(), "d.txt needed no second question");
    assert!(!env.project.join("a.txt").exists());
    assert_eq!(std::fs::read_to_string(env.project.join("c.txt")).unwrap(), "c");
    assert_eq!(std::fs::read_to_string(env.project.join("d.txt")).unwrap(), "d");
    let statuses: Vec<ToolCallStatus> = client
        .drain()
        .iter()
        .filter_map(|update| match &update.update {
            SessionUpdate::ToolCallUpdate(update) if update.fields.content.is_some() => update.fields.status,
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ToolCallStatus::Failed,
            ToolCallStatus::Completed,
            ToolCallStatus::Completed,
            ToolCallStatus::Completed
        ]
    );
    finish(client, agent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_turn_and_kills_running_hooks() {
    let setup = Setup::new().await;
    let env = &setup.env;
    env.trust_project();
    let log = env.evidence("events.jsonl");
    let pid_file = env.evidence("hook.pid");
    let record = recorder(env, "record.sh", &log);
    env.project_script(
        "slow.sh",
        &format!("cat > /dev/null\necho $$ > '{}'\nsleep 30\n", pid_file.display()),
    );
    env.write_project_hooks(&json!({"hooks": [
        {"id": "slow", "event": "beforeAgent", "command": "hooks/slow.sh", "timeoutMs": 60000},
        hook("stop", "stop", &record),
    ]}));

    let (client, agent) = setup.connect(ApprovalPolicy::Auto).await;
    let session = client.new_session(&env.project).await;
    let started = std::time::Instant::now();
    let prompt = tokio::spawn(client.prompt_future(&session, "take your time"));
    let pid: i32 = within("the slow hook starts", async {
        loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    client.cancel(&session);
    let response = within("the cancelled prompt", prompt).await.unwrap().unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "cancel did not wait for the hook"
    );
    let live = test_support::hook_scripts::live_group_members(pid, Duration::from_secs(10));
    assert!(live.is_empty(), "the hook's process group was killed: {live:?}");
    assert_eq!(events_of(&log), ["stop"]);
    assert_eq!(json_lines(&log)[0]["status"], "cancelled");
    assert!(setup.server.requests().is_empty(), "the model was never asked");
    finish(client, agent).await;
}
