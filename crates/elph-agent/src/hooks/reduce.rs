//! The reduction rules of SPEC.md §4: how the ordered outcomes of one event's chain combine.
//!
//! `Reducer` folds outcomes one at a time, because tool and context hooks see the payload as the
//! previous hook left it; `reduce` folds a whole ordered list. The agent's registry and
//! `elph hooks test` both use this one implementation.

use serde::Serialize;
use serde_json::Value;

use super::outcome::{Decision, HookOutcome};
use super::payload::HookPayload;
use crate::messages::{ContentBlock, Message};

/// Whether the chain goes on after an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainFlow {
    Continue,
    /// A preToolUse hook blocked: no later hook runs.
    Stop,
}

/// Who blocked or asked, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub hook_id: String,
    pub reason: Option<String>,
}

impl Verdict {
    /// The text the model (or the user) is shown.
    pub fn describe(&self, what: &str) -> String {
        match &self.reason {
            Some(reason) => format!("{what} by hook '{}': {reason}", self.hook_id),
            None => format!("{what} by hook '{}'", self.hook_id),
        }
    }
}

/// The combined effect of a chain.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Reduced {
    /// Observation-only events: nothing to apply.
    Observation,
    BeforeAgent {
        /// Appended to the compiled system prompt, each after a blank line, in order.
        system_prompt_additions: Vec<String>,
        /// Appended to the current turn only; never stored.
        messages: Vec<Message>,
    },
    Context {
        /// The replacement provider-bound list for this one request, if any hook replaced it.
        messages: Option<Vec<Message>>,
    },
    PreToolUse {
        tool_input: Value,
        input_changed: bool,
        blocked: Option<Verdict>,
        ask: Option<Verdict>,
    },
    ToolResult {
        content: Vec<ContentBlock>,
        details: Value,
        is_error: bool,
        terminate: bool,
        changed: bool,
    },
    PreCompact {
        cancelled: Option<Verdict>,
        custom_instructions: Option<String>,
    },
}

impl Reduced {
    /// The compiled system prompt with the beforeAgent additions appended.
    pub fn apply_system_prompt(base: &str, additions: &[String]) -> String {
        let mut prompt = base.to_string();
        for addition in additions {
            if !prompt.is_empty() {
                prompt.push_str("\n\n");
            }
            prompt.push_str(addition);
        }
        prompt
    }
}

/// Folds the outcomes of one event's chain, in order.
#[derive(Clone, Debug)]
pub struct Reducer {
    payload: HookPayload,
    state: Reduced,
}

impl Reducer {
    pub fn new(payload: HookPayload) -> Self {
        let state = match &payload {
            HookPayload::BeforeAgent(_) => Reduced::BeforeAgent {
                system_prompt_additions: Vec::new(),
                messages: Vec::new(),
            },
            HookPayload::Context(_) => Reduced::Context { messages: None },
            HookPayload::PreToolUse(p) => Reduced::PreToolUse {
                tool_input: p.tool_input.clone(),
                input_changed: false,
                blocked: None,
                ask: None,
            },
            HookPayload::PostToolUse(p) | HookPayload::PostToolUseFailure(p) => Reduced::ToolResult {
                content: p.content.clone(),
                details: p.details.clone(),
                is_error: p.is_error,
                terminate: false,
                changed: false,
            },
            HookPayload::PreCompact(p) => Reduced::PreCompact {
                cancelled: None,
                custom_instructions: p.custom_instructions.clone(),
            },
            _ => Reduced::Observation,
        };
        Reducer { payload, state }
    }

    /// The payload the next hook in the chain receives: as the previous hooks left it.
    pub fn payload(&self) -> &HookPayload {
        &self.payload
    }

    /// Whether a hook already stopped the chain.
    pub fn stopped(&self) -> bool {
        matches!(&self.state, Reduced::PreToolUse { blocked: Some(_), .. })
    }

