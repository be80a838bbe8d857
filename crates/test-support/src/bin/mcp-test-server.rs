//! `mcp-test-server`: a small MCP server on stdio (rmcp), for Elph's MCP client tests.
//!
//! Tools:
//! - `echo {text}` returns the text (marked read-only);
//! - `sleep {ms}` sleeps, then returns "slept";
//! - `crash {}` exits the process with status 3 in the middle of the call;
//! - `guard {…}` takes an Elph hook payload as its arguments (an mcpTool hook) and answers with an
//!   outcome: a block for a shell command holding "rm ", else `{}`.
//!
//! With `MCP_TEST_DYNAMIC=1`, four more tools, for what a client does beyond calls:
//! - `add_tool {}` adds the tool `late {text}` (answers "late: TEXT") and sends
//!   `notifications/tools/list_changed` before it answers;
//! - `break_tool_list {}` makes every later `tools/list` fail, and sends the same notification;
//! - `roots {}` asks the client for its roots (`roots/list`) and answers with their JSON.
//!
//! With `MCP_TEST_OFFERS=1` it also offers (and the tools `link` and `add_prompt` are listed):
//! - prompts `greet {name (required), style}` and `with_readme {}` (its message embeds the
//!   resource below); `add_prompt {name}` adds a prompt and sends
//!   `notifications/prompts/list_changed` (with `MCP_TEST_SLOW_RELIST_MS`, the listings after
//!   that take that long to answer);
//! - resources `test://docs/readme` (text) and `test://data/blob` (300 bytes of binary);
//!   `link {}` returns a `resource_link` to the readme;
//! - the resource template `test://sized/{bytes}`: a text of that many `x`.
//!
//! It speaks the MCP revisions up to 2025-11-25 (it answers `server/discover` with the error
//! that names them, as a server of those revisions built on rmcp does); with `MCP_TEST_2026=1`
//! also 2026-07-28, as rmcp's server does by default.
//!
//! Evidence for the tests, through the environment the client gives it:
//! - `MCP_TEST_STARTED`: on start, one JSON line `{"pid", "env", "args", "shown"}` is appended to
//!   this file (`env` is the sorted list of the names of its environment variables, `args` its
//!   arguments, `shown` the values of the variables `MCP_TEST_SHOW_ENV` names, comma-separated);
//! - `MCP_TEST_CALLS`: each call appends one JSON line `{"tool", "arguments"}` before it does anything
//!   (`prompts/get` and `resources/read` too, as `{"prompt", "arguments"}` and `{"read"}`);
//! - `MCP_TEST_GRANDCHILD=1`: on start, a `sleep 300` is left running in the server's process group,
//!   so that a test can see the whole group stopped, not only the server;
//! - `MCP_TEST_START_GATE`: the server answers nothing (not even `initialize`) until this file
//!   exists, so a test decides when it becomes ready;
//! - `MCP_TEST_EXIT_GATE`: once serving, the server exits by itself with status 5 (after writing
//!   "mcp-test-server: exiting on request" to stderr) when this file appears, so a test decides
//!   when it goes away between calls.
#![forbid(unsafe_code)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure should stop loudly"
)]

use std::io::Write as _;
use std::time::Duration;

use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, GetPromptRequestParams, GetPromptResponse, ListPromptsResult, ListResourcesResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
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

/// The tools only `MCP_TEST_DYNAMIC=1` lists, and the one `add_tool` adds.
const DYNAMIC_TOOLS: [&str; 3] = ["add_tool", "break_tool_list", "roots"];
const LATE_TOOL: &str = "late";
/// The tools only `MCP_TEST_OFFERS=1` lists.
const OFFER_TOOLS: [&str; 2] = ["link", "add_prompt"];

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddPromptArgs {
    /// The new prompt's name.
    name: String,
}

const README_URI: &str = "test://docs/readme";
const README_TEXT: &str = "The readme of the test server: MCP-RESOURCE-TEXT";
const BLOB_URI: &str = "test://data/blob";
const SIZED_TEMPLATE: &str = "test://sized/{bytes}";
const SIZED_PREFIX: &str = "test://sized/";

#[derive(Default)]
struct ListState {
    late_added: bool,
    broken: bool,
}

