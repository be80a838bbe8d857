//! The slash commands on the screen: the palette's filtering as you type, and the `/help` panel.
//! The commands themselves (names, wording, parsing) are the session's table.

use super::items::{Panel, PanelLine, Tone};
use crate::session::commands::{FrontEnd, offered};
pub use crate::session::commands::{Parsed, SlashCommand, parse};
use crate::trust::TrustSlashCommand;

/// The palette's entries for `input`: open while the input is `/` and a partial name (no space
/// yet). Names that start with the typed text come first, then names that contain it.
pub fn palette_matches(input: &str, trust: TrustSlashCommand) -> Option<Vec<SlashCommand>> {
    let typed = input.strip_prefix('/')?;
    if typed.contains(char::is_whitespace) {
        return None;
    }
    let typed = typed.to_ascii_lowercase();
    let offered = offered(trust, FrontEnd::Terminal);
    let mut matches: Vec<SlashCommand> = offered
        .iter()
        .copied()
        .filter(|c| c.name().starts_with(&typed))
        .collect();
    matches.extend(
        offered
            .iter()
            .copied()
            .filter(|c| !c.name().starts_with(&typed) && c.name().contains(&typed)),
    );
    Some(matches)
}

pub fn help_panel() -> Panel {
    let mut lines = vec![PanelLine {
        tone: Tone::Heading,
        text: "Commands".into(),
    }];
    for command in SlashCommand::ALL {
        lines.push(PanelLine {
            tone: Tone::Normal,
            text: format!(
                "  {:<26}{}",
                format!("/{}{}", command.name(), command.usage()),
                command.description()
            ),
        });
    }
    lines.push(PanelLine {
        tone: Tone::Heading,
        text: "Keys".into(),
    });
    for (keys, what) in [
        ("Enter", "send"),
        ("Shift/Alt+Enter, Ctrl+J", "new line"),
        ("Up/Down", "move between lines, recall earlier prompts"),
        ("Ctrl+C", "cancel the running turn and its hooks; twice to exit"),
        ("Ctrl+O", "expand or collapse tool output"),
        (
            "PageUp/PageDown",
            "scroll the transcript (Ctrl+End: back to the end)",
        ),
    ] {
        lines.push(PanelLine {
            tone: Tone::Normal,
            text: format!("  {keys:<26}{what}"),
        });
    }
    Panel {
        title: "Help".into(),
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_palette_filters_as_you_type() {
        let names = |input| {
            palette_matches(input, TrustSlashCommand::Untrust)
                .map(|m| m.iter().map(|c| c.name()).collect::<Vec<_>>())
        };
        assert_eq!(names("/").unwrap().len(), 8);
        assert_eq!(names("/re").unwrap(), vec!["reload", "resume"]);
        assert_eq!(names("/ust").unwrap(), vec!["untrust"]);
        assert_eq!(names("/compact now"), None);
        assert_eq!(names("hello"), None);
    }
}
