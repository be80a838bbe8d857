//! The checks doctor makes of one hook: its command (found, a file, executable, a `#!` line that
//! points at something real), its matcher (names tools Elph has), whether it is enabled, and what
//! its recent runs say (slow, failing). Each problem comes with what to do next.
//!
//! Checking reads metadata and at most the first line of a script; it never runs anything.

use std::io::Read;
use std::path::{Path, PathBuf};

use elph_agent::hooks::went_on_unchecked;
use serde::Serialize;

use super::runstats::{RunStats, Slowness};
use crate::diagnostics::shell_quote;
use crate::hooks::HookDefinition;
use crate::hooks::discovery::is_executable;

/// How serious a finding is. Ordered: the worst of a list is its maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Level {
    Ok,
    Info,
    Warning,
    Error,
}

impl Level {
    /// The mark the report prints: ✓, -, ! or ✗.
    pub(crate) fn mark(self) -> &'static str {
        match self {
            Level::Ok => "✓",
            Level::Info => "-",
            Level::Warning => "!",
            Level::Error => "✗",
        }
    }
}

/// One thing doctor noticed, and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Finding {
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub(crate) fn new(level: Level, message: impl Into<String>) -> Self {
        Finding {
            level,
            message: message.into(),
            fix: None,
        }
    }

    pub(crate) fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// A hook's command as doctor sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommandReport {
    /// As written in hooks.json.
    pub written: String,
    /// As resolved (for a bare name not found on PATH: the name itself).
    pub path: PathBuf,
    pub exists: bool,
    pub executable: bool,
    /// The interpreter named on a `#!` line, when the command is a script.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
}

/// Checks the command of `hook`; `path_var` is the PATH hooks get (for `#!/usr/bin/env NAME`).
/// `None` for a hook that runs no command (url, prompt, mcpTool).
pub(super) fn check_command(hook: &HookDefinition, path_var: &str) -> Option<(CommandReport, Vec<Finding>)> {
    let command = hook.command()?;
    let bare = !command.written.contains('/');
    let exists = command.path.is_absolute() && command.path.exists();
    let mut report = CommandReport {
        written: command.written.clone(),
        path: command.path.clone(),
        exists,
        executable: command.executable,
        interpreter: None,
    };
    let source = hook.source.display();
    let path = command.path.display();
    let mut findings = Vec::new();
    if !exists {
        if bare {
            findings.push(
                Finding::new(
                    Level::Error,
                    format!("command not found: '{}' is not on PATH", command.written),
                )
                .fix(format!(
                    "install it, or give its absolute path as \"command\" in {source} (hooks run with the \
                     PATH elph was started with)"
                )),
            );
        } else {
            let folder = hook.source.parent().unwrap_or(Path::new("/")).display();
            let how = if Path::new(&command.written).is_absolute() {
                String::new()
            } else {
                format!(" (\"{}\" resolves against {folder})", command.written)
            };
            findings.push(
                Finding::new(Level::Error, format!("command not found: {path}{how}"))
                    .fix(format!("create it, or fix \"command\" in {source}")),
            );
        }
    } else if command.path.is_dir() {
        findings.push(
            Finding::new(
                Level::Error,
                format!("command is a directory, not a program: {path}"),
            )
            .fix(format!("point \"command\" in {source} at an executable file")),
        );
    } else if !command.executable {
        findings.push(
            Finding::new(Level::Error, format!("not executable: {path}"))
                .fix(format!("chmod +x {}", shell_quote(&command.path))),
        );
    } else if let Some(line) = shebang(&command.path) {
        let (interpreter, finding) = check_shebang(&line, &command.path, path_var);
        report.interpreter = interpreter;
        findings.extend(finding);
    }
    if !hook.enabled {
        // A disabled hook never runs, so a broken command is not a problem yet.
        for finding in &mut findings {
            if finding.level == Level::Error {
                finding.level = Level::Warning;
                finding
                    .message
                    .push_str(" (the hook is disabled, so this matters once it is enabled)");
            }
        }
    }
    Some((report, findings))
}

