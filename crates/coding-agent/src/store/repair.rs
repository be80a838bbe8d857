//! A session left with a tool call and no result (Elph was killed while the tool ran) is made whole
//! on load: each unanswered call gets a stored result saying it was interrupted. Providers that
//! enforce OpenAI's rule (every `tool_call_id` answered by a tool message right after its
//! assistant message) would otherwise refuse every later request of the session.

use elph_agent::harness::Entry;
use elph_agent::messages::{ContentBlock, Message, ToolCall};

/// The result stored for a call that never finished.
pub const INTERRUPTED_RESULT: &str = "interrupted when Elph stopped: this tool call did not finish and \
     its result was lost; it may have run in part. Check its effects before relying on them.";

/// The calls of the last assistant message that have no result after it. Only the last one can
/// lack results: the harness stores every result (or a cancellation) before the next request.
pub fn unanswered_calls(entries: &[Entry]) -> Vec<ToolCall> {
    let messages: Vec<&Message> = entries
        .iter()
        .filter_map(|entry| match entry {
            Entry::Message { message } => Some(message),
            Entry::Summary { .. } | Entry::PromptReplaced { .. } => None,
        })
        .collect();
    let Some(at) = messages
        .iter()
        .rposition(|message| matches!(message, Message::Assistant { .. }))
    else {
        return Vec::new();
    };
    let Message::Assistant { tool_calls, .. } = messages[at] else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[at + 1..]
        .iter()
        .filter_map(|message| match message {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    tool_calls
        .iter()
        .filter(|call| !answered.contains(&call.id.as_str()))
        .cloned()
        .collect()
}

/// The result message for an interrupted call.
pub fn interrupted_result(call: &ToolCall) -> Message {
    Message::tool_result(
        call.id.clone(),
        vec![ContentBlock::text(INTERRUPTED_RESULT)],
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "shell_exec".into(),
            input: json!({"command": "sleep 100"}),
        }
    }

    fn entry(message: Message) -> Entry {
        Entry::Message { message }
    }

    #[test]
    fn only_the_last_assistant_messages_unanswered_calls_are_found() {
        let entries = vec![
            entry(Message::user("go")),
            entry(Message::assistant("", vec![call("a")])),
            entry(interrupted_result(&call("a"))),
            entry(Message::assistant("", vec![call("b"), call("c"), call("d")])),
            entry(Message::tool_result("c", vec![ContentBlock::text("ok")], false)),
        ];
        let ids: Vec<String> = unanswered_calls(&entries).into_iter().map(|c| c.id).collect();
        assert_eq!(ids, ["b", "d"]);
    }

    #[test]
    fn a_whole_transcript_needs_nothing() {
        let entries = vec![
            entry(Message::user("go")),
            entry(Message::assistant("", vec![call("a")])),
            entry(Message::tool_result("a", vec![ContentBlock::text("ok")], false)),
            entry(Message::assistant("done", vec![])),
        ];
        assert!(unanswered_calls(&entries).is_empty());
        assert!(unanswered_calls(&[]).is_empty());
    }
}
