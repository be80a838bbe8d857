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
use elph_agent::hooks::{
    Dispatch, HookEvent, HookOutcome, HookPayload, HookRun, PayloadBase, Reduced, RunStatus,
};
use elph_agent::messages::{Content, ContentBlock, Message};
use serde::Serialize;
use serde_json::{Value, json};

use super::hooks::load;
use crate::cli::exit;
use crate::diagnostics::Diagnostic;
use crate::hooks::{FileState, HookDefinition, HookHost, HookSet};
use crate::paths::Paths;

const SESSION_ID: &str = "test-session";
const DEFAULT_TOOL: &str = "shell_exec";
const DEFAULT_PROMPT: &str = "Hello from elph hooks test";
const DEFAULT_SYSTEM_PROMPT: &str = "You are Elph, a coding agent.";

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    elph hooks test preToolUse --tool shell_exec --input '{\"command\": \"rm -rf /\"}'\n  \
    elph hooks test beforeAgent --prompt 'fix the tests'\n  \
    elph hooks test postToolUse --payload payload.json --json\n  \
    elph hooks test preToolUse --payload - < payload.json\n\n\
    Events: sessionStart userPromptSubmit beforeAgent context preToolUse postToolUse postToolUseFailure \
    preCompact postCompact stop sessionEnd")]
pub struct TestArgs {
    /// The event to fire, e.g. preToolUse.
    #[arg(value_name = "EVENT")]
    pub event: String,
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
    /// Print one JSON document (runs, diagnostics, reduced) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cwd: Option<&Path>, args: TestArgs) -> anyhow::Result<u8> {
    let event = parse_event(&args.event)?;
    let paths = Paths::from_env(cwd)?;
    let payload = match &args.payload {
        Some(source) => read_payload(event, source, &paths.project_dir)?,
        None => build_payload(event, &args, &paths.project_dir)?,
    };
    let set = load(&paths);
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
    let mut sandbox_base = elph_agent::sandbox::SandboxPolicy::workspace(&paths.project_dir);
    sandbox_base.set_temp_dir(temp_dir.path());
    sandbox_base.add_read_only_path(paths.config_dir.clone());
    sandbox_base.add_read_only_path(paths.data_dir.clone());
    let host = HookHost::new(set, paths.project_dir.clone(), &paths.data_dir)
        .without_run_log()
        .with_sandbox_base(sandbox_base);
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

fn parse_event(name: &str) -> anyhow::Result<HookEvent> {
    name.parse::<HookEvent>().or_else(|err| {
        match HookEvent::ALL
            .into_iter()
            .find(|event| event.as_str().eq_ignore_ascii_case(name))
        {
            Some(event) => {
                bail!("unknown event '{name}'; did you mean '{event}'? (event names are camelCase)")
            }
            None => bail!("{err}"),
        }
    })
}

fn base(project_dir: &Path) -> PayloadBase {
    PayloadBase::new(SESSION_ID, project_dir)
}

/// The payload for `event` from the flags, with sensible defaults.
fn build_payload(event: HookEvent, args: &TestArgs, project_dir: &Path) -> anyhow::Result<HookPayload> {
    use elph_agent::hooks::payload::*;
    if !event.is_tool_event() && (args.tool.is_some() || args.input.is_some()) {
        bail!(
            "--tool and --input apply to tool events (preToolUse, postToolUse, postToolUseFailure), not {event}"
        );
    }
    let takes_prompt = matches!(
        event,
        HookEvent::UserPromptSubmit | HookEvent::BeforeAgent | HookEvent::Context
    );
    if !takes_prompt && args.prompt.is_some() {
        bail!("--prompt applies to userPromptSubmit, beforeAgent and context, not {event}");
    }
    let prompt = args.prompt.clone().unwrap_or_else(|| DEFAULT_PROMPT.into());
    let tool_name = args.tool.clone().unwrap_or_else(|| DEFAULT_TOOL.into());
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
    let base = base(project_dir);
    let tool_result = |is_error: bool| ToolResultPayload {
        base: base.clone(),
        tool_name: tool_name.clone(),
        tool_call_id: "call_test".into(),
        tool_input: tool_input.clone(),
        content: vec![ContentBlock::text(if is_error {
            "error: the tool failed (synthetic result from elph hooks test)"
        } else {
            "ok (synthetic result from elph hooks test)"
        })],
        details: json!({}),
        is_error,
    };
    Ok(match event {
        HookEvent::SessionStart => HookPayload::SessionStart(SessionStartPayload {
            base,
            source: SessionSource::New,
        }),
        HookEvent::UserPromptSubmit => {
            HookPayload::UserPromptSubmit(UserPromptSubmitPayload { base, prompt })
        }
        HookEvent::BeforeAgent => HookPayload::BeforeAgent(BeforeAgentPayload {
            base,
            prompt,
            system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
        }),
        HookEvent::Context => HookPayload::Context(ContextPayload {
            base,
            messages: vec![Message::user(prompt)],
        }),
        HookEvent::PreToolUse => HookPayload::PreToolUse(PreToolUsePayload {
            base,
            tool_name,
            tool_call_id: "call_test".into(),
            tool_input,
        }),
        HookEvent::PostToolUse => HookPayload::PostToolUse(tool_result(false)),
        HookEvent::PostToolUseFailure => HookPayload::PostToolUseFailure(tool_result(true)),
        HookEvent::PreCompact => HookPayload::PreCompact(PreCompactPayload {
            base,
            trigger: CompactTrigger::Manual,
            entry_count: 10,
            custom_instructions: None,
        }),
        HookEvent::PostCompact => HookPayload::PostCompact(PostCompactPayload {
            base,
            trigger: CompactTrigger::Manual,
            entries_compacted: 10,
        }),
        HookEvent::Stop => HookPayload::Stop(StopPayload {
            base,
            status: StopStatus::Completed,
        }),
        HookEvent::SessionEnd => HookPayload::SessionEnd(SessionEndPayload {
            base,
            reason: "exit".into(),
        }),
    })
}

/// A whole payload from a file or stdin, checked against the event's payload type.
fn read_payload(event: HookEvent, source: &Path, project_dir: &Path) -> anyhow::Result<HookPayload> {
    let (text, name) = if source == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the payload from stdin")?;
        (text, "stdin".to_string())
    } else {
        let text = std::fs::read_to_string(source)
            .with_context(|| format!("cannot read the payload file {}", source.display()))?;
        (text, source.display().to_string())
    };
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("the payload in {name} is not valid JSON"))?;
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
            expected_fields(event)
        )
    })
}

