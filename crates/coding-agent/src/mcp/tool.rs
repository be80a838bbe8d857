//! An MCP server's tool in Elph's catalog: `mcp_{server}__{tool}`, with the server's input schema,
//! called on the MCP runtime, its result turned into tool output the model reads.

use std::sync::Arc;

use elph_agent::messages::ContentBlock;
use elph_agent::tools::{ToolContext, ToolOutput, TypedTool};
use rmcp::model::{CallToolResult, ContentBlock as McpContent, ResourceContents, Tool as McpToolSpec};
use serde_json::{Value, json};

use super::server::{CallError, McpServer, human_duration};

/// Providers limit tool names to 64 characters.
pub(crate) const MAX_TOOL_NAME: usize = 64;
/// The most text one call returns to the model; the rest is cut with a note.
pub(crate) const OUTPUT_CAP: usize = 64 * 1024;

/// The catalog name of `tool` of `server`: `mcp_{server}__{tool}`, with any character a provider
/// would refuse (anything but letters, digits, `_` and `-`) replaced by `_`.
pub(crate) fn catalog_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("mcp_{server}__{tool}")
}

pub struct McpTool {
    name: String,
    description: String,
    schema: Value,
    read_only: bool,
    /// The tool's name on the server.
    remote: String,
    server: Arc<McpServer>,
    runtime: tokio::runtime::Handle,
}

impl McpTool {
    pub fn new(server: Arc<McpServer>, spec: &McpToolSpec, runtime: tokio::runtime::Handle) -> Self {
        let name = catalog_name(server.name(), &spec.name);
        let description = spec
            .description
            .as_deref()
            .map(str::to_string)
            .or_else(|| spec.title.clone())
            .unwrap_or_else(|| format!("The '{}' tool of the MCP server '{}'.", spec.name, server.name()));
        McpTool {
            name,
            description,
            schema: Value::Object((*spec.input_schema).clone()),
            read_only: spec
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.read_only_hint)
                .unwrap_or(false),
            remote: spec.name.to_string(),
            server,
            runtime,
        }
    }
}

/// Aborts the task when dropped: a cancelled turn drops the call future, and with it the request
/// (rmcp then tells the server with `notifications/cancelled`).
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An MCP tool's arguments are whatever JSON its server's schema allows: the server parses them.
#[async_trait::async_trait]
impl TypedTool for McpTool {
    type Args = Value;

    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    /// Mutating unless the server marks the tool read-only (a hint, but the only one there is).
    fn mutates(&self) -> bool {
        !self.read_only
    }

    async fn run(&self, input: Value, _ctx: &ToolContext) -> ToolOutput {
        let server_name = self.server.name().to_string();
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return ToolOutput::error(format!(
                    "invalid arguments for {}: expected a JSON object, got {other}",
                    self.name
                ));
            }
        };
        let server = self.server.clone();
        let remote = self.remote.clone();
        let mut call = AbortOnDrop(
            self.runtime
                .spawn(async move { server.call(&remote, arguments).await }),
        );
        let outcome = (&mut call.0).await;
        let details = json!({"mcpServer": server_name, "mcpTool": self.remote});
        match outcome {
            Ok(Ok(result)) => convert(result, details),
            Ok(Err(error)) => {
                ToolOutput::error(describe_error(&server_name, &self.remote, &error)).with_details(details)
            }
            Err(_) => ToolOutput::error(format!(
                "MCP server '{server_name}' is not available: the session's MCP client has stopped"
            ))
            .with_details(details),
        }
    }
}

/// What the model reads when a call fails: the server, the tool, and the cause.
pub(crate) fn describe_error(server: &str, tool: &str, error: &CallError) -> String {
    match error {
        CallError::Down(reason) => format!("MCP server '{server}' is not available: {reason}"),
        CallError::Rejected(message) => {
            format!("MCP server '{server}' returned an error for tool '{tool}': {message}")
        }
        CallError::TimedOut(timeout) => format!(
            "MCP server '{server}' did not answer tool '{tool}' within {}; the call was cancelled",
            human_duration(*timeout)
        ),
        CallError::Died(reason) => format!("MCP server '{server}' stopped during tool '{tool}': {reason}"),
    }
}

/// Text and image blocks pass through; other kinds of content are described in words; a result
/// with only structured content shows it as JSON. Text past [`OUTPUT_CAP`] is cut with a note.
pub(crate) fn convert(result: CallToolResult, mut details: Value) -> ToolOutput {
    let mut content = Vec::new();
    for block in result.content {
        content.push(match block {
            McpContent::Text(text) => ContentBlock::text(text.text),
            McpContent::Image(image) => ContentBlock::Image {
                data: image.data,
                mime_type: image.mime_type,
            },
            McpContent::Audio(audio) => ContentBlock::text(format!(
                "[audio ({}), {} bytes of base64, not shown]",
                audio.mime_type,
                audio.data.len()
            )),
            McpContent::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    ContentBlock::text(format!("[resource {uri}]\n{text}"))
                }
                ResourceContents::BlobResourceContents {
                    uri, mime_type, blob, ..
                } => ContentBlock::text(format!(
                    "[resource {uri} ({}), {} bytes of base64, not shown]",
                    mime_type.as_deref().unwrap_or("binary"),
                    blob.len()
                )),
                _ => ContentBlock::text("[a resource of a kind Elph does not show]"),
            },
            McpContent::ResourceLink(link) => {
                let server = details["mcpServer"].as_str().unwrap_or_default();
                ContentBlock::text(super::resources::link_hint(server, &link.uri, &link.name))
            }
            _ => ContentBlock::text("[content of a kind Elph does not show]"),
        });
    }
    if let Some(structured) = result.structured_content {
        if content.is_empty() {
            content.push(ContentBlock::text(structured.to_string()));
        }
        details["structuredContent"] = structured;
    }
    cap_text(&mut content);
    ToolOutput {
        content,
        details,
        is_error: result.is_error.unwrap_or(false),
    }
}

