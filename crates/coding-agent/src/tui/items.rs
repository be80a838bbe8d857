//! What the transcript holds: prompts, slash commands, answers, tool calls, notices and panels.

use serde_json::Value;

use super::worker::Level;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolState {
    Running,
    Approval,
    Ok,
    Failed,
    /// Blocked by a hook, denied, or invalid arguments: the tool did not run.
    NotRun,
    Cancelled,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolItem {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub state: ToolState,
    pub result: String,
    /// Hook activity about this call.
    pub notes: Vec<(Level, String)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Normal,
    Dim,
    Heading,
    Good,
    Warn,
}

#[derive(Clone, Debug, PartialEq)]
pub struct PanelLine {
    pub(crate) tone: Tone,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub title: String,
    pub lines: Vec<PanelLine>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    User(String),
    /// A slash command as typed.
    Command(String),
    Assistant {
        text: String,
        streaming: bool,
    },
    Tool(ToolItem),
    Notice {
        level: Level,
        text: String,
    },
    Panel(Panel),
}
