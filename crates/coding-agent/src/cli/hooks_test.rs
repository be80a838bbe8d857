//! `elph hooks test EVENT`: fire one synthetic event through the real hook host and show hook
//! authors what each hook did and what the chain decided.
//!
//! The payload is built from the flags (or read whole from `--payload FILE|-`), the configured chain
//! runs exactly as in a session (same host, same bounds, same reduction), and the output shows, per
//! hook: matched or not, exit, time, the outcome or why it was rejected, notes and the stderr tail;
//! then the reduced outcome in words. Exit 0 when the chain ran, whatever the hooks decided; 1 on a
//! usage or configuration error. Synthetic runs are not written to the run log.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use elph_agent::hooks::events::pre_tool_use::PreToolUse;
use elph_agent::hooks::events::words::shorten;
use elph_agent::hooks::{
    Dispatch, HookEvent, HookOutcome, HookPayload, HookRun, Listed, ProcessExit, Reduced, RunStatus, Sample,
};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::exit;
use crate::diagnostics::Diagnostic;
use crate::hooks::handler::runner::Handlers;
use crate::hooks::{FileState, HookDefinition, HookHost, HookSet};
use crate::paths::Paths;

const SESSION_ID: &str = "test-session";
const DEFAULT_TOOL: &str = "shell_exec";
const DEFAULT_PROMPT: &str = "Hello from elph hooks test";

#[derive(Debug, clap::Args)]
#[command(after_help = events_help())]
pub struct TestArgs {
    /// The event to fire, e.g. preToolUse.
    #[arg(value_name = "EVENT", required_unless_present = "replay")]
    pub event: Option<String>,
    /// The tool of a tool event.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// The tool's input of a tool event, as a JSON object.
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// The user's prompt (userPromptSubmit, beforeAgent, context).
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// Read the whole payload from FILE, or from stdin with `-`. `event`, `sessionId` and
    /// `projectDir` may be left out.
    #[arg(long, value_name = "FILE|-", conflicts_with_all = ["tool", "input", "prompt"])]
    pub payload: Option<PathBuf>,
    /// Send every chain recorded in FILE (`elph run --record-hooks FILE`) through the hooks as
    /// they are now, and report each decision that changed; exit 1 when one did.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["event", "tool", "input", "prompt", "payload"])]
    pub replay: Option<PathBuf>,
    /// Print one JSON document (runs, diagnostics, reduced) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn run(cwd: Option<&Path>, args: TestArgs) -> anyhow::Result<u8> {
    if let Some(recording) = &args.replay {
        return super::hooks_replay::run(cwd, recording, args.json);
    }
    let event = parse_event(args.event.as_deref().unwrap_or_default())?;
    let paths = Paths::from_env(cwd)?;
    let payload = match &args.payload {
        Some(source) => read_payload(event, source, &paths.project_dir)?,
        None => build_payload(event, &args, &paths.project_dir)?,
    };
    let (host, malformed, _temp_dir) = test_host(&paths)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let dispatch = runtime.block_on(host.run_chain(payload.clone()));
    let set = host.set();
    let report = Report::new(&set, &payload, &dispatch);

    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        print_report(
            &mut crate::terminal_text::Escaping::new(&mut out),
            &report,
            &paths,
        )?;
    }
    if malformed {
        drop(out);
        eprintln!("elph: a hook file is malformed and was ignored; fix it (see above) and run this again");
        return Ok(exit::ERROR);
    }
    Ok(exit::SUCCESS)
}

/// What a test host needs kept alive while it runs: the temp dir of sandboxed hooks, and the MCP
/// servers mcpTool hooks call.
pub(super) struct Held {
    _temp_dir: tempfile::TempDir,
    _mcp: Option<crate::mcp::McpManager>,
}

