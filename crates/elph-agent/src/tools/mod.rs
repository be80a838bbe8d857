//! The tool catalog: every tool the model may call, with its JSON Schema, and the native tools.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use elph_ai::ToolSpec;
use serde_json::Value;

use crate::json_schema::Validator;
use crate::messages::ContentBlock;
use crate::policy::FilePolicy;
pub use native::HeldRoots;

/// What a tool call produced. A failure is a result with `is_error`, never a Rust error.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// What the model sees.
    pub content: Vec<ContentBlock>,
    /// Structured data for front ends (exit code, paths, counts); the model does not see it.
    pub details: Value,
    /// Whether the model is told the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: Value::Null,
            is_error: false,
        }
    }

    /// A failed result of one text block, telling the model what went wrong.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            details: Value::Null,
            is_error: true,
        }
    }

    /// Adds structured details for front ends.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

/// The read tools' default deadline: after it they return what they found, with a note.
pub const DEFAULT_READ_DEADLINE: Duration = Duration::from_secs(60);

/// Where a tool runs, and under which rules.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The project folder: relative paths resolve against it, and shell commands run in it.
    pub project_dir: PathBuf,
    /// What the processes a tool starts may do.
    pub sandbox: elph_process::sandbox::SandboxPolicy,
    /// Which of Elph's environment variables a shell command gets.
    pub shell_env: elph_process::shell_env::ShellEnvPolicy,
    /// Where the writing tools may write; they check it again themselves.
    pub policy: Arc<FilePolicy>,
    /// How long grep, find_path, list_dir and read_file may take before they return what they have.
    pub read_deadline: Duration,
    /// The user approved this exact call (a write to a protected place may go ahead).
    pub exact_call_approved: bool,
    /// The folders the native file tools open paths beneath, held for the session.
    pub roots: Arc<HeldRoots>,
    /// The real locations the harness judged (and, where needed, had approved) for this call; a
    /// native tool that finds its path now leads elsewhere refuses. `None` when no one judged the
    /// call (a tool run directly, as in tests).
    pub judged: Option<Vec<PathBuf>>,
    /// The editor's file system, when the front end's client offers it: the native file tools
    /// then read and write through it (after the file policy, as always).
    pub editor: Option<Arc<dyn EditorFiles>>,
}

impl ToolContext {
    /// A context for `project_dir` under the default policy (`workspace-write`, network off;
    /// native writes inside the project only, its `.elph/` and `.git/hooks/` protected), and the
    /// default read deadline.
    pub fn new(project_dir: impl Into<PathBuf>) -> Self {
        let project_dir = project_dir.into();
        let sandbox = elph_process::sandbox::SandboxPolicy::workspace(&project_dir);
        let policy = FilePolicy::from_sandbox(&project_dir, &sandbox);
        ToolContext {
            roots: Arc::new(HeldRoots::holding(policy.roots())),
            policy: Arc::new(policy),
            sandbox,
            shell_env: elph_process::shell_env::ShellEnvPolicy::default(),
            project_dir,
            read_deadline: DEFAULT_READ_DEADLINE,
            exact_call_approved: false,
            judged: None,
            editor: None,
        }
    }

    /// The same context under another sandbox policy (the native tools' file policy follows it).
    pub fn with_sandbox(mut self, sandbox: elph_process::sandbox::SandboxPolicy) -> Self {
        self.policy = Arc::new(FilePolicy::from_sandbox(&self.project_dir, &sandbox));
        self.sandbox = sandbox;
        self
    }
}

/// Whether a tool call reads or writes a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// The call reads the path (free inside the readable places).
    Read,
    /// The call writes the path (held to the writable roots and protected places).
    Write,
}

/// A path a tool call will touch, as the model wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathAccess {
    /// The path as the model wrote it, relative to the project or absolute.
    pub path: String,
    /// Whether the call reads or writes it.
    pub kind: AccessKind,
}