    /// Applies one hook's outcome. An outcome of another event's kind changes nothing.
    pub fn apply(&mut self, hook_id: &str, outcome: &HookOutcome) -> ChainFlow {
        if self.stopped() {
            return ChainFlow::Stop;
        }
        match (&mut self.state, outcome) {
            (
                Reduced::BeforeAgent {
                    system_prompt_additions,
                    messages,
                },
                HookOutcome::BeforeAgent(o),
            ) => {
                system_prompt_additions.extend(o.system_prompt.iter().cloned());
                system_prompt_additions.extend(o.additional_context.iter().cloned());
                if let Some(extra) = &o.messages {
                    messages.extend(extra.iter().cloned());
                }
            }
            (Reduced::Context { messages }, HookOutcome::Context(o)) => {
                if let Some(replacement) = &o.messages {
                    *messages = Some(replacement.clone());
                    if let HookPayload::Context(p) = &mut self.payload {
                        p.messages = replacement.clone();
                    }
                }
            }
            (
                Reduced::PreToolUse {
                    tool_input,
                    input_changed,
                    blocked,
                    ask,
                },
                HookOutcome::PreToolUse(o),
            ) => {
                if o.block == Some(true) || o.decision == Some(Decision::Deny) {
                    *blocked = Some(Verdict {
                        hook_id: hook_id.to_string(),
                        reason: o.reason.clone(),
                    });
                    return ChainFlow::Stop;
                }
                if o.decision == Some(Decision::Ask) && ask.is_none() {
                    *ask = Some(Verdict {
                        hook_id: hook_id.to_string(),
                        reason: o.reason.clone(),
                    });
                }
                if let Some(input) = &o.tool_input {
                    *tool_input = input.clone();
                    *input_changed = true;
                    if let HookPayload::PreToolUse(p) = &mut self.payload {
                        p.tool_input = input.clone();
                    }
                }
            }
            (
                Reduced::ToolResult {
                    content,
                    details,
                    is_error,
                    terminate,
                    changed,
                },
                HookOutcome::PostToolUse(o),
            ) => {
                if let Some(new_content) = &o.content {
                    *content = new_content.clone();
                    *changed = true;
                }
                if let Some(new_details) = &o.details {
                    *details = new_details.clone();
                    *changed = true;
                }
                if let Some(flag) = o.is_error {
                    *is_error = flag;
                    *changed = true;
                }
                if let Some(flag) = o.terminate {
                    *terminate = flag;
                }
                if let HookPayload::PostToolUse(p) | HookPayload::PostToolUseFailure(p) = &mut self.payload {
                    p.content = content.clone();
                    p.details = details.clone();
                    p.is_error = *is_error;
                }
            }
            (
                Reduced::PreCompact {
                    cancelled,
                    custom_instructions,
                },
                HookOutcome::PreCompact(o),
            ) => {
                if o.cancel == Some(true) && cancelled.is_none() {
                    *cancelled = Some(Verdict {
                        hook_id: hook_id.to_string(),
                        reason: None,
                    });
                }
                if let Some(instructions) = &o.custom_instructions {
                    *custom_instructions = Some(instructions.clone());
                    if let HookPayload::PreCompact(p) = &mut self.payload {
                        p.custom_instructions = Some(instructions.clone());
                    }
                }
            }
            _ => {}
        }
        ChainFlow::Continue
    }

    pub fn finish(self) -> Reduced {
        self.state
    }
}

