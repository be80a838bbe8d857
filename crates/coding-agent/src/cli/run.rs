//! `elph run`: one headless turn, for scripts and CI.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use elph_agent::harness::{AgentEvent, TurnResult};
use elph_agent::hooks::{Severity, StopStatus};
use serde_json::json;

use super::exit;
use crate::notices::{self, NoticeKind};
use crate::paths::Paths;
use crate::session::{Approvals, Op, Outcome, Session, SessionChoice, SessionEvent, SessionOptions};

/// `println!` that never panics: after a SIGHUP the terminal may be gone, and a closed stdout must
/// not turn an honest exit code (129, 143, …) into a panic's 101. What cannot be written is lost
/// either way.
macro_rules! err_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

macro_rules! out_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// The final answer on stdout; hook notices and progress on stderr.
    Plain,
    /// One JSON document at the end.
    Json,
    /// One JSON event per line as it happens, then a result line.
    StreamJson,
}

/// How to try hooks without a model or a key: the scripted model, as `elph run --help` and the
/// manual page show it (docs/cli.md, "The scripted model", says the same at length).
pub(super) const SCRIPTED_MODEL_HELP: &str = "\
Trying hooks without a model (offline, no key): --model scripted/PATH plays a JSON file of
assistant turns, one per model request, and always does the same thing:

  {\"turns\": [
    {\"text\": \"Cleaning up.\",
     \"toolCalls\": [{\"name\": \"shell_exec\", \"input\": {\"command\": \"rm -rf build\"}}]},
    {\"text\": \"The hook blocked that, so I left build/ alone.\"}
  ]}

A turn has text, toolCalls (name and input), error (the request fails with this message) and
delayMs (wait before answering); contextWindow at the top level sets the window the model reports.
PATH is relative to the current directory. With --output-format stream-json every hook's effect
is one JSON line. Example: elph run --model scripted/script.json \"Remove the build folder\"";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt; read from stdin when omitted.
    pub prompt: Option<String>,
    /// PROVIDER/MODEL, e.g. openai/gpt-4.1, anthropic/claude-sonnet-4-5, or scripted/PATH (offline).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    #[arg(long, value_enum, default_value = "plain")]
    pub(crate) output_format: OutputFormat,
    /// Model requests allowed in this turn (at least 1).
    #[arg(
        long,
        value_name = "N",
        default_value_t = elph_agent::harness::DEFAULT_MAX_TURNS,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_turns: u32,
    /// Native approval for tools that change files or run commands. Headless has no one to ask, so
    /// `ask` denies them.
    #[arg(long, value_enum, default_value = "auto")]
    pub approval: super::ApprovalArg,
    #[command(flatten)]
    pub sandbox: crate::sandbox::SandboxArgs,
    /// The agent mode: build (the default: read, change files, run commands) or plan (read-only:
    /// only the read tools, shell commands in the read-only sandbox).
    #[arg(long = "mode", value_name = "MODE", default_value = "build")]
    pub(crate) agent_mode: elph_agent::harness::AgentMode,
    /// Continue the project's most recent session.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["session", "no_session"])]
    pub(crate) continue_session: bool,
    /// Resume the session with this id.
    #[arg(long, value_name = "ID", conflicts_with = "no_session")]
    pub session: Option<String>,
    /// Store nothing.
    #[arg(long)]
    pub(crate) no_session: bool,
    /// Append every hook chain of the run to FILE, one JSON line each: the payload, each hook's
    /// outcome and the decision, for `elph hooks test --replay FILE`. Holds payloads (file
    /// contents, prompts); created readable by you only. Elsewhere: ELPH_RECORD_HOOKS=FILE.
    #[arg(long, value_name = "FILE")]
    pub record_hooks: Option<PathBuf>,
}