impl PathAccess {
    /// A read of `path`.
    pub fn read(path: impl Into<String>) -> Self {
        PathAccess {
            path: path.into(),
            kind: AccessKind::Read,
        }
    }

    /// A write of `path`.
    pub fn write(path: impl Into<String>) -> Self {
        PathAccess {
            path: path.into(),
            kind: AccessKind::Write,
        }
    }
}

/// What a tool does, for front ends that group or mark tool calls (ACP's tool kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads files or folders.
    Read,
    /// Changes files.
    Edit,
    /// Searches file names or contents.
    Search,
    /// Runs commands.
    Execute,
    /// Anything else (an MCP server's tools).
    Other,
}

/// The first line of `text`, at most 80 characters, with an ellipsis when cut: for titles.
pub fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > 80 || text.contains('\n') {
        format!("{}…", line.chars().take(80).collect::<String>())
    } else {
        line.to_string()
    }
}

/// A tool the model can call, as the catalog holds it. Tools are written as a [`TypedTool`] (one
/// struct, one impl), which makes them a `Tool`; this face is what the harness and front ends see.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by; unique in a catalog.
    fn name(&self) -> &str;
    /// What the model is told the tool does.
    fn description(&self) -> &str;
    /// The JSON Schema of the arguments.
    fn input_schema(&self) -> Value;
    /// Whether the tool changes files or runs commands; native approval asks or denies these.
    fn mutates(&self) -> bool;
    /// What the tool does, for front ends that show tool calls.
    fn kind(&self) -> ToolKind;
    /// Whether `plan` mode offers the tool.
    fn offered_in_plan_mode(&self) -> bool;
    /// Parses (schema-valid) arguments into the tool's own type, once; everything after — the file
    /// policy, titles, the approval question, the run — reads the returned call. The error names
    /// the tool and the problem.
    fn parse(&self, input: Value) -> Result<Box<dyn Call + '_>, String>;

    /// A short title for a call with these arguments, for front ends that have only the JSON (a
    /// stored conversation, a call not yet checked); the tool's name when they do not parse.
    fn title(&self, input: &Value) -> String {
        self.parse(input.clone())
            .map_or_else(|_| self.name().to_string(), |call| call.title())
    }

    /// Parses and runs one call, for a tool run directly (tests, benchmarks): a failure is an
    /// `is_error` output, never a panic. Dropping the future cancels the call.
    async fn execute(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        match self.parse(input) {
            Ok(call) => call.run(ctx).await,
            Err(error) => ToolOutput::error(error),
        }
    }
    /// Whether the processes the tool starts run in the session's sandbox: its description then
    /// carries the sandbox's rules.
    fn runs_sandboxed(&self) -> bool {
        false
    }
}

struct Entry {
    tool: Arc<dyn Tool>,
    /// The tool's input schema, made once: every model request sends it, and a native tool
    /// generates it from its argument type.
    schema: OnceLock<Value>,
    /// Compiled at the tool's first call: a run compiles only the schemas of the tools it uses,
    /// and none before its first model request.
    validator: OnceLock<Validator>,
}

impl Entry {
    fn new(tool: Arc<dyn Tool>) -> Entry {
        Entry {
            tool,
            schema: OnceLock::new(),
            validator: OnceLock::new(),
        }
    }

    fn schema(&self) -> &Value {
        self.schema.get_or_init(|| self.tool.input_schema())
    }

    #[expect(
        clippy::expect_used,
        reason = "a registered tool's schema was compiled at registration; native ones by a unit test"
    )]
    fn validator(&self) -> &Validator {
        self.validator.get_or_init(|| {
            // Checked when the tool was registered (or, for native tools, by a unit test).
            self.compile().expect("a registered tool's schema compiles")
        })
    }

    fn compile(&self) -> Result<Validator, CatalogError> {
        Validator::new(self.schema()).map_err(|err| CatalogError::BadSchema {
            name: self.tool.name().to_string(),
            reason: err.to_string(),
        })
    }
}

