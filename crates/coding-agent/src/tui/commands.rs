//! The slash commands on the screen: the palette's filtering as you type, and the `/help` panel.
//! The commands themselves (names, wording) are the session's table, and how a line is taken its `route`.

use super::items::{Panel, PanelLine, Tone};
pub(crate) use crate::session::commands::SlashCommand;
use crate::session::commands::{FrontEnd, offered};
use crate::trust::TrustSlashCommand;
use crate::workflows::WorkflowCommand;

/// One row of the palette: a built-in command, or a template's or skill's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaletteEntry {
    name: String,
    /// Other names it answers to (`exit` for `quit`): typing one finds the entry.
    aliases: &'static [&'static str],
    /// The argument as a usage suffix (` [instructions]`), or nothing.
    pub usage: String,
    pub description: String,
}

impl PaletteEntry {
    pub fn name(&self) -> &str {
        &self.name
    }

    fn builtin(command: SlashCommand) -> PaletteEntry {
        let description = match command.aliases() {
            [] => command.description().to_string(),
            aliases => format!(
                "{} (also {})",
                command.description(),
                aliases
                    .iter()
                    .map(|a| format!("/{a}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        PaletteEntry {
            name: command.name().to_string(),
            aliases: command.aliases(),
            usage: command.usage(),
            description,
        }
    }

    fn workflow(command: &WorkflowCommand) -> PaletteEntry {
        PaletteEntry {
            name: command.name.clone(),
            aliases: &[],
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
    let names = |entry: &PaletteEntry| {
        std::iter::once(entry.name.to_ascii_lowercase())
            .chain(entry.aliases.iter().map(|alias| alias.to_ascii_lowercase()))
            .collect::<Vec<_>>()
    };
    let starts = |entry: &PaletteEntry| names(entry).iter().any(|name| name.starts_with(&typed));
    let contains = |entry: &PaletteEntry| names(entry).iter().any(|name| name.contains(&typed));
    let builtins = entries.len() - workflows.len();
    let (builtin, workflow) = entries.split_at(builtins);
    let mut matches = Vec::new();
    for group in [builtin, workflow] {
        matches.extend(group.iter().filter(|e| starts(e)).cloned());
        matches.extend(group.iter().filter(|e| !starts(e) && contains(e)).cloned());
    }
    Some(matches)
}

/// `/help`: the commands offered now (the one trust command that applies), the project's prompt
/// templates and skills, and the keys.
pub(crate) fn help_panel(trust: TrustSlashCommand, workflows: &[WorkflowCommand]) -> Panel {
    let mut lines = vec![PanelLine {
        tone: Tone::Heading,
        text: "Commands".into(),
    }];
    for command in offered(trust, FrontEnd::Terminal) {
        lines.push(PanelLine {
            tone: Tone::Normal,
            text: format!(
                "  {:<26}{}",
                format!("{}{}", command.names(), command.usage()),
                command.description()
            ),
        });
    }
    if !workflows.is_empty() {
        lines.push(PanelLine {
            tone: Tone::Heading,
            text: "Prompt templates and skills".into(),
        });
        for entry in workflows.iter().map(PaletteEntry::workflow) {
            lines.push(PanelLine {
                tone: Tone::Normal,
                text: format!(
                    "  {:<26}{}",
                    format!("/{}{}", entry.name, entry.usage),
                    entry.description
                ),
            });
        }
    }
    lines.push(PanelLine {
        tone: Tone::Heading,
        text: "Keys".into(),
    });
    for (keys, what) in [
        ("Enter", "send"),
        ("Shift/Alt+Enter, Ctrl+J", "new line"),
        ("Up/Down", "move between lines, recall earlier prompts"),
        ("Esc", "cancel the running turn; close the palette or a question"),
        ("Ctrl+C", "cancel the running turn and its hooks; twice to exit"),
        ("Ctrl+O", "expand or collapse tool output"),
        ("Shift+Tab", "switch the agent mode (build, plan)"),
        (
            "PageUp/PageDown",
            "scroll the transcript (Ctrl+End: back to the end)",
        ),
        ("//word …", "send a line that starts with /word as text"),
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
        assert_eq!(names("/").unwrap().len(), 10);
        assert_eq!(names("/ex").unwrap(), vec!["quit"]);
        assert_eq!(names("/cle").unwrap(), vec!["new"]);
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
        assert_eq!(all.len(), 12);
        assert_eq!(all.last().map(|c| c.name()), Some("skill:refactor"));
    }
}

#[cfg(test)]
mod help_tests {
    use super::*;

    fn help_text(trust: TrustSlashCommand, workflows: &[WorkflowCommand]) -> String {
        help_panel(trust, workflows)
            .lines
            .iter()
            .map(|line| line.text.clone())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn help_shows_the_trust_command_that_applies_and_the_templates() {
        let untrusted = help_text(TrustSlashCommand::Trust, &[]);
        assert!(
            untrusted.contains("/trust ") && !untrusted.contains("/untrust"),
            "{untrusted}"
        );
        let trusted = help_text(TrustSlashCommand::Untrust, &[]);
        assert!(
            trusted.contains("/untrust") && !trusted.contains("/trust "),
            "{trusted}"
        );
        assert!(
            trusted.contains("/quit, /exit") && trusted.contains("/new, /clear"),
            "{trusted}"
        );
        assert!(!trusted.contains("Prompt templates"), "{trusted}");
        let workflows = [WorkflowCommand {
            name: "review".into(),
            description: "Review a file".into(),
            hint: Some("FILE".into()),
        }];
        let with = help_text(TrustSlashCommand::Untrust, &workflows);
        assert!(with.contains("Prompt templates and skills"), "{with}");
        assert!(
            with.contains("/review [FILE]") && with.contains("Review a file"),
            "{with}"
        );
    }
}
