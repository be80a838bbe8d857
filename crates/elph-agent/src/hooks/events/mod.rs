//! The lifecycle events, one module each.
//!
//! A module holds everything one event is: its payload (what a hook reads on stdin), its outcome
//! (what a hook may print; the fields it honours are the outcome type's serde fields), how outcomes
//! fold into the chain's result, the words for what a hook did, and a sample payload for
//! `elph hooks test`. It says so by implementing [`Event`].
//!
//! The list at the bottom of this file (`events!`) is the only place that names every event. It
//! generates [`HookEvent`], [`HookPayload`], [`HookOutcome`] and [`Reduced`] and every `match` over
//! them, so no match anywhere can forget an event. Adding one is described in
//! `docs/architecture.md` ("Adding an event").

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::outcome::OutcomeError;
use super::payload::PayloadBase;
use super::reduce::{ChainFlow, Verdict};

pub(crate) mod before_agent;
pub mod context;
mod fields;
pub(crate) mod notification;
pub(crate) mod permission_request;
pub(crate) mod post_compact;
pub(crate) mod post_tool_use;
pub(crate) mod post_tool_use_failure;
pub(crate) mod pre_compact;
pub mod pre_tool_use;
pub(crate) mod session_end;
pub(crate) mod session_start;
pub mod stop;
pub(crate) mod user_prompt_submit;
pub mod words;

/// One lifecycle event: its types and its rules.
pub trait Event: 'static {
    /// What a hook of this event reads on stdin (besides the `event` tag).
    type Payload: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync;
    /// What a hook may print. Its serde fields are the fields the event honours; an
    /// observation-only event uses [`Observation`], which has none.
    type Outcome: Clone + fmt::Debug + Default + PartialEq + Serialize + DeserializeOwned + Send + Sync;
    /// The combined effect of a chain of outcomes.
    type Reduced: Clone + fmt::Debug + PartialEq + Serialize + Send + Sync;

    /// Whether hooks of this event take a tool matcher (the payload names a tool).
    const TOOL_EVENT: bool = false;
    /// Whether `elph hooks test --prompt` applies to this event's sample payload.
    const TAKES_PROMPT: bool = false;
    /// What goes on without a hook of this event that fails open; `None` for observation-only
    /// events, whose hooks run after the fact and guard nothing (so they cannot fail closed).
    const UNCHECKED: Option<&'static str> = None;
    /// What a session does when a fail-closed hook of this event cannot decide.
    const FAIL_CLOSED: &'static str = "nothing: observation-only events cannot fail closed";
    /// The event's name in Claude Code, if Claude Code has it: hooks written for Claude Code
    /// (`"protocol": "claude-code"`) may listen to it.
    const CLAUDE_CODE_NAME: Option<&'static str> = None;

    /// The session and project fields of a payload of this event.
    fn base(payload: &Self::Payload) -> &PayloadBase;

    /// The tool a tool event is about.
    fn tool_name(_payload: &Self::Payload) -> Option<&str> {
        None
    }

    /// The tool call a tool event is about.
    fn tool_call_id(_payload: &Self::Payload) -> Option<&str> {
        None
    }

    /// The tool's result, for the events that carry one.
    fn tool_result(_payload: &Self::Payload) -> Option<&post_tool_use::ToolResultPayload> {
        None
    }

    /// Checks beyond the types: size limits, message lists.
    fn validate(_outcome: &Self::Outcome) -> Result<(), OutcomeError> {
        Ok(())
    }

    /// Why an outcome object does not fit the outcome type, in words for a hook author.
    fn explain_invalid(error: serde_json::Error) -> String {
        error.to_string()
    }

    /// The chain's result before any hook ran.
    fn start(payload: &Self::Payload) -> Self::Reduced;

    /// Folds one hook's outcome into the result, updates the payload the next hook sees, and
    /// records in words what the outcome changed.
    fn apply(step: Step<'_, Self>, outcome: &Self::Outcome) -> ChainFlow
    where
        Self: Sized;

    /// The hook that stopped the chain, if one did.
    fn stopped_by(_reduced: &Self::Reduced) -> Option<&Verdict> {
        None
    }

    /// The result in words, one line each (for `elph hooks test`).
    fn explain(reduced: &Self::Reduced) -> Vec<String>;

    /// A payload made up for `elph hooks test`.
    fn sample(base: PayloadBase, sample: &Sample<'_>) -> Self::Payload;
}

/// One hook's outcome being folded in: the payload as the previous hooks left it, the result so
/// far, and the record of what this outcome changed.
pub struct Step<'a, E: Event> {
    /// The hook whose outcome this is, for verdicts and effect lines.
    pub hook_id: &'a str,
    /// The payload the next hook will read; an outcome that rewrites input changes it here.
    pub payload: &'a mut E::Payload,
    /// The chain's result so far, which the outcome updates.
    pub reduced: &'a mut E::Reduced,
    effects: &'a mut Vec<String>,
}

