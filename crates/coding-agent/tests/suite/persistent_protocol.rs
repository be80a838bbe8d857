//! The line protocol of persistent hooks (docs/hooks.md, "The line protocol"), the way it can go
//! wrong in earnest: through the real `elph run`, a persistent `failClosed` guard that prints an
//! extra line, answers with another request's id, or prints garbage. Before request ids, each of
//! these shifted the guard's answers by one event, and the write the guard meant to stop ran with
//! the previous event's "allow". Now every block holds for the event it was meant for, the broken
//! event fails closed, and nothing lands on another event. Then the documented examples, run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use coding_agent::hooks::config::Protocol;
use coding_agent::hooks::discovery::resolve_command;
use coding_agent::hooks::{HookDefinition, HookHost, HookScope, HookSet};
use elph_agent::hooks::{
    HookEvent, HookPayload, Matcher, PayloadBase, PreToolUsePayload, RunStatus, parse_outcome,
};
use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};
use test_support::hook_scripts::write_script;

use super::docs_examples::{code_blocks, read_doc};
use super::run_e2e::{elph, run_elph};

/// A guard on write_file: blocks `secret.txt`, allows the rest, and on `trigger.txt` misbehaves
/// the way its first argument says. Every answer it means echoes the payload's request id.
const GUARD: &str = r#"mode=$1
while IFS= read -r line; do
  id=${line#'{"requestId":'}; id=${id%%,*}
  case "$line" in
    *'"path":"trigger.txt"'*)
      case "$mode" in
        # Its block for this event, and the same line once more.
        extra-line)
          printf '{"requestId":%s,"block":true,"reason":"no trigger.txt"}\n' "$id"
          printf '{"requestId":%s,"block":true,"reason":"no trigger.txt"}\n' "$id" ;;
        # An "allow" that names the next request instead of this one.
        wrong-id) printf '{"requestId":%s}\n' "$((id + 1))" ;;
        # Chatter on stdout, then its "allow".
        garbage) echo 'thinking about trigger.txt...'; printf '{"requestId":%s}\n' "$id" ;;
      esac ;;
    *'"path":"secret.txt"'*) printf '{"requestId":%s,"block":true,"reason":"no secret.txt"}\n' "$id" ;;
    *) printf '{"requestId":%s}\n' "$id" ;;
  esac
done
"#;

const FILES: [&str; 3] = ["trigger.txt", "allowed.txt", "secret.txt"];

