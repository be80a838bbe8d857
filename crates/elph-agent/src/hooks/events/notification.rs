//! `notification`: Elph needs the user — an approval waits, a long turn is done, a turn failed.
//! Observation only: a hook passes it on (a desktop notification, a status line, Herdr).

use serde::{Deserialize, Serialize};

use super::{Event, Listed, Observation, Observed, Sample, Step};
use crate::hooks::payload::PayloadBase;
use crate::hooks::reduce::ChainFlow;

/// The `notification` event.
pub struct Notification;

/// Why Elph needs the user.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum NotificationKind {
    /// A tool call waits for the user's approval.
    ApprovalNeeded,
    /// A turn that ran for a while has ended (settings: `hooks.notifyTurnAfterMs`).
    TurnDone,
    /// A turn failed: the model's error, a fail-closed hook, too many requests.
    Error,
}

/// What a `notification` hook reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationPayload {
    /// The session and project every payload names.
    #[serde(flatten)]
    pub base: PayloadBase,
    /// Why Elph needs the user.
    pub kind: NotificationKind,
    /// The same, in words for the user.
    pub message: String,
}

impl Event for Notification {
    type Payload = NotificationPayload;
    type Outcome = Observation;
    type Reduced = Observed;
    const CLAUDE_CODE_NAME: Option<&'static str> = Some("Notification");

    fn base(payload: &NotificationPayload) -> &PayloadBase {
        &payload.base
    }

    fn start(_payload: &NotificationPayload) -> Observed {
        Observed {}
    }

    fn apply(_step: Step<'_, Self>, _outcome: &Observation) -> ChainFlow {
        ChainFlow::Continue
    }

    fn explain(_reduced: &Observed) -> Vec<String> {
        Observed::explain(Self::EVENT)
    }

    fn sample(base: PayloadBase, sample: &Sample<'_>) -> NotificationPayload {
        NotificationPayload {
            base,
            kind: NotificationKind::ApprovalNeeded,
            message: format!("{} waits for your approval", sample.tool_name),
        }
    }
}
