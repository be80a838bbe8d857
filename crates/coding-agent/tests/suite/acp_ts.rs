//! The official ACP TypeScript SDK as the editor: `@agentclientprotocol/sdk` is installed from npm
//! (once per target dir) and `tests/acp_ts/client.mjs` drives the real `elph acp` binary with it.
//! The SDK checks every message it receives against its own generated schemas; on top, every line
//! exchanged is validated here against the ACP JSON Schema shipped in the same package: the
//! message as a whole, and its params or result against the type its method names (`x-method`).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use elph_agent::json_schema::Validator;
use serde_json::{Value, json};
use test_support::env::TestEnv;

/// The SDK release the tests speak to; its `schema/v1/schema.json` is the schema they validate by.
pub const SDK_VERSION: &str = "2.4.0";
const SDK_PACKAGE: &str = "@agentclientprotocol/sdk";
/// npm's install, with its download, may take a while on a busy machine.
const INSTALL_DEADLINE: Duration = Duration::from_secs(300);
/// One scenario, from `initialize` to the agent's exit.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// Where the SDK is installed: once per target dir, shared by the tests.
fn sdk_dir() -> PathBuf {
    npm_package_dir(SDK_PACKAGE, SDK_VERSION)
}

/// A folder where npm installed `package@version` (in its `node_modules`): once per target dir,
/// shared by the tests (a lock file keeps two from installing at once).
pub fn npm_package_dir(package: &str, version: &str) -> PathBuf {
    let name = package.trim_start_matches('@').replace('/', "-");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{version}"));
    std::fs::create_dir_all(&dir).expect("create the package folder");
    let lock = std::fs::File::create(dir.join(".install.lock")).expect("create the install lock");
    lock.lock().expect("lock the package folder");
    let manifest = dir.join("node_modules").join(package).join("package.json");
    let installed = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|manifest| manifest["version"] == version);
    if !installed {
        install(&dir, package, version);
    }
    dir
}

