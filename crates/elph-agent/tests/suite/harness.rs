//! The harness with an offline scripted model and native (in-process) hooks that record what they see.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use elph_agent::harness::{AgentEvent, AgentHarness, CompactOutcome, Entry, HarnessConfig};
use elph_agent::hooks::{
    BeforeAgentOutcome, CompactTrigger, HookEvent, HookOutcome, HookPayload, HookRegistry, NativeHook,
    PreCompactOutcome, PreToolUseOutcome, StopStatus,
};
use elph_agent::messages::Message;
use elph_agent::tools::ToolCatalog;
use elph_ai::ScriptedProvider;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A native hook that records every payload and answers with a fixed outcome.
struct Recorder {
    id: &'static str,
    event: HookEvent,
    outcome: Option<HookOutcome>,
    seen: Arc<Mutex<Vec<HookPayload>>>,
}

impl NativeHook for Recorder {
    fn id(&self) -> &str {
        self.id
    }
    fn event(&self) -> HookEvent {
        self.event
    }
    fn handle(&self, payload: &HookPayload) -> Option<HookOutcome> {
        self.seen.lock().unwrap().push(payload.clone());
        self.outcome.clone()
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    seen: Arc<Mutex<Vec<HookPayload>>>,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            seen: Arc::default(),
        }
    }

    fn recorder(
        &self,
        id: &'static str,
        event: HookEvent,
        outcome: Option<HookOutcome>,
    ) -> Arc<dyn NativeHook> {
        Arc::new(Recorder {
            id,
            event,
            outcome,
            seen: self.seen.clone(),
        })
    }

    fn harness(&self, turns: Value, hooks: HookRegistry) -> AgentHarness {
        let script = self.dir.path().join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
        let provider = Arc::new(ScriptedProvider::load(&script).unwrap());
        AgentHarness::new(
            provider,
            Arc::new(ToolCatalog::native()),
            hooks,
            HarnessConfig::new("session-1", self.dir.path()),
        )
    }

    fn payloads(&self, event: HookEvent) -> Vec<HookPayload> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.event() == event)
            .cloned()
            .collect()
    }
}

fn every_tool_call_is_answered(messages: &[&Message]) -> bool {
    let mut open = Vec::new();
    for message in messages {
        match message {
            Message::Assistant { tool_calls, .. } => open.extend(tool_calls.iter().map(|c| c.id.clone())),
            Message::Tool { tool_call_id, .. } => open.retain(|id| id != tool_call_id),
            Message::User { .. } => {}
        }
    }
    open.is_empty()
}

#[tokio::test]
async fn manual_compaction_summarizes_older_turns_and_keeps_recent_ones() {
    let fixture = Fixture::new();
    let hooks = HookRegistry::default()
        .with_native(fixture.recorder(
            "pre",
            HookEvent::PreCompact,
            Some(HookOutcome::PreCompact(PreCompactOutcome {
                cancel: None,
                custom_instructions: Some("HOOK-INSTRUCTIONS".into()),
            })),
        ))
        .with_native(fixture.recorder("post", HookEvent::PostCompact, None));
    let mut harness = fixture.harness(
        json!([{"text": "answer one"}, {"text": "answer two"}, {"text": "THE SUMMARY"}]),
        hooks,
    );
    harness.config_mut().compaction.keep_recent = 2;
    let cancel = CancellationToken::new();
    harness.run_turn("prompt one", &cancel).await;
    harness.run_turn("prompt two", &cancel).await;
    let outcome = harness
        .compact(CompactTrigger::Manual, Some("user instructions".into()), &cancel)
        .await;
    assert_eq!(outcome, CompactOutcome::Compacted { entries_compacted: 2 });

    let pre = &fixture.payloads(HookEvent::PreCompact)[0];
    let HookPayload::PreCompact(pre) = pre else {
        panic!()
    };
    assert_eq!((pre.trigger, pre.entry_count), (CompactTrigger::Manual, 2));
    assert_eq!(pre.custom_instructions.as_deref(), Some("user instructions"));
    let HookPayload::PostCompact(post) = &fixture.payloads(HookEvent::PostCompact)[0] else {
        panic!()
    };
    assert_eq!(post.entries_compacted, 2);

    let context = harness.transcript().context_messages();
    assert!(context[0].content().text().contains("THE SUMMARY"));
    assert_eq!(
        context[1..],
        [
            Message::user("prompt two"),
            Message::assistant("answer two", vec![])
        ]
    );
    assert_eq!(
        harness.transcript().messages().count(),
        4,
        "the stored transcript keeps the full history"
    );
    assert!(matches!(
        harness.transcript().entries().last(),
        Some(Entry::Summary { first_kept: 2, .. })
    ));
}

