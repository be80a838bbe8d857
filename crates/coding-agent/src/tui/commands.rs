//! The slash commands: their names and descriptions, what the palette offers for the current trust
//! state, filtering as you type, and parsing a submitted line.

use super::items::{Panel, PanelLine, Tone};
use crate::trust::TrustSlashCommand;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    Trust,
    Untrust,
    Reload,
    Compact,
    New,
    Resume,
    Hooks,
    Quit,
}

impl SlashCommand {
    pub const ALL: [SlashCommand; 9] = [
        SlashCommand::Help,
        SlashCommand::Trust,
        SlashCommand::Untrust,
        SlashCommand::Reload,
        SlashCommand::Compact,
        SlashCommand::New,
        SlashCommand::Resume,
        SlashCommand::Hooks,
        SlashCommand::Quit,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SlashCommand::Help => "help",
            SlashCommand::Trust => TrustSlashCommand::Trust.name(),
            SlashCommand::Untrust => TrustSlashCommand::Untrust.name(),
            SlashCommand::Reload => "reload",
            SlashCommand::Compact => "compact",
            SlashCommand::New => "new",
            SlashCommand::Resume => "resume",
            SlashCommand::Hooks => "hooks",
            SlashCommand::Quit => "quit",
        }
    }

    /// The argument, for the palette and /help.
    pub fn usage(self) -> &'static str {
        match self {
            SlashCommand::Compact => " [instructions]",
            SlashCommand::Resume => " [session id]",
            _ => "",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            SlashCommand::Help => "Show commands and keys",
            SlashCommand::Trust => TrustSlashCommand::Trust.description(),
            SlashCommand::Untrust => TrustSlashCommand::Untrust.description(),
            SlashCommand::Reload => "Re-read trust and both hooks.json files",
            SlashCommand::Compact => "Summarize the older conversation to free context",
            SlashCommand::New => "End this session and start a new one",
            SlashCommand::Resume => "Resume an earlier session of this project",
            SlashCommand::Hooks => "Active hooks, sources, recent runs, diagnostics",
            SlashCommand::Quit => "End the session and exit",
        }
    }

    fn from_name(name: &str) -> Option<SlashCommand> {
        SlashCommand::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether the command needs the agent (and so waits while a turn runs).
    pub fn needs_agent(self) -> bool {
        !matches!(
            self,
            SlashCommand::Help | SlashCommand::Hooks | SlashCommand::Quit
        )
    }
}

/// The commands offered in the current trust state: exactly one of /trust and /untrust.
pub fn offered(trust: TrustSlashCommand) -> Vec<SlashCommand> {
    SlashCommand::ALL
        .into_iter()
        .filter(|command| match command {
            SlashCommand::Trust => trust == TrustSlashCommand::Trust,
            SlashCommand::Untrust => trust == TrustSlashCommand::Untrust,
            _ => true,
        })
        .collect()
}

/// The palette's entries for `input`: open while the input is `/` and a partial name (no space
/// yet). Names that start with the typed text come first, then names that contain it.
pub fn palette_matches(input: &str, trust: TrustSlashCommand) -> Option<Vec<SlashCommand>> {
    let typed = input.strip_prefix('/')?;
    if typed.contains(char::is_whitespace) {
        return None;
    }
    let typed = typed.to_ascii_lowercase();
    let offered = offered(trust);
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

/// A submitted line that starts with `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Command(SlashCommand, Option<String>),
    Unknown(String),
}

/// Parses a submitted line; `None` when it is not a command (a prompt).
pub fn parse(line: &str) -> Option<Parsed> {
    let line = line.trim();
    let rest = line.strip_prefix('/')?;
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, Some(args.trim().to_string()).filter(|a| !a.is_empty())),
        None => (rest, None),
    };
    Some(match SlashCommand::from_name(&name.to_ascii_lowercase()) {
        Some(command) => Parsed::Command(command, args),
        None => Parsed::Unknown(name.to_string()),
    })
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
    fn exactly_one_trust_command_is_offered() {
        let names = |trust| offered(trust).iter().map(|c| c.name()).collect::<Vec<_>>();
        let untrusted = names(TrustSlashCommand::Trust);
        assert!(untrusted.contains(&"trust") && !untrusted.contains(&"untrust"));
        let trusted = names(TrustSlashCommand::Untrust);
        assert!(trusted.contains(&"untrust") && !trusted.contains(&"trust"));
    }

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

    #[test]
    fn parses_commands_and_arguments() {
        assert_eq!(
            parse("/compact keep the plan"),
            Some(Parsed::Command(
                SlashCommand::Compact,
                Some("keep the plan".into())
            ))
        );
        assert_eq!(parse(" /quit "), Some(Parsed::Command(SlashCommand::Quit, None)));
        assert_eq!(parse("/nope x"), Some(Parsed::Unknown("nope".into())));
        assert_eq!(parse("hello /quit"), None);
    }
}