/// The host `elph hooks test` runs hooks with: the configured hooks, as in a session, without
/// the run log, async hooks in the chain, prompt hooks asking the model a session would use and
/// mcpTool hooks calling the servers of mcp.json; whether a hook file is malformed; and what must
/// live as long as the host runs.
pub(super) fn test_host(paths: &Paths) -> anyhow::Result<(HookHost, bool, Held)> {
    let (trust, set) = crate::hooks::reload::HookLoader::new(paths.clone()).load();
    let malformed = set
        .files
        .iter()
        .any(|file| matches!(file.state, FileState::Malformed { .. }));
    // A sandboxed hook runs as in a session: the project, a temp dir of its own (TMPDIR), and
    // CONFIG_DIR and DATA_DIR read-only.
    let temp_dir = tempfile::Builder::new()
        .prefix("elph-hooks-test-")
        .tempdir()
        .context("cannot create a temp dir for sandboxed hooks")?;
    let mut sandbox_base = elph_process::sandbox::SandboxPolicy::workspace(&paths.project_dir);
    sandbox_base.set_temp_dir(temp_dir.path());
    sandbox_base.add_read_only_path(paths.config_dir.clone());
    sandbox_base.add_read_only_path(paths.data_dir.clone());
    // A malformed settings.json only means no allowedUrls and no default model here.
    let settings = crate::settings::Settings::load(&paths.config_dir).unwrap_or_default();
    let needs_mcp = set
        .active()
        .any(|hook| matches!(hook.handler, crate::hooks::handler::Handler::McpTool(_)));
    let host = HookHost::new(set, paths.project_dir.clone(), &paths.data_dir)
        .without_run_log()
        .with_async_inline()
        .with_sandbox_base(sandbox_base)
        .with_handlers(Handlers::new(
            settings.hooks.allowed_urls.clone(),
            paths.config_dir.clone(),
        ));
    // A prompt hook without a model of its own asks the one a session would; without one (no
    // key), its run says so.
    if let Ok(provider) = crate::model_choice::resolve_provider(paths, None, &settings) {
        host.handlers().set_model(std::sync::Arc::from(provider));
    }
    let mcp = needs_mcp.then(|| {
        let (manager, _tools, diagnostics) = crate::mcp::McpManager::start(paths, trust.trusted);
        for diagnostic in diagnostics {
            eprintln!("elph: {diagnostic}");
        }
        host.handlers().set_mcp(manager.connections());
        manager
    });
    Ok((
        host,
        malformed,
        Held {
            _temp_dir: temp_dir,
            _mcp: mcp,
        },
    ))
}

fn parse_event(name: &str) -> anyhow::Result<HookEvent> {
    name.parse::<HookEvent>().or_else(|err| {
        match crate::suggest::nearest(name, HookEvent::ALL.map(HookEvent::as_str)) {
            Some(event) => {
                bail!("unknown event '{name}'; did you mean '{event}'? (event names are camelCase)")
            }
            None => bail!("{err}"),
        }
    })
}

/// The payload for `event` from the flags, with sensible defaults.
fn build_payload(event: HookEvent, args: &TestArgs, project_dir: &Path) -> anyhow::Result<HookPayload> {
    if !event.is_tool_event() && (args.tool.is_some() || args.input.is_some()) {
        bail!(
            "--tool and --input apply to tool events ({}), not {event}",
            events_where(HookEvent::is_tool_event).join(", ")
        );
    }
    if !event.takes_prompt() && args.prompt.is_some() {
        bail!(
            "--prompt applies to {}, not {event}",
            and_list(&events_where(HookEvent::takes_prompt))
        );
    }
    let prompt = args.prompt.as_deref().unwrap_or(DEFAULT_PROMPT);
    let tool_name = args.tool.as_deref().unwrap_or(DEFAULT_TOOL);
    if tool_name.is_empty() {
        bail!("--tool needs a tool name, e.g. --tool shell_exec");
    }
    let tool_input = match &args.input {
        None => json!({}),
        Some(text) => {
            let value: Value =
                serde_json::from_str(text).with_context(|| format!("--input is not valid JSON: {text}"))?;
            if !value.is_object() {
                bail!("--input must be a JSON object, such as '{{\"command\": \"ls\"}}'");
            }
            value
        }
    };
    let sample = Sample {
        session_id: SESSION_ID,
        prompt,
        tool_name,
        tool_input: &tool_input,
    };
    Ok(event.sample(&sample, project_dir))
}

