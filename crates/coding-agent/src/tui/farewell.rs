//! What stays on the terminal after the TUI leaves its alternate screen: the conversation as plain
//! text, as it was shown, then how to come back to it. The alternate screen keeps nothing, so
//! without this the transcript would vanish on exit.

use super::items::Item;
use super::transcript;

/// The transcript at `width` columns, every row escaped for the terminal (a project's text may
/// hold escape sequences), then the resume hint when there is a conversation to resume. Empty when
/// nothing happened.
pub(crate) fn text(items: &[Item], width: usize, session_id: &str) -> String {
    let mut out = String::new();
    if items.is_empty() {
        return out;
    }
    for line in transcript::tail(items, width, false, usize::MAX).0 {
        let row: String = line.spans.iter().map(|span| span.content.as_ref()).collect();
        out.push_str(crate::terminal_text::escape(row.trim_end()).as_ref());
        out.push('\n');
    }
    let conversation = items.iter().any(|item| matches!(item, Item::User(_)));
    if conversation && !session_id.is_empty() {
        out.push('\n');
        out.push_str(&format!(
            "resume with `elph -c` (or `elph --session {}`)\n",
            crate::terminal_text::escape(session_id)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::worker::Level;

    #[test]
    fn the_conversation_then_the_resume_hint() {
        let items = vec![
            Item::User("fix the \u{1b}]0;title\u{7} bug".into()),
            Item::Assistant {
                text: "Fixed.".into(),
                streaming: false,
            },
        ];
        let text = text(&items, 60, "0197c1a2-3b4c");
        assert!(text.contains("› fix the"), "{text}");
        assert!(text.contains("● Fixed."), "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "{text:?}");
        assert!(
            text.ends_with("\nresume with `elph -c` (or `elph --session 0197c1a2-3b4c`)\n"),
            "{text}"
        );
    }

    #[test]
    fn no_hint_without_a_conversation_and_nothing_for_an_empty_session() {
        assert_eq!(text(&[], 60, "s"), "");
        let notice = [Item::Notice {
            level: Level::Info,
            text: "hello".into(),
        }];
        let text = text(&notice, 60, "s");
        assert!(text.contains("hello") && !text.contains("resume with"), "{text}");
    }
}
