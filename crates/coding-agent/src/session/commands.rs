//! The slash commands, once for every front end: their names, arguments and descriptions (one
//! wording for the TUI's palette and `/help` and for ACP's `available_commands`), who handles each,
//! which a project is offered in its trust state. How a typed line is taken is `route.rs`.

use tokio_util::sync::CancellationToken;

use super::Op;
use crate::trust::TrustSlashCommand;

/// A slash command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlashCommand {
    Help,
    Trust,
    Untrust,
    Reload,
    Compact,
    New,
    Resume,
    Mode,
    Model,
    Hooks,
    Quit,
}

/// Who carries a command out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Handler {
    /// The session (an [`Op`]): it waits while a turn runs.
    Session,
    /// The front end itself (a panel, quitting): it works while the agent does.
    FrontEnd,
}

/// A command's optional argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Argument {
    /// Its name in a usage line: `/compact [instructions]`.
    pub name: &'static str,
    /// What to type, for clients that show a hint in the input.
    pub hint: &'static str,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spec {
    pub command: SlashCommand,
    pub name: &'static str,
    /// Other names it answers to, the ones people bring from other agents (`/exit`, `/clear`).
    pub aliases: &'static [&'static str],
    pub argument: Option<Argument>,
    pub description: &'static str,
    pub handler: Handler,
}

/// The commands offered to editors over ACP, in the order they list them. Editors have their own
/// ways to start, load and leave sessions and no panels, so only the commands about the project's
/// hooks, context and model are: never `/quit`, `/new`, `/resume` or their aliases.
pub(crate) const IN_EDITORS: [SlashCommand; 5] = [
    SlashCommand::Reload,
    SlashCommand::Trust,
    SlashCommand::Untrust,
    SlashCommand::Compact,
    SlashCommand::Model,
];

/// Every command, in the order the palette and `/help` list them.
pub(crate) const TABLE: [Spec; 11] = [
    Spec {
        command: SlashCommand::Help,
        name: "help",
        aliases: &[],
        argument: None,
        description: "Show commands and keys",
        handler: Handler::FrontEnd,
    },
    Spec {
        command: SlashCommand::Trust,
        name: TrustSlashCommand::Trust.name(),
        aliases: &[],
        argument: None,
        description: TrustSlashCommand::Trust.description(),
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::Untrust,
        name: TrustSlashCommand::Untrust.name(),
        aliases: &[],
        argument: None,
        description: TrustSlashCommand::Untrust.description(),
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::Reload,
        name: "reload",
        aliases: &[],
        argument: None,
        description: "Re-read trust and both hooks.json files",
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::Compact,
        name: "compact",
        aliases: &[],
        argument: Some(Argument {
            name: "instructions",
            hint: "what the summary should keep",
        }),
        description: "Summarize the older conversation to free context",
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::New,
        name: "new",
        aliases: &["clear"],
        argument: None,
        description: "End this session and start a new one",
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::Resume,
        name: "resume",
        aliases: &[],
        argument: Some(Argument {
            name: "session id",
            hint: "the id of an earlier session",
        }),
        description: "Resume an earlier session of this project",
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::Mode,
        name: "mode",
        aliases: &[],
        argument: Some(Argument {
            name: "build|plan",
            hint: "build or plan; none switches to the other",
        }),
        description: "Switch the agent mode (plan: read-only)",
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::Model,
        name: "model",
        aliases: &[],
        argument: Some(Argument {
            name: "provider/model",
            hint: "a model such as openai/gpt-4.1; none shows the current one",
        }),
        description: "Show the model, or switch this session to another",
        handler: Handler::Session,
    },
    Spec {
        command: SlashCommand::Hooks,
        name: "hooks",
        aliases: &[],
        argument: None,
        description: "Active hooks, sources, recent runs, diagnostics",
        handler: Handler::FrontEnd,
    },
    Spec {
        command: SlashCommand::Quit,
        name: "quit",
        aliases: &["exit"],
        argument: None,
        description: "End the session and exit",
        handler: Handler::FrontEnd,
    },
];

