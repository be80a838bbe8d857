//! How the ordered outcomes of one event's chain combine (docs/hooks.md, "How outcomes combine").
//!
//! `Reducer` folds outcomes one at a time, because tool and context hooks see the payload as the
//! previous hook left it; `reduce` folds a whole ordered list. The rules of each event are in its
//! module under `events/`; this is the one fold that applies them.

use serde::Serialize;

use super::outcome::HookOutcome;
use super::payload::HookPayload;
use super::runner::HookRun;

/// Whether the chain goes on after an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainFlow {
    /// Let the next hook run.
    Continue,
    /// A preToolUse hook blocked: no later hook runs.
    Stop,
}

/// Who blocked or asked, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// The hook that decided.
    pub hook_id: String,
    /// Its reason, if it gave one.
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

pub use super::events::Reduced;

/// Folds the outcomes of one event's chain, in order. This is the only place outcomes combine:
/// native handlers, command hooks and `elph hooks test` all feed the one `Reducer` of a dispatch.
#[derive(Clone, Debug)]
pub struct Reducer {
    payload: HookPayload,
    state: Reduced,
}

impl Reducer {
    /// A chain for `payload`, before any hook ran.
    pub fn new(payload: HookPayload) -> Self {
        let state = Reduced::start(&payload);
        Reducer { payload, state }
    }

    /// The payload the next hook in the chain receives: as the previous hooks left it.
    pub fn payload(&self) -> &HookPayload {
        &self.payload
    }

    /// Whether a hook already stopped the chain.
    pub fn stopped(&self) -> bool {
        self.state.stopped_by().is_some()
    }

    /// Applies one hook's outcome. An outcome of another event's kind changes nothing.
    pub fn apply(&mut self, hook_id: &str, outcome: &HookOutcome) -> ChainFlow {
        self.state
            .apply(&mut self.payload, hook_id, outcome, &mut Vec::new())
    }

    /// Applies `run`'s outcome, if it has one, and records in the run what it changed.
    pub fn record(&mut self, run: &mut HookRun) -> ChainFlow {
        match &run.outcome {
            Some(outcome) => self
                .state
                .apply(&mut self.payload, &run.hook_id, outcome, &mut run.effects),
            None if self.stopped() => ChainFlow::Stop,
            None => ChainFlow::Continue,
        }
    }

    /// The combined effect of the outcomes applied so far.
    pub fn reduced(&self) -> &Reduced {
        &self.state
    }

    /// The combined effect of every outcome applied.
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
    use crate::hooks::HookEvent;
    use crate::hooks::events::before_agent::{BeforeAgentOutcome, BeforeAgentPayload, BeforeAgentReduced};
    use crate::hooks::events::context::{ContextOutcome, ContextPayload, ContextReduced};
    use crate::hooks::events::post_tool_use::{PostToolUseOutcome, ToolResultPayload, ToolResultReduced};
    use crate::hooks::events::pre_compact::{
        CompactTrigger, PreCompactOutcome, PreCompactPayload, PreCompactReduced,
    };
    use crate::hooks::events::pre_tool_use::{
        Decision, PreToolUseOutcome, PreToolUsePayload, PreToolUseReduced,
    };
    use crate::hooks::events::stop::{StopOutcome, StopPayload, StopReduced, StopStatus};
    use crate::hooks::payload::PayloadBase;
    use crate::messages::{ContentBlock, Message};
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

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

    fn pre_reduced(reduced: Reduced) -> PreToolUseReduced {
        let Reduced::PreToolUse(reduced) = reduced else {
            panic!("not a preToolUse result: {reduced:?}")
        };
        reduced
    }

