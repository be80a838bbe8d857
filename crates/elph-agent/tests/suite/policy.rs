//! The file policy and agent modes through the harness: a scripted model makes the calls, a
//! recording approver answers, real files in temp dirs show what happened.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use elph_agent::harness::{
    AgentHarness, AgentMode, ApprovalDecision, ApprovalPolicy, ApprovalRequest, Approver, HarnessConfig,
    PLAN_MODE_PROMPT,
};
use elph_agent::hooks::HookRegistry;
use elph_agent::messages::Message;
use elph_agent::policy::FilePolicy;
use elph_agent::tools::ToolCatalog;
use elph_ai::ProviderError;
use elph_ai::ScriptedProvider;
use elph_ai::{Provider, Request, StreamEvent, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The scripted model, recording every request it receives.
struct Recording {
    inner: ScriptedProvider,
    requests: Arc<Mutex<Vec<Request>>>,
}

#[async_trait::async_trait]
impl Provider for Recording {
    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn context_window(&self) -> u64 {
        self.inner.context_window()
    }
    async fn stream(
        &self,
        request: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Turn, ProviderError> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.stream(request, on_event).await
    }
}

/// Answers every question the same way and remembers the questions.
struct Answering {
    answer: ApprovalDecision,
    asked: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait::async_trait]
impl Approver for Answering {
    async fn approve(&self, request: &ApprovalRequest) -> Option<ApprovalDecision> {
        self.asked.lock().unwrap().push(request.clone());
        Some(self.answer)
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
    config: PathBuf,
    outside: PathBuf,
    requests: Arc<Mutex<Vec<Request>>>,
    approver: Arc<Answering>,
}

impl Fixture {
    fn new(answer: ApprovalDecision) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fixture = Fixture {
            project: root.join("project"),
            config: root.join("config"),
            outside: root.join("outside"),
            root,
            _dir: dir,
            requests: Arc::default(),
            approver: Arc::new(Answering {
                answer,
                asked: Mutex::default(),
            }),
        };
        for dir in [&fixture.project, &fixture.config, &fixture.outside] {
            std::fs::create_dir(dir).unwrap();
        }
        std::fs::write(fixture.config.join("trust.json"), r#"{"directories":{}}"#).unwrap();
        std::fs::write(fixture.outside.join("secret.txt"), "outside secret\n").unwrap();
        fixture
    }

    /// A harness whose model makes `calls` (name, input) one per request, then answers "done".
    fn harness(&self, approval: ApprovalPolicy, calls: &[(&str, Value)]) -> AgentHarness {
        let mut turns: Vec<Value> = calls
            .iter()
            .map(|(name, input)| json!({"toolCalls": [{"name": name, "input": input}]}))
            .collect();
        turns.push(json!({"text": "done"}));
        let script = self.root.join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
        let provider = Arc::new(Recording {
            inner: ScriptedProvider::load(&script).unwrap(),
            requests: self.requests.clone(),
        });
        let mut config = HarnessConfig::new("session-1", &self.project);
        config.approval = approval;
        config.policy = Arc::new(FilePolicy::new(&self.project).protect(&self.config, "CONFIG_DIR"));
        AgentHarness::new(
            provider,
            Arc::new(ToolCatalog::native()),
            HookRegistry::default(),
            config,
        )
        .with_approver(self.approver.clone())
    }

    fn asked(&self) -> Vec<ApprovalRequest> {
        self.approver.asked.lock().unwrap().clone()
    }
}

/// The tool results of the harness's transcript, in order, as (text, is_error).
fn results(harness: &AgentHarness) -> Vec<(String, bool)> {
    harness
        .transcript()
        .context_messages()
        .into_iter()
        .filter_map(|message| match message {
            Message::Tool {
                content, is_error, ..
            } => Some((content.text(), is_error)),
            _ => None,
        })
        .collect()
}

async fn run(harness: &mut AgentHarness) {
    let cancel = CancellationToken::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(60),
        harness.run_turn("go", &cancel),
    )
    .await
    .expect("the turn ends");
}

fn trust_json(fixture: &Fixture) -> String {
    std::fs::read_to_string(fixture.config.join("trust.json")).unwrap()
}

#[tokio::test]
async fn writes_outside_the_roots_are_refused_whatever_the_approval_policy() {
    for approval in [ApprovalPolicy::Auto, ApprovalPolicy::Ask] {
        let fixture = Fixture::new(ApprovalDecision::AllowOnce);
        symlink(&fixture.outside, fixture.project.join("out")).unwrap();
        let escape = fixture.outside.join("escape.txt");
        let mut harness = fixture.harness(
            approval,
            &[
                ("write_file", json!({"path": "../outside/a.txt", "content": "x"})),
                (
                    "write_file",
                    json!({"path": escape.to_str().unwrap(), "content": "x"}),
                ),
                ("write_file", json!({"path": "out/new/b.txt", "content": "x"})),
                (
                    "edit_file",
                    json!({"path": "out/../outside/secret.txt", "old_text": "outside", "new_text": "hacked"}),
                ),
            ],
        );
        run(&mut harness).await;
        for (text, is_error) in results(&harness) {
            assert!(is_error, "{approval:?}: {text}");
            assert!(
                text.contains("outside the folders this session may write"),
                "{text}"
            );
        }
        assert!(
            fixture.asked().is_empty(),
            "no approval can allow it, so none is asked"
        );
        let left: Vec<_> = std::fs::read_dir(&fixture.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["secret.txt"]);
        assert_eq!(
            std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
            "outside secret\n"
        );
    }
}

#[tokio::test]
async fn protected_writes_are_refused_under_auto_even_inside_a_writable_root() {
    let fixture = Fixture::new(ApprovalDecision::AllowOnce);
    let trust = fixture.config.join("trust.json");
    let mut harness = fixture.harness(
        ApprovalPolicy::Auto,
        &[
            (
                "write_file",
                json!({"path": trust.to_str().unwrap(), "content": r#"{"directories":{"/":true}}"#}),
            ),
            ("write_file", json!({"path": ".elph/hooks.json", "content": "{}"})),
            (
                "write_file",
                json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh"}),
            ),
        ],
    );
    // CONFIG_DIR as a writable root too: protection still holds inside it.
    let widened = FilePolicy::new(&fixture.project)
        .protect(&fixture.config, "CONFIG_DIR")
        .with_write_scope(elph_agent::policy::WriteScope::Roots(vec![
            fixture.project.clone(),
            fixture.config.clone(),
        ]));
    harness.config_mut().policy = Arc::new(widened);
    run(&mut harness).await;
    let answered = results(&harness);
    assert_eq!(answered.len(), 3);
    for (text, is_error) in &answered {
        assert!(is_error, "{text}");
        assert!(
            text.contains("only when the user approves that exact call"),
            "{text}"
        );
    }
    assert!(answered[0].0.contains("CONFIG_DIR"));
    assert_eq!(trust_json(&fixture), r#"{"directories":{}}"#);
    assert!(!fixture.project.join(".elph").exists());
    assert!(!fixture.project.join(".git").exists());
}

#[tokio::test]
async fn a_protected_write_runs_only_when_that_exact_call_is_approved() {
    let fixture = Fixture::new(ApprovalDecision::AllowForSession);
    let calls = [
        (
            "write_file",
            json!({"path": ".elph/hooks.json", "content": "{\"hooks\":[]}"}),
        ),
        ("write_file", json!({"path": ".elph/other.json", "content": "{}"})),
        ("write_file", json!({"path": "plain.txt", "content": "x"})),
        ("write_file", json!({"path": "plain2.txt", "content": "x"})),
    ];
    let mut harness = fixture.harness(ApprovalPolicy::Ask, &calls);
    run(&mut harness).await;
    assert!(
        results(&harness).iter().all(|(_, is_error)| !is_error),
        "{:?}",
        results(&harness)
    );
    let asked = fixture.asked();
    // "For this session" is not remembered for protected writes: both were asked; the plain
    // writes share one remembered answer.
    assert_eq!(asked.len(), 3, "{asked:#?}");
    assert!(asked[0].reason.contains(".elph folder"), "{}", asked[0].reason);
    assert!(asked[1].reason.contains(".elph/other.json"));
    assert_eq!(
        std::fs::read_to_string(fixture.project.join(".elph/hooks.json")).unwrap(),
        "{\"hooks\":[]}"
    );

    let refusing = Fixture::new(ApprovalDecision::Deny);
    let mut harness = refusing.harness(ApprovalPolicy::Ask, &calls[..1]);
    run(&mut harness).await;
    assert!(results(&harness)[0].1);
    assert!(!refusing.project.join(".elph").exists());
}

#[tokio::test]
async fn reads_outside_the_project_follow_the_approval_policy() {
    let reads = |fixture: &Fixture| {
        symlink(&fixture.outside, fixture.project.join("link-out")).unwrap();
        std::fs::write(fixture.project.join("inside.txt"), "inside\n").unwrap();
        vec![
            ("read_file", json!({"path": "inside.txt"})),
            ("list_dir", json!({})),
            ("grep", json!({"pattern": "inside"})),
            ("read_file", json!({"path": "../outside/secret.txt"})),
            ("read_file", json!({"path": "link-out/secret.txt"})),
            ("list_dir", json!({"path": "/"})),
            (
                "grep",
                json!({"pattern": "secret", "path": fixture.outside.to_str().unwrap()}),
            ),
            ("find_path", json!({"glob": "*.txt", "path": "link-out"})),
        ]
    };

    // ask: every outside read is asked (and answered yes once), the inside ones are not.
    let fixture = Fixture::new(ApprovalDecision::AllowOnce);
    let calls = reads(&fixture);
    let mut harness = fixture.harness(ApprovalPolicy::Ask, &calls);
    run(&mut harness).await;
    let asked = fixture.asked();
    let tools: Vec<&str> = asked.iter().map(|request| request.tool_name.as_str()).collect();
    assert_eq!(tools, ["read_file", "read_file", "list_dir", "grep", "find_path"]);
    assert!(
        asked[0].reason.contains("reads outside the project"),
        "{}",
        asked[0].reason
    );
    assert!(
        asked[1].reason.contains("link-out/secret.txt (which is "),
        "{}",
        asked[1].reason
    );
    let answered = results(&harness);
    assert!(answered.iter().all(|(_, is_error)| !is_error), "{answered:?}");
    assert!(answered[3].0.contains("outside secret"));

    // deny: refused without asking; inside reads still run.
    let fixture = Fixture::new(ApprovalDecision::AllowOnce);
    let calls = reads(&fixture);
    let mut harness = fixture.harness(ApprovalPolicy::Deny, &calls);
    run(&mut harness).await;
    assert!(fixture.asked().is_empty());
    let answered = results(&harness);
    for (text, is_error) in &answered[..3] {
        assert!(!is_error, "{text}");
    }
    for (text, is_error) in &answered[3..] {
        assert!(is_error);
        assert!(text.contains("would read outside the project"), "{text}");
        assert!(!text.contains("outside secret"));
    }

    // auto: allowed, nobody asked.
    let fixture = Fixture::new(ApprovalDecision::Deny);
    let calls = reads(&fixture);
    let mut harness = fixture.harness(ApprovalPolicy::Auto, &calls);
    run(&mut harness).await;
    assert!(fixture.asked().is_empty());
    assert!(results(&harness).iter().all(|(_, is_error)| !is_error));
}

#[tokio::test]
async fn allowing_outside_reads_for_the_session_stops_asking_for_that_tool() {
    let fixture = Fixture::new(ApprovalDecision::AllowForSession);
    let secret = fixture.outside.join("secret.txt");
    let calls = [
        ("read_file", json!({"path": secret.to_str().unwrap()})),
        ("read_file", json!({"path": "../outside/secret.txt"})),
        ("list_dir", json!({"path": "../outside"})),
    ];
    let mut harness = fixture.harness(ApprovalPolicy::Ask, &calls);
    run(&mut harness).await;
    let tools: Vec<String> = fixture
        .asked()
        .into_iter()
        .map(|request| request.tool_name)
        .collect();
    assert_eq!(tools, ["read_file", "list_dir"]);
}

#[tokio::test]
async fn plan_mode_offers_only_read_tools_and_says_so() {
    let fixture = Fixture::new(ApprovalDecision::AllowOnce);
    let mut harness = fixture.harness(
        ApprovalPolicy::Auto,
        &[("write_file", json!({"path": "a.txt", "content": "x"}))],
    );
    harness.set_mode(AgentMode::Plan);
    run(&mut harness).await;
    let requests = fixture.requests.lock().unwrap().clone();
    let offered: Vec<&str> = requests[0].tools.iter().map(|tool| tool.name.as_str()).collect();
    for write in ["write_file", "edit_file"] {
        assert!(!offered.contains(&write), "{offered:?}");
    }
    for read in ["read_file", "list_dir", "grep", "find_path", "shell_exec"] {
        assert!(offered.contains(&read), "{offered:?}");
    }
    assert!(requests[0].system_prompt.contains(PLAN_MODE_PROMPT));
    let (text, is_error) = &results(&harness)[0];
    assert!(*is_error && text.contains("not available in plan mode"), "{text}");
    assert!(!fixture.project.join("a.txt").exists());

    // Back in build mode the same call writes, and the prompt line is gone.
    let mut harness = fixture.harness(
        ApprovalPolicy::Auto,
        &[("write_file", json!({"path": "a.txt", "content": "x"}))],
    );
    harness.set_mode(AgentMode::Plan);
    harness.set_mode(AgentMode::Build);
    fixture.requests.lock().unwrap().clear();
    run(&mut harness).await;
    let requests = fixture.requests.lock().unwrap().clone();
    assert!(!requests[0].system_prompt.contains(PLAN_MODE_PROMPT));
    assert!(requests[0].tools.iter().any(|tool| tool.name == "write_file"));
    assert!(Path::new(&fixture.project.join("a.txt")).exists());
}
