//! The session API every front end drives (`coding_agent::session`), in process: operations in,
//! one ordered stream of events out, with an offline scripted model and the real store and trust
//! file in a hermetic layout.

use std::time::Duration;

use coding_agent::paths::Paths;
use coding_agent::session::{
    Approvals, Op, Outcome, Session, SessionEvent, SessionEvents, SessionOptions, TrustOutcome,
};
use elph_agent::harness::{AgentEvent, ApprovalDecision, ApprovalPolicy};
use elph_agent::hooks::StopStatus;
use serde_json::{Value, json};
use test_support::env::TestEnv;
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(30);

async fn next(events: &mut SessionEvents) -> SessionEvent {
    tokio::time::timeout(DEADLINE, events.recv())
        .await
        .expect("an event within the deadline")
        .expect("the session is still there")
}

/// The events up to and including the one `stop` picks, answering nothing.
async fn until(events: &mut SessionEvents, stop: impl Fn(&SessionEvent) -> bool) -> Vec<SessionEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next(events).await;
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// The outcome of the next finished operation.
async fn finished(events: &mut SessionEvents) -> (u64, Outcome) {
    match until(events, |event| matches!(event, SessionEvent::Finished { .. }))
        .await
        .pop()
    {
        Some(SessionEvent::Finished { op, outcome }) => (op, outcome),
        other => panic!("{other:?}"),
    }
}