    /// The effects a chain of runs records, in order.
    fn effects(payload: HookPayload, outcomes: &[(&str, HookOutcome)]) -> Vec<String> {
        let mut reducer = Reducer::new(payload.clone());
        let mut effects = Vec::new();
        for (id, outcome) in outcomes {
            let mut run = HookRun::native(id, payload.event(), 0, Some(outcome.clone()));
            let flow = reducer.record(&mut run);
            effects.extend(run.effects);
            if flow == ChainFlow::Stop {
                break;
            }
        }
        effects
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
        let Reduced::BeforeAgent(reduced) = reduced else {
            panic!()
        };
        assert_eq!(reduced.system_prompt_additions, ["A1", "A2", "B2"]);
        assert_eq!(
            reduced.messages,
            [Message::user("temp 1"), Message::user("temp 2")]
        );
        assert_eq!(reduced.system_prompt("BASE"), "BASE\n\nA1\n\nA2\n\nB2");
        assert_eq!(
            BeforeAgentReduced::default().system_prompt("BASE"),
            "BASE",
            "no addition, no change"
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
            Reduced::Context(ContextReduced {
                messages: Some(vec![Message::user("first")])
            })
        );
    }

    #[test]
    fn context_without_replacement_changes_nothing() {
        let payload = HookPayload::Context(ContextPayload {
            base: base(),
            messages: vec![],
        });
        assert_eq!(
            reduce(payload, []),
            Reduced::Context(ContextReduced { messages: None })
        );
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
        let reduced = pre_reduced(reducer.finish());
        assert_eq!(reduced.tool_input, json!({"command": "ls -la"}));
        assert!(reduced.input_changed);
        assert_eq!((reduced.blocked, reduced.ask), (None, None));
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
        let reduced = pre_reduced(reducer.finish());
        let verdict = reduced.blocked.unwrap();
        assert_eq!(verdict.hook_id, "guard");
        assert_eq!(verdict.describe("blocked"), "blocked by hook 'guard': no rm");
        assert_eq!(reduced.tool_input, json!({}), "the later rewrite never applied");
    }

    #[test]
    fn pre_tool_use_deny_decision_blocks_and_block_false_does_not() {
        let deny = pre(PreToolUseOutcome {
            decision: Some(Decision::Deny),
            ..Default::default()
        });
        let reduced = pre_reduced(reduce(pre_tool(json!({})), [("d", &deny)]));
        assert!(reduced.blocked.is_some());
        let not_block = pre(PreToolUseOutcome {
            block: Some(false),
            ..Default::default()
        });
        let reduced = pre_reduced(reduce(pre_tool(json!({})), [("n", &not_block)]));
        assert!(reduced.blocked.is_none());
    }

    #[test]
    fn a_deny_that_carries_a_rewritten_input_blocks_and_rewrites_nothing() {
        for blocking in [
            PreToolUseOutcome {
                decision: Some(Decision::Deny),
                reason: Some("no".into()),
                tool_input: Some(json!({"command": "rm -rf /"})),
                ..Default::default()
            },
            PreToolUseOutcome {
                block: Some(true),
                reason: Some("no".into()),
                tool_input: Some(json!({"command": "rm -rf /"})),
                ..Default::default()
            },
        ] {
            let outcome = pre(blocking);
            let reduced = pre_reduced(reduce(pre_tool(json!({"command": "ls"})), [("guard", &outcome)]));
            assert_eq!(reduced.tool_input, json!({"command": "ls"}));
            assert!(!reduced.input_changed);
            assert_eq!(
                effects(pre_tool(json!({"command": "ls"})), &[("guard", outcome)]),
                ["hook 'guard' blocked the tool call: no"],
                "what the notices say is what the reduction did"
            );
        }
    }

