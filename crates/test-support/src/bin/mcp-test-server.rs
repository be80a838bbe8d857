//! `mcp-test-server`: a small MCP server on stdio (rmcp), for Elph's MCP client tests.
//!
//! Tools:
//! - `echo {text}` returns the text (marked read-only);
//! - `sleep {ms}` sleeps, then returns "slept";
//! - `crash {}` exits the process with status 3 in the middle of the call;
//! - `guard {…}` takes an Elph hook payload as its arguments (an mcpTool hook) and answers with an
//!   outcome: a block for a shell command holding "rm ", else `{}`.
//!
//! Evidence for the tests, through the environment the client gives it:
//! - `MCP_TEST_STARTED`: on start, one JSON line `{"pid", "env", "args", "shown"}` is appended to
//!   this file (`env` is the sorted list of the names of its environment variables, `args` its
//!   arguments, `shown` the values of the variables `MCP_TEST_SHOW_ENV` names, comma-separated);
//! - `MCP_TEST_CALLS`: each call appends one JSON line `{"tool", "arguments"}` before it does anything;
//! - `MCP_TEST_GRANDCHILD=1`: on start, a `sleep 300` is left running in the server's process group,
//!   so that a test can see the whole group stopped, not only the server.
#![forbid(unsafe_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::io::Write as _;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct CrashArgs {}

#[derive(Clone)]
struct TestServer {
    tool_router: ToolRouter<Self>,
}

fn append_line(variable: &str, line: &Value) {
    let Some(path) = std::env::var_os(variable) else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the evidence file");
    writeln!(file, "{line}").expect("write the evidence file");
}

#[tool_router]
impl TestServer {
    fn new() -> Self {
        TestServer {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Returns the text it is given.",
        annotations(read_only_hint = true)
    )]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        append_line(
            "MCP_TEST_CALLS",
            &json!({"tool": "echo", "arguments": {"text": args.text}}),
        );
        args.text
    }

    #[tool(description = "Sleeps for `ms` milliseconds, then returns \"slept\".")]
    async fn sleep(&self, Parameters(args): Parameters<SleepArgs>) -> String {
        append_line(
            "MCP_TEST_CALLS",
            &json!({"tool": "sleep", "arguments": {"ms": args.ms}}),
        );
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        "slept".to_string()
    }

    #[tool(
        description = "A hook's guard: given an Elph hook payload, blocks a shell command that holds \
                       \"rm \" and lets the rest through."
    )]
    async fn guard(&self, Parameters(payload): Parameters<serde_json::Map<String, Value>>) -> String {
        append_line("MCP_TEST_CALLS", &json!({"tool": "guard", "arguments": payload}));
        let command = payload
            .get("toolInput")
            .and_then(|input| input.get("command"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if command.contains("rm ") {
            json!({"block": true, "reason": "the mcp guard refuses rm"}).to_string()
        } else {
            "{}".to_string()
        }
    }

    #[tool(description = "Exits the server process in the middle of the call.")]
    async fn crash(&self, Parameters(_args): Parameters<CrashArgs>) -> String {
        append_line("MCP_TEST_CALLS", &json!({"tool": "crash", "arguments": {}}));
        eprintln!("mcp-test-server: crashing on purpose");
        std::process::exit(3);
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut names: Vec<String> = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    names.sort();
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The values of the variables MCP_TEST_SHOW_ENV names (comma-separated), for tests of what
    // the client put in them.
    let shown: serde_json::Map<String, Value> = std::env::var("MCP_TEST_SHOW_ENV")
        .unwrap_or_default()
        .split(',')
        .filter(|name| !name.is_empty())
        .filter_map(|name| Some((name.to_string(), json!(std::env::var(name).ok()?))))
        .collect();
    append_line(
        "MCP_TEST_STARTED",
        &json!({"pid": std::process::id(), "env": names, "args": args, "shown": shown}),
    );
    if std::env::var_os("MCP_TEST_GRANDCHILD").is_some() {
        // Left running on purpose: the client must stop it with the server's group.
        let helper = std::process::Command::new("sleep")
            .arg("300")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn the grandchild");
        std::mem::forget(helper);
    }
    let service = TestServer::new()
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .expect("MCP initialization");
    let _ = service.waiting().await;
}