/// What the model got back for each of the three writes, in order.
fn tool_results(server: &FakeModelServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().expect("the model was asked");
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `elph run` with the guard in `mode`, writing trigger.txt, allowed.txt and secret.txt in turn.
async fn three_writes(mode: &str) -> (TestEnv, FakeModelServer, Vec<String>) {
    let env = TestEnv::new();
    let guard = write_script(&env.config_dir.join("hooks"), "guard.sh", GUARD);
    env.write_home_hooks(&json!({"hooks": [{
        "id": "guard",
        "event": "preToolUse",
        "matcher": {"toolNames": ["write_file"]},
        "command": guard.display().to_string(),
        "args": [mode],
        "persistent": true,
        "failClosed": true,
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    for file in FILES {
        server.enqueue(FakeReply::tool_call(
            "write_file",
            json!({"path": file, "content": "x"}),
        ));
    }
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["write three files"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = tool_results(&server);
    assert_eq!(results.len(), 3, "{results:?}");
    (env, server, results)
}

fn written(env: &TestEnv, file: &str) -> bool {
    env.project.join(file).exists()
}

/// The guard's run log, one entry per event, in order.
fn logged_runs(env: &TestEnv) -> Vec<Value> {
    json_lines(&env.data_dir.join("logs/hooks.jsonl"))
        .into_iter()
        .filter(|entry| entry["hookId"] == "guard")
        .collect()
}

fn protocol_error(result: &str) -> bool {
    result.contains("fail-closed hook 'guard' could not decide") && result.contains("broke the line protocol")
}

#[tokio::test]
async fn an_extra_line_fails_the_next_event_closed_instead_of_answering_it() {
    let (env, _server, results) = three_writes("extra-line").await;
    // trigger.txt: the guard's own block.
    assert!(
        results[0].contains("blocked by hook 'guard': no trigger.txt"),
        "{results:?}"
    );
    // allowed.txt: the extra line is found, not read as this event's answer (that was the block
    // for trigger.txt): the event fails closed on the protocol error.
    assert!(protocol_error(&results[1]), "{results:?}");
    assert!(
        !results[1].contains("blocked by hook 'guard'"),
        "the block for trigger.txt landed on allowed.txt: {results:?}"
    );
    assert!(results[1].contains("more than one line") || results[1].contains("answered request"));
    // secret.txt: a new process answers for it, and blocks it.
    assert!(
        results[2].contains("blocked by hook 'guard': no secret.txt"),
        "{results:?}"
    );
    for file in FILES {
        assert!(!written(&env, file), "{file} was written: {results:?}");
    }
    let runs = logged_runs(&env);
    let errors: Vec<bool> = runs.iter().map(|run| run["protocolError"] == true).collect();
    assert_eq!(errors, [false, true, false], "{runs:#?}");
}

#[tokio::test]
async fn an_answer_for_another_request_fails_its_event_closed() {
    let (env, _server, results) = three_writes("wrong-id").await;
    assert!(protocol_error(&results[0]), "{results:?}");
    assert!(results[0].contains("answered request"), "{results:?}");
    assert!(
        !written(&env, "trigger.txt"),
        "the allow for another request let the write through"
    );
    // A new process answers the next events, each for itself.
    assert!(results[1].contains("Created"), "{results:?}");
    assert!(written(&env, "allowed.txt"));
    assert!(
        results[2].contains("blocked by hook 'guard': no secret.txt"),
        "{results:?}"
    );
    assert!(!written(&env, "secret.txt"));
}

#[tokio::test]
async fn garbage_fails_its_event_closed_and_its_allow_never_reaches_the_next_event() {
    let (env, _server, results) = three_writes("garbage").await;
    assert!(protocol_error(&results[0]), "{results:?}");
    assert!(results[0].contains("is not JSON"), "{results:?}");
    assert!(!written(&env, "trigger.txt"));
    assert!(results[1].contains("Created"), "{results:?}");
    assert!(written(&env, "allowed.txt"));
    // Before request ids, the "allow" printed after the garbage answered allowed.txt, and the one
    // for allowed.txt answered secret.txt: the write the guard blocks ran.
    assert!(
        results[2].contains("blocked by hook 'guard': no secret.txt"),
        "{results:?}"
    );
    assert!(
        !written(&env, "secret.txt"),
        "the guard's block shifted off secret.txt"
    );

    // doctor shows the protocol error, with its cause.
    let output = env.command(&elph()).args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let hook = &report["hooks"][0];
    assert_eq!(hook["recentRuns"]["protocolErrors"], 1, "{hook:#}");
    let messages: Vec<&str> = hook["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("broke the persistent line protocol 1 time(s)") && m.contains("is not JSON")),
        "{messages:?}"
    );
    let human = env.command(&elph()).args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("broke the persistent line protocol"), "{text}");
}

#[tokio::test]
async fn a_hook_written_before_request_ids_is_told_what_to_add() {
    let env = TestEnv::new();
    // The old protocol: an empty line for "no change".
    let old = write_script(
        &env.config_dir.join("hooks"),
        "old.sh",
        "while IFS= read -r line; do echo; done\n",
    );
    env.write_home_hooks(&json!({"hooks": [{
        "id": "old", "event": "preToolUse", "command": old.display().to_string(), "persistent": true
    }]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({"path": "."})));
    server.enqueue(FakeReply::text("done"));
    let output = run_elph(&env, &server, &["list"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("failed open") && stderr.contains(r#""no change" is {"requestId":"#),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// The documented examples
// ---------------------------------------------------------------------------------------------

/// The block of hooks.md marked `<!-- line protocol: NAME -->`.
fn documented(name: &str) -> String {
    let marker = format!("<!-- line protocol: {name} -->");
    code_blocks(&read_doc("hooks.md"))
        .into_iter()
        .find(|block| block.before == marker)
        .unwrap_or_else(|| panic!("hooks.md has no block marked {marker}"))
        .text
}

fn persistent_hook(program: &Path, project: &Path) -> HookDefinition {
    HookDefinition {
        id: "example".into(),
        event: HookEvent::PreToolUse,
        matcher: Matcher::any(),
        handler: coding_agent::hooks::discovery::Handler::Command(resolve_command(
            program.to_str().unwrap(),
            project,
            "/usr/bin:/bin",
        )),
        args: Vec::new(),
        timeout: Duration::from_secs(20),
        budget: None,
        enabled: true,
        persistent: true,
        run_async: false,
        protocol: Protocol::Elph,
        sandbox: None,
        source: project.join("hooks.json"),
        scope: HookScope::Home,
        fail_closed: true,
        max_input_bytes: elph_agent::hooks::limits::MAX_INPUT_BYTES,
        max_output_bytes: elph_agent::hooks::limits::MAX_STDOUT_BYTES,
        env: Default::default(),
    }
}

/// The documented exchange: the request line is a real payload with its id first, and the answer
/// echoes the id and is a valid outcome with no field ignored.
#[test]
fn the_documented_exchange_is_a_real_payload_and_a_valid_answer() {
    let exchange = documented("exchange");
    let lines: Vec<&str> = exchange.lines().collect();
    assert_eq!(lines.len(), 2, "{exchange}");
    assert!(lines[0].starts_with(r#"{"requestId":7,"#), "{}", lines[0]);
    let mut request: serde_json::Map<String, Value> = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(request.remove("requestId"), Some(json!(7)));
    let payload: HookPayload = serde_json::from_value(Value::Object(request.clone())).unwrap();
    assert_eq!(serde_json::to_value(&payload).unwrap(), Value::Object(request));
    let mut answer: serde_json::Map<String, Value> = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(answer.remove("requestId"), Some(json!(7)));
    let parsed = parse_outcome(HookEvent::PreToolUse, &Value::Object(answer)).unwrap();
    assert!(parsed.ignored.is_empty(), "{:?}", parsed.ignored);
}

/// The Python and shell examples, as the docs give them, answer three events through the host
/// (one process for all three, every answer in step), and answer the documented request line
/// with the documented "no change".
#[tokio::test]
async fn the_documented_python_and_shell_hooks_answer_in_step() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let request = documented("exchange").lines().next().unwrap().to_string();
    for (name, file) in [("python", "example.py"), ("sh", "example.sh")] {
        let program: PathBuf = base.join(file);
        std::fs::write(&program, documented(name)).unwrap();
        std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

        let host = HookHost::new(
            HookSet {
                hooks: vec![persistent_hook(&program, &base)],
                ..HookSet::default()
            },
            base.clone(),
            &base.join("data"),
        )
        .with_parent_env(
            ["PATH", "HOME"].map(|name| (name, std::env::var_os(name).unwrap_or_else(OsString::new))),
        );
        let mut groups = Vec::new();
        for n in 0..3 {
            let payload = HookPayload::PreToolUse(PreToolUsePayload {
                base: PayloadBase::new("s-1", &base),
                tool_name: "shell_exec".into(),
                tool_call_id: format!("call_{n}"),
                tool_input: json!({"command": "ls"}),
            });
            let dispatch = tokio::time::timeout(Duration::from_secs(30), host.run_chain(payload))
                .await
                .expect("answered within the deadline");
            assert_eq!(
                dispatch.runs[0].status,
                RunStatus::Ok,
                "{name}: {:?}",
                dispatch.runs[0]
            );
            assert!(
                dispatch.diagnostics.is_empty(),
                "{name}: {:?}",
                dispatch.diagnostics
            );
            groups.push(host.persistent().pgid("example"));
        }
        assert!(
            groups[0].is_some() && groups.iter().all(|g| *g == groups[0]),
            "{name}: {groups:?}"
        );

        let output = tokio::task::spawn_blocking({
            let (program, request) = (program.clone(), request.clone());
            move || {
                use std::io::Write;
                let mut child = std::process::Command::new(&program)
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                writeln!(child.stdin.take().unwrap(), "{request}").unwrap();
                child.wait_with_output().unwrap()
            }
        });
        let output = tokio::time::timeout(Duration::from_secs(30), output)
            .await
            .expect("the example ended with its stdin")
            .unwrap();
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(answer, json!({"requestId": 7}), "{name}");
    }
}