    #[test]
    fn effects_say_what_each_outcome_changed() {
        let ask = pre(PreToolUseOutcome {
            decision: Some(Decision::Ask),
            reason: Some("check".into()),
            tool_input: Some(json!({"command": "ls -la"})),
            ..Default::default()
        });
        let block = pre(PreToolUseOutcome {
            block: Some(true),
            ..Default::default()
        });
        let never = pre(PreToolUseOutcome {
            block: Some(true),
            reason: Some("never runs".into()),
            ..Default::default()
        });
        assert_eq!(
            effects(
                pre_tool(json!({})),
                &[("asker", ask), ("guard", block), ("later", never)]
            ),
            [
                "hook 'asker' asked for approval: check",
                "hook 'asker' rewrote the tool input",
                "hook 'guard' blocked the tool call",
            ]
        );
        let patch = HookOutcome::PostToolUseFailure(PostToolUseOutcome {
            content: Some(vec![ContentBlock::text("x")]),
            is_error: Some(false),
            details: Some(json!({})),
            terminate: Some(true),
        });
        assert_eq!(
            effects(post_tool(true), &[("p", patch)]),
            [
                "hook 'p' replaced the tool result (postToolUseFailure)",
                "hook 'p' set isError to false",
                "hook 'p' replaced the result details",
                "hook 'p' asked to end the turn",
            ]
        );
        let stop = HookPayload::Stop(StopPayload {
            base: base(),
            status: StopStatus::Completed,
            continuations: 0,
        });
        assert!(effects(stop, &[("o", HookOutcome::Stop(StopOutcome::default()))]).is_empty());
    }

    #[test]
    fn an_outcome_of_another_event_changes_nothing() {
        let stray = HookOutcome::PostToolUse(PostToolUseOutcome {
            terminate: Some(true),
            ..Default::default()
        });
        let reduced = reduce(post_tool(true), [("stray", &stray)]);
        let Reduced::PostToolUseFailure(result) = reduced else {
            panic!()
        };
        assert!(!result.terminate);
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
        let reduced = pre_reduced(reduce(
            pre_tool(json!({})),
            [("asker", &ask), ("allower", &allow)],
        ));
        assert_eq!(reduced.ask.unwrap().hook_id, "asker");
        assert_eq!(reduced.blocked, None);
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
            Reduced::PostToolUse(ToolResultReduced {
                content: vec![ContentBlock::text("redacted")],
                details: json!({"source": "policy"}),
                is_error: true,
                terminate: true,
                changed: true,
            })
        );
    }

    #[test]
    fn post_tool_use_failure_without_outcome_keeps_the_result() {
        let reduced = reduce(post_tool(true), []);
        assert_eq!(
            reduced,
            Reduced::PostToolUseFailure(ToolResultReduced {
                content: vec![ContentBlock::text("original")],
                details: json!({"n": 1}),
                is_error: true,
                terminate: false,
                changed: false,
            })
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
            Reduced::PreCompact(PreCompactReduced {
                cancelled: Some(Verdict {
                    hook_id: "a".into(),
                    reason: None
                }),
                custom_instructions: Some("B".into()),
            })
        );
    }

    #[test]
    fn observation_events_reduce_to_nothing() {
        let payload = HookPayload::Stop(StopPayload {
            base: base(),
            status: StopStatus::Completed,
            continuations: 0,
        });
        assert_eq!(
            reduce(payload, [("a", &HookOutcome::Stop(StopOutcome::default()))]),
            Reduced::Stop(StopReduced::default())
        );
    }

    #[test]
    fn results_serialize_with_their_kind_as_before() {
        let kind = |reduced: Reduced| serde_json::to_value(reduced).unwrap()["kind"].clone();
        let stop = HookPayload::Stop(StopPayload {
            base: base(),
            status: StopStatus::Completed,
            continuations: 0,
        });
        assert_eq!(kind(reduce(stop, [])), json!("stop"));
        assert_eq!(kind(reduce(post_tool(true), [])), json!("toolResult"));
        assert_eq!(kind(reduce(post_tool(false), [])), json!("toolResult"));
        assert_eq!(
            serde_json::to_value(reduce(pre_tool(json!({"a": 1})), [])).unwrap(),
            json!({"kind": "preToolUse", "toolInput": {"a": 1}, "inputChanged": false, "blocked": null, "ask": null})
        );
        assert_eq!(HookEvent::PreToolUse.as_str(), "preToolUse");
    }
}
