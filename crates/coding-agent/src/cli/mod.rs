//! The command line: argument parsing and dispatch to one module per command.

mod completions;
mod doctor;
mod hooks;
mod hooks_coverage;
mod hooks_coverage_judge;
mod hooks_coverage_paths;
mod hooks_coverage_probe;
mod hooks_coverage_run;
mod hooks_import;
mod hooks_replay;
mod hooks_test;
mod import_rules;
mod man;
mod mcp;
mod mcp_import;
mod run;
mod sandbox;
mod sessions;
mod trust;
mod workflows;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes (docs/cli.md, "Exit codes").
pub mod exit {
    pub const SUCCESS: u8 = 0;
    pub(crate) const ERROR: u8 = 1;
    pub(crate) const USAGE: u8 = 2;
    pub(crate) const TRUST_DECLINED: u8 = 4;
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Debug, Parser)]
#[command(
    name = "elph",
    version,
    about = "A coding agent whose lifecycle hooks you can trust",
    long_about = "Elph is a coding agent with lifecycle hooks: commands you configure in hooks.json that \
                  observe, block or rewrite what the agent does.\n\n\
                  Hooks are read from CONFIG_DIR/hooks.json and, once the project is trusted, from \
                  PROJECT_DIR/.elph/hooks.json. See docs/hooks.md.",
    after_help = "Environment:\n  ELPH_HOME         CONFIG_DIR (default $XDG_CONFIG_HOME/elph or ~/.config/elph)\n  \
                  ELPH_DATA_DIR     DATA_DIR (default $XDG_DATA_HOME/elph or ~/.local/share/elph)\n  \
                  ELPH_PROJECT_DIR  PROJECT_DIR when --cwd is not given (default: the current directory)"
)]
pub(crate) struct Cli {
    /// Use DIR as the project folder instead of the current directory.
    #[arg(long, global = true, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// The model of the terminal UI: PROVIDER/MODEL, e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5,
    /// or scripted/PATH (offline). Otherwise $ELPH_MODEL, then `model` in CONFIG_DIR/settings.json.
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,

    /// Native approval in the terminal UI for tools that change files or run commands: ask before
    /// each (the default), run them all (auto), or refuse them (deny).
    #[arg(long, value_enum, default_value = "ask")]
    pub approval: ApprovalArg,

    #[command(flatten)]
    pub sandbox: crate::sandbox::SandboxArgs,

    /// The agent mode of the terminal UI (Shift+Tab or /mode switch it): build (the default: read, change files, run commands) or plan (read-only:
    /// only the read tools, shell commands in the read-only sandbox).
    #[arg(long = "mode", value_name = "MODE", default_value = "build")]
    pub(crate) agent_mode: elph_agent::harness::AgentMode,

    /// Continue the project's most recent session in the terminal UI (its conversation shows again).
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub continue_session: bool,

    /// Resume the session with this id in the terminal UI (`elph sessions` lists them).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect, validate and test the configured hooks.
    #[command(subcommand)]
    Hooks(hooks::HooksCommand),
    /// Trust a project folder, so that its .elph/hooks.json loads (--status: only show the decision).
    Trust(trust::TrustArgs),
    /// Stop trusting a project folder: record an explicit false (only while it is trusted).
    Untrust(trust::UntrustArgs),
    /// Run one turn headless: the answer on stdout, for scripts and CI.
    #[command(after_long_help = run::SCRIPTED_MODEL_HELP)]
    Run(run::RunArgs),
    /// Check the setup: paths, trust, hook files, every hook and its recent runs, with fixes.
    Doctor(doctor::DoctorArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed.
    Acp(crate::acp::AcpArgs),
    /// List the project's stored sessions, newest first.
    Sessions(sessions::SessionsArgs),
    /// Skills: folders with a SKILL.md that the model reads when a task matches.
    #[command(subcommand)]
    Skills(workflows::SkillsCommand),
    /// Prompt templates: Markdown files run as /NAME commands.
    #[command(subcommand)]
    Prompts(workflows::PromptsCommand),
    /// MCP servers: log in to an HTTP server that asks for OAuth, or log out.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Run one command under the sandbox policy, to see what it allows: elph sandbox -- CMD [ARGS...]
    Sandbox(sandbox::SandboxCommandArgs),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the manual page (roff: elph man | man -l -), or write one page per command (--dir).
    Man(man::ManArgs),
}

/// `--approval`, shared by `elph`, `elph run` and `elph acp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ApprovalArg {
    Auto,
    Ask,
    Deny,
}

impl From<ApprovalArg> for elph_agent::harness::ApprovalPolicy {
    fn from(arg: ApprovalArg) -> Self {
        use elph_agent::harness::ApprovalPolicy;
        match arg {
            ApprovalArg::Auto => ApprovalPolicy::Auto,
            ApprovalArg::Ask => ApprovalPolicy::Ask,
            ApprovalArg::Deny => ApprovalPolicy::Deny,
        }
    }
}

