//! Typed lifecycle hook contracts: events, payloads, outcomes, matchers, limits and the reduction
//! of ordered outcomes.

pub mod event;
pub mod limits;
pub mod matcher;
pub mod outcome;
pub mod payload;
pub mod reduce;
pub mod registry;
pub mod runner;

pub use event::HookEvent;
pub use matcher::{Matcher, PatternError, ToolPattern};
pub use outcome::{
    BeforeAgentOutcome, ContextOutcome, Decision, HookOutcome, OutcomeError, ParsedOutcome,
    PostToolUseOutcome, PreCompactOutcome, PreToolUseOutcome, honoured_fields, parse_outcome, parse_stdout,
    validate_messages,
};
pub use payload::{
    BeforeAgentPayload, CompactTrigger, ContextPayload, HookPayload, PayloadBase, PostCompactPayload,
    PreCompactPayload, PreToolUsePayload, SessionEndPayload, SessionSource, SessionStartPayload, StopPayload,
    StopStatus, ToolResultPayload, UserPromptSubmitPayload,
};
pub use reduce::{ChainFlow, Reduced, Reducer, Verdict, reduce};
pub use registry::{HookRegistry, NativeHook};
pub use runner::{Dispatch, HookDiagnostic, HookRun, HookRunner, NoHooks, RunStatus};