pub(super) fn run(cwd: Option<&Path>, args: RunArgs) -> anyhow::Result<u8> {
    let prompt = match args.prompt.clone() {
        Some(prompt) => prompt,
        None if !std::io::stdin().is_terminal() => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the prompt from stdin")?;
            text
        }
        None => String::new(),
    };
    if prompt.trim().is_empty() {
        err_line!("elph run: no prompt; pass one as an argument or on stdin");
        return Ok(exit::USAGE);
    }
    let paths = Paths::from_env(cwd)?;
    let session = if args.no_session {
        SessionChoice::Ephemeral
    } else if args.continue_session {
        SessionChoice::Continue
    } else if let Some(id) = &args.session {
        SessionChoice::Resume(id.clone())
    } else {
        SessionChoice::New
    };
    let options = SessionOptions {
        model: args.model.clone(),
        approval: args.approval.into(),
        max_turns: Some(args.max_turns),
        session,
        sandbox: args.sandbox.clone(),
        editor_mcp_servers: Vec::new(),
        editor_files: None,
        mcp_inputs: crate::mcp::inputs::McpInputs::headless("`elph run`"),
        mode: args.agent_mode,
        record_hooks: args.record_hooks.clone(),
        front_end: crate::session::FrontEnd::Headless,
    };
    // One turn is one chain of awaits: the model stream, then the tools and hooks it asks for, one
    // at a time. A current-thread runtime runs it on the main thread; worker threads would only
    // add their stacks and malloc arenas to the peak memory (blocking file work still gets the
    // runtime's blocking pool when a tool asks for it).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(run_async(paths, options, prompt, args.output_format))
}

async fn run_async(
    paths: Paths,
    options: SessionOptions,
    prompt: String,
    format: OutputFormat,
) -> anyhow::Result<u8> {
    let shutdown = crate::shutdown::Shutdown::install(false).context("cannot watch for signals")?;
    let project = paths.clone();
    let (session, mut events) = Session::open(paths, options, Approvals::Nobody)?;
    if let Some(refusal) = session.trust().unguarded_refusal() {
        crate::terminal_text::eprint_line(&format!("elph run: refusing to start the turn: {refusal}."));
        return Ok(exit::ERROR);
    }
    // `/skill:NAME` and `/TEMPLATE args` become the prompt they stand for (the session expands
    // them); one that cannot is a usage error before anything starts.
    match session.expand_prompt(&prompt) {
        Ok(_) => {}
        Err(message) => {
            crate::terminal_text::eprint_line(&format!("elph run: {message}"));
            return Ok(exit::USAGE);
        }
    };
    let (session, session_task) = session.spawn();
    // SIGINT, SIGTERM, SIGHUP and SIGQUIT cancel the turn; stop and sessionEnd hooks still run,
    // under the shutdown's short deadline. A second signal does not wait for them.
    let cancel = shutdown.token().clone();

    session.submit(Op::Prompt {
        text: prompt,
        cancel: cancel.clone(),
    });
    let mut opened = None;
    let mut result = None;
    let mut collected = Vec::new();
    let mut storage_error = None;
    let mut rejected = None;
    let mut printed = Printed::default();
    while let Some(event) = events.recv().await {
        match event {
            SessionEvent::Opened(session) => {
                let hooks_off = match format {
                    OutputFormat::StreamJson => false,
                    _ => warn_hooks_off(&project, &session.hooks.trust),
                };
                for diagnostic in &session.hooks.set.diagnostics {
                    // The warning above said it, with more weight.
                    if hooks_off
                        && (diagnostic.message.starts_with(SKIPPED_UNTRUSTED)
                            || diagnostic.message.starts_with(SKIPPED_CHANGED))
                    {
                        continue;
                    }
                    emit_diagnostic(format, &diagnostic.to_string());
                }
                opened = Some(session);
            }
            SessionEvent::Agent(event) => {
                print_event(format, &event, &mut printed);
                if format == OutputFormat::Json {
                    collected.push(event);
                }
            }
            SessionEvent::Finished {
                outcome: Outcome::Turn(turn),
                ..
            } => {
                result = Some(turn);
                let reason = if cancel.is_cancelled() {
                    "interrupted"
                } else {
                    "exit"
                };
                session.submit(Op::End {
                    reason: reason.into(),
                });
            }
            // An MCP prompt the session could not get (an argument missing, its server down):
            // nothing reached the model.
            SessionEvent::Finished {
                outcome: Outcome::PromptRejected(message),
                ..
            } => {
                rejected = Some(message);
                session.submit(Op::End {
                    reason: "exit".into(),
                });
            }
            SessionEvent::Ended { storage_error: error } => {
                storage_error = error;
                break;
            }
            // Nobody approves here (the harness refuses such calls itself), and one prompt is
            // the only operation.
            SessionEvent::Ready
            | SessionEvent::Approval(_)
            | SessionEvent::Elicitation(_)
            | SessionEvent::Context { .. }
            | SessionEvent::Commands(_)
            | SessionEvent::Finished { .. } => {}
        }
    }
    // The session's MCP servers stop when its task ends.
    let _ = session_task.await;
    if let Some(message) = rejected {
        crate::terminal_text::eprint_line(&format!("elph run: {message}"));
        return Ok(exit::USAGE);
    }
    let (Some(opened), Some(result)) = (opened, result) else {
        anyhow::bail!("the session ended before the turn did; see DATA_DIR/logs/elph.log");
    };
    print_result(format, &opened.session_id, &opened.model, &result, collected)?;
    if let Some(code) = shutdown.exit_code() {
        return Ok(code);
    }
    if let Some(error) = storage_error {
        // The answer was shown, but the session on disk lacks part of this turn: not a success.
        err_line!("elph: this turn was not stored in full, so `elph run -c` will not see all of it: {error}");
        return Ok(exit::ERROR);
    }
    Ok(match result.status {
        StopStatus::Completed => exit::SUCCESS,
        StopStatus::Failed => exit::ERROR,
        StopStatus::Cancelled => exit::INTERRUPTED,
    })
}

