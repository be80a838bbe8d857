//! What MCP adds to a prompt before its turn: `/server:prompt args` runs the server's prompt and
//! its messages become the turn's text; `@server:uri` in a prompt the user wrote (or a template)
//! reads the resource with `mcp_read_resource` (through preToolUse/postToolUse like any call) and
//! sends its text with the prompt, as a template's `@path` sends a file.

use tokio_util::sync::CancellationToken;

use super::Session;
use super::route::Route;
use crate::mcp::resources::{READ_TOOL, mentions};

/// The prompt a turn sends, and the command it came from (`userPromptSubmit`'s `template`).
pub(super) struct Prepared {
    pub(super) text: String,
    pub(super) command: Option<String>,
}

impl Session {
    /// The text of the turn for `prompt`: an MCP prompt's messages, or a template or skill
    /// carried out, or the prompt as written; with the resources it mentions. An error (an
    /// unknown command or skill, a prompt's missing argument) means nothing is sent.
    pub(super) async fn prepare_prompt(
        &mut self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Result<Prepared, String> {
        let route = self.runtime.route(prompt);
        if route == Route::Workflow
            && let Some(running) = self.runtime.mcp().run_prompt(prompt)
        {
            let turn = tokio::select! {
                turn = running => turn?,
                () = cancel.cancelled() => return Err("cancelled before the MCP prompt arrived".to_string()),
            };
            return Ok(Prepared {
                text: turn.text,
                command: Some(turn.command),
            });
        }
        let expanded = self.runtime.expand_routed(prompt, route)?;
        let text = self.fill_template(&expanded, cancel).await;
        let text = self.inline_resources(text, cancel).await;
        Ok(Prepared {
            text,
            command: expanded.template,
        })
    }

    /// `text` with the resources its `@server:uri` mentions appended; a mention that cannot be
    /// read stays as written, and a notice says why.
    async fn inline_resources(&mut self, mut text: String, cancel: &CancellationToken) -> String {
        let mcp = self.runtime.mcp();
        let found = mentions(&text, &|name| mcp.has_server(name));
        let mut resources = String::new();
        for (index, (server, uri)) in found.into_iter().enumerate() {
            let mention = format!("@{server}:{uri}");
            if let Err(why) = self.runtime.mcp().wait_for_server(&server).await {
                self.runtime.notice(format!("{mention} was not read: {why}"));
                continue;
            }
            let input = serde_json::json!({"server": server, "uri": uri});
            let output = self
                .channels
                .pump(
                    self.runtime
                        .harness_mut()
                        .template_tool(index, READ_TOOL, input, cancel),
                )
                .await;
            if output.is_error {
                self.runtime
                    .notice(format!("{mention} was not read: {}", output.text));
                continue;
            }
            resources.push_str(&format!(
                "\n\n<resource server=\"{server}\" uri=\"{uri}\">\n{}\n</resource>",
                output.text.trim_end()
            ));
        }
        text.push_str(&resources);
        text
    }
}
