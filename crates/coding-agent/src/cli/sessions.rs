//! `elph sessions`: the project's stored sessions, newest first.

use std::io::Write;
use std::path::Path;

use clap::Args;

use super::exit;
use crate::paths::Paths;
use crate::store::{SessionStore, format_sessions};

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Print one JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(cwd: Option<&Path>, args: SessionsArgs) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    let sessions = if paths.data_dir.join("sessions.db").exists() {
        SessionStore::open(&paths.data_dir)?.list(&paths.project_dir)?
    } else {
        Vec::new()
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &sessions)?;
        writeln!(out)?;
        return Ok(exit::SUCCESS);
    }
    // Session titles are prompts: anything can be in them.
    let mut out = crate::terminal_text::Escaping::new(out);
    if sessions.is_empty() {
        writeln!(out, "no sessions for {} yet", paths.project_dir.display())?;
    } else {
        write!(
            out,
            "{}",
            format_sessions(&sessions, time::OffsetDateTime::now_utc())
        )?;
        writeln!(
            out,
            "resume one with `elph run --session ID`, or the latest with `elph run -c`"
        )?;
    }
    Ok(exit::SUCCESS)
}