#[derive(Clone)]
struct TestServer {
    tool_router: ToolRouter<Self>,
    list: std::sync::Arc<std::sync::Mutex<ListState>>,
    /// `MCP_TEST_OFFERS=1`: prompts and resources are offered.
    offers: bool,
    /// `MCP_TEST_2026=1`: MCP 2026-07-28 is spoken too.
    stateless: bool,
    /// Prompts added by `add_prompt`.
    added: Arc<Mutex<Vec<String>>>,
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
            list: std::sync::Arc::default(),
            offers: std::env::var_os("MCP_TEST_OFFERS").is_some(),
            stateless: std::env::var_os("MCP_TEST_2026").is_some(),
            added: Arc::default(),
        }
    }

    #[tool(description = "Returns a link to the readme resource.")]
    async fn link(&self, Parameters(_args): Parameters<CrashArgs>) -> CallToolResult {
        append_line("MCP_TEST_CALLS", &json!({"tool": "link", "arguments": {}}));
        serde_json::from_value(json!({"content": [
            {"type": "text", "text": "the readme is linked"},
            {"type": "resource_link", "uri": README_URI, "name": "readme"}
        ]}))
        .unwrap()
    }

    #[tool(description = "Adds a prompt and tells the client its prompts changed.")]
    async fn add_prompt(
        &self,
        Parameters(args): Parameters<AddPromptArgs>,
        context: RequestContext<RoleServer>,
    ) -> String {
        append_line(
            "MCP_TEST_CALLS",
            &json!({"tool": "add_prompt", "arguments": {"name": args.name}}),
        );
        self.added.lock().unwrap().push(args.name.clone());
        context.peer.notify_prompt_list_changed().await.unwrap();
        format!("added {}", args.name)
    }

    /// What `tools/list` shows now.
    fn listed(&self) -> Result<Vec<rmcp::model::Tool>, rmcp::ErrorData> {
        let dynamic = std::env::var_os("MCP_TEST_DYNAMIC").is_some();
        let state = self.list.lock().unwrap();
        if state.broken {
            return Err(rmcp::ErrorData::internal_error(
                "the tool list is broken on purpose",
                None,
            ));
        }
        Ok(self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|tool| {
                let name = tool.name.as_ref();
                if name == LATE_TOOL {
                    state.late_added
                } else if OFFER_TOOLS.contains(&name) {
                    self.offers
                } else {
                    dynamic || !DYNAMIC_TOOLS.contains(&name)
                }
            })
            .collect())
    }

    #[tool(description = "Adds the tool `late` and says the tool list changed.")]
    async fn add_tool(
        &self,
        Parameters(_args): Parameters<CrashArgs>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> String {
        append_line("MCP_TEST_CALLS", &json!({"tool": "add_tool", "arguments": {}}));
        self.list.lock().unwrap().late_added = true;
        context.peer.notify_tool_list_changed().await.unwrap();
        "added".to_string()
    }

    #[tool(description = "Makes every later tools/list fail and says the tool list changed.")]
    async fn break_tool_list(
        &self,
        Parameters(_args): Parameters<CrashArgs>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> String {
        append_line(
            "MCP_TEST_CALLS",
            &json!({"tool": "break_tool_list", "arguments": {}}),
        );
        self.list.lock().unwrap().broken = true;
        context.peer.notify_tool_list_changed().await.unwrap();
        "broken".to_string()
    }

    #[tool(description = "Answers \"late: TEXT\" (listed once add_tool added it).")]
    async fn late(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        append_line(
            "MCP_TEST_CALLS",
            &json!({"tool": "late", "arguments": {"text": args.text}}),
        );
        format!("late: {}", args.text)
    }

    #[tool(description = "Asks the client for its roots (roots/list) and answers with them as JSON.")]
    #[allow(deprecated, reason = "roots are part of MCP 2025-11-25")]
    async fn roots(
        &self,
        Parameters(_args): Parameters<CrashArgs>,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> String {
        append_line("MCP_TEST_CALLS", &json!({"tool": "roots", "arguments": {}}));
        match context.peer.list_roots().await {
            Ok(result) => serde_json::to_string(&result.roots).unwrap(),
            Err(error) => format!("roots/list failed: {error}"),
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
impl ServerHandler for TestServer {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        let mut capabilities = if self.offers {
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_resources()
                .build()
        } else {
            rmcp::model::ServerCapabilities::builder().enable_tools().build()
        };
        if let Some(tools) = capabilities.tools.as_mut() {
            tools.list_changed = Some(true);
        }
        rmcp::model::ServerConfig::new(capabilities)
            .with_server_info(rmcp::model::Implementation::from_build_env())
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(if self.stateless {
            ProtocolVersion::KNOWN_VERSIONS
        } else {
            ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25)
        })
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListToolsResult::with_all_items(self.listed()?))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut prompts = vec![
            json!({"name": "greet", "description": "Greets someone.", "arguments": [
                {"name": "name", "description": "who to greet", "required": true},
                {"name": "style", "description": "how"}
            ]}),
            json!({"name": "with_readme", "description": "Asks for a summary of the readme."}),
        ];
        let added = self.added.lock().unwrap().clone();
        if !added.is_empty()
            && let Some(ms) = std::env::var("MCP_TEST_SLOW_RELIST_MS")
                .ok()
                .and_then(|ms| ms.parse().ok())
        {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        for name in added {
            prompts.push(json!({"name": name, "description": "An added prompt."}));
        }
        Ok(serde_json::from_value(json!({"prompts": prompts})).unwrap())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let arguments = request.arguments.clone().unwrap_or_default();
        append_line(
            "MCP_TEST_CALLS",
            &json!({"prompt": request.name, "arguments": arguments}),
        );
        let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::to_string);
        let messages = match request.name.as_str() {
            "greet" => {
                let name = text("name").ok_or_else(|| McpError::invalid_params("name is required", None))?;
                let style = text("style").unwrap_or_else(|| "plain".into());
                json!([{"role": "user", "content": {"type": "text",
                    "text": format!("Say hello to {name} in a {style} style.")}}])
            }
            "with_readme" => json!([
                {"role": "user", "content": {"type": "text", "text": "Summarize this file:"}},
                {"role": "user", "content": {"type": "resource",
                    "resource": {"uri": README_URI, "mimeType": "text/plain", "text": README_TEXT}}}
            ]),
            name if self.added.lock().unwrap().iter().any(|added| added == name) => json!([
                {"role": "user", "content": {"type": "text", "text": format!("The added prompt {name}.")}}
            ]),
            other => return Err(McpError::invalid_params(format!("no prompt {other}"), None)),
        };
        Ok(GetPromptResponse::Complete(
            serde_json::from_value(json!({"messages": messages})).unwrap(),
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(serde_json::from_value(json!({"resources": [
            {"uri": README_URI, "name": "readme", "description": "the test server's readme", "mimeType": "text/plain"},
            {"uri": BLOB_URI, "name": "blob", "mimeType": "application/octet-stream"}
        ]}))
        .unwrap())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        Ok(serde_json::from_value(json!({"resourceTemplates": [
            {"uriTemplate": SIZED_TEMPLATE, "name": "sized", "description": "a text of {bytes} x's", "mimeType": "text/plain"}
        ]}))
        .unwrap())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        append_line("MCP_TEST_CALLS", &json!({"read": request.uri}));
        let contents = match request.uri.as_str() {
            README_URI => json!([{"uri": README_URI, "mimeType": "text/plain", "text": README_TEXT}]),
            // 300 bytes: 400 characters of base64.
            BLOB_URI => {
                json!([{"uri": BLOB_URI, "mimeType": "application/octet-stream", "blob": "AAEC".repeat(100)}])
            }
            other => match other
                .strip_prefix(SIZED_PREFIX)
                .and_then(|n| n.parse::<usize>().ok())
            {
                Some(bytes) => json!([{"uri": other, "mimeType": "text/plain", "text": "x".repeat(bytes)}]),
                None => return Err(McpError::resource_not_found(format!("no resource {other}"), None)),
            },
        };
        Ok(ReadResourceResponse::Complete(
            serde_json::from_value(json!({"contents": contents})).unwrap(),
        ))
    }
}

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
    if let Some(gate) = std::env::var_os("MCP_TEST_START_GATE") {
        wait_for_gate(std::path::Path::new(&gate)).await;
    }
    let service = TestServer::new()
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .expect("MCP initialization");
    if let Some(gate) = std::env::var_os("MCP_TEST_EXIT_GATE") {
        tokio::spawn(async move {
            let gate = std::path::PathBuf::from(gate);
            while !gate.exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            eprintln!("mcp-test-server: exiting on request");
            std::process::exit(5);
        });
    }
    let _ = service.waiting().await;
}

/// Waits until `gate` exists, so a test decides when the server answers; gives up (exit 4) after
/// two minutes.
async fn wait_for_gate(gate: &std::path::Path) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !gate.exists() {
        if std::time::Instant::now() > deadline {
            std::process::exit(4);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
