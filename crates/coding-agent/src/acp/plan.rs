//! Plan mode's answer as ACP's `plan` update: the steps of the plan the model proposes (plan mode's
//! prompt asks for a numbered list), each a pending entry, so the editor can show them as a plan.
//! Elph keeps no other plan; an answer without a list sends none.

use agent_client_protocol::v1::schema::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus};

/// The plan in a plan-mode answer: its numbered steps (`1.` or `1)`) at the start of a line, or,
/// when it numbers none, its top-level bullets (`-`, `*`, `+`). `None` when it has neither.
pub(crate) fn from_answer(text: &str) -> Option<Plan> {
    let numbered: Vec<String> = text.lines().filter_map(numbered_step).collect();
    let steps = if numbered.is_empty() {
        text.lines().filter_map(bullet).collect()
    } else {
        numbered
    };
    if steps.is_empty() {
        return None;
    }
    let entries = steps
        .into_iter()
        .map(|step| PlanEntry::new(step, PlanEntryPriority::Medium, PlanEntryStatus::Pending))
        .collect();
    Some(Plan::new(entries))
}

/// `12. text` or `12) text` at the start of the line (up to three spaces before it).
fn numbered_step(line: &str) -> Option<String> {
    let line = top_level(line)?;
    let after_digits = line.trim_start_matches(|c: char| c.is_ascii_digit());
    let digits = line.len() - after_digits.len();
    if digits == 0 || digits > 3 {
        return None;
    }
    let rest = after_digits.strip_prefix(['.', ')'])?;
    step_text(rest)
}

/// `- text`, `* text` or `+ text` at the start of the line (up to three spaces before it).
fn bullet(line: &str) -> Option<String> {
    let line = top_level(line)?;
    let rest = line.strip_prefix(['-', '*', '+'])?;
    step_text(rest)
}

/// The line without up to three leading spaces; `None` for a line indented further (a nested item
/// or code).
fn top_level(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    (line.len() - trimmed.len() <= 3).then_some(trimmed)
}

/// The step's words: after at least one space, without Markdown's checkbox and bold marks.
fn step_text(rest: &str) -> Option<String> {
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let text = rest.trim();
    let text = ["[ ] ", "[x] ", "[X] "]
        .iter()
        .find_map(|checkbox| text.strip_prefix(checkbox))
        .unwrap_or(text);
    let text = text.replace("**", "");
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(text: &str) -> Vec<String> {
        from_answer(text)
            .map(|plan| plan.entries.into_iter().map(|entry| entry.content).collect())
            .unwrap_or_default()
    }

    #[test]
    fn numbered_steps_are_the_plan() {
        let answer = "I looked around.\n\n1. Add `parse` to src/lib.rs\n   - with a test\n2) **Wire** it in main.rs\n\nThat is all.";
        assert_eq!(
            contents(answer),
            ["Add `parse` to src/lib.rs", "Wire it in main.rs"]
        );
        let plan = from_answer(answer).unwrap();
        assert!(
            plan.entries
                .iter()
                .all(|entry| entry.status == PlanEntryStatus::Pending)
        );
    }

    #[test]
    fn bullets_count_only_without_numbered_steps() {
        assert_eq!(
            contents("Steps:\n- [ ] one\n* two\n    - nested\n"),
            ["one", "two"]
        );
        assert_eq!(contents("- bullet\n1. step"), ["step"]);
    }

    #[test]
    fn prose_versions_and_code_are_no_plan() {
        assert!(from_answer("Nothing to change here.").is_none());
        assert!(from_answer("Version 1.2 is out.\n2024. A year.").is_none());
        assert!(from_answer("-flag\n1.5x faster\n    1. indented code").is_none());
        assert!(from_answer("1. \n- ").is_none());
    }
}
