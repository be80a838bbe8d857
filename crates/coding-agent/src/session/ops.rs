//! What each operation does, once for every front end.

use elph_agent::harness::{AgentEvent, AgentMode};
use elph_agent::hooks::CompactTrigger;

use super::{ModelOutcome, Op, Outcome, Session, SessionChoice, SessionEvent, TrustOutcome};
use crate::runtime::Runtime;

impl Session {
    /// Carries out `op`; `None` once the session has ended (`End`).
    pub(super) async fn execute(&mut self, op: Op) -> Option<Outcome> {
        let outcome = match op {
            Op::Prompt { text, cancel } => match self.prepare_prompt(&text, &cancel).await {
                Ok(prepared) => {
                    let turn = self.runtime.harness_mut().run_turn_from_template(
                        &prepared.text,
                        prepared.command.as_deref(),
                        &cancel,
                    );
                    Outcome::Turn(self.channels.pump(turn).await)
                }
                Err(message) => Outcome::PromptRejected(message),
            },
            Op::Compact { instructions, cancel } => {
                let compaction =
                    self.runtime
                        .harness_mut()
                        .compact(CompactTrigger::Manual, instructions, &cancel);
                Outcome::Compaction(self.channels.pump(compaction).await)
            }
            Op::Reload => {
                self.runtime.reload();
                Outcome::Reloaded(self.hook_state())
            }
            Op::Trust => self.set_trust(true),
            Op::Untrust => self.set_trust(false),
            Op::New => self.switch(SessionChoice::New).await,
            Op::Resume(id) if id == self.runtime.session_id() => Outcome::AlreadyInSession(id),
            Op::Resume(id) => self.switch(SessionChoice::Resume(id)).await,
            Op::ListSessions => Outcome::Sessions(self.list_sessions()),
            Op::SetMode(name) => Outcome::Mode(self.set_mode(name.as_deref())),
            Op::Model(name) => Outcome::Model(self.set_model(name.as_deref())),
            Op::End { reason } => {
                self.end(&reason).await;
                return None;
            }
        };
        Some(outcome)
    }

    /// Fires sessionEnd, then says the session has ended.
    pub(super) async fn end(&mut self, reason: &str) {
        self.channels
            .pump(self.runtime.harness_mut().end_session(reason))
            .await;
        self.end_sandbox();
        self.channels.flush_telemetry().await;
        let storage_error = self.runtime.harness().storage_error().map(str::to_string);
        self.channels.emit(SessionEvent::Ended { storage_error });
    }

    /// Ends the sandbox of the session that ends, and says what it refused there.
    fn end_sandbox(&self) {
        for message in self.runtime.end_sandbox() {
            tracing::warn!(%message, "sandbox");
            self.channels
                .emit(SessionEvent::Agent(AgentEvent::Notice { message }));
        }
    }

    /// `/trust` (true) or `/untrust` (false). Asking for the state the project is already in
    /// changes nothing and says so.
    fn set_trust(&mut self, trust: bool) -> Outcome {
        let outcome = if self.runtime.trust().trusted == trust {
            TrustOutcome::Unchanged(self.hook_state())
        } else {
            match self.runtime.set_trust(trust) {
                Ok(_) => TrustOutcome::Changed(self.hook_state()),
                Err(error) => TrustOutcome::Failed {
                    project_dir: self.runtime.paths().project_dir.clone(),
                    error: error.to_string(),
                },
            }
        };
        Outcome::Trust { trust, outcome }
    }

    /// Switches the agent mode by name, or to the next one; the options keep it for `New`/`Resume`.
    fn set_mode(&mut self, name: Option<&str>) -> Result<AgentMode, String> {
        let mode = match name {
            Some(name) => name.trim().parse::<AgentMode>()?,
            None => self.runtime.harness().mode().next(),
        };
        self.runtime.harness_mut().set_mode(mode);
        self.options.mode = mode;
        Ok(mode)
    }

    /// Switches the model by name, or says which one is in use; the options keep it for
    /// `New`/`Resume`.
    fn set_model(&mut self, name: Option<&str>) -> ModelOutcome {
        let Some(name) = name.map(str::trim).filter(|name| !name.is_empty()) else {
            return ModelOutcome::Current(self.runtime.model().to_string());
        };
        match self.runtime.set_model(name) {
            Ok(()) => {
                self.options.model = Some(name.to_string());
                ModelOutcome::Switched(self.runtime.model().to_string())
            }
            Err(error) => ModelOutcome::Failed {
                error: error.to_string(),
                current: self.runtime.model().to_string(),
            },
        }
    }

    fn list_sessions(&self) -> Result<Vec<crate::store::SessionInfo>, String> {
        let store = self
            .runtime
            .store()
            .ok_or("this session is not stored; nothing to resume")?;
        store
            .list(&self.runtime.paths().project_dir)
            .map_err(|error| format!("cannot list sessions: {error}"))
    }

    /// Ends the current session and opens (or resumes) another in its place. When the other
    /// cannot be opened, the current one goes on.
    async fn switch(&mut self, choice: SessionChoice) -> Outcome {
        let mut options = self.options.clone();
        options.session = choice;
        let built = Runtime::build(
            self.runtime.paths().clone(),
            &options,
            self.approver.clone(),
            self.channels.agent_tx.clone(),
        );
        let runtime = match built {
            Ok(runtime) => runtime,
            Err(error) => return Outcome::SwitchFailed(format!("{error:#}")),
        };
        let reason = if options.session == SessionChoice::New {
            "new_session"
        } else {
            "resume"
        };
        self.channels
            .pump(self.runtime.harness_mut().end_session(reason))
            .await;
        self.end_sandbox();
        self.channels.attach(&runtime);
        self.runtime = runtime;
        self.announce();
        let source = self.runtime.source();
        self.channels
            .pump(self.runtime.harness_mut().start_session(source))
            .await;
        Outcome::Switched
    }
}