fn events_where(test: fn(HookEvent) -> bool) -> Vec<&'static str> {
    HookEvent::ALL
        .into_iter()
        .filter(|event| test(*event))
        .map(HookEvent::as_str)
        .collect()
}

/// "a, b and c".
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The help text's list of events.
fn events_help() -> String {
    format!(
        "Examples:\n  \
        elph hooks test preToolUse --tool shell_exec --input '{{\"command\": \"rm -rf /\"}}'\n  \
        elph hooks test beforeAgent --prompt 'fix the tests'\n  \
        elph hooks test postToolUse --payload payload.json --json\n  \
        elph hooks test preToolUse --payload - < payload.json\n\n\
        Events: {}",
        HookEvent::ALL.map(HookEvent::as_str).join(" ")
    )
}

/// A whole payload from a file or stdin, checked against the event's payload type.
fn read_payload(event: HookEvent, source: &Path, project_dir: &Path) -> anyhow::Result<HookPayload> {
    // The same bounds as a config file: a FIFO or a device is refused before a byte is read, and
    // at most MAX_CONFIG_BYTES are (stdin included), so `/dev/zero` cannot exhaust memory.
    let limit = elph_config::MAX_CONFIG_BYTES;
    let (bytes, name) = if source == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::stdin()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .context("cannot read the payload from stdin")?;
        if bytes.len() as u64 > limit {
            bail!("the payload on stdin is larger than {limit} bytes; a payload this big is refused");
        }
        (bytes, "stdin".to_string())
    } else {
        match elph_config::read_config(source) {
            Ok(Some(bytes)) => (bytes, source.display().to_string()),
            Ok(None) => bail!("the payload file {} does not exist", source.display()),
            Err(error) => bail!("the payload file {} {}", source.display(), error.reason()),
        }
    };
    let value: Value =
        serde_json::from_slice(&bytes).with_context(|| format!("the payload in {name} is not valid JSON"))?;
    let Value::Object(mut object) = value else {
        bail!("the payload in {name} must be a JSON object");
    };
    match object.get("event") {
        None => {
            object.insert("event".into(), json!(event.as_str()));
        }
        Some(Value::String(found)) if found == event.as_str() => {}
        Some(found) => bail!("the payload in {name} is for event {found}, but the command asks for {event}"),
    }
    object.entry("sessionId").or_insert_with(|| json!(SESSION_ID));
    object.entry("projectDir").or_insert_with(|| json!(project_dir));
    serde_json::from_value(Value::Object(object)).map_err(|err| {
        anyhow::anyhow!(
            "the payload in {name} does not fit {event}: {err}\n(expected fields: {})",
            expected_fields(event, project_dir)
        )
    })
}

/// The fields of `event`'s payload besides `event`, `sessionId` and `projectDir`, read from a
/// sample payload so the list cannot drift from the type.
fn expected_fields(event: HookEvent, project_dir: &Path) -> String {
    let sample = Sample {
        session_id: SESSION_ID,
        prompt: DEFAULT_PROMPT,
        tool_name: DEFAULT_TOOL,
        tool_input: &json!({}),
    };
    match serde_json::to_value(event.sample(&sample, project_dir)) {
        Ok(Value::Object(fields)) => fields
            .keys()
            .filter(|key| !matches!(key.as_str(), "event" | "sessionId" | "projectDir"))
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    }
}

/// What happened to one configured hook of the event.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HookLine {
    id: String,
    enabled: bool,
    matched: bool,
    ran: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    matcher: Option<String>,
    /// The sandbox it ran in (absent: unconfined).
    #[serde(skip_serializing_if = "Option::is_none")]
    sandbox: Option<elph_process::sandbox::SandboxMode>,
    /// Run as a persistent process (one JSON line in, one out), started for this test and stopped
    /// after it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    persistent: bool,
    /// Runs in the background in a session, its outcome ignored (here it ran in the chain).
    #[serde(rename = "async", skip_serializing_if = "std::ops::Not::not")]
    run_async: bool,
    /// A guard: its failure stops what it guards.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fail_closed: bool,
}