/// Folds an ordered list of `(hook id, outcome)` for `payload`'s event.
pub fn reduce<'a>(
    payload: HookPayload,
    outcomes: impl IntoIterator<Item = (&'a str, &'a HookOutcome)>,
) -> Reduced {
    let mut reducer = Reducer::new(payload);
    for (hook_id, outcome) in outcomes {
        if reducer.apply(hook_id, outcome) == ChainFlow::Stop {
            break;
        }
    }
    reducer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::outcome::{
        BeforeAgentOutcome, ContextOutcome, PostToolUseOutcome, PreCompactOutcome, PreToolUseOutcome,
    };
    use crate::hooks::payload::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn base() -> PayloadBase {
        PayloadBase::new("s", "/p")
    }

    fn pre_tool(input: Value) -> HookPayload {
        HookPayload::PreToolUse(PreToolUsePayload {
            base: base(),
            tool_name: "shell_exec".into(),
            tool_call_id: "c1".into(),
            tool_input: input,
        })
    }

    fn post_tool(failure: bool) -> HookPayload {
        let payload = ToolResultPayload {
            base: base(),
            tool_name: "read_file".into(),
            tool_call_id: "c1".into(),
            tool_input: json!({}),
            content: vec![ContentBlock::text("original")],
            details: json!({"n": 1}),
            is_error: failure,
        };
        if failure {
            HookPayload::PostToolUseFailure(payload)
        } else {
            HookPayload::PostToolUse(payload)
        }
    }

    fn pre(o: PreToolUseOutcome) -> HookOutcome {
        HookOutcome::PreToolUse(o)
    }

    #[test]
    fn before_agent_appends_in_order_system_prompt_then_context() {
        let a = HookOutcome::BeforeAgent(BeforeAgentOutcome {
            system_prompt: Some("A1".into()),
            additional_context: Some("A2".into()),
            messages: Some(vec![Message::user("temp 1")]),
        });
        let b = HookOutcome::BeforeAgent(BeforeAgentOutcome {
            system_prompt: None,
            additional_context: Some("B2".into()),
            messages: Some(vec![Message::user("temp 2")]),
        });
        let payload = HookPayload::BeforeAgent(BeforeAgentPayload {
            base: base(),
            prompt: "hi".into(),
            system_prompt: "BASE".into(),
        });
        let reduced = reduce(payload, [("a", &a), ("b", &b)]);
        let Reduced::BeforeAgent {
            system_prompt_additions,
            messages,
        } = reduced
        else {
            panic!()
        };
        assert_eq!(system_prompt_additions, ["A1", "A2", "B2"]);
        assert_eq!(messages, [Message::user("temp 1"), Message::user("temp 2")]);
        assert_eq!(
            Reduced::apply_system_prompt("BASE", &system_prompt_additions),
            "BASE\n\nA1\n\nA2\n\nB2"
        );
    }

    #[test]
    fn context_replacement_chains_and_last_wins() {
        let payload = HookPayload::Context(ContextPayload {
            base: base(),
            messages: vec![Message::user("orig")],
        });
        let mut reducer = Reducer::new(payload);
        let first = HookOutcome::Context(ContextOutcome {
            messages: Some(vec![Message::user("first")]),
        });
        reducer.apply("a", &first);
        let HookPayload::Context(seen) = reducer.payload() else {
            panic!()
        };
        assert_eq!(
            seen.messages,
            [Message::user("first")],
            "the next hook sees the replaced list"
        );
        reducer.apply("b", &HookOutcome::Context(ContextOutcome { messages: None }));
        assert_eq!(
            reducer.finish(),
            Reduced::Context {
                messages: Some(vec![Message::user("first")])
            }
        );
    }

    #[test]
    fn context_without_replacement_changes_nothing() {
        let payload = HookPayload::Context(ContextPayload {
            base: base(),
            messages: vec![],
        });
        assert_eq!(reduce(payload, []), Reduced::Context { messages: None });
    }

    #[test]
    fn pre_tool_use_rewrite_passes_down_the_chain() {
        let rewrite = pre(PreToolUseOutcome {
            tool_input: Some(json!({"command": "ls -la"})),
            ..Default::default()
        });
        let mut reducer = Reducer::new(pre_tool(json!({"command": "ls"})));
        assert_eq!(reducer.apply("rewrite", &rewrite), ChainFlow::Continue);
        let HookPayload::PreToolUse(seen) = reducer.payload() else {
            panic!()
        };
        assert_eq!(seen.tool_input, json!({"command": "ls -la"}));
        let Reduced::PreToolUse {
            tool_input,
            input_changed,
            blocked,
            ask,
        } = reducer.finish()
        else {
            panic!()
        };
        assert_eq!(tool_input, json!({"command": "ls -la"}));
        assert!(input_changed);
        assert_eq!((blocked, ask), (None, None));
    }

    #[test]
    fn pre_tool_use_block_stops_the_chain() {
        let block = pre(PreToolUseOutcome {
            block: Some(true),
            reason: Some("no rm".into()),
            ..Default::default()
        });
        let later = pre(PreToolUseOutcome {
            tool_input: Some(json!({"x": 1})),
            ..Default::default()
        });
        let mut reducer = Reducer::new(pre_tool(json!({})));
        assert_eq!(reducer.apply("guard", &block), ChainFlow::Stop);
        assert_eq!(reducer.apply("later", &later), ChainFlow::Stop);
        let Reduced::PreToolUse {
            blocked, tool_input, ..
        } = reducer.finish()
        else {
            panic!()
        };
        let verdict = blocked.unwrap();
        assert_eq!(verdict.hook_id, "guard");
        assert_eq!(verdict.describe("blocked"), "blocked by hook 'guard': no rm");
        assert_eq!(tool_input, json!({}), "the later rewrite never applied");
    }

    #[test]
    fn pre_tool_use_deny_decision_blocks_and_block_false_does_not() {
        let deny = pre(PreToolUseOutcome {
            decision: Some(Decision::Deny),
            ..Default::default()
        });
        let reduced = reduce(pre_tool(json!({})), [("d", &deny)]);
        assert!(matches!(reduced, Reduced::PreToolUse { blocked: Some(_), .. }));
        let not_block = pre(PreToolUseOutcome {
            block: Some(false),
            ..Default::default()
        });
        let reduced = reduce(pre_tool(json!({})), [("n", &not_block)]);
        assert!(matches!(reduced, Reduced::PreToolUse { blocked: None, .. }));
    }

    #[test]
    fn pre_tool_use_ask_is_kept_and_allow_loosens_nothing() {
        let ask = pre(PreToolUseOutcome {
            decision: Some(Decision::Ask),
            reason: Some("check".into()),
            ..Default::default()
        });
        let allow = pre(PreToolUseOutcome {
            decision: Some(Decision::Allow),
            ..Default::default()
        });
        let reduced = reduce(pre_tool(json!({})), [("asker", &ask), ("allower", &allow)]);
        let Reduced::PreToolUse { ask, blocked, .. } = reduced else {
            panic!()
        };
        assert_eq!(ask.unwrap().hook_id, "asker");
        assert_eq!(blocked, None);
    }

    #[test]
    fn post_tool_use_patches_chain() {
        let first = HookOutcome::PostToolUse(PostToolUseOutcome {
            content: Some(vec![ContentBlock::text("redacted")]),
            ..Default::default()
        });
        let second = HookOutcome::PostToolUse(PostToolUseOutcome {
            details: Some(json!({"source": "policy"})),
            is_error: Some(true),
            terminate: Some(true),
            ..Default::default()
        });
        let mut reducer = Reducer::new(post_tool(false));
        reducer.apply("a", &first);
        let HookPayload::PostToolUse(seen) = reducer.payload() else {
            panic!()
        };
        assert_eq!(seen.content, [ContentBlock::text("redacted")]);
        reducer.apply("b", &second);
        assert_eq!(
            reducer.finish(),
            Reduced::ToolResult {
                content: vec![ContentBlock::text("redacted")],
                details: json!({"source": "policy"}),
                is_error: true,
                terminate: true,
                changed: true,
            }
        );
    }

    #[test]
    fn post_tool_use_failure_without_outcome_keeps_the_result() {
        let reduced = reduce(post_tool(true), []);
        assert_eq!(
            reduced,
            Reduced::ToolResult {
                content: vec![ContentBlock::text("original")],
                details: json!({"n": 1}),
                is_error: true,
                terminate: false,
                changed: false,
            }
        );
    }

    #[test]
    fn pre_compact_cancel_is_sticky_and_last_instructions_win() {
        let payload = HookPayload::PreCompact(PreCompactPayload {
            base: base(),
            trigger: CompactTrigger::Auto,
            entry_count: 3,
            custom_instructions: Some("user's".into()),
        });
        let a = HookOutcome::PreCompact(PreCompactOutcome {
            cancel: Some(true),
            custom_instructions: Some("A".into()),
        });
        let b = HookOutcome::PreCompact(PreCompactOutcome {
            cancel: Some(false),
            custom_instructions: Some("B".into()),
        });
        let reduced = reduce(payload, [("a", &a), ("b", &b)]);
        assert_eq!(
            reduced,
            Reduced::PreCompact {
                cancelled: Some(Verdict {
                    hook_id: "a".into(),
                    reason: None
                }),
                custom_instructions: Some("B".into()),
            }
        );
    }

    #[test]
    fn observation_events_reduce_to_nothing() {
        let payload = HookPayload::Stop(StopPayload {
            base: base(),
            status: StopStatus::Completed,
        });
        assert_eq!(
            reduce(payload, [("a", &HookOutcome::Observation)]),
            Reduced::Observation
        );
    }
}
