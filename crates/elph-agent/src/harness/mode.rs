//! Agent modes: `build` does the work; `plan` only looks (read tools, a read-only shell) and says
//! what it would do.

use serde::{Deserialize, Serialize};

/// The line added to the system prompt in plan mode.
pub const PLAN_MODE_PROMPT: &str = "You are in plan mode: the session is read-only. You can read and \
search files and run commands in a read-only sandbox (only $TMPDIR is writable, for scratch files and \
test runs), but you cannot change the project. Investigate, \
then answer with a concrete plan of the changes you would make, as a numbered list of steps; the user switches to build mode to \
carry it out.";

/// Whether the agent may change things: the mode the user picks with `/mode` or Shift+Tab.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AgentMode {
    /// Every tool, under the approval policy and the sandbox (the default).
    #[default]
    Build,
    /// Read-only: only the read tools are offered, and the shell runs in the read-only sandbox.
    Plan,
}

impl AgentMode {
    /// Every mode, in the order pickers list them.
    pub const ALL: [AgentMode; 2] = [AgentMode::Build, AgentMode::Plan];

    /// The mode's name, as typed in `/mode` and shown in the status row.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentMode::Build => "build",
            AgentMode::Plan => "plan",
        }
    }

    /// A sentence for pickers and help.
    pub fn description(self) -> &'static str {
        match self {
            AgentMode::Build => {
                "Read, change files and run commands (under the approval policy and sandbox)."
            }
            AgentMode::Plan => {
                "Read-only: read and search, run commands in a read-only sandbox (only $TMPDIR writable), and propose a plan."
            }
        }
    }

    /// The next mode in the cycle (Shift+Tab in the terminal UI).
    pub fn next(self) -> AgentMode {
        match self {
            AgentMode::Build => AgentMode::Plan,
            AgentMode::Plan => AgentMode::Build,
        }
    }

    /// Whether the mode forbids changes (only the read tools are offered).
    pub fn is_read_only(self) -> bool {
        self == AgentMode::Plan
    }
}

impl std::fmt::Display for AgentMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for AgentMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AgentMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == s)
            .ok_or_else(|| format!("unknown agent mode '{s}'; expected build or plan"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_cycle() {
        for mode in AgentMode::ALL {
            assert_eq!(mode.as_str().parse::<AgentMode>(), Ok(mode));
            assert_eq!(mode.next().next(), mode);
        }
        assert!("Plan".parse::<AgentMode>().unwrap_err().contains("build or plan"));
        assert_eq!(AgentMode::default(), AgentMode::Build);
    }
}