/// The start of the hook-set diagnostic that [`warn_hooks_off`] stands in for.
const SKIPPED_UNTRUSTED: &str = "project hooks skipped until";
/// The start of the trust decision's diagnostic for a changed project, which the warning also
/// stands in for (it names the changes).
const SKIPPED_CHANGED: &str = "project hooks and MCP servers skipped:";

/// When the project is not trusted (or changed since it was) and has hooks, says which are off,
/// on several lines that stand out: a guard hook that silently does not run lets through what it
/// was written to stop. Returns whether it said anything.
fn warn_hooks_off(paths: &Paths, trust: &crate::trust::TrustDecision) -> bool {
    if trust.trusted {
        return false;
    }
    // Only what the warning names is read: it is said while the first request waits.
    let off = crate::trust::contents::project_hooks(paths).enabled();
    if off.is_empty() {
        return false;
    }
    let [elph_mcp_file, _] = crate::mcp::config::project_files(paths);
    let servers_too = match &crate::trust::contents::mcp_servers(paths, &elph_mcp_file) {
        crate::trust::contents::Listing::Items(servers) if !servers.is_empty() => {
            " (its MCP servers are off too)"
        }
        _ => "",
    };
    let dir = crate::diagnostics::shell_quote(&paths.project_dir);
    let why = match trust.changes() {
        Some(changes) => format!("it changed since you trusted it ({})", changes.summary()),
        None => "it is not trusted".to_string(),
    };
    let mut text = format!(
        "elph: WARNING: {} project hook(s) are OFF in this run: {why}.\n\
         elph:   These hooks of {} do not run, so nothing they guard is guarded:\n",
        off.len(),
        paths.project_hooks_file().display()
    );
    for hook in &off {
        text.push_str(&format!("elph:     - {hook}\n"));
    }
    text.push_str(&format!(
        "elph:   Review them, then run `elph trust {dir}` to turn them on{servers_too}."
    ));
    crate::terminal_text::eprint_line(&text);
    true
}

/// A problem with the hook configuration, at the start: the session goes on without what it names.
fn emit_diagnostic(format: OutputFormat, message: &str) {
    match format {
        OutputFormat::StreamJson => {
            out_line!(
                "{}",
                json!({"type": "diagnostic", "severity": Severity::Warning, "message": message})
            );
        }
        _ => crate::terminal_text::eprint_line(&format!("elph: {message}")),
    }
}

/// What plain output remembers from one event to the next.
#[derive(Default)]
struct Printed {
    /// The preToolUse notice just said that a hook stopped the tool call (tool calls run one at a
    /// time), so the call's "✗ not run" line would say it a second time.
    call_stopped_by_hook: bool,
}

/// Whether a preToolUse chain stopped its tool call: a hook blocked it, or a fail-closed guard
/// could not decide.
fn stops_the_call(dispatch: &elph_agent::hooks::Dispatch) -> bool {
    use elph_agent::hooks::Listed as _;
    use elph_agent::hooks::events::pre_tool_use::PreToolUse;
    dispatch.failed_closed().is_some()
        || PreToolUse::reduced_of(&dispatch.reduced).is_some_and(|reduced| reduced.blocked.is_some())
}

