//! The human form of the doctor report: one section per topic, a mark on every line that states a
//! result (✓ fine, - for information, ! warning, ✗ problem), and a `→` line with what to do next
//! under every warning and problem.

use std::io::{self, Write};

use super::checks::{Finding, Level};
use super::{HookReport, Report};
use crate::hooks::HookScope;

/// Writes `report` for people.
pub(crate) fn render(out: &mut impl Write, report: &Report) -> io::Result<()> {
    writeln!(out, "elph doctor (elph {})", report.elph_version)?;

    heading(out, "Paths")?;
    let paths = &report.paths;
    for (name, path) in [
        ("CONFIG_DIR", &paths.config_dir),
        ("DATA_DIR", &paths.data_dir),
        ("PROJECT_DIR", &paths.project_dir),
    ] {
        let missing = if path.exists { "" } else { ", not created yet" };
        writeln!(
            out,
            "  {name:<12} {}  (from {}{missing})",
            path.path.display(),
            path.from
        )?;
    }

    heading(out, "Trust")?;
    let trust = &report.trust;
    finding(out, 2, &trust.finding)?;
    let state = if trust.trust_file_exists {
        ""
    } else {
        " (not present: every project gets the default, ask)"
    };
    writeln!(out, "    trust file: {}{state}", trust.trust_file.display())?;

    render_sandbox(out, &report.sandbox)?;

    heading(out, "Hook files")?;
    for file in &report.files {
        let scope = scope_name(file.scope);
        let mark = file.finding.level.mark();
        writeln!(
            out,
            "  {mark} {scope:<8} {}: {}",
            file.path.display(),
            file.finding.message
        )?;
        fix(out, 4, &file.finding)?;
    }

    let disabled = report.summary.hooks - report.summary.enabled;
    heading(
        out,
        &format!(
            "Hooks: {} ({} enabled, {disabled} disabled), in the order they run",
            report.summary.hooks, report.summary.enabled
        ),
    )?;
    if report.hooks.is_empty() {
        writeln!(out, "  - none configured")?;
    }
    for hook in &report.hooks {
        render_hook(out, hook)?;
    }

    render_mcp(out, &report.mcp)?;
    super::providers::render(out, &report.providers)?;
    render_workflows(out, &report.workflows)?;

    heading(out, "Run log")?;
    let log = &report.run_log;
    if let Some(error) = &log.error {
        writeln!(out, "  ! {}: cannot be read: {error}", log.path.display())?;
    } else if !log.exists {
        writeln!(out, "  - {}: no runs recorded yet", log.path.display())?;
    } else {
        let mut line = format!(
            "  ✓ {}: {} run(s) read; the last {} of each hook are summed up above",
            log.path.display(),
            log.runs,
            log.window
        );
        if log.skipped_lines > 0 {
            line.push_str(&format!("; {} unreadable line(s) skipped", log.skipped_lines));
        }
        if log.unknown_hook_runs > 0 {
            line.push_str(&format!(
                "; {} run(s) of hooks no longer configured",
                log.unknown_hook_runs
            ));
        }
        writeln!(out, "{line}")?;
    }

    if !report.safety.is_empty() {
        heading(out, "Safety")?;
        for found in &report.safety {
            finding(out, 2, found)?;
        }
    }

    heading(out, &format!("Diagnostics ({})", report.diagnostics.len()))?;
    if report.diagnostics.is_empty() {
        writeln!(out, "  ✓ none")?;
    }
    for diagnostic in &report.diagnostics {
        writeln!(out, "  ! {diagnostic}")?;
    }

    heading(out, "Summary")?;
    let summary = &report.summary;
    if summary.errors == 0 && summary.warnings == 0 {
        writeln!(out, "  ✓ no problems found")?;
    } else {
        writeln!(
            out,
            "  {} {} problem(s), {} warning(s): see the ✗ and ! lines above, each with what to do next",
            if summary.errors > 0 { "✗" } else { "!" },
            summary.errors,
            summary.warnings
        )?;
    }
    if summary.failed_open_runs > 0 {
        writeln!(
            out,
            "  ! {} recent run(s) of hooks that guard something failed open: what they guard went on \
             without their check (see \"failed open\" above)",
            summary.failed_open_runs
        )?;
    }
    Ok(())
}

