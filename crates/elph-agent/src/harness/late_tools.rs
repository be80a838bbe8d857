//! The session's late tools (see [`ToolSource`]): before each model request the harness asks the
//! source whether anything changed, and if so offers the native tools plus the source's tools
//! from then on, and tells the model what the source says about the tools that are missing.

use std::sync::Arc;

use super::AgentHarness;
use crate::tools::{ToolCatalog, ToolSource};

pub(super) struct LateTools {
    source: Arc<dyn ToolSource>,
    /// The catalog without the source's tools.
    base: Arc<ToolCatalog>,
    /// The source's generation the catalog was built from; `None` before the first build.
    generation: Option<u64>,
    /// The source's note of that generation.
    pub(super) note: String,
}

impl AgentHarness {
    /// Adds the tools of `source` to the catalog, as they come and go: the catalog is rebuilt
    /// before a model request whenever the source's generation changed.
    pub fn with_tool_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.late_tools = Some(LateTools {
            source,
            base: self.tools.clone(),
            generation: None,
            note: String::new(),
        });
        self.refresh_tools();
        self
    }

    /// Rebuilds the catalog if the source changed since the last build. A tool that cannot be
    /// added (a name taken, a schema that does not compile) is left out with a notice.
    pub(super) fn refresh_tools(&mut self) {
        let Some(late) = &mut self.late_tools else {
            return;
        };
        // Read before the tools: a change in between makes the next refresh build again.
        let generation = late.source.generation();
        if late.generation == Some(generation) {
            return;
        }
        let (catalog, errors) = late.base.with_tools(late.source.tools());
        late.generation = Some(generation);
        late.note = late.source.note();
        self.tools = Arc::new(catalog);
        for error in errors {
            self.notice(format!("tool skipped: {error}"));
        }
    }

    /// The system prompt of a request: the turn's, then what the source says about missing tools.
    pub(super) fn with_late_note(&self, system_prompt: &str) -> String {
        match &self.late_tools {
            Some(late) if !late.note.is_empty() => format!("{system_prompt}\n\n{}", late.note),
            _ => system_prompt.to_string(),
        }
    }
}
