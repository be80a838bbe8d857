//! Async hooks (`"async": true`) through the real `elph run`: the turn does not wait for them,
//! every queued run ends before `elph run` exits, and doctor counts them like any other run.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use test_support::env::TestEnv;
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::run_e2e::{elph, run_elph};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn s(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test]
async fn three_one_second_async_hooks_do_not_hold_the_turn_and_all_finish_before_exit() {
    let env = TestEnv::new();
    let scripts = env.root.path().join("scripts");
    let gate = env.evidence("gate");
    // Each async hook waits until the turn has reached its stop hook, then works for a second.
    // Had the turn waited for them, the stop hook would never open the gate: each would run to
    // its timeout and be killed, and none would write its file.
    let mut hooks = Vec::new();
    for n in 1..=3 {
        let done = env.evidence(&format!("done-{n}"));
        let command = write_script(
            &scripts,
            &format!("slow-{n}.sh"),
            &format!(
                "cat > /dev/null\nwhile [ ! -f '{gate}' ]; do sleep 0.05; done\nsleep 1\necho done > '{done}'",
                gate = s(&gate),
                done = s(&done)
            ),
        );
        hooks.push(json!({
            "id": format!("slow-{n}"),
            "event": "userPromptSubmit",
            "command": s(&command),
            "async": true,
            "timeoutMs": 20000,
        }));
    }
    let opener = write_script(
        &scripts,
        "open-gate.sh",
        &format!("cat > /dev/null\ntouch '{}'", s(&gate)),
    );
    hooks.push(json!({"id": "open-gate", "event": "stop", "command": s(&opener)}));
    env.write_home_hooks(&json!({ "hooks": hooks }));

    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hello"));
    let output = run_elph(&env, &server, &["say hello"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(gate.exists(), "the stop hook ran while the async hooks waited");
    for n in 1..=3 {
        let done = env.evidence(&format!("done-{n}"));
        assert_eq!(
            std::fs::read_to_string(&done).unwrap_or_default(),
            "done\n",
            "async hook slow-{n} had not finished when elph run exited: {}",
            stderr(&output)
        );
    }

    // Their runs are in the run log, and doctor counts them like the others.
    let doctor = env.command(&elph()).args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    for n in 1..=3 {
        let id = format!("slow-{n}");
        let hook = report["hooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|hook| hook["id"] == id.as_str())
            .unwrap_or_else(|| panic!("no {id} in {report:#}"));
        assert_eq!(hook["async"], true);
        assert_eq!(
            (&hook["recentRuns"]["count"], &hook["recentRuns"]["ok"]),
            (&json!(1), &json!(1)),
            "{hook:#}"
        );
    }
}

#[tokio::test]
async fn an_async_post_tool_use_hook_cannot_change_the_result() {
    let env = TestEnv::new();
    let scripts = env.root.path().join("scripts");
    let patch = write_script(
        &scripts,
        "patch.sh",
        r#"cat > /dev/null; echo '{"content": [{"type": "text", "text": "PATCHED"}]}'"#,
    );
    env.write_home_hooks(&json!({"hooks": [{
        "id": "late-patch", "event": "postToolUse", "command": s(&patch), "async": true
    }]}));
    std::fs::write(env.project.join("notes.txt"), "original text\n").unwrap();
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("read_file", json!({"path": "notes.txt"})));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["read the notes"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let last = server.requests().last().cloned().unwrap();
    let tool = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .to_string();
    assert!(tool.contains("original text"), "{tool}");
    assert!(
        !tool.contains("PATCHED"),
        "an async hook's outcome was applied: {tool}"
    );

    // `elph hooks test` runs it in the chain and says why its outcome does not count.
    let test = env
        .command(&elph())
        .args(["hooks", "test", "postToolUse", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&test.stdout).unwrap();
    let run = &report["runs"][0];
    assert_eq!(
        (&run["status"], &run["outcome"]),
        (&json!("ok"), &Value::Null),
        "{report:#}"
    );
    assert!(
        run["notes"][0]
            .as_str()
            .unwrap()
            .contains("its outcome was not applied"),
        "{report:#}"
    );
    assert_eq!(report["hooks"][0]["async"], true);
}

#[test]
fn async_is_refused_on_a_fail_closed_or_persistent_hook() {
    let env = TestEnv::new();
    for (extra, word) in [
        (json!({"failClosed": true}), "fail-closed guard"),
        (json!({"persistent": true}), "cannot be persistent"),
    ] {
        let mut hook = json!({"id": "x", "event": "preToolUse", "command": "/bin/true", "async": true});
        hook.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let file = env.root.path().join("hooks.json");
        std::fs::write(&file, json!({ "hooks": [hook] }).to_string()).unwrap();
        let output = env
            .command(&elph())
            .args(["hooks", "validate", &s(&file)])
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
        assert_eq!(output.status.code(), Some(1), "{text}");
        assert!(text.contains("/hooks/0/async") && text.contains(word), "{text}");
    }
}