impl<E: Event> Step<'_, E> {
    /// Records that this hook changed something: "hook 'ID' {what}".
    pub fn effect(&mut self, what: impl fmt::Display) {
        self.effects.push(format!("hook '{}' {what}", self.hook_id));
    }

    /// A verdict by this hook.
    pub fn verdict(&self, reason: Option<String>) -> Verdict {
        Verdict {
            hook_id: self.hook_id.to_string(),
            reason,
        }
    }
}

/// The flags of `elph hooks test` a sample payload is made from.
#[derive(Clone, Copy, Debug)]
pub struct Sample<'a> {
    /// The session the sample payload names (`elph hooks test` makes one up).
    pub session_id: &'a str,
    /// `--prompt` (or a default greeting): the prompt of the events that carry one.
    pub prompt: &'a str,
    /// `--tool`: the tool of the tool events.
    pub tool_name: &'a str,
    /// `--input`: the tool arguments of the tool events.
    pub tool_input: &'a Value,
}

/// The outcome of an observation-only event: it honours no field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation;

/// The result of an observation-only event: nothing to apply.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename = "observation")]
pub struct Observed {}

impl Observed {
    /// The words of `Event::explain` for every observation-only event.
    pub fn explain(event: HookEvent) -> Vec<String> {
        vec![format!(
            "{event} is observation-only: the hooks were told, nothing is applied."
        )]
    }
}

/// Parses the honoured fields of an outcome object as `E`'s outcome and validates it.
fn parse_as<E: Event>(event: HookEvent, kept: Map<String, Value>) -> Result<E::Outcome, OutcomeError> {
    let outcome = if kept.is_empty() {
        E::Outcome::default()
    } else {
        serde_json::from_value(Value::Object(kept)).map_err(|error| OutcomeError::InvalidField {
            event,
            reason: E::explain_invalid(error),
        })?
    };
    E::validate(&outcome)?;
    Ok(outcome)
}

fn apply_as<E: Event>(
    hook_id: &str,
    payload: &mut E::Payload,
    reduced: &mut E::Reduced,
    outcome: &E::Outcome,
    effects: &mut Vec<String>,
) -> ChainFlow {
    if E::stopped_by(reduced).is_some() {
        return ChainFlow::Stop;
    }
    E::apply(
        Step {
            hook_id,
            payload,
            reduced,
            effects,
        },
        outcome,
    )
}

/// What the list generates for each event, so code can go from an event's types to the shared
/// enums and back.
pub trait Listed: Event + Sized {
    /// This event's name in the shared enum.
    const EVENT: HookEvent;
    /// Wraps a payload of this event as a payload of any event.
    fn payload(payload: Self::Payload) -> HookPayload;
    /// Wraps an outcome of this event as an outcome of any event.
    fn outcome(outcome: Self::Outcome) -> HookOutcome;
    /// This event's result, if `reduced` is one.
    fn reduced_of(reduced: &Reduced) -> Option<&Self::Reduced>;
}