impl SlashCommand {
    pub(crate) const ALL: [SlashCommand; 11] = {
        let mut all = [SlashCommand::Help; 11];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].command;
            i += 1;
        }
        all
    };

    /// The command's row of [`TABLE`].
    pub(crate) fn spec(self) -> &'static Spec {
        TABLE
            .iter()
            .find(|spec| spec.command == self)
            .unwrap_or(&TABLE[0])
    }

    pub(crate) fn name(self) -> &'static str {
        self.spec().name
    }

    /// The argument as a usage suffix (` [instructions]`), or nothing.
    pub(crate) fn usage(self) -> String {
        self.spec()
            .argument
            .map(|argument| format!(" [{}]", argument.name))
            .unwrap_or_default()
    }

    /// The other names it answers to.
    pub(crate) fn aliases(self) -> &'static [&'static str] {
        self.spec().aliases
    }

    /// The name and its aliases as typed: `/quit, /exit`.
    pub(crate) fn names(self) -> String {
        std::iter::once(self.name())
            .chain(self.aliases().iter().copied())
            .map(|name| format!("/{name}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(crate) fn description(self) -> &'static str {
        self.spec().description
    }

    /// Whether the session carries it out (and so it waits while a turn runs).
    pub(crate) fn needs_session(self) -> bool {
        self.spec().handler == Handler::Session
    }

    /// The operation a session command stands for, with its argument (`cancel` for one that can be
    /// cancelled); `None` for the front end's own commands. `/resume` without an id lists the
    /// sessions to choose from.
    pub(crate) fn op(self, argument: Option<String>, cancel: CancellationToken) -> Option<Op> {
        match self {
            SlashCommand::Trust => Some(Op::Trust),
            SlashCommand::Untrust => Some(Op::Untrust),
            SlashCommand::Reload => Some(Op::Reload),
            SlashCommand::Compact => Some(Op::Compact {
                instructions: argument,
                cancel,
            }),
            SlashCommand::New => Some(Op::New),
            SlashCommand::Resume => Some(match argument {
                Some(id) => Op::Resume(id),
                None => Op::ListSessions,
            }),
            SlashCommand::Mode => Some(Op::SetMode(argument)),
            SlashCommand::Model => Some(Op::Model(argument)),
            SlashCommand::Help | SlashCommand::Hooks | SlashCommand::Quit => None,
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<SlashCommand> {
        TABLE
            .iter()
            .find(|spec| {
                spec.name.eq_ignore_ascii_case(name)
                    || spec.aliases.iter().any(|alias| alias.eq_ignore_ascii_case(name))
            })
            .map(|spec| spec.command)
    }
}

/// Whether `name` is a built-in command's (without regard to case): prompt templates may not take it.
pub(crate) fn is_builtin(name: &str) -> bool {
    SlashCommand::from_name(name).is_some()
}

/// Which front end asks: which built-in commands it offers ([`offered`]) and carries out
/// ([`super::route`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrontEnd {
    /// The terminal UI (`elph`): every command.
    Terminal,
    /// An editor over ACP: [`IN_EDITORS`].
    Editor,
    /// `elph run`: one prompt, no built-in commands.
    #[default]
    Headless,
}

/// The commands offered in the current trust state: exactly one of /trust and /untrust (the one
/// `TrustDecision::offered_command` names), and for editors only those [`IN_EDITORS`].
pub(crate) fn offered(trust: TrustSlashCommand, front_end: FrontEnd) -> Vec<SlashCommand> {
    let all: &[SlashCommand] = match front_end {
        FrontEnd::Terminal => &SlashCommand::ALL,
        FrontEnd::Editor => &IN_EDITORS,
        FrontEnd::Headless => &[],
    };
    all.iter()
        .copied()
        .filter(|command| match command {
            SlashCommand::Trust => trust == TrustSlashCommand::Trust,
            SlashCommand::Untrust => trust == TrustSlashCommand::Untrust,
            _ => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_every_command_once() {
        for command in SlashCommand::ALL {
            assert_eq!(command.spec().command, command);
            assert_eq!(SlashCommand::from_name(command.name()), Some(command));
        }
        let mut names: Vec<&str> = TABLE
            .iter()
            .flat_map(|spec| std::iter::once(spec.name).chain(spec.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "no name or alias is used twice");
    }

    #[test]
    fn the_command_table_in_cli_md_names_every_command_and_alias() {
        let cli = include_str!("../../../../docs/cli.md");
        for command in SlashCommand::ALL {
            let row = format!("| `/{}", command.name());
            assert!(
                cli.contains(&row),
                "docs/cli.md has no row for /{}",
                command.name()
            );
            for alias in command.aliases() {
                assert!(
                    cli.contains(&format!("`/{alias}`")),
                    "docs/cli.md does not name /{alias}, the alias of /{}",
                    command.name()
                );
            }
        }
    }

    #[test]
    fn exactly_one_trust_command_is_offered() {
        let names = |trust, front| offered(trust, front).iter().map(|c| c.name()).collect::<Vec<_>>();
        let untrusted = names(TrustSlashCommand::Trust, FrontEnd::Terminal);
        assert!(untrusted.contains(&"trust") && !untrusted.contains(&"untrust"));
        let trusted = names(TrustSlashCommand::Untrust, FrontEnd::Terminal);
        assert!(trusted.contains(&"untrust") && !trusted.contains(&"trust"));
        assert_eq!(
            names(TrustSlashCommand::Untrust, FrontEnd::Editor),
            ["reload", "untrust", "compact", "model"]
        );
    }
}
