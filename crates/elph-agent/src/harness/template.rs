//! A prompt template's `` !`command` `` and `@path`, carried out before its turn as calls of the
//! session's own tools (`shell_exec`, `read_file`): the same preToolUse hooks, file policy,
//! approval and sandbox as a call the model makes, so a template can do nothing the model could
//! not. Their results go into the prompt, not into the transcript as tool results.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{AgentHarness, unless_cancelled};
use crate::messages::{ContentBlock, ToolCall};
use crate::tools::ToolContext;

/// What one template call gave: its text, and whether it failed (refused, blocked, non-zero exit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateCallOutput {
    /// The tool's text (a command's output, a file's lines, or why it was refused).
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
}

impl AgentHarness {
    /// Runs `command` with `shell_exec` for a prompt template (call id `template-N`).
    pub async fn template_shell(
        &mut self,
        index: usize,
        command: &str,
        cancel: &CancellationToken,
    ) -> TemplateCallOutput {
        let call = ToolCall {
            id: format!("template-{index}"),
            name: "shell_exec".into(),
            input: json!({ "command": command }),
        };
        self.template_call(call, cancel).await
    }

    /// Reads `path` with `read_file` for a prompt template's `@path` (call id `template-N`).
    pub async fn template_read(
        &mut self,
        index: usize,
        path: &str,
        cancel: &CancellationToken,
    ) -> TemplateCallOutput {
        let call = ToolCall {
            id: format!("template-{index}"),
            name: "read_file".into(),
            input: json!({ "path": path }),
        };
        self.template_call(call, cancel).await
    }

    /// Calls `tool` (one the session offers, such as the tools of its MCP servers that have
    /// joined since the last model request) with `input` for a prompt's reference, such as an
    /// MCP resource's `@server:uri` (call id `template-N`).
    pub async fn template_tool(
        &mut self,
        index: usize,
        tool: &str,
        input: serde_json::Value,
        cancel: &CancellationToken,
    ) -> TemplateCallOutput {
        self.refresh_tools();
        let call = ToolCall {
            id: format!("template-{index}"),
            name: tool.into(),
            input,
        };
        self.template_call(call, cancel).await
    }

    async fn template_call(&mut self, call: ToolCall, cancel: &CancellationToken) -> TemplateCallOutput {
        let ctx = ToolContext {
            project_dir: self.config.project_dir.clone(),
            sandbox: self.config.effective_sandbox(),
            shell_env: self.config.shell_env.clone(),
            policy: self.config.effective_policy(),
            read_deadline: self.config.read_deadline,
            exact_call_approved: false,
            roots: self.roots.clone(),
            judged: None,
            editor: self.config.editor_files.clone(),
        };
        match unless_cancelled(cancel, self.tool_call(&call, &ctx)).await {
            Some(done) => TemplateCallOutput {
                text: text_of(&done.content),
                is_error: done.is_error,
            },
            None => TemplateCallOutput {
                text: "cancelled by the user".into(),
                is_error: true,
            },
        }
    }
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            ContentBlock::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}