/// The document `--json` prints, and what the text output is made from.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    event: HookEvent,
    payload: HookPayload,
    /// Every configured hook of the event, in order.
    hooks: Vec<HookLine>,
    runs: Vec<HookRun>,
    diagnostics: Vec<elph_agent::hooks::HookDiagnostic>,
    /// The hooks' outcomes combined; `null` when a fail-closed guard could not decide, since a
    /// session then applies none of them.
    reduced: Option<Reduced>,
    /// What a session would do, in words: the one verdict, the same lines as the text output.
    verdict: Vec<String>,
    /// Diagnostics from loading the hook files.
    configuration: Vec<Diagnostic>,
    /// The hook that stopped what the event guards, if one did: by its outcome, or as a
    /// fail-closed guard that could not decide.
    stopped_by: Option<String>,
    /// Why a rewritten toolInput fails the native tool's schema (a real session would fail the call).
    #[serde(skip_serializing_if = "Option::is_none")]
    rewritten_input_error: Option<String>,
    /// A fail-closed hook that could not decide, and what a session would do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    failed_closed: Option<FailedClosedReport>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct FailedClosedReport {
    #[serde(flatten)]
    failed: elph_agent::hooks::runner::FailedClosed,
    /// What a real session would do.
    consequence: &'static str,
}

impl Report {
    fn new(set: &HookSet, payload: &HookPayload, dispatch: &Dispatch) -> Self {
        let event = payload.event();
        let tool = payload.tool_name();
        let hooks = set
            .hooks
            .iter()
            .filter(|hook| hook.event == event)
            .map(|hook: &HookDefinition| HookLine {
                id: hook.id.clone(),
                enabled: hook.enabled,
                matched: hook.applies_to(event, tool),
                ran: dispatch.runs.iter().any(|run| run.hook_id == hook.id),
                matcher: event.is_tool_event().then(|| hook.matcher.to_string()),
                sandbox: hook.sandbox,
                persistent: hook.persistent,
                run_async: hook.run_async,
                fail_closed: hook.fail_closed,
            })
            .collect();
        let failed_closed = dispatch.failed_closed().map(|failed| FailedClosedReport {
            failed,
            consequence: elph_agent::hooks::runner::FailedClosed::consequence(event),
        });
        let stopped_by = match &failed_closed {
            Some(report) => Some(report.failed.hook_id.clone()),
            None => dispatch
                .reduced
                .stopped_by()
                .map(|verdict| verdict.hook_id.clone()),
        };
        // A real session checks a rewritten input against the tool's schema again; so does this.
        let rewritten_input_error = PreToolUse::reduced_of(&dispatch.reduced)
            .filter(|reduced| reduced.input_changed && reduced.blocked.is_none())
            .zip(tool)
            .and_then(|(reduced, tool)| {
                let catalog = elph_agent::tools::ToolCatalog::native();
                catalog.get(tool)?;
                catalog.validate(tool, &reduced.tool_input).err()
            });
        let verdict = verdict(
            &dispatch.reduced,
            failed_closed.as_ref(),
            rewritten_input_error.as_deref(),
        );
        Report {
            event,
            payload: payload.clone(),
            hooks,
            runs: dispatch.runs.clone(),
            diagnostics: dispatch.diagnostics.clone(),
            reduced: failed_closed.is_none().then(|| dispatch.reduced.clone()),
            verdict,
            configuration: set.diagnostics.clone(),
            stopped_by,
            rewritten_input_error,
            failed_closed,
        }
    }
}