fn expected_fields(event: HookEvent) -> &'static str {
    match event {
        HookEvent::SessionStart => "source: \"new\" | \"resume\"",
        HookEvent::UserPromptSubmit => "prompt",
        HookEvent::BeforeAgent => "prompt, systemPrompt",
        HookEvent::Context => "messages",
        HookEvent::PreToolUse => "toolName, toolCallId, toolInput",
        HookEvent::PostToolUse | HookEvent::PostToolUseFailure => {
            "toolName, toolCallId, toolInput, content, details, isError"
        }
        HookEvent::PreCompact => "trigger: \"auto\" | \"manual\", entryCount, customInstructions",
        HookEvent::PostCompact => "trigger, entriesCompacted",
        HookEvent::Stop => "status: \"completed\" | \"failed\" | \"cancelled\"",
        HookEvent::SessionEnd => "reason",
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
    sandbox: Option<elph_agent::sandbox::SandboxMode>,
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
    reduced: Reduced,
    /// Diagnostics from loading the hook files.
    configuration: Vec<Diagnostic>,
    /// The hook whose outcome stopped the chain, if one did.
    stopped_by: Option<String>,
    /// Why a rewritten toolInput fails the native tool's schema (a real session would fail the call).
    #[serde(skip_serializing_if = "Option::is_none")]
    rewritten_input_error: Option<String>,
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
            })
            .collect();
        let stopped_by = match &dispatch.reduced {
            Reduced::PreToolUse {
                blocked: Some(verdict),
                ..
            } => Some(verdict.hook_id.clone()),
            _ => None,
        };
        // A real session checks a rewritten input against the tool's schema again; so does this.
        let rewritten_input_error = match (&dispatch.reduced, tool) {
            (
                Reduced::PreToolUse {
                    tool_input,
                    input_changed: true,
                    blocked: None,
                    ..
                },
                Some(tool),
            ) => {
                let catalog = elph_agent::tools::ToolCatalog::native();
                match catalog.get(tool) {
                    Some(_) => catalog.validate(tool, tool_input).err(),
                    None => None,
                }
            }
            _ => None,
        };
        Report {
            event,
            payload: payload.clone(),
            hooks,
            runs: dispatch.runs.clone(),
            diagnostics: dispatch.diagnostics.clone(),
            reduced: dispatch.reduced.clone(),
            configuration: set.diagnostics.clone(),
            stopped_by,
            rewritten_input_error,
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
                print_run(out, run, width)?;
                if let Some(mode) = hook.sandbox {
                    writeln!(out, "    ran in the {mode} sandbox")?;
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

fn print_run(out: &mut impl Write, run: &HookRun, width: usize) -> std::io::Result<()> {
    let (mark, how) = match run.status {
        RunStatus::Ok => ("✓", "exit 0".to_string()),
        RunStatus::Skipped => ("○", "skipped".to_string()),
        RunStatus::Failed => (
            "✗",
            if run.spawn_error.is_some() {
                "did not start".to_string()
            } else if run.timed_out {
                "timed out".to_string()
            } else if let Some(signal) = run.signal {
                format!("killed by {}", crate::hooks::process::signal_name(signal))
            } else if let Some(code) = run.exit_code {
                format!("exit {code}")
            } else {
                "failed".to_string()
            },
        ),
    };
    writeln!(
        out,
        "{mark} {:<width$}  {how}  {} ms",
        run.hook_id, run.duration_ms
    )?;
    let indent = "    ";
    match (&run.status, &run.outcome, &run.cause) {
        (RunStatus::Ok, Some(HookOutcome::Observation), _) => writeln!(
            out,
            "{indent}outcome: nothing this event honours (observation only)"
        )?,
        (RunStatus::Ok, Some(outcome), _) => writeln!(
            out,
            "{indent}outcome: {}",
            shorten(&compact(&without_nulls(outcome)), 600)
        )?,
        (RunStatus::Ok, None, _) => writeln!(out, "{indent}outcome: none (empty stdout: no change)")?,
        (RunStatus::Skipped, _, Some(cause)) => writeln!(out, "{indent}{cause}")?,
        (_, _, Some(cause)) => writeln!(out, "{indent}failed open: {cause}")?,
        (_, _, None) => {}
    }
    for note in &run.notes {
        writeln!(out, "{indent}note: {note}")?;
    }
    if !run.stderr_tail.is_empty() {
        writeln!(out, "{indent}stderr:")?;
        for line in run.stderr_tail.lines() {
            writeln!(out, "{indent}  | {line}")?;
        }
    }
    Ok(())
}

fn print_reduced(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let ran = report.runs.len();
    let failed = report
        .runs
        .iter()
        .filter(|run| run.status != RunStatus::Ok)
        .count();
    let mut summary = format!("{ran} hook(s) ran");
    if failed > 0 {
        summary.push_str(&format!(", {failed} failed open or skipped"));
    }
    writeln!(out, "Result ({summary}):")?;
    match &report.reduced {
        Reduced::Observation => writeln!(
            out,
            "  {} is observation-only: the hooks were told, nothing is applied.",
            report.event
        )?,
        Reduced::BeforeAgent {
            system_prompt_additions,
            messages,
        } => {
            if system_prompt_additions.is_empty() && messages.is_empty() {
                writeln!(
                    out,
                    "  no change: the system prompt and the turn stay as they are."
                )?;
            }
            for addition in system_prompt_additions {
                writeln!(
                    out,
                    "  appended to the system prompt: {}",
                    shorten(&json!(addition).to_string(), 300)
                )?;
            }
            if !messages.is_empty() {
                writeln!(
                    out,
                    "  {} message(s) added to this turn (never stored):",
                    messages.len()
                )?;
                for message in messages {
                    writeln!(out, "    {}", describe_message(message))?;
                }
            }
        }
        Reduced::Context { messages } => match messages {
            None => writeln!(
                out,
                "  no change: the provider receives the messages as assembled."
            )?,
            Some(messages) => {
                writeln!(
                    out,
                    "  the provider-bound messages are replaced for this request by {} message(s):",
                    messages.len()
                )?;
                for message in messages {
                    writeln!(out, "    {}", describe_message(message))?;
                }
            }
        },
        Reduced::PreToolUse {
            tool_input,
            input_changed,
            blocked,
            ask,
        } => {
            if let Some(verdict) = blocked {
                writeln!(
                    out,
                    "  BLOCKED: {}. The tool does not run; the model receives that reason as an error result.",
                    verdict.describe("blocked")
                )?;
            } else if let Some(verdict) = ask {
                writeln!(
                    out,
                    "  needs the user's approval: {} (with no one to ask, it is denied).",
                    verdict.describe("approval asked")
                )?;
            } else {
                writeln!(out, "  not blocked: the call goes on to native approval.")?;
            }
            if *input_changed {
                writeln!(
                    out,
                    "  toolInput rewritten to: {}",
                    shorten(&tool_input.to_string(), 600)
                )?;
                if let Some(error) = &report.rewritten_input_error {
                    writeln!(
                        out,
                        "  ✗ the rewritten input fails the tool's schema, so a real session fails the call: {error}"
                    )?;
                }
            } else {
                writeln!(
                    out,
                    "  toolInput unchanged: {}",
                    shorten(&tool_input.to_string(), 600)
                )?;
            }
        }
        Reduced::ToolResult {
            content,
            details,
            is_error,
            terminate,
            changed,
        } => {
            if *changed {
                writeln!(out, "  the tool result was patched:")?;
            } else {
                writeln!(out, "  no change to the tool result:")?;
            }
            for block in content {
                writeln!(out, "    content: {}", describe_block(block))?;
            }
            writeln!(out, "    isError: {is_error}")?;
            writeln!(out, "    details: {}", shorten(&details.to_string(), 300))?;
            if *terminate {
                writeln!(
                    out,
                    "  terminate: the agent loop ends after this batch of tool calls (once every result in it asks to)."
                )?;
            }
        }
        Reduced::PreCompact {
            cancelled,
            custom_instructions,
        } => {
            match cancelled {
                Some(verdict) => writeln!(out, "  {}.", verdict.describe("compaction cancelled"))?,
                None => writeln!(out, "  the compaction goes ahead.")?,
            }
            match custom_instructions {
                Some(text) => writeln!(
                    out,
                    "  custom instructions: {}",
                    shorten(&json!(text).to_string(), 300)
                )?,
                None => writeln!(out, "  no custom instructions.")?,
            }
        }
    }
    Ok(())
}

fn describe_message(message: &Message) -> String {
    let text = match message.content() {
        Content::Text(text) => text.clone(),
        Content::Blocks(blocks) => blocks.iter().map(describe_block).collect::<Vec<_>>().join(" "),
    };
    format!("{}: {}", message.role(), shorten(&json!(text).to_string(), 200))
}

fn describe_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } => shorten(&json!(text).to_string(), 300),
        ContentBlock::Image { data, mime_type } => {
            format!("[image {mime_type}, {} bytes base64]", data.len())
        }
    }
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

/// At most `max` bytes of `text`, cut on a character boundary, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
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
    fn shorten_cuts_on_a_char_boundary() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("ééé", 3), "é… (6 bytes)");
    }

    #[test]
    fn every_event_has_a_default_payload() {
        let args = TestArgs {
            event: String::new(),
            tool: None,
            input: None,
            prompt: None,
            payload: None,
            json: false,
        };
        for event in HookEvent::ALL {
            let payload = build_payload(event, &args, Path::new("/p")).unwrap();
            assert_eq!(payload.event(), event);
            assert_eq!(payload.base().session_id, SESSION_ID);
        }
    }
}