/// The `#!` line of a script, without the `#!`; `None` for anything else.
fn shebang(path: &Path) -> Option<String> {
    let mut head = [0u8; 256];
    let mut file = std::fs::File::open(path).ok()?;
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    let head = &head[..read];
    let rest = head.strip_prefix(b"#!")?;
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

fn check_shebang(line: &str, script: &Path, path_var: &str) -> (Option<String>, Option<Finding>) {
    let script_q = shell_quote(script);
    if line.ends_with('\r') {
        let finding = Finding::new(
            Level::Error,
            format!(
                "the #! line of {} ends with a carriage return (Windows line endings), so the system \
                 looks for an interpreter whose name ends in \\r",
                script.display()
            ),
        )
        .fix(format!(
            "convert it to Unix line endings: sed -i 's/\\r$//' {script_q}"
        ));
        return (Some(line.trim().to_string()), Some(finding));
    }
    let mut words = line.split_whitespace();
    let Some(interpreter) = words.next() else {
        return (None, None);
    };
    let interpreter_path = Path::new(interpreter);
    if !is_executable(interpreter_path) {
        let finding = Finding::new(
            Level::Error,
            format!(
                "its interpreter {interpreter} (from the #! line of {}) does not exist or is not executable",
                script.display()
            ),
        )
        .fix(format!(
            "install it, or change the first line of {script_q} (e.g. #!/bin/sh or #!/usr/bin/env python3)"
        ));
        return (Some(interpreter.to_string()), Some(finding));
    }
    if interpreter_path.file_name().is_some_and(|name| name == "env") {
        let program = words.find(|word| !word.starts_with('-'));
        if let Some(program) = program
            && !program.contains('/')
            && !std::env::split_paths(path_var).any(|dir| is_executable(&dir.join(program)))
        {
            let finding = Finding::new(
                Level::Error,
                format!(
                    "'{program}' (from `#!{}` in {}) is not on PATH",
                    line.trim(),
                    script.display()
                ),
            )
            .fix(format!(
                "install {program}, or name its absolute path on the first line of {script_q}"
            ));
            return (Some(format!("{interpreter} {program}")), Some(finding));
        }
        return (program.map(|program| format!("{interpreter} {program}")), None);
    }
    (Some(interpreter.to_string()), None)
}

/// Checks the matcher of a tool hook against the tools Elph has: native tools by name, MCP tools
/// by their `mcp_` prefix.
pub(super) fn check_matcher(hook: &HookDefinition) -> Vec<Finding> {
    crate::hooks::tool_names::unknown_tools(hook.event, &hook.matcher)
        .into_iter()
        .map(|unknown| {
            Finding::new(Level::Warning, unknown.message).fix(format!(
                "use Elph's tool names in {}; e.g. edit_file, not apply_patch",
                hook.source.display()
            ))
        })
        .collect()
}

/// The warnings recent runs give: slow, and keeps failing.
pub(super) fn check_runs(hook: &HookDefinition, stats: &RunStats) -> Vec<Finding> {
    let mut findings = Vec::new();
    let source = hook.source.display();
    if let Some(budget) = hook.budget {
        let budget_ms = budget.as_millis() as u64;
        let over = stats.over_budget(budget_ms);
        if over > 0 {
            findings.push(
                Finding::new(
                    Level::Warning,
                    format!(
                        "over budget: {over} of its last {} runs took longer than its budgetMs of {budget_ms} ms \
                         (slowest {} ms)",
                        stats.ran(),
                        stats.slowest_ms().unwrap_or_default()
                    ),
                )
                .fix(format!(
                    "make it faster, or raise \"budgetMs\" in {source}; a run over budget still counts (a \
                     budget never turns a guard off)"
                )),
            );
        }
    }
    match stats.slow(hook.timeout) {
        Some(Slowness::NearTimeout { p95_ms, timeout_ms }) => findings.push(
            Finding::new(
                Level::Warning,
                format!("slow: p95 {p95_ms} ms is over half its {timeout_ms} ms timeout"),
            )
            .fix(format!(
                "make it faster, or raise \"timeoutMs\" in {source} (at most 60000); a run past the \
                 timeout is killed and changes nothing"
            )),
        ),
        Some(Slowness::OverLimit { p95_ms }) => findings.push(
            Finding::new(
                Level::Warning,
                format!(
                    "slow: p95 {p95_ms} ms; hooks are awaited one after another, so every {} waits for it",
                    hook.event
                ),
            )
            .fix("make it faster: start long work in the background, or hook only the events that need it"),
        ),
        None => {}
    }
    let last = stats
        .last_failure
        .as_ref()
        .and_then(|failure| failure.cause.as_deref())
        .map(|cause| format!("; last: {}", first_sentence(cause)))
        .unwrap_or_default();
    let tool = if hook.event.is_tool_event() {
        " --tool NAME"
    } else {
        ""
    };
    let test = format!(
        "run `elph hooks test {}{tool}` to see its exit code, stderr and outcome",
        hook.event
    );
    // A hook that failed on every recent run does nothing it was written for: a problem, not a ✓.
    if stats.always_failing() {
        findings.push(
            Finding::new(
                Level::Error,
                format!(
                    "failed on every one of its last {} run(s){last}",
                    stats.recent_window
                ),
            )
            .fix(test.clone()),
        );
    } else if stats.failing() {
        findings.push(
            Finding::new(
                Level::Warning,
                format!(
                    "keeps failing: {} of its last {} runs failed{last}",
                    stats.recent_failures, stats.recent_window
                ),
            )
            .fix(test.clone()),
        );
    }
    if stats.protocol_errors > 0 {
        let last = stats
            .last_protocol_error
            .as_deref()
            .map(|cause| format!("; last: {}", first_sentence(cause)))
            .unwrap_or_default();
        findings.push(
            Finding::new(
                Level::Warning,
                format!(
                    "broke the persistent line protocol {} time(s) in its last {} runs: each time its \
                     process was stopped and the event failed{last}",
                    stats.protocol_errors, stats.count
                ),
            )
            .fix(format!(
                "print exactly one line per payload on stdout, a JSON object that echoes the payload's \
                 \"requestId\" (docs/hooks.md, \"The line protocol\"); {test}"
            )),
        );
    }
    if stats.failed_open > 0
        && let Some(went_on) = went_on_unchecked(hook.event)
    {
        findings.push(
            Finding::new(
                Level::Warning,
                format!(
                    "failed open {} time(s) in its last {} runs: each time, {went_on}",
                    stats.failed_open, stats.count
                ),
            )
            .fix(format!(
                "{test}; if it is a guard, set \"failClosed\": true in {source} so that a failure stops what it guards"
            )),
        );
    }
    findings
}

/// The first sentence of a failure cause, at most 200 characters: enough to recognise it.
fn first_sentence(cause: &str) -> String {
    let sentence = cause.split(". ").next().unwrap_or(cause);
    match sentence.char_indices().nth(200) {
        Some((end, _)) => format!("{}…", sentence.get(..end).unwrap_or(sentence)),
        None => sentence.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {}

    #[test]
    fn shebang_checks() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("x");
        assert_eq!(check_shebang("/bin/sh", &script, "/usr/bin:/bin").1, None);
        let (_, finding) = check_shebang("/bin/sh\r", &script, "/usr/bin:/bin");
        assert!(finding.unwrap().message.contains("carriage return"));
        let (_, finding) = check_shebang("/no/such/interpreter -e", &script, "/usr/bin:/bin");
        assert!(finding.unwrap().message.contains("/no/such/interpreter"));
        let (interpreter, finding) = check_shebang("/usr/bin/env sh", &script, "/usr/bin:/bin");
        assert_eq!((interpreter.as_deref(), finding), (Some("/usr/bin/env sh"), None));
        let (_, finding) = check_shebang("/usr/bin/env no-such-program-xyz", &script, "/usr/bin:/bin");
        assert!(finding.unwrap().message.contains("'no-such-program-xyz'"));
    }
}
