//! The typed hook registry: native handlers first, then the configured command hooks through a
//! `HookRunner`, all folded by the one `Reducer`.

use std::sync::Arc;
use std::time::Instant;

use super::outcome::HookOutcome;
use super::payload::HookPayload;
use super::reduce::{ChainFlow, Reduced, Reducer};
use super::runner::{Dispatch, HookRun, HookRunner, NoHooks, RunStatus};
use super::{HookEvent, Matcher};

/// A handler compiled into Elph (or registered by an embedding program). It runs in-process, before
/// any command hook of its event.
pub trait NativeHook: Send + Sync {
    fn id(&self) -> &str;
    fn event(&self) -> HookEvent;
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
    pub fn new(runner: Arc<dyn HookRunner>) -> Self {
        HookRegistry {
            native: Vec::new(),
            runner,
        }
    }

    pub fn with_native(mut self, hook: Arc<dyn NativeHook>) -> Self {
        self.native.push(hook);
        self
    }

    pub fn runner(&self) -> &Arc<dyn HookRunner> {
        &self.runner
    }

    /// Whether anything at all would run for `event`.
    pub fn has_hooks(&self, event: HookEvent, tool_name: Option<&str>) -> bool {
        self.native
            .iter()
            .any(|hook| native_applies(hook.as_ref(), event, tool_name))
            || self.runner.has_hooks(event, tool_name)
    }

    /// Runs the chain for one payload: native handlers, then command hooks. Never fails.
    pub async fn dispatch(&self, payload: HookPayload) -> Dispatch {
        let event = payload.event();
        let tool_name = payload.tool_name().map(str::to_string);
        let mut reducer = Reducer::new(payload);
        let mut runs = Vec::new();
        for hook in self
            .native
            .iter()
            .filter(|h| native_applies(h.as_ref(), event, tool_name.as_deref()))
        {
            let started = Instant::now();
            let outcome = hook.handle(reducer.payload());
            let mut run = HookRun::skipped(hook.id(), event, "");
            run.status = RunStatus::Ok;
            run.cause = None;
            run.exit_code = Some(0);
            run.duration_ms = started.elapsed().as_millis() as u64;
            if let Some(outcome) = &outcome {
                let flow = reducer.apply(hook.id(), outcome);
                run.outcome = Some(outcome.clone());
                runs.push(run);
                if flow == ChainFlow::Stop {
                    return Dispatch {
                        event,
                        runs,
                        diagnostics: Vec::new(),
                        reduced: reducer.finish(),
                    };
                }
            } else {
                runs.push(run);
            }
        }
        if !self.runner.has_hooks(event, tool_name.as_deref()) {
            return Dispatch {
                event,
                runs,
                diagnostics: Vec::new(),
                reduced: reducer.finish(),
            };
        }
        let commands = self.runner.dispatch(reducer.payload().clone()).await;
        runs.extend(commands.runs);
        let reduced = merge(reducer.finish(), commands.reduced);
        Dispatch {
            event,
            runs,
            diagnostics: commands.diagnostics,
            reduced,
        }
    }
}

fn native_applies(hook: &dyn NativeHook, event: HookEvent, tool_name: Option<&str>) -> bool {
    hook.event() == event && tool_name.is_none_or(|name| hook.matcher().matches(name))
}

/// Combines what the native handlers did with what the command chain did after them. Changes
/// carried in the payload (tool input, results, messages, instructions) are already part of the
/// command chain's result; additions and flags are combined here.
fn merge(native: Reduced, commands: Reduced) -> Reduced {
    match (native, commands) {
        (
            Reduced::BeforeAgent {
                system_prompt_additions: mut a,
                messages: mut m,
            },
            Reduced::BeforeAgent {
                system_prompt_additions,
                messages,
            },
        ) => {
            a.extend(system_prompt_additions);
            m.extend(messages);
            Reduced::BeforeAgent {
                system_prompt_additions: a,
                messages: m,
            }
        }
        (Reduced::Context { messages: native }, Reduced::Context { messages }) => Reduced::Context {
            messages: messages.or(native),
        },
        (
            Reduced::PreToolUse {
                input_changed: native_changed,
                ask: native_ask,
                ..
            },
            Reduced::PreToolUse {
                tool_input,
                input_changed,
                blocked,
                ask,
            },
        ) => Reduced::PreToolUse {
            tool_input,
            input_changed: native_changed || input_changed,
            blocked,
            ask: native_ask.or(ask),
        },
        (
            Reduced::ToolResult {
                terminate: native_terminate,
                changed: native_changed,
                ..
            },
            Reduced::ToolResult {
                content,
                details,
                is_error,
                terminate,
                changed,
            },
        ) => Reduced::ToolResult {
            content,
            details,
            is_error,
            terminate: native_terminate || terminate,
            changed: native_changed || changed,
        },
        (
            Reduced::PreCompact {
                cancelled: native_cancel,
                ..
            },
            Reduced::PreCompact {
                cancelled,
                custom_instructions,
            },
        ) => Reduced::PreCompact {
            cancelled: native_cancel.or(cancelled),
            custom_instructions,
        },
        (_, commands) => commands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::outcome::{BeforeAgentOutcome, PreToolUseOutcome};
    use crate::hooks::payload::{BeforeAgentPayload, PayloadBase, PreToolUsePayload};
    use crate::hooks::runner::HookDiagnostic;
    use serde_json::{Value, json};
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
        async fn dispatch(&self, payload: HookPayload) -> Dispatch {
            self.seen.lock().unwrap().push(payload.clone());
            let mut reducer = Reducer::new(payload.clone());
            reducer.apply("command", &self.outcome);
            Dispatch {
                event: payload.event(),
                runs: vec![],
                diagnostics: vec![HookDiagnostic {
                    hook_id: Some("command".into()),
                    event: payload.event(),
                    message: "ran".into(),
                }],
                reduced: reducer.finish(),
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
        let Reduced::PreToolUse {
            tool_input,
            input_changed,
            ..
        } = dispatch.reduced
        else {
            panic!()
        };
        assert_eq!(tool_input, json!({"command": "ls -la"}));
        assert!(input_changed, "a native rewrite counts as a change");
        assert_eq!(dispatch.runs[0].hook_id, "native-rewrite");
        assert_eq!(dispatch.diagnostics.len(), 1);
    }

    #[tokio::test]
    async fn a_native_block_stops_before_command_hooks() {
        let runner = Arc::new(Recording {
            seen: Mutex::new(vec![]),
            outcome: HookOutcome::Observation,
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
        assert!(matches!(
            dispatch.reduced,
            Reduced::PreToolUse { blocked: Some(_), .. }
        ));
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
        let Reduced::BeforeAgent {
            system_prompt_additions,
            ..
        } = registry.dispatch(payload).await.reduced
        else {
            panic!()
        };
        assert_eq!(system_prompt_additions, ["from native", "from command"]);
    }

    #[tokio::test]
    async fn no_hooks_is_an_empty_dispatch() {
        let dispatch = HookRegistry::default().dispatch(pre_tool()).await;
        assert!(dispatch.runs.is_empty());
        let Reduced::PreToolUse {
            tool_input,
            input_changed,
            ..
        } = dispatch.reduced
        else {
            panic!()
        };
        assert_eq!((tool_input, input_changed), (json!({"command": "ls"}), false));
        let _ = Value::Null;
    }
}
