//! Budgets and telemetry (issue 34, point 8), through the real `elph run`: a hook over its
//! `budgetMs` is a warning in the run and in `elph doctor`, and still guards; with
//! `OTEL_EXPORTER_OTLP_ENDPOINT` set, hook runs (async ones too, with their own start and end, or
//! cut off by a signal) and tool calls arrive as spans at a local OTLP receiver, decoded there with
//! OpenTelemetry's own `opentelemetry-proto` package.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::env::{TestEnv, json_lines};
use test_support::fake_model::{FakeModelServer, FakeReply, Wire};

use super::lifecycle_support::{Running, long_command, pids_in};
use super::run_e2e::{elph, run_elph, run_elph_with};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn a_hook_over_its_budget_is_a_warning_in_the_run_and_in_doctor_and_still_blocks() {
    let env = TestEnv::new();
    env.trust_project();
    env.project_script(
        "slow-guard.sh",
        "cat >/dev/null\nsleep 0.3\nprintf '%s' '{\"block\": true, \"reason\": \"slow but sure\"}'\n",
    );
    env.write_project_hooks(&json!({"hooks": [{
        "id": "slow-guard",
        "event": "preToolUse",
        "command": "hooks/slow-guard.sh",
        "budgetMs": 50,
        "failClosed": true,
    }]}));
    let marker = env.evidence("ran-marker");
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call(
        "shell_exec",
        json!({"command": format!("touch {}", marker.display())}),
    ));
    server.enqueue(FakeReply::text("understood"));
    let output = run_elph(&env, &server, &["run it"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "a guard over budget still guards");
    let said = stderr(&output);
    assert!(said.contains("over its budgetMs of 50 ms"), "{said}");
    assert!(said.contains("blocked the tool call: slow but sure"), "{said}");

    let doctor = env.command(&elph()).args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let hook = report["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|hook| hook["id"] == "slow-guard")
        .unwrap();
    assert_eq!(hook["budgetMs"], 50);
    let finding = hook["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|finding| finding["message"].as_str().unwrap().starts_with("over budget"))
        .unwrap_or_else(|| panic!("an over-budget finding: {hook}"));
    assert_eq!(finding["level"], "warning");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("1 of its last 1 runs"),
        "{finding}"
    );
    let text = env.command(&elph()).arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("over budget") && text.contains("budget   50 ms"),
        "{text}"
    );
}

/// A folder with `opentelemetry-proto` (and protobuf) importable, installed from PyPI with pip
/// the first time, as CI's fresh machine needs it.
fn otlp_python() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("otlp-python");
    let importable = |dir: &Path| {
        Command::new("python3")
            .args([
                "-c",
                "import opentelemetry.proto.collector.trace.v1.trace_service_pb2",
            ])
            .env("PYTHONPATH", dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if importable(&dir) {
        return dir;
    }
    let mut install = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--target",
        ])
        .arg(&dir)
        .arg("opentelemetry-proto")
        .spawn()
        .expect("python3 -m pip (the OTLP receiver decodes with the opentelemetry-proto package)");
    let deadline = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(status) = install.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = install.kill();
            panic!("pip install opentelemetry-proto took over 300 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(status.success(), "pip install opentelemetry-proto failed");
    assert!(
        importable(&dir),
        "opentelemetry-proto is not importable from {}",
        dir.display()
    );
    dir
}

/// The receiver: OTLP/HTTP on 127.0.0.1, each request decoded into an `ExportTraceServiceRequest`
/// with opentelemetry-proto (OTLP/JSON's hex ids turned into the bytes protobuf's JSON mapping
/// reads as base64, as the spec tells receivers to), one line per span written to `out`.
const RECEIVER: &str = r#"
import base64, http.server, json, sys
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

out = open(sys.argv[1], "a")

def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None