/// The registered tools by name, each with its argument schema (compiled on first use).
#[derive(Default)]
pub struct ToolCatalog {
    /// Shared between a catalog and the ones [`ToolCatalog::with_tools`] makes from it, so a
    /// schema compiled in one is compiled in all.
    tools: BTreeMap<String, Arc<Entry>>,
}

/// Why a tool could not be added to a catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[expect(
    missing_docs,
    reason = "each variant's fields are the words of its #[error] message"
)]
pub enum CatalogError {
    /// A tool of that name is already there.
    #[error("tool '{0}' is registered twice")]
    Duplicate(String),
    /// The tool's input schema does not compile as JSON Schema.
    #[error("tool '{name}' has an invalid input schema: {reason}")]
    BadSchema { name: String, reason: String },
}

impl ToolCatalog {
    /// An empty catalog, for a program that registers its own tools.
    pub fn new() -> Self {
        ToolCatalog::default()
    }

    /// A catalog of the seven native tools. Their schemas are compiled at each tool's first call
    /// (a unit test compiles them all), not here: this runs before the first model request.
    pub fn native() -> Self {
        let mut catalog = ToolCatalog::new();
        for tool in native::all() {
            let name = tool.name().to_string();
            let previous = catalog.tools.insert(name, Arc::new(Entry::new(tool)));
            assert!(previous.is_none(), "native tools have unique names");
        }
        catalog
    }

    /// Adds a tool from outside (an MCP server's): its schema is compiled now, so a bad one is
    /// reported here rather than at the model's first call.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), CatalogError> {
        let name = tool.name().to_string();
        if self.tools.contains_key(&name) {
            return Err(CatalogError::Duplicate(name));
        }
        let entry = Entry::new(tool);
        let validator = entry.compile()?;
        let _ = entry.validator.set(validator);
        self.tools.insert(name, Arc::new(entry));
        Ok(())
    }

    /// This catalog's tools plus `extra`, each added as by [`ToolCatalog::register`]; the ones
    /// that could not be added, and why.
    pub fn with_tools(&self, extra: Vec<Arc<dyn Tool>>) -> (ToolCatalog, Vec<CatalogError>) {
        let mut catalog = ToolCatalog {
            tools: self.tools.clone(),
        };
        let errors = extra
            .into_iter()
            .filter_map(|tool| catalog.register(tool).err())
            .collect();
        (catalog, errors)
    }

    /// The tool named `name`, if the catalog has it.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).map(|entry| &entry.tool)
    }

    /// Every tool's name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// What the provider is told about the tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.specs_where(|_| true)
    }

    /// What the provider is told about the tools `offered` keeps.
    pub(crate) fn specs_where(&self, offered: impl Fn(&dyn Tool) -> bool) -> Vec<ToolSpec> {
        self.tools
            .values()
            .filter(|entry| offered(entry.tool.as_ref()))
            .map(|entry| ToolSpec {
                name: entry.tool.name().to_string(),
                description: entry.tool.description().to_string(),
                input_schema: entry.schema().clone(),
            })
            .collect()
    }

    /// Checks arguments against the tool's schema; the error names each problem and where (the
    /// model fixes a call better when it hears all of them: a misspelt field is both unknown and
    /// missing).
    pub fn validate(&self, name: &str, input: &Value) -> Result<(), String> {
        let entry = self
            .tools
            .get(name)
            .ok_or_else(|| format!("unknown tool '{name}'"))?;
        let problems: Vec<String> = entry
            .validator()
            .violations(input)
            .into_iter()
            .map(|violation| {
                let at = if violation.pointer.is_empty() {
                    "arguments"
                } else {
                    &violation.pointer
                };
                format!("{at}: {}", violation.message)
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("invalid arguments for {name}: {}", problems.join("; ")))
        }
    }
}

mod editor;
mod late;
pub mod native;
mod schema;
mod typed;

pub use editor::EditorFiles;
pub use late::ToolSource;
pub use typed::{Call, Overwrites, ProposedChange, TypedTool};
