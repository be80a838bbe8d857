//! The eleven lifecycle events.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    BeforeAgent,
    Context,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    PostCompact,
    Stop,
    SessionEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::BeforeAgent,
        HookEvent::Context,
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Stop,
        HookEvent::SessionEnd,
    ];

    /// The name used in hooks.json and in payloads.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "sessionStart",
            HookEvent::UserPromptSubmit => "userPromptSubmit",
            HookEvent::BeforeAgent => "beforeAgent",
            HookEvent::Context => "context",
            HookEvent::PreToolUse => "preToolUse",
            HookEvent::PostToolUse => "postToolUse",
            HookEvent::PostToolUseFailure => "postToolUseFailure",
            HookEvent::PreCompact => "preCompact",
            HookEvent::PostCompact => "postCompact",
            HookEvent::Stop => "stop",
            HookEvent::SessionEnd => "sessionEnd",
        }
    }

    /// Tool events are the only ones that take a matcher.
    pub fn is_tool_event(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse | HookEvent::PostToolUse | HookEvent::PostToolUseFailure
        )
    }

    /// Observation-only events honour no outcome field.
    pub fn is_observation(self) -> bool {
        matches!(
            self,
            HookEvent::SessionStart
                | HookEvent::UserPromptSubmit
                | HookEvent::PostCompact
                | HookEvent::Stop
                | HookEvent::SessionEnd
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("unknown event '{0}'; expected one of: {list}", list = HookEvent::ALL.map(HookEvent::as_str).join(", "))]
pub struct UnknownEvent(pub String);

impl FromStr for HookEvent {
    type Err = UnknownEvent;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        HookEvent::ALL
            .into_iter()
            .find(|event| event.as_str() == name)
            .ok_or_else(|| UnknownEvent(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for event in HookEvent::ALL {
            let json = serde_json::to_value(event).unwrap();
            assert_eq!(json, serde_json::Value::String(event.as_str().into()));
            assert_eq!(event.as_str().parse::<HookEvent>().unwrap(), event);
        }
        assert!("PreToolUse".parse::<HookEvent>().is_err());
        assert!("".parse::<HookEvent>().is_err());
    }

    #[test]
    fn only_the_three_tool_events_take_matchers() {
        let tool: Vec<_> = HookEvent::ALL.into_iter().filter(|e| e.is_tool_event()).collect();
        assert_eq!(
            tool,
            [
                HookEvent::PreToolUse,
                HookEvent::PostToolUse,
                HookEvent::PostToolUseFailure
            ]
        );
    }
}