#[tokio::test]
async fn compaction_with_nothing_older_does_nothing_and_a_hook_can_cancel_it() {
    let fixture = Fixture::new();
    let hooks = HookRegistry::default().with_native(fixture.recorder(
        "veto",
        HookEvent::PreCompact,
        Some(HookOutcome::PreCompact(PreCompactOutcome {
            cancel: Some(true),
            custom_instructions: None,
        })),
    ));
    let mut harness = fixture.harness(json!([{"text": "a"}, {"text": "b"}]), hooks);
    let cancel = CancellationToken::new();
    assert_eq!(
        harness.compact(CompactTrigger::Manual, None, &cancel).await,
        CompactOutcome::NothingToCompact
    );
    harness.run_turn("one", &cancel).await;
    harness.run_turn("two", &cancel).await;
    assert_eq!(
        harness.compact(CompactTrigger::Manual, None, &cancel).await,
        CompactOutcome::CancelledByHook {
            hook_id: "veto".into()
        }
    );
    assert!(
        harness
            .transcript()
            .entries()
            .iter()
            .all(|e| matches!(e, Entry::Message { .. }))
    );
}

#[tokio::test]
async fn before_agent_material_is_never_stored() {
    let fixture = Fixture::new();
    let hooks = HookRegistry::default().with_native(fixture.recorder(
        "ctx",
        HookEvent::BeforeAgent,
        Some(HookOutcome::BeforeAgent(BeforeAgentOutcome {
            system_prompt: Some("EXTRA-SYSTEM".into()),
            additional_context: None,
            messages: Some(vec![Message::user("TEMPORARY")]),
        })),
    ));
    let mut harness = fixture.harness(
        json!([{"text": "", "toolCalls": [{"name": "list_dir", "input": {}}]}, {"text": "done"}]),
        hooks,
    );
    let result = harness.run_turn("hello", &CancellationToken::new()).await;
    assert_eq!(result.status, StopStatus::Completed);
    let stored = serde_json::to_string(harness.transcript().entries()).unwrap();
    assert!(
        !stored.contains("TEMPORARY") && !stored.contains("EXTRA-SYSTEM"),
        "{stored}"
    );
    assert_eq!(harness.transcript().messages().count(), 4);
}

#[tokio::test]
async fn a_native_block_reaches_the_model_as_an_error_result() {
    let fixture = Fixture::new();
    let hooks = HookRegistry::default().with_native(fixture.recorder(
        "native-guard",
        HookEvent::PreToolUse,
        Some(HookOutcome::PreToolUse(PreToolUseOutcome {
            block: Some(true),
            reason: Some("not here".into()),
            ..Default::default()
        })),
    ));
    let marker = fixture.dir.path().join("marker");
    let mut harness = fixture.harness(
        json!([
            {"text": "", "toolCalls": [{"name": "shell_exec", "input": {"command": format!("touch {}", marker.display())}}]},
            {"text": "ok"}
        ]),
        hooks,
    );
    harness.run_turn("go", &CancellationToken::new()).await;
    assert!(!marker.exists());
    let tool_message = harness
        .transcript()
        .messages()
        .find(|m| m.role() == "tool")
        .unwrap()
        .clone();
    let Message::Tool {
        content, is_error, ..
    } = tool_message
    else {
        panic!()
    };
    assert!(is_error);
    assert!(
        content
            .text()
            .contains("blocked by hook 'native-guard': not here")
    );
}

#[tokio::test]
async fn cancelling_mid_tool_answers_every_call_and_runs_stop() {
    let fixture = Fixture::new();
    let hooks = HookRegistry::default().with_native(fixture.recorder("stop", HookEvent::Stop, None));
    let mut harness = fixture.harness(
        json!([{"text": "", "toolCalls": [
            {"name": "shell_exec", "input": {"command": "sleep 30"}},
            {"name": "list_dir", "input": {}}
        ]}]),
        hooks,
    );
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    harness = harness.with_events(events_tx);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if matches!(event, AgentEvent::ToolCallStarted { .. }) {
                tokio::time::sleep(Duration::from_millis(100)).await;
                canceller.cancel();
            }
        }
    });
    let result = tokio::time::timeout(Duration::from_secs(10), harness.run_turn("go", &cancel))
        .await
        .unwrap();
    assert_eq!(result.status, StopStatus::Cancelled);
    let messages: Vec<&Message> = harness.transcript().messages().collect();
    assert!(
        every_tool_call_is_answered(&messages),
        "the stored transcript stays valid: {messages:?}"
    );
    let HookPayload::Stop(stop) = &fixture.payloads(HookEvent::Stop)[0] else {
        panic!()
    };
    assert_eq!(stop.status, StopStatus::Cancelled);
}

