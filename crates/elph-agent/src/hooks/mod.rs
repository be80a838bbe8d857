//! Typed lifecycle hook contracts: events (one module each under `events/`), payloads, outcomes,
//! matchers, limits and the one fold of ordered outcomes.

pub mod event;
pub mod events;
pub mod limits;
pub mod matcher;
pub mod outcome;
#[cfg(test)]
mod outcome_properties;
pub mod payload;
pub mod reduce;
pub mod registry;
pub mod runner;

pub use event::HookEvent;
pub use events::before_agent::{BeforeAgentOutcome, BeforeAgentPayload, BeforeAgentReduced};
pub use events::context::{ContextOutcome, ContextPayload, ContextReduced};
pub use events::notification::{NotificationKind, NotificationPayload};
pub use events::permission_request::{
    PermissionDecision, PermissionRequestOutcome, PermissionRequestPayload, PermissionRequestReduced,
};
pub use events::post_compact::PostCompactPayload;
pub use events::post_tool_use::{PostToolUseOutcome, ToolResultPayload, ToolResultReduced};
pub use events::pre_compact::{CompactTrigger, PreCompactOutcome, PreCompactPayload, PreCompactReduced};
pub use events::pre_tool_use::{Decision, PreToolUseOutcome, PreToolUsePayload, PreToolUseReduced};
pub use events::session_end::SessionEndPayload;
pub use events::session_start::{SessionSource, SessionStartPayload};
pub use events::stop::{StopOutcome, StopPayload, StopReduced, StopStatus};
pub use events::user_prompt_submit::{
    UserPromptSubmitOutcome, UserPromptSubmitPayload, UserPromptSubmitReduced,
};
pub use events::{Event, Listed, Observation, Observed, Sample};
pub use matcher::{InputCondition, InputPatternError, Matcher, PatternError, ToolPattern};
pub use outcome::{
    HookOutcome, OutcomeError, ParsedOutcome, honoured_fields, parse_outcome, parse_stdout, validate_messages,
};
pub use payload::{HookPayload, PayloadBase};
pub use reduce::{ChainFlow, Reduced, Reducer, Verdict, reduce};
pub use registry::{HookRegistry, Interest, NativeHook};
pub use runner::{
    Dispatch, HookDiagnostic, HookRun, HookRunner, NoHooks, ProcessExit, Ran, RunStatus, Severity,
    went_on_unchecked,
};
