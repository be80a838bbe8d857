//! `elph completions SHELL`: the shell's completion script for every command and option, generated
//! from the same clap definition that parses them, so it cannot drift (docs/cli.md, "Shell
//! completions").

use std::io::Write;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::{Cli, exit};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the completion script to stdout.
pub(super) fn run(args: CompletionsArgs) -> anyhow::Result<u8> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "elph", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(exit::SUCCESS)
}