fn print_report(out: &mut impl Write, report: &Report, paths: &Paths) -> std::io::Result<()> {
    let event = report.event;
    match report.payload.tool_name() {
        Some(tool) => writeln!(out, "{event} for tool {tool} in {}", paths.project_dir.display())?,
        None => writeln!(out, "{event} in {}", paths.project_dir.display())?,
    }
    writeln!(out, "payload: {}", shorten(&compact(&report.payload), 400))?;
    if !report.configuration.is_empty() {
        writeln!(out, "configuration:")?;
        for diagnostic in &report.configuration {
            writeln!(out, "  ! {diagnostic}")?;
        }
    }
    writeln!(out)?;
    if report.hooks.is_empty() {
        writeln!(
            out,
            "No hook is configured for {event}. (`elph hooks list` shows every hook and where it comes from.)"
        )?;
        return Ok(());
    }
    let width = report.hooks.iter().map(|hook| hook.id.len()).max().unwrap_or(0);
    for hook in &report.hooks {
        match report.runs.iter().find(|run| run.hook_id == hook.id) {
            Some(run) => {
                let failed_closed = report
                    .failed_closed
                    .as_ref()
                    .is_some_and(|failed| failed.failed.hook_id == run.hook_id);
                print_run(out, run, width, failed_closed, hook.persistent)?;
                if let Some(mode) = hook.sandbox {
                    writeln!(out, "    ran in the {mode} sandbox")?;
                }
                if hook.persistent {
                    writeln!(
                        out,
                        "    persistent: one process for the session, one JSON line in and one out per \
                         event (started for this test, stopped after it)"
                    )?;
                }
                if hook.run_async {
                    writeln!(
                        out,
                        "    async: in a session it runs in the background and its outcome is ignored"
                    )?;
                }
            }
            None if !hook.enabled => writeln!(out, "- {:<width$}  disabled", hook.id)?,
            None if !hook.matched => writeln!(
                out,
                "- {:<width$}  not matched (toolNames: {})",
                hook.id,
                hook.matcher.as_deref().unwrap_or("*")
            )?,
            None => writeln!(
                out,
                "· {:<width$}  not run: the chain stopped at '{}'",
                hook.id,
                report.stopped_by.as_deref().unwrap_or("?")
            )?,
        }
    }
    writeln!(out)?;
    print_reduced(out, report)
}

fn how_it_failed(process: Option<&ProcessExit>) -> String {
    let Some(process) = process else {
        return "failed".to_string();
    };
    if process.spawn_error.is_some() {
        "did not start".to_string()
    } else if process.timed_out {
        "timed out".to_string()
    } else if let Some(signal) = process.signal {
        format!("killed by {}", crate::hooks::process::signal_name(signal))
    } else if let Some(code) = process.exit_code {
        format!("exit {code}")
    } else {
        "failed".to_string()
    }
}

fn print_run(
    out: &mut impl Write,
    run: &HookRun,
    width: usize,
    stopped_the_chain: bool,
    persistent: bool,
) -> std::io::Result<()> {
    let (mark, how) = match run.status {
        // A decision can come with another exit code than 0 (a Claude Code hook blocks with
        // exit 2); a native handler has no process and no code to show.
        RunStatus::Ok => (
            "✓",
            match run.process.as_ref().and_then(|process| process.exit_code) {
                Some(code) => format!("exit {code}"),
                None => "done".to_string(),
            },
        ),
        RunStatus::Skipped => ("○", "skipped".to_string()),
        RunStatus::Failed => ("✗", how_it_failed(run.process.as_ref())),
    };
    writeln!(
        out,
        "{mark} {:<width$}  {how}  {} ms",
        run.hook_id, run.duration_ms
    )?;
    let indent = "    ";
    match (&run.status, &run.outcome, &run.cause) {
        (RunStatus::Ok, Some(outcome), _) if outcome.event().is_observation() => writeln!(
            out,
            "{indent}outcome: nothing this event honours (observation only)"
        )?,
        (RunStatus::Ok, Some(outcome), _) => writeln!(
            out,
            "{indent}outcome: {}",
            shorten(&compact(&without_nulls(outcome)), 600)
        )?,
        (RunStatus::Ok, None, _) => {
            writeln!(out, "{indent}outcome: none ({})", why_no_change(run, persistent))?
        }
        (RunStatus::Skipped, _, Some(cause)) => writeln!(out, "{indent}{cause}")?,
        (_, _, Some(cause)) if stopped_the_chain => writeln!(out, "{indent}failed closed: {cause}")?,
        (_, _, Some(cause)) => writeln!(out, "{indent}failed open: {cause}")?,
        (_, _, None) => {}
    }
    for note in &run.notes {
        writeln!(out, "{indent}note: {note}")?;
    }
    if !run.stderr_tail().is_empty() {
        writeln!(out, "{indent}stderr:")?;
        for line in run.stderr_tail().lines() {
            writeln!(out, "{indent}  | {line}")?;
        }
    }
    Ok(())
}

