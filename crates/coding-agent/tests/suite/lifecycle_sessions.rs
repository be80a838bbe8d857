//! Sessions always resume, and one process writes a session at a time: a session killed during a
//! tool call continues against a provider that enforces OpenAI's pairing rule; concurrent `-c`
//! runs never interleave a transcript; `--session` of a session in use, or of another project,
//! fails with a message that says why.

use std::time::Duration;

use serde_json::Value;
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::lifecycle_orphans::{During, Front, busy_elph};
use super::lifecycle_support::Running;
use super::run_e2e::{elph, run_elph};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The roles of a session's transcript, from `elph sessions --json` and the store's own file.
fn roles(env: &TestEnv, id: &str) -> Vec<String> {
    let db = rusqlite::Connection::open(env.data_dir.join("sessions.db")).unwrap();
    let mut statement = db
        .prepare("SELECT body FROM entries WHERE session_id = ?1 ORDER BY seq")
        .unwrap();
    statement
        .query_map([id], |row| row.get::<_, String>(0))
        .unwrap()
        .map(|body| {
            let body: Value = serde_json::from_str(&body.unwrap()).unwrap();
            body["message"]["role"].as_str().unwrap_or("summary").to_string()
        })
        .collect()
}

fn session_ids(env: &TestEnv) -> Vec<String> {
    let output = env
        .command(&elph())
        .args(["sessions", "--json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_during_a_tool_call_continues_against_a_strict_provider() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let (running, _) = busy_elph(&env, &server, Front::Run, During::ShellExec).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(running.pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    running.finish().await;

    server.enforce_tool_pairing();
    server.enqueue(FakeReply::text("picked up where we were"));
    let output = run_elph(&env, &server, &["-c", "go on"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "picked up where we were"
    );
    assert!(
        stderr(&output).contains("stopped during the tool call shell_exec")
            && stderr(&output).contains("recorded as interrupted"),
        "the user is told: {}",
        stderr(&output)
    );
    let last = server.requests().last().cloned().unwrap();
    let tool = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .expect("the interrupted call has a result");
    assert!(
        tool["content"]
            .to_string()
            .contains("interrupted when Elph stopped"),
        "{tool}"
    );
    // Stored, not only sent: a third run needs no repair.
    let output = run_elph(&env, &server, &["-c", "and again"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("recorded as interrupted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_concurrent_continues_never_interleave_a_transcript() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    for n in 0..3 {
        server.enqueue(FakeReply::text(format!("first answer {n}")));
        let output = run_elph(&env, &server, &[&format!("start {n}")]).await;
        assert!(output.status.success(), "{}", stderr(&output));
    }
    // Slow answers, so that the runs overlap.
    for n in 0..10 {
        server.enqueue(
            FakeReply::text(format!("slow answer number {n} in several words"))
                .chunk_delay(Duration::from_millis(40)),
        );
    }
    let runs: Vec<_> = (0..10)
        .map(|n| {
            let mut command = env.command(&elph());
            command
                .env("OPENAI_API_KEY", "k")
                .env("OPENAI_BASE_URL", server.base_url())
                .args(["run", "--model", "openai/gpt-test", "-c", &format!("more {n}")]);
            tokio::task::spawn_blocking(move || command.output().unwrap())
        })
        .collect();
    let mut continued = 0;
    for run in runs {
        let output = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("every run ends")
            .unwrap();
        if output.status.success() {
            continued += 1;
        } else {
            assert_eq!(output.status.code(), Some(1));
            assert!(
                stderr(&output).contains("is in use") && stderr(&output).contains("Elph process"),
                "a run that found every session busy says so: {}",
                stderr(&output)
            );
        }
    }
    assert!(continued >= 3, "each free session was continued ({continued})");
    let ids = session_ids(&env);
    assert_eq!(ids.len(), 3, "-c never starts a session");
    let mut users = 0;
    for id in &ids {
        let roles = roles(&env, id);
        for pair in roles.chunks(2) {
            assert_eq!(pair, ["user", "assistant"], "session {id}: {roles:?}");
        }
        users += roles.len() / 2;
    }
    assert_eq!(
        users,
        3 + continued,
        "every continued turn is in exactly one session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_use_is_refused_naming_the_other_process() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    let output = run_elph(&env, &server, &["first"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let id = session_ids(&env)[0].clone();

    server.enqueue(FakeReply::text("this never ends").hang());
    let holder = Running::start(
        &env,
        &server,
        &["run", "--model", "openai/gpt-test", "--session", &id, "hold it"],
        false,
    );
    server.wait_for_requests(2, Duration::from_secs(30)).await;
    let output = run_elph(&env, &server, &["--session", &id, "me too"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains(&format!("session {id} is in use by Elph process {}", holder.pid)),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "one sentence: {message}");
    assert_eq!(server.requests().len(), 2, "the refused run asked nothing");

    // The holder dies: the lock goes with it.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(holder.pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    holder.finish().await;
    let output = run_elph(&env, &server, &["--session", &id, "now me"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_another_project_is_refused() {
    let env = TestEnv::new();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("the secret plan of project A"));
    let output = run_elph(&env, &server, &["plan"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let id = session_ids(&env)[0].clone();

    let other = env.root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let mut command = env.command(&elph());
    command
        .current_dir(&other)
        .env("OPENAI_API_KEY", "k")
        .env("OPENAI_BASE_URL", server.base_url())
        .args([
            "run",
            "--model",
            "openai/gpt-test",
            "--session",
            &id,
            "what was the plan?",
        ]);
    let output = assert_cmd::Command::from_std(command)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!(
            "session {id} belongs to the project {}",
            env.project.display()
        )),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        server.requests().len(),
        1,
        "nothing of A reached a request from B"
    );
}
