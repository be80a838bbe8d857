//! The provider-neutral conversation shape: what the harness stores, what hooks see and return
//! (`context.messages`, `beforeAgent.messages`), and what every provider adapter translates from.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation. The system prompt is not a message: it travels beside them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase", rename_all_fields = "camelCase")]
pub enum Message {
    /// What the user (or a hook on their behalf) said.
    User {
        /// The text or blocks.
        content: Content,
    },
    /// What the model answered.
    Assistant {
        /// The text or blocks.
        content: Content,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        /// The tools it asked to call, in order.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result, answering one call.
    Tool {
        /// The call it answers (`ToolCall::id`).
        tool_call_id: String,
        /// The result.
        content: Content,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        /// Whether the tool failed.
        is_error: bool,
    },
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            content: Content::Text(text.into()),
        }
    }

    /// An assistant message of plain text and its tool calls.
    pub fn assistant(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content: Content::Text(text.into()),
            tool_calls,
        }
    }

    /// A tool result of blocks.
    pub fn tool_result(tool_call_id: impl Into<String>, content: Vec<ContentBlock>, is_error: bool) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: Content::Blocks(content),
            is_error,
        }
    }

    /// `user`, `assistant` or `tool`.
    pub fn role(&self) -> &'static str {
        match self {
            Message::User { .. } => "user",
            Message::Assistant { .. } => "assistant",
            Message::Tool { .. } => "tool",
        }
    }

    /// The message's content, whatever its role.
    pub fn content(&self) -> &Content {
        match self {
            Message::User { content }
            | Message::Assistant { content, .. }
            | Message::Tool { content, .. } => content,
        }
    }
}

/// Message content: a plain string, or a list of blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// A plain string.
    Text(String),
    /// A list of blocks.
    Blocks(Vec<ContentBlock>),
}

impl Content {
    /// All text of the content, blocks joined by newlines; images are left out.
    pub fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    ContentBlock::Image { .. } => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// The content as blocks (a plain string becomes one text block).
    pub fn blocks(&self) -> Vec<ContentBlock> {
        match self {
            Content::Text(text) => vec![ContentBlock::text(text.clone())],
            Content::Blocks(blocks) => blocks.clone(),
        }
    }
}

/// A block of content. `mime_type` keeps its snake_case spelling: it is part of the published
/// hook protocol.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, inline.
    Image {
        /// The image, base64-encoded.
        data: String,
        /// Its type, such as `image/png`.
        mime_type: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }
}

/// A tool call requested by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; the result names it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The input, as the model wrote it.
    pub input: Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documented_example_message_parses() {
        let message: Message =
            serde_json::from_value(json!({"role": "user", "content": "Redacted context"})).unwrap();
        assert_eq!(message, Message::user("Redacted context"));
    }

    #[test]
    fn tool_messages_use_camel_case() {
        let message = Message::tool_result("call_1", vec![ContentBlock::text("ok")], true);
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({"role": "tool", "toolCallId": "call_1", "content": [{"type": "text", "text": "ok"}], "isError": true})
        );
    }

    #[test]
    fn image_blocks_keep_mime_type_spelling() {
        let block: ContentBlock =
            serde_json::from_value(json!({"type": "image", "data": "AAAA", "mime_type": "image/png"}))
                .unwrap();
        assert_eq!(
            block,
            ContentBlock::Image {
                data: "AAAA".into(),
                mime_type: "image/png".into()
            }
        );
        assert!(serde_json::from_value::<ContentBlock>(json!({"type": "video", "data": "x"})).is_err());
    }
}