/// Why a run that succeeded changed nothing, as it happened: a persistent hook answers a line
/// with only its request id, a one-shot hook prints nothing; a Claude Code hook can also print
/// text that is no decision (its notes say what became of it).
fn why_no_change(run: &HookRun, persistent: bool) -> &'static str {
    let process = run.process.as_ref();
    if persistent {
        "its answer held only its requestId: no change"
    } else if process.is_none() {
        // A url, prompt or mcpTool hook: an answer, not a process's stdout.
        "its answer was empty or {}: no change"
    } else if process.is_some_and(|process| process.stdout_bytes == 0) {
        "empty stdout: no change"
    } else {
        "no decision on stdout: no change"
    }
}

fn print_reduced(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let ran = report.runs.len();
    let failed = report
        .runs
        .iter()
        .filter(|run| run.status != RunStatus::Ok)
        .count();
    let mut summary = format!("{ran} hook(s) ran");
    match (&report.failed_closed, failed) {
        (_, 0) => {}
        (Some(_), 1) => summary.push_str(", 1 failed closed"),
        (Some(_), failed) => summary.push_str(&format!(
            ", 1 failed closed, {} failed open or skipped",
            failed - 1
        )),
        (None, failed) => summary.push_str(&format!(", {failed} failed open or skipped")),
    }
    writeln!(out, "Result ({summary}):")?;
    for line in &report.verdict {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// The result in words, as a session would reach it: a fail-closed guard that could not decide
/// stops what it guards, whatever the other hooks said, so it is the whole verdict; otherwise the
/// chain's combined outcome, and a rewritten input that the tool's schema refuses.
fn verdict(
    reduced: &Reduced,
    failed_closed: Option<&FailedClosedReport>,
    rewritten_input_error: Option<&str>,
) -> Vec<String> {
    if let Some(report) = failed_closed {
        return vec![format!(
            "✗ {}: in a session, {}.",
            report.failed.reason(),
            report.consequence
        )];
    }
    let mut lines = reduced.explain();
    if let Some(error) = rewritten_input_error {
        lines.push(format!(
            "✗ the rewritten input fails the tool's schema, so a real session fails the call: {error}"
        ));
    }
    lines
}

/// The outcome as the hook would have written it: fields it left out are not shown as null.
fn without_nulls(outcome: &HookOutcome) -> Value {
    match serde_json::to_value(outcome) {
        Ok(Value::Object(fields)) => {
            Value::Object(fields.into_iter().filter(|(_, value)| !value.is_null()).collect())
        }
        Ok(other) => other,
        Err(_) => Value::Null,
    }
}

fn compact(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse_with_a_helpful_error() {
        assert_eq!(parse_event("preToolUse").unwrap(), HookEvent::PreToolUse);
        let err = parse_event("PreToolUse").unwrap_err().to_string();
        assert!(err.contains("did you mean 'preToolUse'"), "{err}");
        let err = parse_event("nope").unwrap_err().to_string();
        assert!(err.contains("sessionStart"), "{err}");
    }

    #[test]
    fn lists_read_as_words() {
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
        assert_eq!(
            expected_fields(HookEvent::PreToolUse, Path::new("/p")),
            "toolName, toolCallId, toolInput"
        );
    }

    #[test]
    fn every_event_has_a_default_payload() {
        let args = TestArgs {
            event: None,
            tool: None,
            input: None,
            prompt: None,
            payload: None,
            replay: None,
            json: false,
        };
        for event in HookEvent::ALL {
            let payload = build_payload(event, &args, Path::new("/p")).unwrap();
            assert_eq!(payload.event(), event);
            assert_eq!(payload.base().session_id, SESSION_ID);
        }
    }
}
