//! The slash commands on the screen: the palette's filtering as you type, and the `/help` panel.
//! The commands themselves (names, wording, parsing) are the session's table.

use super::items::{Panel, PanelLine, Tone};
use crate::session::commands::{FrontEnd, offered};
pub(crate) use crate::session::commands::{Parsed, SlashCommand, parse};
use crate::trust::TrustSlashCommand;
use crate::workflows::WorkflowCommand;

/// One row of the palette: a built-in command, or a template's or skill's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaletteEntry {
    name: String,
    /// The argument as a usage suffix (` [instructions]`), or nothing.
    pub usage: String,
    pub description: String,
}

impl PaletteEntry {
    pub fn name(&self) -> &str {
        &self.name
    }

    fn builtin(command: SlashCommand) -> PaletteEntry {
        PaletteEntry {
            name: command.name().to_string(),
            usage: command.usage(),
            description: command.description().to_string(),
        }
    }

    fn workflow(command: &WorkflowCommand) -> PaletteEntry {
        PaletteEntry {
            name: command.name.clone(),
            usage: command
                .hint
                .as_ref()
                .map(|hint| format!(" [{hint}]"))
                .unwrap_or_default(),
            description: command.description.clone(),
        }
    }
}

/// The palette's entries for `input`: open while the input is `/` and a partial name (no space
/// yet). The built-ins come before the templates and skills; within each, names that start with
/// the typed text come first, then names that contain it.
pub(crate) fn palette_matches(
    input: &str,
    trust: TrustSlashCommand,
    workflows: &[WorkflowCommand],
) -> Option<Vec<PaletteEntry>> {
    let typed = input.strip_prefix('/')?;
    if typed.contains(char::is_whitespace) {
        return None;
    }
    let typed = typed.to_ascii_lowercase();
    let entries: Vec<PaletteEntry> = offered(trust, FrontEnd::Terminal)
        .into_iter()
        .map(PaletteEntry::builtin)
        .chain(workflows.iter().map(PaletteEntry::workflow))
        .collect();
    let starts = |entry: &PaletteEntry| entry.name.to_ascii_lowercase().starts_with(&typed);
    let contains = |entry: &PaletteEntry| entry.name.to_ascii_lowercase().contains(&typed);
    let builtins = entries.len() - workflows.len();
    let (builtin, workflow) = entries.split_at(builtins);
    let mut matches = Vec::new();
    for group in [builtin, workflow] {
        matches.extend(group.iter().filter(|e| starts(e)).cloned());
        matches.extend(group.iter().filter(|e| !starts(e) && contains(e)).cloned());
    }
    Some(matches)
}

pub(crate) fn help_panel() -> Panel {
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
        ("Shift+Tab", "switch the agent mode (build, plan)"),
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
            palette_matches(input, TrustSlashCommand::Untrust, &[])
                .map(|m| m.iter().map(|c| c.name().to_string()).collect::<Vec<_>>())
        };
        assert_eq!(names("/").unwrap().len(), 9);
        assert_eq!(names("/re").unwrap(), vec!["reload", "resume"]);
        assert_eq!(names("/ust").unwrap(), vec!["untrust"]);
        assert_eq!(names("/compact now"), None);
        assert_eq!(names("hello"), None);
    }

    #[test]
    fn templates_and_skills_follow_the_built_ins() {
        let workflows = [
            WorkflowCommand {
                name: "review".into(),
                description: "Review a file".into(),
                hint: Some("FILE".into()),
            },
            WorkflowCommand {
                name: "skill:refactor".into(),
                description: "Refactor safely".into(),
                hint: None,
            },
        ];
        let matches = palette_matches("/re", TrustSlashCommand::Untrust, &workflows).unwrap();
        let names: Vec<&str> = matches.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["reload", "resume", "review", "skill:refactor"]);
        assert_eq!(matches[2].usage, " [FILE]");
        assert_eq!(matches[2].description, "Review a file");
        let all = palette_matches("/", TrustSlashCommand::Untrust, &workflows).unwrap();
        assert_eq!(all.len(), 11);
        assert_eq!(all.last().map(|c| c.name()), Some("skill:refactor"));
    }
}