/// Parses the arguments, runs the command, and maps the result to an exit code.
pub fn main() -> ExitCode {
    // Before any thread starts (see elph_process::memory).
    elph_process::memory::use_one_malloc_arena();
    // Every way out of `main`, an unwinding panic too, writes the hook run log's last lines.
    let _run_log = FlushRunLog;
    // Before anything holds a secret worth reading: Elph's memory and /proc/ELPH/environ (the
    // provider keys) stay out of reach of every child of the same user (docs/security.md).
    if let Err(error) = elph_process::sandbox::make_self_undumpable() {
        crate::terminal_text::eprint_line(&format!("elph: cannot protect its own memory: {error}"));
        return ExitCode::from(exit::ERROR);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        // A closed pipe (`elph hooks list | head`) is the reader's choice, not an error.
        Err(err) if is_broken_pipe(&err) => ExitCode::from(exit::SUCCESS),
        Err(err) => {
            crate::terminal_text::eprint_line(&format!("elph: {err:#}"));
            ExitCode::from(exit::ERROR)
        }
    }
}

/// Writes what the hook run log still holds when dropped (see `hooks::runlog::flush`).
struct FlushRunLog;

impl Drop for FlushRunLog {
    fn drop(&mut self) {
        crate::hooks::runlog::flush();
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Some(Command::Hooks(command)) => hooks::run(cli.cwd.as_deref(), command),
        Some(Command::Trust(args)) => trust::run_trust(cli.cwd.as_deref(), args),
        Some(Command::Untrust(args)) => trust::run_untrust(cli.cwd.as_deref(), args),
        Some(Command::Run(args)) => run::run(cli.cwd.as_deref(), args),
        Some(Command::Doctor(args)) => doctor::run(cli.cwd.as_deref(), args),
        Some(Command::Acp(args)) => crate::acp::run(cli.cwd.as_deref(), args),
        Some(Command::Sessions(args)) => sessions::run(cli.cwd.as_deref(), args),
        Some(Command::Skills(command)) => workflows::run_skills(cli.cwd.as_deref(), command),
        Some(Command::Prompts(command)) => workflows::run_prompts(cli.cwd.as_deref(), command),
        Some(Command::Sandbox(args)) => sandbox::run(cli.cwd.as_deref(), args),
        Some(Command::Mcp(command)) => mcp::run(cli.cwd.as_deref(), command),
        Some(Command::Completions(args)) => completions::run(args),
        Some(Command::Man(args)) => man::run(args),
        None => {
            let session = match (cli.continue_session, cli.session) {
                (true, _) => crate::session::SessionChoice::Continue,
                (false, Some(id)) => crate::session::SessionChoice::Resume(id),
                (false, None) => crate::session::SessionChoice::New,
            };
            let options = crate::session::SessionOptions {
                model: cli.model,
                // `ask` by default: a person is there to answer.
                approval: cli.approval.into(),
                max_turns: None,
                session,
                sandbox: cli.sandbox,
                editor_mcp_servers: Vec::new(),
                editor_files: None,
                // Asked on the terminal before the TUI's screen opens (tui::run).
                mcp_inputs: crate::mcp::inputs::McpInputs::default(),
                mode: cli.agent_mode,
                record_hooks: None,
                front_end: crate::session::FrontEnd::Terminal,
            };
            interactive(cli.cwd.as_deref(), options)
        }
    }
}

/// `elph` without a subcommand: the trust gate first, before the datastore or any UI opens; then
/// the terminal UI, with the project's hooks only if the project is trusted.
fn interactive(cwd: Option<&std::path::Path>, options: crate::session::SessionOptions) -> anyhow::Result<u8> {
    use crate::gate::{GateOutcome, has_terminal, startup_gate};
    let paths = crate::paths::Paths::from_env(cwd)?;
    let store = crate::trust::TrustStore::new(&paths.config_dir);
    let check = || {
        crate::gate::preflight::check(&paths, options.model.as_deref(), &options.sandbox)?;
        crate::gate::preflight::check_session_choice(&paths, &options.session)
    };
    match startup_gate(&paths, &store, has_terminal(), &check)? {
        GateOutcome::Declined(declined) => {
            crate::terminal_text::eprint_line(&declined.to_stderr_text());
            Ok(exit::TRUST_DECLINED)
        }
        GateOutcome::Interrupted => Ok(exit::INTERRUPTED),
        GateOutcome::Proceed(decision) => crate::tui::run(paths, options, decision),
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(|json| json.io_error_kind())
                == Some(std::io::ErrorKind::BrokenPipe)
    })
}
