//! `elph doctor [--json]`: where Elph looks, what it trusts, which hooks it loaded, every
//! diagnostic, and how each hook has been doing (docs/cli.md, "`elph doctor`"). The report itself is gathered and
//! rendered in `src/doctor/`; this is the command-line edge.

use std::io::Write;
use std::path::Path;

use clap::Args;

use super::exit;
use crate::paths::Paths;

use crate::doctor as report;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the report as one JSON document (with "schemaVersion": 1).
    #[arg(long)]
    pub json: bool,
}

/// Gathers and prints the report. Exits 0 whatever it finds; only a doctor that cannot run at all
/// (no home folder, a project folder that does not exist) fails.
pub(super) fn run(cwd: Option<&Path>, args: DoctorArgs) -> anyhow::Result<u8> {
    let paths = Paths::from_env(cwd)?;
    let env = |name: &str| std::env::var(name).ok();
    let sources = report::PathSources::resolve(cwd.is_some(), &env);
    let path_var = env("PATH").unwrap_or_default();
    let report = report::gather(&paths, &sources, &path_var);
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        report::render(&mut crate::terminal_text::Escaping::new(&mut out), &report)
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => Ok(exit::SUCCESS),
        // `elph doctor | head` is fine.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(exit::SUCCESS),
        Err(error) => Err(error.into()),
    }
}
