//! The interactive startup gate (docs/trust.md): before the datastore or the TUI opens, `elph` decides
//! whether it may go on in an untrusted project, and asks when it may ask.
//!
//! | decision | default | no terminal | terminal |
//! | --- | --- | --- | --- |
//! | trusted | any | go on | go on |
//! | not trusted | `always` (explicit `false`) | go on, hooks off | go on, hooks off |
//! | not trusted | `never` | exit 4: `elph: project is not trusted (DIR)` | same |
//! | not trusted | `ask` | exit 4: `elph: project trust not given: there is no terminal to ask on; exiting` | ask: yes records `true` and goes on; no or Esc exits 4: `elph: project trust declined; exiting` |
//! | trust.json corrupt or unreadable | — | exit 4, with the error | same |
//!
//! The gate writes nothing unless the person answers yes, and before it asks it checks what would
//! make the start fail anyway ([`preflight`]), so a yes is never recorded for a start that cannot
//! happen.

pub(crate) mod preflight;
pub(crate) mod prompt;

use std::io::IsTerminal;
use std::path::Path;

use crate::diagnostics::shell_quote;
use crate::paths::Paths;
use crate::trust::contents::ProjectContents;
use crate::trust::{DecisionSource, DefaultTrust, TrustDecision, TrustError, TrustStore};

/// What the front end does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum GateOutcome {
    /// Open the datastore and the UI. Load the project's hooks only if `decision.trusted`
    /// (under the default `always`, an explicit `false` gets here with its hooks off).
    Proceed(TrustDecision),
    /// Print [`Declined::message`] (then the hint, if any) to stderr and exit with
    /// `exit::TRUST_DECLINED` (4, docs/cli.md "Exit codes"), having opened and written nothing.
    Declined(Declined),
    /// The person pressed Ctrl-C at the question: exit 130, quietly.
    Interrupted,
}

/// A project the gate does not let through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Declined {
    /// The exact line docs/trust.md shows, e.g. `elph: project trust declined; exiting`.
    pub message: String,
    /// What to do next, on its own line(s) after the message; `None` when the person just said no.
    pub hint: Option<String>,
}