/// `npm install` of `package@version` into `dir`, under a deadline. npm keeps the environment it
/// is given (its registry, proxy and certificates, as for any package manager fetching
/// dependencies); what runs Elph is hermetic.
fn install(dir: &Path, package: &str, version: &str) {
    let mut child = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-save", "--prefix"])
        .arg(dir)
        .arg(format!("{package}@{version}"))
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("these tests install {package} with npm, which did not start: {err}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > INSTALL_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("npm install {package}@{version} took over {INSTALL_DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(
        status.success(),
        "npm install {package}@{version} failed: {stderr}"
    );
}

/// One line of the conversation: `out` from the editor, `in` from Elph.
#[derive(Debug)]
pub struct WireLine {
    pub dir: String,
    pub message: Value,
}

/// What one scenario produced.
#[derive(Debug)]
pub struct Run {
    /// The client's report: `results` of each request, `updates`, `reads`, `writes`,
    /// `permissions`, `buffers`, `stderr`, `exit`.
    pub report: Value,
    pub wire: Vec<WireLine>,
}

impl Run {
    /// The result of the `index`th request of the scenario (0 is `initialize`); panics on an error.
    pub fn ok(&self, index: usize) -> &Value {
        let result = &self.report["results"][index];
        assert!(
            result.get("ok").is_some(),
            "request {index} failed: {result}\n{}",
            self.report["stderr"]
        );
        &result["ok"]
    }

    /// The session updates of kind `kind` (`sessionUpdate`), in order.
    pub fn updates(&self, kind: &str) -> Vec<&Value> {
        self.report["updates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|notification| &notification["update"])
            .filter(|update| update["sessionUpdate"] == kind)
            .collect()
    }

    /// The raw frame Elph answered request `index` of the editor with (ids count from 0).
    pub fn raw_answer(&self, id: u64) -> &Value {
        self.wire
            .iter()
            .find(|line| line.dir == "in" && line.message.get("method").is_none() && line.message["id"] == id)
            .map(|line| &line.message)
            .unwrap_or_else(|| panic!("no answer to request {id}"))
    }
}

/// A scenario for `client.mjs` against `elph acp ARGS` in `env`.
pub struct Scenario<'a> {
    pub env: &'a TestEnv,
    pub args: Vec<String>,
    pub initialize: Value,
    pub buffers: Value,
    pub permissions: Value,
    /// The answer to every `elicitation/create` (null: decline).
    pub elicitation: Value,
    pub steps: Vec<Value>,
}

impl<'a> Scenario<'a> {
    pub fn new(env: &'a TestEnv, args: &[&str]) -> Self {
        Scenario {
            env,
            args: args.iter().map(ToString::to_string).collect(),
            initialize: json!({"protocolVersion": 1, "clientCapabilities": {}}),
            buffers: json!({}),
            permissions: json!([]),
            elicitation: Value::Null,
            steps: Vec::new(),
        }
    }

    /// A request; `name` saves its result for `${name.field}` in later steps.
    pub fn step(mut self, method: &str, params: Value, name: Option<&str>) -> Self {
        self.steps
            .push(json!({"method": method, "params": params, "as": name}));
        self
    }

    /// Runs the scenario with the SDK and validates every line exchanged against the schema.
    pub async fn run(self) -> Run {
        let sdk = tokio::task::spawn_blocking(sdk_dir)
            .await
            .expect("install the SDK");
        let package = sdk.join("node_modules").join(SDK_PACKAGE);
        let work = self.env.root.path().join("ts-client");
        std::fs::create_dir_all(&work).unwrap();
        let vars: HashMap<String, String> = HashMap::from([
            ("HOME".into(), self.env.home.display().to_string()),
            ("ELPH_HOME".into(), self.env.config_dir.display().to_string()),
            ("ELPH_DATA_DIR".into(), self.env.data_dir.display().to_string()),
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
        ]);
        let scenario = json!({
            "command": env!("CARGO_BIN_EXE_elph"),
            "args": self.args,
            "env": vars,
            "cwd": self.env.project,
            "initialize": self.initialize,
            "buffers": self.buffers,
            "permissions": self.permissions,
            "elicitation": self.elicitation,
            "steps": self.steps,
        });
        let scenario_path = work.join("scenario.json");
        std::fs::write(&scenario_path, scenario.to_string()).unwrap();
        let report_path = work.join("report.json");
        let wire_path = work.join("wire.jsonl");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_ts/client.mjs");
        let mut node = tokio::process::Command::new("node");
        node.arg(script)
            .arg(package.join("dist/v1/stable/acp.js"))
            .args([&scenario_path, &report_path, &wire_path])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.env.home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = tokio::time::timeout(RUN_DEADLINE, node.output())
            .await
            .unwrap_or_else(|_| panic!("the TypeScript client did not finish within {RUN_DEADLINE:?}"))
            .expect("run node");
        let report: Value = std::fs::read_to_string(&report_path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_else(|| {
                panic!(
                    "no report from the TypeScript client ({}):\n{}\n{}",
                    output.status,
                    String::from_utf8_lossy(&output.stdout),
                    String::from_utf8_lossy(&output.stderr)
                )
            });
        assert!(
            output.status.success(),
            "the TypeScript client failed ({}): {}\nelph's stderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr),
            report["stderr"]
        );
        let wire = test_support::env::json_lines(&wire_path)
            .into_iter()
            .map(|line| WireLine {
                dir: line["dir"].as_str().unwrap().to_string(),
                message: serde_json::from_str(line["line"].as_str().unwrap())
                    .unwrap_or_else(|err| panic!("a line that is not JSON: {line}: {err}")),
            })
            .collect::<Vec<_>>();
        let schema =
            std::fs::read_to_string(package.join("schema/v1/schema.json")).expect("the SDK's schema");
        let problems = SchemaCheck::new(serde_json::from_str(&schema).unwrap()).problems(&wire);
        assert!(
            problems.is_empty(),
            "against the ACP schema {SDK_VERSION}:\n{}",
            problems.join("\n")
        );
        Run { report, wire }
    }
}

/// The ACP schema of the SDK's release, with a validator for the whole message and one per type.
struct SchemaCheck {
    schema: Value,
    message: Validator,
    by_type: HashMap<String, Validator>,
}

impl SchemaCheck {
    fn new(schema: Value) -> Self {
        let message = Validator::new(&schema).expect("the ACP schema compiles");
        SchemaCheck {
            schema,
            message,
            by_type: HashMap::new(),
        }
    }

    /// The `$defs` type for `method`'s `suffix` (`Request`, `Response`, `Notification`) handled by
    /// `side` (`agent` or `client`).
    fn type_for(&self, side: &str, method: &str, suffix: &str) -> Result<String, String> {
        let defs = self.schema["$defs"].as_object().unwrap();
        defs.iter()
            .find(|(name, def)| name.ends_with(suffix) && def["x-side"] == side && def["x-method"] == method)
            .map(|(name, _)| name.clone())
            .ok_or_else(|| format!("the schema has no {suffix} of {method} for the {side}"))
    }

    fn validate(&mut self, type_name: &str, value: &Value, line: &Value) -> Result<(), String> {
        let validator = self.by_type.entry(type_name.to_string()).or_insert_with(|| {
            let mut schema = self.schema.clone();
            let root = schema.as_object_mut().unwrap();
            root.remove("anyOf");
            root.insert("$ref".into(), json!(format!("#/$defs/{type_name}")));
            Validator::new(&schema).expect("a type of the ACP schema compiles")
        });
        let violations = validator.violations(value);
        if violations.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{type_name} does not follow the schema: {violations:?}\nin {line}"
        ))
    }

    /// What in `wire` the schema does not allow: each message must pass as a whole, and its params
    /// or result as its method's type.
    fn problems(&mut self, wire: &[WireLine]) -> Vec<String> {
        let mut problems = Vec::new();
        // Requests in flight, by direction and id: the method a response answers.
        let mut asked: HashMap<(String, String), String> = HashMap::new();
        for line in wire {
            let message = &line.message;
            let violations = self.message.violations(message);
            if !violations.is_empty() {
                problems.push(format!("not an ACP message: {violations:?}\n{message}"));
                continue;
            }
            // `agent` handles what the editor sends, `client` what Elph sends.
            let (handler, other) = match line.dir.as_str() {
                "out" => ("agent", "in"),
                _ => ("client", "out"),
            };
            let id = message.get("id").map(Value::to_string);
            let checked = match (message["method"].as_str(), id) {
                (Some(method), Some(id)) => {
                    asked.insert((line.dir.clone(), id), method.to_string());
                    self.type_for(handler, method, "Request")
                        .and_then(|type_name| self.validate(&type_name, &message["params"], message))
                }
                (Some(method), None) => self
                    .type_for(handler, method, "Notification")
                    .and_then(|type_name| self.validate(&type_name, &message["params"], message)),
                (None, Some(id)) => match asked.remove(&(other.to_string(), id)) {
                    // The answer comes from the side that handled the request: the other one.
                    Some(method) => match message.get("result") {
                        Some(result) => {
                            let answering = if handler == "agent" { "client" } else { "agent" };
                            self.type_for(answering, &method, "Response")
                                .and_then(|type_name| self.validate(&type_name, result, message))
                        }
                        None => self.validate("Error", &message["error"], message),
                    },
                    None => Err(format!("an answer to no request: {message}")),
                },
                (None, None) => Err(format!(
                    "neither a request, a notification nor an answer: {message}"
                )),
            };
            problems.extend(checked.err());
        }
        if !asked.is_empty() {
            problems.push(format!("requests never answered: {asked:?}"));
        }
        problems
    }
}

/// The check is no formality: what the schema forbids is found, in the params, a result, or an
/// answer to nothing.
#[test]
fn the_schema_check_finds_what_the_schema_forbids() {
    let package = sdk_dir().join("node_modules").join(SDK_PACKAGE);
    let schema = std::fs::read_to_string(package.join("schema/v1/schema.json")).expect("the SDK's schema");
    let mut check = SchemaCheck::new(serde_json::from_str(&schema).unwrap());
    let line = |dir: &str, message: Value| WireLine {
        dir: dir.to_string(),
        message,
    };
    let update = |content: Value| {
        line(
            "in",
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                "update": {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "Edit a", "content": content}}}),
        )
    };
    let good = [
        line(
            "out",
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}),
        ),
        line(
            "in",
            json!({"jsonrpc": "2.0", "id": 1, "result": {"sessions": []}}),
        ),
        update(json!([{"type": "diff", "path": "/p/a", "oldText": "x", "newText": "y"}])),
    ];
    assert_eq!(check.problems(&good), Vec::<String>::new());
    let bad = [
        // A diff without its new text, a list without sessions, an answer nobody asked for.
        update(json!([{"type": "diff", "path": "/p/a", "oldText": "x"}])),
        line(
            "out",
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}),
        ),
        line(
            "in",
            json!({"jsonrpc": "2.0", "id": 2, "result": {"nextCursor": 3}}),
        ),
        line("in", json!({"jsonrpc": "2.0", "id": 9, "result": {}})),
    ];
    let problems = check.problems(&bad);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(
        problems[0].contains("SessionNotification") || problems[0].contains("not an ACP message"),
        "{}",
        problems[0]
    );
    assert!(problems[1].contains("ListSessionsResponse"), "{}", problems[1]);
    assert!(problems[2].contains("an answer to no request"), "{}", problems[2]);
}
