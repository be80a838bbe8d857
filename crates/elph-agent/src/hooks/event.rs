//! The name of an event: parsing it, showing it. The events themselves are in `events/`.

use std::fmt;
use std::str::FromStr;

pub use super::events::HookEvent;

impl HookEvent {
    /// Observation-only events honour no outcome field.
    pub fn is_observation(self) -> bool {
        self.honoured_fields().is_empty()
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no event: the error of parsing one from hooks.json or the command line.
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
    fn observation_events_are_the_ones_without_honoured_fields() {
        let observation: Vec<_> = HookEvent::ALL
            .into_iter()
            .filter(|e| e.is_observation())
            .collect();
        assert_eq!(
            observation,
            [
                HookEvent::SessionStart,
                HookEvent::PostCompact,
                HookEvent::Notification,
                HookEvent::SessionEnd
            ]
        );
    }

    #[test]
    fn only_the_tool_events_take_matchers() {
        let tool: Vec<_> = HookEvent::ALL.into_iter().filter(|e| e.is_tool_event()).collect();
        assert_eq!(
            tool,
            [
                HookEvent::PreToolUse,
                HookEvent::PermissionRequest,
                HookEvent::PostToolUse,
                HookEvent::PostToolUseFailure
            ]
        );
    }
}
