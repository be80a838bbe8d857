//! What a session tells its front end: one stream of [`SessionEvent`]s, in the order things
//! happened — the harness's own events (with its phase events), approval questions, and what each
//! operation did.

use std::path::PathBuf;
use std::sync::Arc;

use elph_agent::harness::{AgentEvent, AgentMode, CompactOutcome, Entry, TurnResult};

use super::approval::PendingApproval;
use crate::hooks::HookSet;
use crate::store::SessionInfo;
use crate::trust::TrustDecision;
use crate::workflows::WorkflowCommand;

/// The number a session gives each submitted operation; its [`SessionEvent::Finished`] carries it.
pub type OpId = u64;

/// The project's trust decision, the hook set loaded under it, and the template and skill
/// commands loaded under it (they change with `/reload` and trust too).
#[derive(Clone, Debug)]
pub struct HookState {
    pub project_dir: PathBuf,
    pub trust: TrustDecision,
    pub set: Arc<HookSet>,
    pub workflows: Vec<WorkflowCommand>,
    /// The session's MCP servers, disabled ones too: `/server:prompt` is theirs to answer.
    pub mcp_servers: Vec<String>,
}

impl HookState {
    /// How many hooks run in this set.
    pub fn active(&self) -> usize {
        self.set.active().count()
    }
}

/// A session that has just opened: at the start, and after `New` or `Resume`.
#[derive(Clone, Debug)]
pub struct Opened {
    pub session_id: String,
    /// `provider/model`.
    pub model: String,
    /// Resumed from the store (its conversation is in `entries`), or new.
    pub resumed: bool,
    pub context_window: u64,
    /// The stored conversation so far, to show again.
    pub entries: Vec<Entry>,
    pub hooks: HookState,
    /// The agent mode its turns run in.
    pub mode: AgentMode,
}

/// What `Trust` or `Untrust` did.
#[derive(Clone, Debug)]
pub enum TrustOutcome {
    /// Recorded, and the hook set reloaded under the new decision.
    Changed(HookState),
    /// Nothing to do: the project already was trusted (`Trust`) or was not (`Untrust`).
    Unchanged(HookState),
    /// trust.json could not be changed; the session goes on as it was.
    Failed { project_dir: PathBuf, error: String },
}

/// What an operation did.
#[derive(Clone, Debug)]
pub enum Outcome {
    Turn(TurnResult),
    Compaction(CompactOutcome),
    Reloaded(HookState),
    Trust {
        /// What was asked: `true` for `Trust`, `false` for `Untrust`.
        trust: bool,
        outcome: TrustOutcome,
    },
    /// Another session is open in this one's place (its `Opened` came first).
    Switched,
    /// `Resume` of the session that runs now.
    AlreadyInSession(String),
    /// The other session could not be opened; this one goes on.
    SwitchFailed(String),
    /// A `/skill:NAME` or `/TEMPLATE` prompt that could not be expanded (an unknown skill, an
    /// unreadable SKILL.md): nothing reached the model.
    PromptRejected(String),
    /// The project's stored sessions, newest first, or why there are none to show.
    Sessions(Result<Vec<SessionInfo>, String>),
    /// The agent mode now, or why the one asked for is not one (the mode is unchanged).
    Mode(Result<AgentMode, String>),
    /// What `/model` did.
    Model(ModelOutcome),
}

/// What `Model` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelOutcome {
    /// No name was given: the model in use (`provider/model`).
    Current(String),
    /// The next requests go to this model; the conversation stays.
    Switched(String),
    /// Not a model Elph can use (the model is unchanged): why, and the model still in use.
    Failed { error: String, current: String },
}

/// One thing a session tells its front end.
#[derive(Debug)]
pub enum SessionEvent {
    /// A session is open; everything it does comes after this.
    Opened(Box<Opened>),
    /// The first session's sessionStart hooks have run: operations run from now on.
    Ready,
    /// What the harness does, phases included (hook chains, model requests, tools).
    Agent(AgentEvent),
    /// A tool call waits for the user's decision.
    Approval(PendingApproval),
    /// An MCP server asks the user for input (a form, or a URL to open); answer it, or drop it to
    /// cancel. Only front ends that can ask see these: a headless session declines them itself.
    Elicitation(crate::mcp::elicitation::PendingElicitation),
    /// How much of the model's context the conversation uses, after every operation.
    Context { tokens: u64, window: u64 },
    /// An operation is done.
    Finished { op: OpId, outcome: Outcome },
    /// The commands changed outside any operation (an MCP server's prompts arrived or changed):
    /// the session's hook state with the commands as they are now.
    Commands(HookState),
    /// sessionEnd has run (after `End`, or when every handle is gone); nothing follows.
    Ended {
        /// Why an entry of the session could not be stored, if one could not: the session on
        /// disk is missing part of what was shown.
        storage_error: Option<String>,
    },
}