fn print_event(format: OutputFormat, event: &AgentEvent, printed: &mut Printed) {
    match format {
        OutputFormat::StreamJson => {
            let mut out = std::io::stdout().lock();
            let _ = serde_json::to_writer(&mut out, event);
            let _ = writeln!(out);
            // Each diagnostic of a hook run also gets a line of its own, so a consumer that
            // watches `diagnostic` lines sees a guard that failed open (severity `warning`)
            // without digging through `hooks` events.
            if let AgentEvent::Hooks { dispatch } = event {
                for diagnostic in &dispatch.diagnostics {
                    let _ = serde_json::to_writer(
                        &mut out,
                        &json!({
                            "type": "diagnostic",
                            "severity": diagnostic.severity,
                            "hookId": diagnostic.hook_id,
                            "event": diagnostic.event,
                            "message": diagnostic.message,
                        }),
                    );
                    let _ = writeln!(out);
                }
            }
            let _ = out.flush();
        }
        OutputFormat::Plain => match event {
            AgentEvent::Hooks { dispatch } => {
                if dispatch.event == elph_agent::hooks::HookEvent::PreToolUse {
                    printed.call_stopped_by_hook = stops_the_call(dispatch);
                }
                for notice in notices::describe(dispatch) {
                    let mark = match notice.kind {
                        NoticeKind::Effect => "•",
                        NoticeKind::Problem => "!",
                        NoticeKind::Warning => "! warning:",
                    };
                    crate::terminal_text::eprint_line(&format!("{mark} {}", notice.text));
                }
            }
            AgentEvent::ToolCallStarted { tool_name, input, .. } => {
                crate::terminal_text::eprint_line(&format!("→ {tool_name} {}", compact(input)));
            }
            AgentEvent::ToolCallFinished { ran: false, .. }
                if std::mem::take(&mut printed.call_stopped_by_hook) => {}
            AgentEvent::ToolCallFinished {
                tool_name,
                is_error,
                ran,
                content,
                ..
            } if *is_error || !ran => {
                printed.call_stopped_by_hook = false;
                let text: String = content
                    .iter()
                    .filter_map(|b| match b {
                        elph_ai::ContentBlock::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                crate::terminal_text::eprint_line(&format!("✗ {tool_name}: {}", first_line(&text)));
            }
            AgentEvent::Notice { message } => crate::terminal_text::eprint_line(&format!("! {message}")),
            AgentEvent::Compacted { entries_compacted } => {
                err_line!("• compacted {entries_compacted} earlier message(s) into a summary");
            }
            _ => {}
        },
        OutputFormat::Json => {}
    }
}

fn compact(value: &serde_json::Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn status_name(status: StopStatus) -> &'static str {
    match status {
        StopStatus::Completed => "completed",
        StopStatus::Failed => "failed",
        StopStatus::Cancelled => "cancelled",
    }
}

fn print_result(
    format: OutputFormat,
    session_id: &str,
    model: &str,
    result: &TurnResult,
    events: Vec<AgentEvent>,
) -> anyhow::Result<()> {
    match format {
        OutputFormat::Plain => {
            if let Some(error) = &result.error
                && result.status != StopStatus::Completed
            {
                crate::terminal_text::eprint_line(&format!("elph: {error}"));
            }
            // On a terminal the answer is shown, so its control characters are made visible;
            // into a pipe or file it is data, and stays exact.
            if !result.text.is_empty() {
                if std::io::stdout().is_terminal() {
                    out_line!("{}", crate::terminal_text::escape_answer(&result.text));
                } else {
                    out_line!("{}", result.text);
                }
            }
        }
        OutputFormat::StreamJson => {
            out_line!(
                "{}",
                json!({"type": "result", "sessionId": session_id, "model": model, "status": status_name(result.status), "result": result.text, "error": result.error, "stopReason": result.stop_reason})
            );
        }
        OutputFormat::Json => {
            let hooks: Vec<_> = events
                .iter()
                .filter_map(|event| match event {
                    AgentEvent::Hooks { dispatch } => Some(dispatch),
                    _ => None,
                })
                .collect();
            let tool_calls: Vec<_> = events
                .iter()
                .filter(|event| matches!(event, AgentEvent::ToolCallFinished { .. }))
                .collect();
            let document = json!({
                "sessionId": session_id,
                "model": model,
                "status": status_name(result.status),
                "result": result.text,
                "error": result.error,
                "stopReason": result.stop_reason,
                "toolCalls": tool_calls,
                "hooks": hooks,
            });
            out_line!("{}", serde_json::to_string_pretty(&document)?);
        }
    }
    Ok(())
}