macro_rules! events {
    ($( $variant:ident = $name:literal => $module:ident :: $ty:ident ),* $(,)?) => {
        // A lifecycle event, by the name used in hooks.json and in payloads. (A plain comment: a doc
        // comment would become a description in the published schema.)
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
            schemars::JsonSchema,
        )]
        #[expect(missing_docs, reason = "a doc comment would become a description in the published hooks schema; the plain comment above says what it is")]
        pub enum HookEvent {
            $( #[serde(rename = $name)] $variant, )*
        }

        impl HookEvent {
            const COUNT: usize = [$($name),*].len();

            /// Every event, in the order of the lifecycle.
            pub const ALL: [HookEvent; Self::COUNT] = [$(HookEvent::$variant),*];

            /// The name used in hooks.json and in payloads.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( HookEvent::$variant => $name, )*
                }
            }

            /// Tool events are the only ones that take a matcher.
            pub fn is_tool_event(self) -> bool {
                match self {
                    $( HookEvent::$variant => <$module::$ty as Event>::TOOL_EVENT, )*
                }
            }

            /// Whether `elph hooks test --prompt` applies.
            pub fn takes_prompt(self) -> bool {
                match self {
                    $( HookEvent::$variant => <$module::$ty as Event>::TAKES_PROMPT, )*
                }
            }

            /// What goes on without a hook of this event that fails open (`Event::UNCHECKED`).
            pub fn unchecked(self) -> Option<&'static str> {
                match self {
                    $( HookEvent::$variant => <$module::$ty as Event>::UNCHECKED, )*
                }
            }

            /// The event's name in Claude Code, if it has one (`Event::CLAUDE_CODE_NAME`).
            pub fn claude_code_name(self) -> Option<&'static str> {
                match self {
                    $( HookEvent::$variant => <$module::$ty as Event>::CLAUDE_CODE_NAME, )*
                }
            }

            /// What a session does when a fail-closed hook of this event cannot decide
            /// (`Event::FAIL_CLOSED`).
            pub fn fail_closed(self) -> &'static str {
                match self {
                    $( HookEvent::$variant => <$module::$ty as Event>::FAIL_CLOSED, )*
                }
            }

            /// The outcome fields the event honours, as written in JSON: the serde fields of its
            /// outcome type.
            pub fn honoured_fields(self) -> &'static [&'static str] {
                match self {
                    $( HookEvent::$variant => fields::of::<<$module::$ty as Event>::Outcome>(), )*
                }
            }

            /// A made-up payload of this event (for `elph hooks test`).
            pub fn sample(self, sample: &Sample<'_>, project_dir: &std::path::Path) -> HookPayload {
                let base = PayloadBase::new(sample.session_id, project_dir);
                match self {
                    $( HookEvent::$variant => HookPayload::$variant(<$module::$ty as Event>::sample(base, sample)), )*
                }
            }

            /// Parses the honoured fields of an outcome object for this event.
            pub(crate) fn parse_outcome(self, kept: Map<String, Value>) -> Result<HookOutcome, OutcomeError> {
                match self {
                    $( HookEvent::$variant => parse_as::<$module::$ty>(self, kept).map(HookOutcome::$variant), )*
                }
            }
        }

        /// A payload of any event, serialized with its `event` tag: exactly what a hook reads on stdin.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "event")]
        pub enum HookPayload {
            $( #[doc = concat!("A `", $name, "` payload.")] #[serde(rename = $name)] $variant(<$module::$ty as Event>::Payload), )*
        }

        impl HookPayload {
            /// The event this payload belongs to.
            pub fn event(&self) -> HookEvent {
                match self {
                    $( HookPayload::$variant(_) => HookEvent::$variant, )*
                }
            }

            /// The session and project fields every payload has.
            pub fn base(&self) -> &PayloadBase {
                match self {
                    $( HookPayload::$variant(p) => <$module::$ty as Event>::base(p), )*
                }
            }

            /// The tool a tool event is about; `None` for other events.
            pub fn tool_name(&self) -> Option<&str> {
                match self {
                    $( HookPayload::$variant(p) => <$module::$ty as Event>::tool_name(p), )*
                }
            }

            /// The tool call a tool event is about; `None` for other events.
            pub fn tool_call_id(&self) -> Option<&str> {
                match self {
                    $( HookPayload::$variant(p) => <$module::$ty as Event>::tool_call_id(p), )*
                }
            }

            /// The tool's result, for the events that carry one (postToolUse, postToolUseFailure).
            pub fn tool_result(&self) -> Option<&post_tool_use::ToolResultPayload> {
                match self {
                    $( HookPayload::$variant(p) => <$module::$ty as Event>::tool_result(p), )*
                }
            }
        }

        /// A validated outcome of one hook run, of the event's own outcome type.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum HookOutcome {
            $( #[doc = concat!("A `", $name, "` outcome.")] $variant(<$module::$ty as Event>::Outcome), )*
        }

        impl HookOutcome {
            /// The event this outcome was parsed for.
            pub fn event(&self) -> HookEvent {
                match self {
                    $( HookOutcome::$variant(_) => HookEvent::$variant, )*
                }
            }
        }

        /// The combined effect of one event's chain.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum Reduced {
            $( #[doc = concat!("The result of a `", $name, "` chain.")] $variant(<$module::$ty as Event>::Reduced), )*
        }

        impl Reduced {
            /// The event whose chain this is the result of.
            pub fn event(&self) -> HookEvent {
                match self {
                    $( Reduced::$variant(_) => HookEvent::$variant, )*
                }
            }

            /// The result before any hook ran.
            pub(crate) fn start(payload: &HookPayload) -> Reduced {
                match payload {
                    $( HookPayload::$variant(p) => Reduced::$variant(<$module::$ty as Event>::start(p)), )*
                }
            }

            /// The hook that stopped the chain, if one did.
            pub fn stopped_by(&self) -> Option<&Verdict> {
                match self {
                    $( Reduced::$variant(r) => <$module::$ty as Event>::stopped_by(r), )*
                }
            }

            /// The result in words, one line each.
            pub fn explain(&self) -> Vec<String> {
                match self {
                    $( Reduced::$variant(r) => <$module::$ty as Event>::explain(r), )*
                }
            }

            /// Folds one outcome into `self` and `payload`. An outcome of another event changes
            /// nothing.
            pub(crate) fn apply(
                &mut self,
                payload: &mut HookPayload,
                hook_id: &str,
                outcome: &HookOutcome,
                effects: &mut Vec<String>,
            ) -> ChainFlow {
                match payload {
                    $( HookPayload::$variant(p) => {
                        if let (Reduced::$variant(r), HookOutcome::$variant(o)) = (&mut *self, outcome) {
                            apply_as::<$module::$ty>(hook_id, p, r, o, effects)
                        } else {
                            ChainFlow::Continue
                        }
                    } )*
                }
            }
        }

        $(
            impl Listed for $module::$ty {
                const EVENT: HookEvent = HookEvent::$variant;

                fn payload(payload: Self::Payload) -> HookPayload {
                    HookPayload::$variant(payload)
                }

                fn outcome(outcome: Self::Outcome) -> HookOutcome {
                    HookOutcome::$variant(outcome)
                }

                fn reduced_of(reduced: &Reduced) -> Option<&Self::Reduced> {
                    if let Reduced::$variant(r) = reduced { Some(r) } else { None }
                }
            }
        )*
    };
}

// The one list of events, in the order of the lifecycle.
events! {
    SessionStart = "sessionStart" => session_start::SessionStart,
    UserPromptSubmit = "userPromptSubmit" => user_prompt_submit::UserPromptSubmit,
    BeforeAgent = "beforeAgent" => before_agent::BeforeAgent,
    Context = "context" => context::Context,
    PreToolUse = "preToolUse" => pre_tool_use::PreToolUse,
    PermissionRequest = "permissionRequest" => permission_request::PermissionRequest,
    PostToolUse = "postToolUse" => post_tool_use::PostToolUse,
    PostToolUseFailure = "postToolUseFailure" => post_tool_use_failure::PostToolUseFailure,
    PreCompact = "preCompact" => pre_compact::PreCompact,
    PostCompact = "postCompact" => post_compact::PostCompact,
    Stop = "stop" => stop::Stop,
    Notification = "notification" => notification::Notification,
    SessionEnd = "sessionEnd" => session_end::SessionEnd,
}
