//! `elph man [--dir DIR]`: the manual page, generated from the clap definition that parses the
//! arguments (docs/cli.md, "The manual page"). Without `--dir`, `elph.1` goes to stdout; with it,
//! `elph.1` and one page per command (`elph-run.1`, `elph-hooks-list.1`, …) are written there, the
//! layout `man elph-run` expects.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, CommandFactory};

use super::{Cli, exit};

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write elph.1 and one page per command into DIR (created if missing), e.g.
    /// ~/.local/share/man/man1, instead of printing elph.1.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The command tree the pages describe, built so each subcommand knows its full name
/// (`elph-hooks-list`). `elph help` is left out: the pages are the help.
fn command() -> clap::Command {
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    command
}

/// One page, with the footer every page shares ("elph 0.1.0", "Elph Manual"); clap_mangen
/// would otherwise give subcommands, which have no version of their own, a blank one.
fn page(command: clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(command)
        .source(format!("elph {}", env!("CARGO_PKG_VERSION")))
        .manual("Elph Manual")
}

pub(super) fn run(args: ManArgs) -> anyhow::Result<u8> {
    match args.dir {
        None => {
            let mut text = Vec::new();
            page(command()).render(&mut text)?;
            let mut out = std::io::stdout().lock();
            out.write_all(&text)?;
            out.flush()?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create the folder {}", dir.display()))?;
            write_pages(command(), &dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
            println!("wrote the manual pages to {}", dir.display());
        }
    }
    Ok(exit::SUCCESS)
}

/// Writes the page of `command` and, recursively, of each of its visible subcommands.
fn write_pages(command: clap::Command, dir: &Path) -> std::io::Result<()> {
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        write_pages(sub.clone(), dir)?;
    }
    page(command).generate_to(dir)?;
    Ok(())
}