class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        document = json.loads(body)
        for resource_spans in document.get("resourceSpans", []):
            for scope_spans in resource_spans.get("scopeSpans", []):
                for span in scope_spans.get("spans", []):
                    for holder in [span] + span.get("links", []):
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if key in holder:
                                holder[key] = base64.b64encode(bytes.fromhex(holder[key])).decode()
        request = json_format.Parse(json.dumps(document), ExportTraceServiceRequest())
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    out.write(json.dumps({
                        "path": self.path,
                        "contentType": self.headers["Content-Type"],
                        "service": resource.get("service.name"),
                        "scope": scope_spans.scope.name,
                        "traceId": span.trace_id.hex(),
                        "spanId": span.span_id.hex(),
                        "parentSpanId": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "status": span.status.code,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                        "links": [{"traceId": l.trace_id.hex(), "spanId": l.span_id.hex()} for l in span.links],
                    }) + "\n")
                    out.flush()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// The receiver's process, killed when dropped.
struct Receiver(std::process::Child);

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_receiver(env: &TestEnv, out: &Path) -> (Receiver, u16) {
    let python_path = otlp_python();
    let script = env.evidence("otlp_receiver.py");
    std::fs::write(&script, RECEIVER).unwrap();
    let mut child = Command::new("python3")
        .arg(&script)
        .arg(out)
        .env("PYTHONPATH", python_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let receiver = Receiver(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the receiver says its port within 30 s");
    let port = line.trim().parse().expect("a port");
    (receiver, port)
}

#[tokio::test]
async fn hook_runs_and_tool_calls_arrive_as_otlp_spans_decoded_by_opentelemetry_proto() {
    let env = TestEnv::new();
    let spans_file = env.evidence("spans.jsonl");
    let (_receiver, port) = start_receiver(&env, &spans_file);
    env.write_home_hooks(&json!({"hooks": [
        {"id": "audit", "event": "preToolUse", "command": "/bin/sh", "args": ["-c", "cat >/dev/null"]},
        {"id": "refuse-rm", "event": "preToolUse", "command": "/bin/sh",
         "args": ["-c", "cat >/dev/null; printf '{\"block\": true, \"reason\": \"traced block\"}'"],
         "matcher": {"toolNames": ["shell_exec"]}},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    server.enqueue(FakeReply::tool_call("shell_exec", json!({"command": "rm -rf x"})));
    server.enqueue(FakeReply::text("done"));
    let endpoint = format!("http://127.0.0.1:{port}");
    let output = run_elph_with(
        &env,
        &server,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "elph-test"),
        ],
        &["look around"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));

    // Sent before `elph run` ended; the receiver may still be writing its lines.
    let deadline = Instant::now() + Duration::from_secs(20);
    let spans = loop {
        let spans = json_lines(&spans_file);
        if spans.iter().any(|span| span["name"] == "elph session") || Instant::now() > deadline {
            break spans;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let named = |name: &str| -> Vec<&Value> { spans.iter().filter(|span| span["name"] == name).collect() };
    let session = named("elph session");
    assert_eq!(session.len(), 1, "one session span: {spans:#?}");
    let session = session[0];
    assert_eq!(session["path"], "/v1/traces");
    assert_eq!(session["contentType"], "application/json");
    assert_eq!(session["service"], "elph-test");
    assert_eq!(
        session["traceId"].as_str().unwrap().len(),
        32,
        "16 bytes of trace id"
    );
    for span in &spans {
        assert_eq!(span["traceId"], session["traceId"], "one trace: {span}");
        assert_eq!(span["kind"], 1, "internal spans: {span}");
        assert!(span["end"].as_u64() >= span["start"].as_u64(), "{span}");
        if span["name"] != "elph session" {
            assert_eq!(
                span["parentSpanId"], session["spanId"],
                "under the session: {span}"
            );
        }
    }
    let audits = named("hook audit");
    assert_eq!(audits.len(), 2, "audit ran for both tool calls: {spans:#?}");
    assert_eq!(audits[0]["attributes"]["elph.hook.event"], "preToolUse");
    assert_eq!(audits[0]["attributes"]["elph.hook.status"], "ok");
    let refusal = named("hook refuse-rm");
    assert_eq!(refusal.len(), 1, "{spans:#?}");
    assert_eq!(refusal[0]["attributes"]["elph.hook.changed"], true);
    assert!(
        refusal[0]["attributes"]["elph.hook.effects"]
            .as_str()
            .unwrap()
            .contains("traced block"),
        "{}",
        refusal[0]
    );
    let listed = named("tool list_dir");
    assert_eq!(listed.len(), 1, "{spans:#?}");
    assert_eq!(listed[0]["attributes"]["elph.tool.ran"], true);
    assert_eq!(listed[0]["status"], 1, "STATUS_CODE_OK");
    let shell = named("tool shell_exec");
    assert_eq!(shell.len(), 1, "{spans:#?}");
    assert_eq!(
        shell[0]["attributes"]["elph.tool.ran"], false,
        "blocked, so it never ran"
    );
}

/// The spans in `file` once the session's span has arrived (it is sent last), within 20 s.
fn spans_of_the_session(file: &Path) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let spans = json_lines(file);
        if spans.iter().any(|span| span["name"] == "elph session") || Instant::now() > deadline {
            return spans;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn the_span<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|span| span["name"] == name).collect();
    assert_eq!(found.len(), 1, "one span {name}: {spans:#?}");
    found[0]
}

fn nanos(span: &Value, at: &str) -> u64 {
    span[at].as_u64().unwrap_or_else(|| panic!("no {at} in {span}"))
}

#[tokio::test]
async fn async_hook_runs_arrive_as_spans_with_their_own_start_and_end_linked_to_their_tool_call() {
    let env = TestEnv::new();
    let spans_file = env.evidence("spans.jsonl");
    let (_receiver, port) = start_receiver(&env, &spans_file);
    let audited = env.evidence("audited");
    env.write_home_hooks(&json!({"hooks": [
        {"id": "late-audit", "event": "postToolUse", "async": true, "command": "/bin/sh",
         "args": ["-c", format!("cat >/dev/null; sleep 0.5; echo done > '{}'", audited.display())]},
        // Still going when the turn ends: the session waits for it before its span ends.
        {"id": "slow-stop", "event": "stop", "async": true, "timeoutMs": 30000, "command": "/bin/sh",
         "args": ["-c", "cat >/dev/null; sleep 1; exit 3"]},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::tool_call("list_dir", json!({})));
    server.enqueue(FakeReply::text("done"));
    let endpoint = format!("http://127.0.0.1:{port}");
    let output = run_elph_with(
        &env,
        &server,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
        &["look around"],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(audited.exists(), "the async run finished before the exit");

    let spans = spans_of_the_session(&spans_file);
    let session = the_span(&spans, "elph session");
    let tool = the_span(&spans, "tool list_dir");
    let audit = the_span(&spans, "hook late-audit");
    let attributes = &audit["attributes"];
    assert_eq!(attributes["elph.hook.async"], true, "{audit}");
    assert_eq!(attributes["elph.hook.cut_off"], false, "{audit}");
    assert_eq!(attributes["elph.hook.event"], "postToolUse", "{audit}");
    assert_eq!(attributes["elph.hook.status"], "ok", "{audit}");
    assert_eq!(audit["status"], 1, "STATUS_CODE_OK: {audit}");
    assert_eq!(audit["parentSpanId"], session["spanId"], "{audit}");
    assert_eq!(audit["traceId"], session["traceId"], "{audit}");
    // Linked to the tool call whose postToolUse queued it.
    assert_eq!(
        attributes["elph.tool.call_id"], tool["attributes"]["elph.tool.call_id"],
        "{audit}"
    );
    assert_eq!(
        audit["links"],
        json!([{"traceId": session["traceId"], "spanId": tool["spanId"]}]),
        "{audit}"
    );
    // Its own start and end: queued by the tool call, then half a second of sleep.
    assert!(nanos(audit, "start") >= nanos(tool, "start"), "{audit} {tool}");
    assert!(
        nanos(audit, "end") - nanos(audit, "start") >= 500_000_000,
        "the span lasts the run's half second: {audit}"
    );

    let stop = the_span(&spans, "hook slow-stop");
    assert_eq!(stop["attributes"]["elph.hook.event"], "stop", "{stop}");
    assert_eq!(stop["attributes"]["elph.hook.async"], true, "{stop}");
    assert_eq!(stop["attributes"]["elph.hook.status"], "failed", "{stop}");
    assert_eq!(stop["status"], 2, "exit 3 is a failed run: {stop}");
    assert_eq!(stop["links"], json!([]), "no tool call: {stop}");
    assert!(
        nanos(stop, "end") - nanos(stop, "start") >= 1_000_000_000,
        "{stop}"
    );
    assert!(
        nanos(session, "end") >= nanos(stop, "end"),
        "the session ended after waiting for it: {session} {stop}"
    );
    // The synchronous spans are as they were: no async mark.
    assert_eq!(tool["attributes"]["elph.hook.async"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_run_still_going_at_a_signal_is_cut_off_within_the_deadline_and_recorded() {
    let env = TestEnv::new();
    let spans_file = env.evidence("spans.jsonl");
    let (_receiver, port) = start_receiver(&env, &spans_file);
    let pid_file = env.evidence("watch.pids");
    env.write_home_hooks(&json!({"hooks": [
        {"id": "long-watch", "event": "userPromptSubmit", "async": true, "timeoutMs": 60000,
         "command": "/bin/sh", "args": ["-c", format!("cat >/dev/null; {}", long_command(&pid_file, 60))]},
    ]}));
    let server = FakeModelServer::start(Wire::OpenAi).await;
    server.enqueue(FakeReply::text("hello"));
    let endpoint = format!("http://127.0.0.1:{port}");
    let running = Running::start_with(
        &env,
        &server,
        &["run", "--model", "openai/gpt-test", "say hello"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
        false,
    );
    // The hook's shell and its sleep are running; the turn itself does not wait for them, so the
    // session is ending (or has ended its turn) and waits for the run, which has 60 s.
    let pids = pids_in(&pid_file, 2).await;
    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(running.pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (code, _lines, said) = running.finish().await;
    let took = sent.elapsed();
    assert_eq!(code, Some(143), "{said}");
    assert!(
        took < Duration::from_secs(20),
        "the wait for the async run ended at the signal's deadline, not its 60 s timeout: {took:?}"
    );
    let left = test_support::hook_scripts::still_alive(&pids, Duration::from_secs(10));
    assert!(left.is_empty(), "the cut-off run's processes are gone: {left:?}");
    assert!(
        said.contains("async hook 'long-watch' (userPromptSubmit): cut off: the session ended"),
        "said in the session: {said}"
    );

    let spans = spans_of_the_session(&spans_file);
    let watch = the_span(&spans, "hook long-watch");
    assert_eq!(watch["attributes"]["elph.hook.cut_off"], true, "{watch}");
    assert_eq!(watch["attributes"]["elph.hook.async"], true, "{watch}");
    assert_eq!(watch["attributes"]["elph.hook.status"], "failed", "{watch}");
    assert_eq!(watch["status"], 2, "{watch}");
    assert!(
        watch["attributes"]["elph.hook.cause"]
            .as_str()
            .unwrap_or_default()
            .starts_with("cut off"),
        "{watch}"
    );
    assert!(nanos(watch, "end") > nanos(watch, "start"), "{watch}");
    let session = the_span(&spans, "elph session");
    assert_eq!(watch["parentSpanId"], session["spanId"], "{watch}");

    // In the run log too: doctor counts the run, as failed.
    let doctor = env.command(&elph()).args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let hook = report["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|hook| hook["id"] == "long-watch")
        .unwrap_or_else(|| panic!("no long-watch in {report:#}"));
    assert_eq!(
        (&hook["recentRuns"]["count"], &hook["recentRuns"]["ok"]),
        (&json!(1), &json!(0)),
        "{hook:#}"
    );
}