fn render_hook(out: &mut impl Write, hook: &HookReport) -> io::Result<()> {
    let mark = hook.status.mark();
    let tools = match &hook.matcher {
        Some(patterns) => format!("  tools: {}", patterns.join(", ")),
        None if hook.event.is_tool_event() => "  tools: *".to_string(),
        None => String::new(),
    };
    let sandbox = hook
        .sandbox
        .map(|mode| format!("  sandbox: {mode}"))
        .unwrap_or_default();
    writeln!(out, "  {mark} {}  {}{tools}{sandbox}", hook.id, hook.event)?;
    match &hook.command {
        Some(command) => {
            let mut resolved = command.path.display().to_string();
            if command.written != resolved {
                resolved = format!("{} → {resolved}", command.written);
            }
            let state = if !command.exists {
                "not found"
            } else if !command.executable {
                "not executable"
            } else {
                "executable"
            };
            writeln!(out, "      command  {resolved} ({state})")?;
            if let Some(interpreter) = &command.interpreter {
                writeln!(out, "      runs by  #!{interpreter}")?;
            }
        }
        None => writeln!(out, "      {:<8} {}", hook.kind, hook.handler)?,
    }
    if !hook.args.is_empty() {
        let args: Vec<String> = hook
            .args
            .iter()
            .map(|arg| serde_json::Value::from(arg.as_str()).to_string())
            .collect();
        writeln!(out, "      args     {}", args.join(" "))?;
    }
    writeln!(out, "      timeout  {} ms", hook.timeout_ms)?;
    if let Some(budget) = hook.budget_ms {
        writeln!(out, "      budget   {budget} ms")?;
    }
    match elph_agent::hooks::went_on_unchecked(hook.event) {
        Some(_) if hook.fail_closed => writeln!(
            out,
            "      fails    closed (failClosed): if it fails, {}",
            elph_agent::hooks::runner::FailedClosed::consequence(hook.event)
        )?,
        Some(_) => writeln!(
            out,
            "      fails    open (the default): if it fails, what it guards goes on without it"
        )?,
        None => {}
    }
    writeln!(
        out,
        "      limits   input {} bytes, output {} bytes",
        hook.max_input_bytes, hook.max_output_bytes
    )?;
    if hook.persistent {
        writeln!(
            out,
            "      process  persistent: one for the session, one JSON line in and one out per event"
        )?;
    }
    if hook.run_async {
        writeln!(
            out,
            "      process  async: runs in the background, its outcome ignored; its runs count here too"
        )?;
    }
    writeln!(
        out,
        "      source   {} ({})",
        hook.source.display(),
        scope_name(hook.scope)
    )?;
    writeln!(out, "      enabled  {}", if hook.enabled { "yes" } else { "no" })?;
    match &hook.recent_runs {
        None => writeln!(out, "      runs     none recorded")?,
        Some(stats) => {
            let percentiles = match (stats.p50_ms, stats.p95_ms) {
                (Some(p50), Some(p95)) => format!("; p50 {p50} ms, p95 {p95} ms"),
                _ => String::new(),
            };
            let skipped = if stats.skipped > 0 {
                format!(", {} skipped", stats.skipped)
            } else {
                String::new()
            };
            writeln!(
                out,
                "      runs     {} recent: {} failed, {} timed out{skipped}{percentiles}",
                stats.count, stats.failures, stats.timeouts
            )?;
        }
    }
    for item in &hook.findings {
        finding(out, 6, item)?;
    }
    Ok(())
}

fn render_sandbox(out: &mut impl Write, sandbox: &super::SandboxReport) -> io::Result<()> {
    heading(out, "Sandbox")?;
    let support = elph_process::sandbox::LandlockSupport {
        abi: sandbox.landlock_abi,
    };
    let mark = if support.available() { "✓" } else { "✗" };
    writeln!(out, "  {mark} {}", support.describe())?;
    for line in &sandbox.allows {
        writeln!(out, "    {line}")?;
    }
    for finding_ in &sandbox.findings {
        finding(out, 2, finding_)?;
    }
    heading(
        out,
        &format!(
            "Shell environment: {} variable(s) a command gets (names only)",
            sandbox.shell_environment.len()
        ),
    )?;
    writeln!(out, "  {}", sandbox.shell_environment.join(" "))?;
    if !sandbox.excluded_variables.is_empty() {
        heading(
            out,
            &format!(
                "Held back from commands: {} variable(s) (names only, and why)",
                sandbox.excluded_variables.len()
            ),
        )?;
        for excluded in &sandbox.excluded_variables {
            writeln!(out, "  {}: {}", excluded.name, excluded.reason)?;
        }
    }
    Ok(())
}