fn cap_text(content: &mut [ContentBlock]) {
    let mut room = OUTPUT_CAP;
    for block in content {
        if let ContentBlock::Text { text } = block {
            if text.len() <= room {
                room -= text.len();
                continue;
            }
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let cut = text.len() - end;
            text.truncate(end);
            text.push_str(&format!(
                "\n[… {cut} more bytes cut: MCP tool output is limited to {OUTPUT_CAP} bytes]"
            ));
            room = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_names_are_provider_safe() {
        assert_eq!(catalog_name("github", "create_issue"), "mcp_github__create_issue");
        assert_eq!(catalog_name("fs", "read.file/v2"), "mcp_fs__read_file_v2");
    }

    #[test]
    fn results_become_tool_output() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}}
            ],
            "isError": true
        }))
        .unwrap();
        let output = convert(result, json!({}));
        assert!(output.is_error);
        assert_eq!(output.content[0], ContentBlock::text("hello"));
        assert_eq!(
            output.content[1],
            ContentBlock::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into()
            }
        );
        assert_eq!(
            output.content[2],
            ContentBlock::text("[resource file:///a]\nbody")
        );

        let structured: CallToolResult =
            serde_json::from_value(json!({"content": [], "structuredContent": {"n": 1}})).unwrap();
        let output = convert(structured, json!({}));
        assert_eq!(output.content, vec![ContentBlock::text(r#"{"n":1}"#)]);
        assert_eq!(output.details["structuredContent"]["n"], 1);
        assert!(!output.is_error);
    }

    /// An MCP tool result as a server may send it: content blocks of every kind (and unknown
    /// ones), text of any characters and size, fields of the wrong type.
    fn call_result() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = prop_oneof![
            ".{0,40}",
            (1usize..4, ".{1,3}").prop_map(|(k, unit)| unit.repeat(k * 30_000)),
        ];
        let block = prop_oneof![
            text.clone().prop_map(|t| json!({"type": "text", "text": t})),
            ".{0,8}".prop_map(|d| json!({"type": "image", "data": d, "mimeType": "image/png"})),
            ".{0,8}".prop_map(|d| json!({"type": "audio", "data": d, "mimeType": "audio/wav"})),
            text.clone()
                .prop_map(|t| json!({"type": "resource", "resource": {"uri": "file:///x", "text": t}})),
            ".{0,8}".prop_map(|b| json!({"type": "resource", "resource": {"uri": "file:///y", "blob": b}})),
            ".{0,8}".prop_map(|n| json!({"type": "resource_link", "uri": "file:///z", "name": n})),
            Just(json!({"type": "something_new", "x": 1})),
            Just(json!({"type": "text", "text": 7})),
        ];
        (
            proptest::collection::vec(block, 0..6),
            proptest::option::of(prop_oneof![
                Just(json!({"a": [1, 2]})),
                Just(json!("s")),
                Just(json!(null))
            ]),
            proptest::option::of(any::<bool>()),
        )
            .prop_map(|(content, structured, is_error)| {
                let mut result = json!({"content": content});
                if let Some(structured) = structured {
                    result["structuredContent"] = structured;
                }
                if let Some(is_error) = is_error {
                    result["isError"] = json!(is_error);
                }
                result
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, failure_persistence: None, ..Default::default() })]

        /// Whatever a server returns becomes tool output within the cap, or fails to parse; never
        /// a panic.
        #[test]
        fn any_call_result_becomes_bounded_output(result in call_result()) {
            let Ok(result) = serde_json::from_value::<CallToolResult>(result) else {
                return Ok(());
            };
            let output = convert(result, json!({}));
            let text: usize = output
                .content
                .iter()
                .map(|block| match block {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::Image { .. } => 0,
                })
                .sum();
            // The cap, plus at most a note for each block saying what was cut.
            proptest::prop_assert!(text <= OUTPUT_CAP + 120 * output.content.len(), "{text}");
        }

        #[test]
        fn any_tool_name_becomes_a_provider_safe_name(server in "[a-z]{1,8}", tool in ".{0,80}") {
            let name = catalog_name(&server, &tool);
            proptest::prop_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        }
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary() {
        let mut content = vec![ContentBlock::text("é".repeat(OUTPUT_CAP))];
        cap_text(&mut content);
        let ContentBlock::Text { text } = &content[0] else {
            panic!()
        };
        assert!(text.len() < OUTPUT_CAP + 200);
        assert!(text.contains("more bytes cut"));
    }

    #[test]
    fn errors_name_the_server_tool_and_cause() {
        let text = describe_error(
            "test",
            "sleep",
            &CallError::TimedOut(std::time::Duration::from_millis(1500)),
        );
        assert_eq!(
            text,
            "MCP server 'test' did not answer tool 'sleep' within 1500 ms; the call was cancelled"
        );
        let text = describe_error(
            "test",
            "crash",
            &CallError::Died("it exited with status 3".into()),
        );
        assert_eq!(
            text,
            "MCP server 'test' stopped during tool 'crash': it exited with status 3"
        );
    }
}