impl Declined {
    /// The message and the hint, one per line, for stderr.
    pub(crate) fn to_stderr_text(&self) -> String {
        match &self.hint {
            Some(hint) => format!("{}\n{hint}", self.message),
            None => self.message.clone(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum GateError {
    /// The person said yes, but the answer could not be recorded.
    #[error("cannot record trust for {project}: {source}")]
    Record {
        project: std::path::PathBuf,
        #[source]
        source: TrustError,
    },
    /// The start would fail after the question (no model set, an unusable DATA_DIR, …): nothing
    /// was asked. Holds the whole error chain.
    #[error("{0}")]
    CannotStart(String),
    /// The terminal question failed (raw mode, reading keys, drawing).
    #[error("cannot ask about trusting {project} on this terminal: {source}")]
    Prompt {
        project: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the person answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    Yes,
    /// No, or Esc.
    No,
    /// Ctrl-C.
    Interrupted,
}

/// The question, as [`startup_gate_with`] takes it: asks about the project folder, given what its
/// `.elph/` holds and, when it changed since it was trusted, one line per change.
pub(crate) type Ask<'a> = &'a mut dyn FnMut(&Path, &ProjectContents, &[String]) -> std::io::Result<Answer>;

/// What must hold for the start to succeed, checked just before the question.
pub(crate) type Check<'a> = &'a dyn Fn() -> anyhow::Result<()>;

/// Whether the gate may ask: stdin and stdout are both terminals.
pub(crate) fn has_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// The gate with the real terminal question. `interactive` is normally [`has_terminal()`];
/// `before_asking` is normally [`preflight::check`] for this start's options.
pub(crate) fn startup_gate(
    paths: &Paths,
    store: &TrustStore,
    interactive: bool,
    before_asking: Check<'_>,
) -> Result<GateOutcome, GateError> {
    if interactive {
        startup_gate_with(paths, store, Some(&mut prompt::ask_on_terminal), before_asking)
    } else {
        startup_gate_with(paths, store, None, before_asking)
    }
}

/// The gate with `ask` standing in for the question (`None`: no terminal). `before_asking` runs
/// only when the question is about to be asked; its error ends the start with nothing recorded.
pub(crate) fn startup_gate_with(
    paths: &Paths,
    store: &TrustStore,
    ask: Option<Ask<'_>>,
    before_asking: Check<'_>,
) -> Result<GateOutcome, GateError> {
    let project = paths.project_dir.as_path();
    let decision = store.decide(project);
    if decision.trusted {
        return Ok(GateOutcome::Proceed(decision));
    }
    if let DecisionSource::Error { message } = &decision.source {
        return Ok(GateOutcome::Declined(Declined {
            message: not_trusted_message(project),
            hint: Some(format!(
                "elph: {}\nelph: after fixing it, run `elph trust {}` or start elph again",
                crate::terminal_text::escape_lines(message),
                shell_quote(project)
            )),
        }));
    }
    // A project that changed since it was trusted is asked about again (on a terminal), whatever
    // the default: the person trusted other content.
    let changes: Vec<String> = decision
        .changes()
        .map(|changes| changes.lines())
        .unwrap_or_default();
    let default = if changes.is_empty() {
        decision.default
    } else {
        DefaultTrust::Ask
    };
    match default {
        DefaultTrust::Always => Ok(GateOutcome::Proceed(decision)),
        DefaultTrust::Never => Ok(GateOutcome::Declined(Declined {
            message: not_trusted_message(project),
            hint: Some(format!(
                "elph: {} (\"defaultProjectTrust\": \"never\" in {}); run `elph trust {}` to trust it",
                decision.explanation(),
                crate::terminal_text::escape_path(store.path()),
                shell_quote(project)
            )),
        })),
        DefaultTrust::Ask => {
            // Nobody declined: there was nobody to ask, and the first line says so.
            let Some(ask) = ask else {
                if !changes.is_empty() {
                    return Ok(GateOutcome::Declined(Declined {
                        message: no_terminal_message(),
                        hint: Some(format!(
                            "elph: {} changed since you trusted it ({}); review the change, then run \
                             `elph trust {}`",
                            crate::terminal_text::escape_path(project),
                            changes.join("; "),
                            shell_quote(project)
                        )),
                    }));
                }
                return Ok(GateOutcome::Declined(Declined {
                    message: no_terminal_message(),
                    hint: Some(format!(
                        "elph: {} is not trusted; run `elph trust {}` first, or use `elph run` (its \
                         project hooks stay off)",
                        crate::terminal_text::escape_path(project),
                        shell_quote(project)
                    )),
                }));
            };
            before_asking().map_err(|error| GateError::CannotStart(format!("{error:#}")))?;
            let contents = ProjectContents::survey(paths);
            let answer = ask(project, &contents, &changes).map_err(|source| GateError::Prompt {
                project: project.to_path_buf(),
                source,
            })?;
            match answer {
                Answer::Yes => {
                    let decision = store.trust(project).map_err(|source| GateError::Record {
                        project: project.to_path_buf(),
                        source,
                    })?;
                    Ok(GateOutcome::Proceed(decision))
                }
                Answer::No => Ok(GateOutcome::Declined(Declined {
                    message: declined_message(),
                    hint: None,
                })),
                Answer::Interrupted => Ok(GateOutcome::Interrupted),
            }
        }
    }
}

/// What the next `elph` start in a project that is not trusted does under `default`, for the
/// messages of `elph untrust` and `/untrust`.
pub(crate) fn next_start(default: DefaultTrust) -> &'static str {
    match default {
        DefaultTrust::Ask => {
            "The next `elph` started here asks again whether to trust it (\"No\" exits); `elph run` \
             and `elph acp` run here with its hooks and MCP servers off."
        }
        DefaultTrust::Never => {
            "The next `elph` started here refuses to start (\"defaultProjectTrust\": \"never\"); \
             `elph run` and `elph acp` run here with its hooks and MCP servers off."
        }
        DefaultTrust::Always => {
            "The next `elph` started here starts with its hooks and MCP servers off, as do `elph run` \
             and `elph acp` (\"defaultProjectTrust\": \"always\")."
        }
    }
}

/// `elph: project is not trusted (DIR)`.
pub(crate) fn not_trusted_message(project: &Path) -> String {
    format!(
        "elph: project is not trusted ({})",
        crate::terminal_text::escape_path(project)
    )
}

/// `elph: project trust declined; exiting`.
pub(crate) fn declined_message() -> String {
    "elph: project trust declined; exiting".to_string()
}

/// The first line when trust would be asked but stdin or stdout is not a terminal.
pub(crate) fn no_terminal_message() -> String {
    "elph: project trust not given: there is no terminal to ask on; exiting".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    struct Fixture {
        _config: tempfile::TempDir,
        _project: tempfile::TempDir,
        paths: Paths,
        store: TrustStore,
    }

    fn fixture(trust_json: Option<&str>) -> Fixture {
        let config = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        if let Some(text) = trust_json {
            std::fs::write(config.path().join("trust.json"), text).unwrap();
        }
        let paths = Paths {
            config_dir: config.path().to_path_buf(),
            data_dir: config.path().join("data"),
            project_dir: std::fs::canonicalize(project.path()).unwrap(),
        };
        let store = TrustStore::with_home(config.path(), None);
        Fixture {
            _config: config,
            _project: project,
            paths,
            store,
        }
    }

    fn answering(
        answer: Answer,
        asked: &mut Vec<PathBuf>,
    ) -> impl FnMut(&Path, &ProjectContents, &[String]) -> std::io::Result<Answer> + '_ {
        move |project, _contents, _changes| {
            asked.push(project.to_path_buf());
            Ok(answer)
        }
    }

    /// The gate over `f`, a start that can happen, and a question answered with `answer`.
    fn ask(f: &Fixture, answer: Answer, asked: &mut Vec<PathBuf>) -> GateOutcome {
        startup_gate_with(
            &f.paths,
            &f.store,
            Some(&mut answering(answer, asked)),
            &|| Ok(()),
        )
        .unwrap()
    }

    #[test]
    fn trusted_projects_go_on_without_a_question() {
        let f = fixture(Some(r#"{"defaultProjectTrust": "never"}"#));
        f.store.trust(&f.paths.project_dir).unwrap();
        let mut asked = Vec::new();
        let outcome = ask(&f, Answer::No, &mut asked);
        assert!(matches!(outcome, GateOutcome::Proceed(d) if d.trusted));
        assert!(asked.is_empty());
    }

    #[test]
    fn always_lets_an_explicit_false_through_with_hooks_off() {
        let f = fixture(Some(r#"{"defaultProjectTrust": "always"}"#));
        f.store.set_trust(&f.paths.project_dir, false).unwrap();
        let outcome = startup_gate_with(&f.paths, &f.store, None, &|| Ok(())).unwrap();
        let GateOutcome::Proceed(decision) = outcome else {
            panic!("{outcome:?}")
        };
        assert!(!decision.trusted);
    }

    #[test]
    fn never_refuses_with_the_project_named() {
        let f = fixture(Some(r#"{"defaultProjectTrust": "never"}"#));
        let mut asked = Vec::new();
        let outcome = ask(&f, Answer::Yes, &mut asked);
        let GateOutcome::Declined(declined) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(
            declined.message,
            format!("elph: project is not trusted ({})", f.paths.project_dir.display())
        );
        assert!(asked.is_empty(), "never does not ask");
        assert!(!f.store.is_trusted(&f.paths.project_dir));
    }

    #[test]
    fn ask_without_a_terminal_declines_and_writes_nothing() {
        let f = fixture(None);
        let outcome = startup_gate_with(&f.paths, &f.store, None, &|| Ok(())).unwrap();
        let GateOutcome::Declined(declined) = outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(
            declined.message,
            "elph: project trust not given: there is no terminal to ask on; exiting"
        );
        assert!(!f.store.path().exists());
        assert!(!f.store.lock_path().exists());
    }

    #[test]
    fn ask_yes_records_true_and_goes_on() {
        let f = fixture(None);
        let mut asked = Vec::new();
        let outcome = ask(&f, Answer::Yes, &mut asked);
        assert!(
            matches!(outcome, GateOutcome::Proceed(ref d) if d.trusted),
            "{outcome:?}"
        );
        assert_eq!(asked, std::slice::from_ref(&f.paths.project_dir));
        assert!(f.store.is_trusted(&f.paths.project_dir));
    }

    #[test]
    fn ask_no_and_ctrl_c_record_nothing() {
        let f = fixture(None);
        let mut asked = Vec::new();
        let outcome = ask(&f, Answer::No, &mut asked);
        assert_eq!(
            outcome,
            GateOutcome::Declined(Declined {
                message: declined_message(),
                hint: None
            })
        );
        let outcome = ask(&f, Answer::Interrupted, &mut asked);
        assert_eq!(outcome, GateOutcome::Interrupted);
        assert!(!f.store.path().exists());
    }

    #[test]
    fn a_corrupt_trust_file_declines_with_its_error_and_stays_as_it_was() {
        let f = fixture(Some("{oops"));
        let mut asked = Vec::new();
        let outcome = ask(&f, Answer::Yes, &mut asked);
        let GateOutcome::Declined(declined) = outcome else {
            panic!("{outcome:?}")
        };
        let text = declined.to_stderr_text();
        assert!(text.contains("trust.json is corrupt"), "{text}");
        assert!(asked.is_empty());
        assert_eq!(std::fs::read_to_string(f.store.path()).unwrap(), "{oops");
    }

    #[test]
    fn a_start_that_cannot_happen_fails_before_the_question_and_records_nothing() {
        let f = fixture(None);
        let mut asked = Vec::new();
        let err = startup_gate_with(
            &f.paths,
            &f.store,
            Some(&mut answering(Answer::Yes, &mut asked)),
            &|| Err(anyhow::anyhow!("no model configured")),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "no model configured");
        assert!(asked.is_empty(), "not asked");
        assert!(!f.store.path().exists());
        // A trusted project is not asked, so nothing is checked here (the session reports it).
        f.store.trust(&f.paths.project_dir).unwrap();
        let outcome = startup_gate_with(&f.paths, &f.store, None, &|| Err(anyhow::anyhow!("x"))).unwrap();
        assert!(matches!(outcome, GateOutcome::Proceed(d) if d.trusted));
    }

    #[test]
    fn a_failed_prompt_is_an_error() {
        let f = fixture(None);
        let mut fail = |_: &Path, _: &ProjectContents, _: &[String]| -> std::io::Result<Answer> {
            Err(std::io::Error::other("no tty"))
        };
        let err = startup_gate_with(&f.paths, &f.store, Some(&mut fail), &|| Ok(())).unwrap_err();
        assert!(err.to_string().contains("no tty"), "{err}");
    }
}