fn open(env: &TestEnv, turns: Value) -> (Session, SessionEvents) {
    let script = env.root.path().join("script.json");
    std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
    let paths = Paths {
        config_dir: env.config_dir.clone(),
        data_dir: env.data_dir.clone(),
        project_dir: env.project.clone(),
    };
    let options = SessionOptions {
        model: Some(format!("scripted/{}", script.display())),
        approval: ApprovalPolicy::Ask,
        ..SessionOptions::default()
    };
    Session::open(paths, options, Approvals::Asked).expect("the session opens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_come_back_in_order_with_typed_outcomes() {
    let env = TestEnv::new();
    let (session, mut events) = open(
        &env,
        json!([
            {"text": "", "toolCalls": [{"name": "write_file", "input": {"path": "a.txt", "content": "a"}}]},
            {"text": "done"}
        ]),
    );
    let id = session.session_id().to_string();
    assert!(!session.trusted());
    let (handle, task) = session.spawn();

    // It says what it is first, then that sessionStart has run.
    let SessionEvent::Opened(opened) = next(&mut events).await else {
        panic!("Opened comes first");
    };
    assert_eq!(opened.session_id, id);
    assert!(!opened.resumed && !opened.hooks.trust.trusted);
    let start = until(&mut events, |event| matches!(event, SessionEvent::Ready)).await;
    assert!(
        start
            .iter()
            .any(|event| matches!(event, SessionEvent::Agent(AgentEvent::SessionStarted { .. })))
    );

    // /untrust in an untrusted project changes nothing and says so.
    let untrust = handle.submit(Op::Untrust);
    let (op, outcome) = finished(&mut events).await;
    assert_eq!(op, untrust);
    assert!(
        matches!(
            outcome,
            Outcome::Trust {
                trust: false,
                outcome: TrustOutcome::Unchanged(_)
            }
        ),
        "{outcome:?}"
    );

    // A turn: the question comes after the events before it, and the tool starts once answered.
    let prompt = handle.submit(Op::Prompt {
        text: "write a".into(),
        cancel: CancellationToken::new(),
    });
    let before = until(&mut events, |event| matches!(event, SessionEvent::Approval(_))).await;
    assert!(
        before
            .iter()
            .any(|event| matches!(event, SessionEvent::Agent(AgentEvent::ApprovalNeeded { .. })))
    );
    let Some(SessionEvent::Approval(question)) = before.into_iter().last() else {
        unreachable!()
    };
    assert_eq!(question.request.tool_name, "write_file");
    question.answer(ApprovalDecision::AllowOnce);
    let turn = until(&mut events, |event| {
        matches!(event, SessionEvent::Finished { .. })
    })
    .await;
    let started = turn
        .iter()
        .position(|event| matches!(event, SessionEvent::Agent(AgentEvent::ToolStarted { .. })))
        .expect("the tool's own run is announced");
    let context = turn
        .iter()
        .position(|event| matches!(event, SessionEvent::Context { .. }))
        .expect("the context use follows the turn");
    assert!(started < context && context == turn.len() - 2, "{turn:?}");
    match turn.last() {
        Some(SessionEvent::Finished {
            op,
            outcome: Outcome::Turn(result),
        }) => {
            assert_eq!(*op, prompt);
            assert_eq!(result.status, StopStatus::Completed);
            assert_eq!(result.text, "done");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read_to_string(env.project.join("a.txt")).unwrap(), "a");

    // /trust records the decision and reloads; the state comes with the outcome.
    handle.submit(Op::Trust);
    match finished(&mut events).await.1 {
        Outcome::Trust {
            trust: true,
            outcome: TrustOutcome::Changed(hooks),
        } => assert!(hooks.trust.trusted),
        other => panic!("{other:?}"),
    }
    let trust: Value =
        serde_json::from_str(&std::fs::read_to_string(env.config_dir.join("trust.json")).unwrap()).unwrap();
    assert_eq!(trust["directories"][env.project.display().to_string()], true);
    handle.submit(Op::Reload);
    assert!(matches!(finished(&mut events).await.1, Outcome::Reloaded(hooks) if hooks.trust.trusted));

    // The stored sessions, and resuming the one that runs.
    handle.submit(Op::ListSessions);
    match finished(&mut events).await.1 {
        Outcome::Sessions(Ok(sessions)) => assert!(sessions.iter().any(|s| s.id == id)),
        other => panic!("{other:?}"),
    }
    handle.submit(Op::Resume(id.clone()));
    assert!(matches!(finished(&mut events).await.1, Outcome::AlreadyInSession(same) if same == id));

    // End: sessionEnd with the reason, then Ended, then nothing.
    handle.submit(Op::End {
        reason: "test".into(),
    });
    let end = until(&mut events, |event| matches!(event, SessionEvent::Ended { .. })).await;
    assert!(end.iter().any(|event| matches!(
        event,
        SessionEvent::Agent(AgentEvent::SessionEnded { reason }) if reason == "test"
    )));
    tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
    assert!(events.recv().await.is_none(), "nothing after Ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_ends_the_session_and_new_opens_another() {
    let env = TestEnv::new();
    let (session, mut events) = open(&env, json!([{"text": "hi"}]));
    let first = session.session_id().to_string();
    let (handle, task) = session.spawn();
    until(&mut events, |event| matches!(event, SessionEvent::Ready)).await;

    let new = handle.submit(Op::New);
    let switch = until(&mut events, |event| {
        matches!(event, SessionEvent::Finished { .. })
    })
    .await;
    let ended = switch.iter().position(|event| {
        matches!(event, SessionEvent::Agent(AgentEvent::SessionEnded { reason }) if reason == "new_session")
    });
    let opened = switch.iter().position(|event| match event {
        SessionEvent::Opened(opened) => opened.session_id != first,
        _ => false,
    });
    assert!(
        ended.unwrap() < opened.unwrap(),
        "the old one ends first: {switch:?}"
    );
    assert!(matches!(
        switch.last(),
        Some(SessionEvent::Finished { op, outcome: Outcome::Switched }) if *op == new
    ));

    drop(handle);
    let end = until(&mut events, |event| matches!(event, SessionEvent::Ended { .. })).await;
    assert!(end.iter().any(|event| matches!(
        event,
        SessionEvent::Agent(AgentEvent::SessionEnded { reason }) if reason == "exit"
    )));
    tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_mode_switches_by_name_or_to_the_next_and_holds_for_a_new_session() {
    use elph_agent::harness::AgentMode;
    let env = TestEnv::new();
    let (session, mut events) = open(&env, json!([{"text": "hi"}]));
    let (handle, task) = session.spawn();
    let start = until(&mut events, |event| matches!(event, SessionEvent::Ready)).await;
    assert!(
        start
            .iter()
            .any(|event| matches!(event, SessionEvent::Opened(opened) if opened.mode == AgentMode::Build))
    );

    handle.submit(Op::SetMode(None));
    assert!(matches!(
        finished(&mut events).await.1,
        Outcome::Mode(Ok(AgentMode::Plan))
    ));
    handle.submit(Op::SetMode(Some("Build!".into())));
    match finished(&mut events).await.1 {
        Outcome::Mode(Err(error)) => assert!(error.contains("expected build or plan"), "{error}"),
        other => panic!("{other:?}"),
    }
    handle.submit(Op::SetMode(Some("plan".into())));
    assert!(matches!(
        finished(&mut events).await.1,
        Outcome::Mode(Ok(AgentMode::Plan))
    ));

    // The session opened by /new in this one's place runs in the mode chosen.
    handle.submit(Op::New);
    let switch = until(&mut events, |event| {
        matches!(event, SessionEvent::Finished { .. })
    })
    .await;
    assert!(
        switch
            .iter()
            .any(|event| matches!(event, SessionEvent::Opened(opened) if opened.mode == AgentMode::Plan))
    );
    drop(handle);
    until(&mut events, |event| matches!(event, SessionEvent::Ended { .. })).await;
    tokio::time::timeout(DEADLINE, task).await.unwrap().unwrap();
}
