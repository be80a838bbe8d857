//! The typed hook registry: native handlers first, then the configured command hooks through a
//! `HookRunner`, all folded by the one `Reducer` of the dispatch.

use std::sync::Arc;
use std::time::Instant;

use super::outcome::HookOutcome;
use super::payload::HookPayload;
use super::reduce::{ChainFlow, Reducer};
use super::runner::{Dispatch, HookRun, HookRunner, NoHooks};
use super::{HookEvent, Matcher};

/// A handler compiled into Elph (or registered by an embedding program). It runs in-process, before
/// any command hook of its event.
pub trait NativeHook: Send + Sync {
    /// The hook's id in diagnostics and run records.
    fn id(&self) -> &str;
    /// The event the hook listens to.
    fn event(&self) -> HookEvent;
    /// Which tools the hook sees, for tool events; every tool unless overridden.
    fn matcher(&self) -> Matcher {
        Matcher::any()
    }
    /// The outcome for this payload; `None` is "no change".
    fn handle(&self, payload: &HookPayload) -> Option<HookOutcome>;
}

/// Native handlers and command hooks for every event.
#[derive(Clone)]
pub struct HookRegistry {
    native: Vec<Arc<dyn NativeHook>>,
    runner: Arc<dyn HookRunner>,
}

impl Default for HookRegistry {
    fn default() -> Self {
        HookRegistry::new(Arc::new(NoHooks))
    }
}

impl HookRegistry {
    /// A registry whose command hooks `runner` runs, with no native handler yet.
    pub fn new(runner: Arc<dyn HookRunner>) -> Self {
        HookRegistry {
            native: Vec::new(),
            runner,
        }
    }

    /// Adds a native handler; handlers run in the order they were added.
    pub fn with_native(mut self, hook: Arc<dyn NativeHook>) -> Self {
        self.native.push(hook);
        self
    }

    /// Whether anything at all would run for `event`.
    pub fn has_hooks(&self, event: HookEvent, tool_name: Option<&str>) -> bool {
        self.interest(event, tool_name).is_some()
    }

    /// Who would run for `event` (and `tool_name`); `None` when nothing would. This is the one
    /// question a caller asks per event, before it builds the payload: [`dispatch_to`] then runs
    /// on the answer instead of asking again.
    ///
    /// [`dispatch_to`]: Self::dispatch_to
    pub fn interest(&self, event: HookEvent, tool_name: Option<&str>) -> Option<Interest> {
        let native = self
            .native
            .iter()
            .any(|hook| native_applies(hook.as_ref(), event, tool_name));
        let commands = self.runner.has_hooks(event, tool_name);
        (native || commands).then_some(Interest { native, commands })
    }

    /// Waits for the hooks that run in the background (async hooks) to end, each within its
    /// timeout.
    pub async fn settle(&self) {
        self.runner.settle().await;
    }

    /// Runs the chain for one payload: native handlers, then command hooks, all folded by one
    /// `Reducer`. Never fails.
    pub async fn dispatch(&self, payload: HookPayload) -> Dispatch {
        match self.interest(payload.event(), payload.tool_name()) {
            Some(interest) => self.dispatch_to(interest, payload).await,
            None => Dispatch::empty(payload),
        }
    }

    /// [`dispatch`](Self::dispatch) for the hooks that [`interest`](Self::interest) found.
    pub async fn dispatch_to(&self, interest: Interest, payload: HookPayload) -> Dispatch {
        let event = payload.event();
        let mut chain = Reducer::new(payload);
        let mut runs = Vec::new();
        let mut diagnostics = Vec::new();
        let mut stopped = false;
        if interest.native {
            let tool_name = chain.payload().tool_name().map(str::to_string);
            for hook in self
                .native
                .iter()
                .filter(|h| native_applies(h.as_ref(), event, tool_name.as_deref()))
            {
                let started = Instant::now();
                let outcome = hook.handle(chain.payload());
                let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                let mut run = HookRun::native(hook.id(), event, elapsed, outcome);
                let flow = chain.record(&mut run);
                runs.push(run);
                if flow == ChainFlow::Stop {
                    stopped = true;
                    break;
                }
            }
        }
        if !stopped && interest.commands {
            let ran = self.runner.run(&mut chain).await;
            runs.extend(ran.runs);
            diagnostics = ran.diagnostics;
        }
        Dispatch {
            event,
            runs,
            diagnostics,
            reduced: chain.finish(),
        }
    }
}

/// Who would run for one event, as [`HookRegistry::interest`] found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interest {
    native: bool,
    commands: bool,
}

