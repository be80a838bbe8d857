//! Typed tools: a tool's arguments are one Rust type, parsed once.
//!
//! A [`TypedTool`] names its argument type (`Args`); the JSON Schema the model sees is generated
//! from that type, and after the catalog's schema check the harness parses the arguments into it
//! once ([`Tool::parse`]). What comes out is a [`Call`]: the file policy (its paths), the title for
//! front ends, the approval question (its title and proposed change) and the run itself all read
//! that one value, so no two of them can read the JSON differently. Adding a tool is one struct
//! and one `impl TypedTool`; every `TypedTool` is a [`Tool`] the catalog can hold.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{PathAccess, Tool, ToolContext, ToolKind, ToolOutput};

/// A tool whose arguments are `Args`. Dropping `run`'s future cancels the call and must stop any
/// work it started (child processes included).
#[async_trait::async_trait]
pub trait TypedTool: Send + Sync {
    /// The arguments: their JSON Schema is what the model is told, their serde form what it sends.
    type Args: DeserializeOwned + JsonSchema + Send + Sync;
    /// The name the model calls the tool by; unique in a catalog.
    fn name(&self) -> &str;
    /// What the model is told the tool does.
    fn description(&self) -> &str;
    /// The JSON Schema of the arguments: generated from `Args` unless the tool has its own (an MCP
    /// server's tool, whose `Args` is any JSON value).
    fn input_schema(&self) -> Value {
        super::schema::input_schema::<Self::Args>()
    }
    /// Whether the tool changes files or runs commands; native approval asks or denies these.
    fn mutates(&self) -> bool;
    /// What the tool does, for front ends that show tool calls.
    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }
    /// Whether `plan` mode offers the tool: the tools that only read (and `shell_exec`, which
    /// runs read-only there, but for its TMPDIR).
    fn offered_in_plan_mode(&self) -> bool {
        !self.mutates()
    }
    /// Whether the processes the tool starts run in the session's sandbox: its description then
    /// carries the sandbox's rules.
    fn runs_sandboxed(&self) -> bool {
        false
    }
    /// A short title for one call: what it does, and to what.
    fn title(&self, _args: &Self::Args) -> String {
        self.name().to_string()
    }
    /// The paths the call will read or write, so the harness can hold it to the file policy before
    /// it runs. Tools that touch no local path return none.
    fn accesses(&self, _args: &Self::Args) -> Vec<PathAccess> {
        Vec::new()
    }
    /// The change to a file the call proposes, from its arguments alone.
    fn change(&self, _args: &Self::Args) -> Option<ProposedChange> {
        None
    }
    /// The change as the user reviews it before the call runs (with its approval question, in an
    /// editor's diff): [`TypedTool::change`] with what it replaces, read under the file policy
    /// from where the call would write (`write_file` reads the file it overwrites). `ctx` holds the
    /// locations the harness judged.
    async fn review(&self, args: &Self::Args, _ctx: &ToolContext) -> Option<ProposedChange> {
        self.change(args)
    }
    /// Runs the call; a failure is an `is_error` output, never a panic.
    async fn run(&self, args: Self::Args, ctx: &ToolContext) -> ToolOutput;
}

/// What a `write_file` or `edit_file` call would change, for the approval question's diff.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ProposedChange {
    /// The file at `path` becomes `content`.
    Write {
        /// The path as the model wrote it.
        path: String,
        /// The whole new content.
        content: String,
        /// What the file held before, when the call's review read it.
        overwrites: Overwrites,
    },
    /// `old_text` in the file at `path` becomes `new_text`.
    Edit {
        /// The path as the model wrote it.
        path: String,
        /// The text replaced.
        old_text: String,
        /// What replaces it.
        new_text: String,
    },
}

/// What a `write_file` call replaces, as its review found it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "state", content = "text")]
pub enum Overwrites {
    /// Not known: the change was not reviewed, or the file is not text the model may read
    /// without approval (outside the project and the other free-read roots), or it is too large.
    Unknown,
    /// Nothing: the file does not exist, the call creates it.
    Nothing,
    /// This text: the file's, or the editor's unsaved buffer when the editor reads files.
    Text(String),
}

impl ProposedChange {
    /// The file changed, as the model wrote it.
    pub fn path(&self) -> &str {
        match self {
            ProposedChange::Write { path, .. } | ProposedChange::Edit { path, .. } => path,
        }
    }
}

/// One call with its arguments parsed into the tool's type.
#[async_trait::async_trait]
pub trait Call: Send + Sync {
    /// [`TypedTool::title`] of these arguments.
    fn title(&self) -> String;
    /// [`TypedTool::accesses`] of these arguments.
    fn accesses(&self) -> Vec<PathAccess>;
    /// [`TypedTool::change`] of these arguments.
    fn change(&self) -> Option<ProposedChange>;
    /// [`TypedTool::review`] of these arguments.
    async fn review(&self, ctx: &ToolContext) -> Option<ProposedChange>;
    /// Runs the call with these arguments.
    async fn run(self: Box<Self>, ctx: &ToolContext) -> ToolOutput;
}

/// A typed tool's call: the tool and the arguments parsed for it.
struct Parsed<'a, T: TypedTool> {
    tool: &'a T,
    args: T::Args,
}

#[async_trait::async_trait]
impl<T: TypedTool> Call for Parsed<'_, T> {
    fn title(&self) -> String {
        self.tool.title(&self.args)
    }

    fn accesses(&self) -> Vec<PathAccess> {
        self.tool.accesses(&self.args)
    }

    fn change(&self) -> Option<ProposedChange> {
        self.tool.change(&self.args)
    }

    async fn review(&self, ctx: &ToolContext) -> Option<ProposedChange> {
        self.tool.review(&self.args, ctx).await
    }

    async fn run(self: Box<Self>, ctx: &ToolContext) -> ToolOutput {
        let Parsed { tool, args } = *self;
        tool.run(args, ctx).await
    }
}

#[async_trait::async_trait]
impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        TypedTool::name(self)
    }

    fn description(&self) -> &str {
        TypedTool::description(self)
    }

    fn input_schema(&self) -> Value {
        TypedTool::input_schema(self)
    }

    fn mutates(&self) -> bool {
        TypedTool::mutates(self)
    }

    fn kind(&self) -> ToolKind {
        TypedTool::kind(self)
    }

    fn offered_in_plan_mode(&self) -> bool {
        TypedTool::offered_in_plan_mode(self)
    }

    fn runs_sandboxed(&self) -> bool {
        TypedTool::runs_sandboxed(self)
    }

    fn parse(&self, input: Value) -> Result<Box<dyn Call + '_>, String> {
        let args = serde_json::from_value(input)
            .map_err(|error| format!("invalid arguments for {}: {error}", TypedTool::name(self)))?;
        Ok(Box::new(Parsed { tool: self, args }))
    }
}
