//! Tools that join or change during a session: an MCP server that answers after the first model
//! request, or one that says its tool list changed. The harness asks its source before each model
//! request and rebuilds its catalog when the source says something changed.

use std::sync::Arc;

use super::Tool;

/// Where a session's late tools come from (the front end's MCP servers).
pub trait ToolSource: Send + Sync {
    /// A number that changes whenever [`ToolSource::tools`] or [`ToolSource::note`] would answer
    /// something else.
    fn generation(&self) -> u64;
    /// The tools there are now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// What the model should know about tools that are not there (yet): which servers are still
    /// starting, which never will. Appended to the system prompt; empty when there is nothing to say.
    fn note(&self) -> String;
}