fn heading(out: &mut impl Write, title: &str) -> io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{title}")
}

fn finding(out: &mut impl Write, indent: usize, finding: &Finding) -> io::Result<()> {
    writeln!(out, "{:indent$}{} {}", "", finding.level.mark(), finding.message)?;
    fix(out, indent + 2, finding)
}

fn fix(out: &mut impl Write, indent: usize, finding: &Finding) -> io::Result<()> {
    match &finding.fix {
        Some(fix) if finding.level != Level::Ok => writeln!(out, "{:indent$}→ {fix}", ""),
        _ => Ok(()),
    }
}

fn scope_name(scope: HookScope) -> &'static str {
    match scope {
        HookScope::Home => "home",
        HookScope::Project => "project",
    }
}

fn render_mcp(out: &mut impl Write, mcp: &crate::mcp::McpOverview) -> io::Result<()> {
    use crate::mcp::ServerTransport;
    heading(out, &format!("MCP servers: {}", mcp.servers.len()))?;
    for file in &mcp.files {
        let state = serde_json::to_value(&file.state).ok();
        let state = state
            .as_ref()
            .and_then(|value| value.get("state"))
            .and_then(|value| value.as_str())
            .unwrap_or("unknown");
        writeln!(
            out,
            "  {} {}: {state}",
            scope_label(&file.scope),
            file.path.display()
        )?;
    }
    for server in &mcp.servers {
        let target = match &server.definition.transport {
            ServerTransport::Stdio { command, args, .. } => {
                let found = if command.executable {
                    ""
                } else {
                    "  (not found or not executable)"
                };
                format!("{} {}{found}", command.path.display(), args.join(" "))
            }
            ServerTransport::Http { url, .. } => url.clone(),
        };
        let state = serde_json::to_value(&server.state).ok();
        let state = state
            .as_ref()
            .and_then(|value| value.get("state"))
            .and_then(|value| value.as_str())
            .unwrap_or("unknown")
            .to_string();
        writeln!(
            out,
            "  - {:<16} {state:<11} {}",
            server.definition.name,
            target.trim_end()
        )?;
        writeln!(out, "    from {}", server.definition.source.display())?;
        if let Some(login) = mcp.logins.get(&server.definition.name) {
            writeln!(out, "    OAuth: {login}")?;
        }
    }
    for diagnostic in &mcp.diagnostics {
        writeln!(out, "  ! {diagnostic}")?;
    }
    for file in &mcp.other_clients {
        writeln!(
            out,
            "  {} has MCP servers of {} that Elph does not read; to bring them: {}",
            file.path.display(),
            file.client,
            file.import
        )?;
    }
    Ok(())
}

fn render_workflows(out: &mut impl Write, workflows: &crate::workflows::Workflows) -> io::Result<()> {
    heading(out, &format!("Skills: {}", workflows.skills.len()))?;
    for skill in &workflows.skills {
        writeln!(
            out,
            "  - {:<16} {:<8} {}",
            skill.name,
            skill.source.label(),
            skill.file.display()
        )?;
    }
    heading(out, &format!("Prompt templates: {}", workflows.prompts.len()))?;
    for template in &workflows.prompts {
        writeln!(
            out,
            "  - /{:<15} {:<8} {}",
            template.name,
            template.source.label(),
            template.file.display()
        )?;
    }
    for diagnostic in &workflows.diagnostics {
        writeln!(out, "  ! {diagnostic}")?;
    }
    Ok(())
}

fn scope_label(scope: &crate::mcp::McpScope) -> &'static str {
    match scope {
        crate::mcp::McpScope::Home => "home",
        crate::mcp::McpScope::Project => "project",
        crate::mcp::McpScope::Editor => "editor",
    }
}