fn native_applies(hook: &dyn NativeHook, event: HookEvent, tool_name: Option<&str>) -> bool {
    hook.event() == event && tool_name.is_none_or(|name| hook.matcher().matches(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::Reduced;
    use crate::hooks::events::before_agent::{BeforeAgentOutcome, BeforeAgentPayload};
    use crate::hooks::events::pre_tool_use::{PreToolUseOutcome, PreToolUsePayload};
    use crate::hooks::events::session_end::SessionEndPayload;
    use crate::hooks::payload::PayloadBase;
    use crate::hooks::runner::{HookDiagnostic, Ran};
    use serde_json::json;
    use std::sync::Mutex;

    struct Native {
        id: &'static str,
        event: HookEvent,
        outcome: HookOutcome,
    }

    impl NativeHook for Native {
        fn id(&self) -> &str {
            self.id
        }
        fn event(&self) -> HookEvent {
            self.event
        }
        fn handle(&self, _payload: &HookPayload) -> Option<HookOutcome> {
            Some(self.outcome.clone())
        }
    }

    /// A runner that records the payload it got and answers with a fixed outcome.
    struct Recording {
        seen: Mutex<Vec<HookPayload>>,
        outcome: HookOutcome,
    }

    #[async_trait::async_trait]
    impl HookRunner for Recording {
        async fn run(&self, chain: &mut Reducer) -> Ran {
            let event = chain.payload().event();
            self.seen.lock().unwrap().push(chain.payload().clone());
            let mut run = HookRun::native("command", event, 0, Some(self.outcome.clone()));
            chain.record(&mut run);
            Ran {
                runs: vec![run],
                diagnostics: vec![HookDiagnostic {
                    hook_id: Some("command".into()),
                    event,
                    severity: crate::hooks::Severity::Note,
                    message: "ran".into(),
                }],
            }
        }
        fn has_hooks(&self, _: HookEvent, _: Option<&str>) -> bool {
            true
        }
    }

    fn pre_tool() -> HookPayload {
        HookPayload::PreToolUse(PreToolUsePayload {
            base: PayloadBase::new("s", "/p"),
            tool_name: "shell_exec".into(),
            tool_call_id: "c".into(),
            tool_input: json!({"command": "ls"}),
        })
    }

    #[tokio::test]
    async fn native_handlers_run_first_and_commands_see_their_changes() {
        let runner = Arc::new(Recording {
            seen: Mutex::new(vec![]),
            outcome: HookOutcome::PreToolUse(PreToolUseOutcome::default()),
        });
        let registry = HookRegistry::new(runner.clone()).with_native(Arc::new(Native {
            id: "native-rewrite",
            event: HookEvent::PreToolUse,
            outcome: HookOutcome::PreToolUse(PreToolUseOutcome {
                tool_input: Some(json!({"command": "ls -la"})),
                ..Default::default()
            }),
        }));
        let dispatch = registry.dispatch(pre_tool()).await;
        let seen = runner.seen.lock().unwrap();
        let HookPayload::PreToolUse(p) = &seen[0] else {
            panic!()
        };
        assert_eq!(p.tool_input, json!({"command": "ls -la"}));
        let Reduced::PreToolUse(reduced) = &dispatch.reduced else {
            panic!()
        };
        assert_eq!(reduced.tool_input, json!({"command": "ls -la"}));
        assert!(reduced.input_changed, "a native rewrite counts as a change");
        assert_eq!(dispatch.runs[0].hook_id, "native-rewrite");
        assert_eq!(
            dispatch.runs[0].effects,
            ["hook 'native-rewrite' rewrote the tool input"]
        );
        assert_eq!(dispatch.diagnostics.len(), 1);
    }

    #[tokio::test]
    async fn a_native_block_stops_before_command_hooks() {
        let runner = Arc::new(Recording {
            seen: Mutex::new(vec![]),
            outcome: HookOutcome::SessionEnd(crate::hooks::events::Observation),
        });
        let registry = HookRegistry::new(runner.clone()).with_native(Arc::new(Native {
            id: "guard",
            event: HookEvent::PreToolUse,
            outcome: HookOutcome::PreToolUse(PreToolUseOutcome {
                block: Some(true),
                ..Default::default()
            }),
        }));
        let dispatch = registry.dispatch(pre_tool()).await;
        assert!(runner.seen.lock().unwrap().is_empty(), "command hooks never ran");
        assert!(dispatch.reduced.stopped_by().is_some());
    }

    #[tokio::test]
    async fn before_agent_additions_combine_native_then_commands() {
        let runner = Arc::new(Recording {
            seen: Mutex::new(vec![]),
            outcome: HookOutcome::BeforeAgent(BeforeAgentOutcome {
                additional_context: Some("from command".into()),
                ..Default::default()
            }),
        });
        let registry = HookRegistry::new(runner).with_native(Arc::new(Native {
            id: "n",
            event: HookEvent::BeforeAgent,
            outcome: HookOutcome::BeforeAgent(BeforeAgentOutcome {
                system_prompt: Some("from native".into()),
                ..Default::default()
            }),
        }));
        let payload = HookPayload::BeforeAgent(BeforeAgentPayload {
            base: PayloadBase::new("s", "/p"),
            prompt: "p".into(),
            system_prompt: "base".into(),
        });
        let Reduced::BeforeAgent(reduced) = registry.dispatch(payload).await.reduced else {
            panic!()
        };
        assert_eq!(reduced.system_prompt_additions, ["from native", "from command"]);
    }

    #[tokio::test]
    async fn no_hooks_is_an_empty_dispatch() {
        let dispatch = HookRegistry::default().dispatch(pre_tool()).await;
        assert!(dispatch.runs.is_empty());
        let Reduced::PreToolUse(reduced) = dispatch.reduced else {
            panic!()
        };
        assert_eq!(
            (reduced.tool_input, reduced.input_changed),
            (json!({"command": "ls"}), false)
        );
    }

    #[tokio::test]
    async fn a_native_run_has_no_process_and_claims_no_exit_code() {
        let registry = HookRegistry::default().with_native(Arc::new(Native {
            id: "n",
            event: HookEvent::SessionEnd,
            outcome: HookOutcome::SessionEnd(crate::hooks::events::Observation),
        }));
        let payload = HookPayload::SessionEnd(SessionEndPayload {
            base: PayloadBase::new("s", "/p"),
            reason: "exit".into(),
        });
        let dispatch = registry.dispatch(payload).await;
        assert_eq!(dispatch.runs[0].process, None);
        let json = serde_json::to_value(&dispatch.runs[0]).unwrap();
        assert_eq!(json["status"], "ok");
        assert!(json.get("exitCode").is_none(), "{json}");
    }
}
