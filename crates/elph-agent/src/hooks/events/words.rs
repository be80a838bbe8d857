//! Short renderings of payload parts for the words an event uses to explain its result.

use serde_json::json;

use crate::messages::{Content, ContentBlock, Message};

/// At most `max` bytes of `text`, cut on a character boundary, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", text.get(..end).unwrap_or_default(), text.len())
}

/// `text` as a JSON string, shortened.
pub fn quoted(text: &str, max: usize) -> String {
    shorten(&json!(text).to_string(), max)
}

/// "role: text", shortened.
pub(crate) fn describe_message(message: &Message) -> String {
    let text = match message.content() {
        Content::Text(text) => text.clone(),
        Content::Blocks(blocks) => blocks.iter().map(describe_block).collect::<Vec<_>>().join(" "),
    };
    format!("{}: {}", message.role(), quoted(&text, 200))
}

/// A text block as a shortened JSON string; an image by its type and size.
pub(crate) fn describe_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } => quoted(text, 300),
        ContentBlock::Image { data, mime_type } => {
            format!("[image {mime_type}, {} bytes base64]", data.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_cuts_on_a_char_boundary() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("ééé", 3), "é… (6 bytes)");
    }
}