/// The phase of each event, as a front end's spinner would name it.
fn phase(event: &AgentEvent) -> Option<String> {
    match event {
        AgentEvent::HooksStarted { event, tool_name } => Some(match tool_name {
            Some(tool) => format!("hooks {event} {tool}"),
            None => format!("hooks {event}"),
        }),
        AgentEvent::Hooks { dispatch } => Some(format!("hooks done {}", dispatch.event)),
        AgentEvent::ModelRequestStarted => Some("model".into()),
        AgentEvent::ToolStarted { tool_name, .. } => Some(format!("tool {tool_name}")),
        AgentEvent::ToolCallFinished { tool_name, ran, .. } => Some(format!("done {tool_name} ran={ran}")),
        _ => None,
    }
}

#[tokio::test]
async fn the_harness_names_every_phase_in_order() {
    let fixture = Fixture::new();
    let hooks = HookRegistry::default()
        .with_native(fixture.recorder("prompt", HookEvent::UserPromptSubmit, None))
        .with_native(fixture.recorder("audit", HookEvent::PreToolUse, None))
        .with_native(fixture.recorder("stop", HookEvent::Stop, None));
    let mut harness = fixture.harness(
        json!([
            {"text": "", "toolCalls": [
                {"name": "list_dir", "input": {}},
                {"name": "shell_exec", "input": {"command": "true"}}
            ]},
            {"text": "ok"}
        ]),
        hooks,
    );
    let (events_tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    harness = harness.with_events(events_tx);
    harness.run_turn("go", &CancellationToken::new()).await;
    drop(harness);
    let mut phases = Vec::new();
    while let Some(event) = events.recv().await {
        phases.extend(phase(&event));
    }
    assert_eq!(
        phases,
        [
            "hooks userPromptSubmit",
            "hooks done userPromptSubmit",
            "model",
            "hooks preToolUse list_dir",
            "hooks done preToolUse",
            "tool list_dir",
            "done list_dir ran=true",
            "hooks preToolUse shell_exec",
            "hooks done preToolUse",
            "tool shell_exec",
            "done shell_exec ran=true",
            "model",
            "hooks stop",
            "hooks done stop",
        ]
    );
}

/// A command-hook runner that wants only preToolUse on `list_dir`, and records every question the
/// harness asks it and every chain it is handed.
#[derive(Default)]
struct Asked {
    questions: Mutex<Vec<(HookEvent, Option<String>)>>,
    runs: Mutex<Vec<HookPayload>>,
}

#[async_trait::async_trait]
impl elph_agent::hooks::HookRunner for Asked {
    async fn run(&self, chain: &mut elph_agent::hooks::Reducer) -> elph_agent::hooks::Ran {
        self.runs.lock().unwrap().push(chain.payload().clone());
        elph_agent::hooks::Ran::default()
    }

    fn has_hooks(&self, event: HookEvent, tool_name: Option<&str>) -> bool {
        self.questions
            .lock()
            .unwrap()
            .push((event, tool_name.map(str::to_string)));
        event == HookEvent::PreToolUse && tool_name == Some("list_dir")
    }
}

#[tokio::test]
async fn each_event_asks_once_whether_a_hook_runs_and_only_then_gets_a_payload() {
    let fx = Fixture::new();
    let runner = Arc::new(Asked::default());
    let mut harness = fx.harness(
        json!([
            {"text": "", "toolCalls": [{"name": "list_dir", "input": {"path": "."}}]},
            {"text": "", "toolCalls": [{"name": "read_file", "input": {"path": "missing.txt"}}]},
            {"text": "done"}
        ]),
        HookRegistry::new(runner.clone()),
    );
    let result = harness.run_turn("go", &CancellationToken::new()).await;
    assert_eq!(result.text, "done");
    let tool = |name: &str| Some(name.to_string());
    assert_eq!(
        *runner.questions.lock().unwrap(),
        [
            (HookEvent::UserPromptSubmit, None),
            (HookEvent::BeforeAgent, None),
            (HookEvent::Context, None),
            (HookEvent::PreToolUse, tool("list_dir")),
            (HookEvent::PostToolUse, tool("list_dir")),
            (HookEvent::Context, None),
            (HookEvent::PreToolUse, tool("read_file")),
            (HookEvent::PostToolUseFailure, tool("read_file")),
            (HookEvent::Context, None),
            (HookEvent::Stop, None),
        ],
        "one question per event, none twice"
    );
    let runs = runner.runs.lock().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].tool_name(), Some("list_dir"));
}
