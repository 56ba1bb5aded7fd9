//! How far a recorded tool call has got, and which moves between statuses the ledger
//! allows. Apart from the record (`tool_call`) so that the error type can name a status
//! without importing the record, which returns that error.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Status of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    /// Recorded for the tool worker, not started yet.
    Queued,
    /// An attempt is executing, held by its worker's lease.
    Running,
    /// Ended with a result.
    Succeeded,
    /// Ended with an error.
    Failed,
    /// Did not end in time, or its worker's lease ran out and another attempt took over.
    Timeout,
    /// Stopped before it ended: by the chat's owner, by the system, or denied by the user.
    Canceled,
    /// Recorded, not run: the tool needs the user's approval first (`approval = "always"`).
    AwaitingApproval,
    /// Waited for approval longer than the approval window; never ran.
    Expired,
}

impl fmt::Display for ToolCallStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToolCallStatus {
    /// The status's name as serialised (`queued`, `awaiting_approval`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::Canceled => "canceled",
            Self::AwaitingApproval => "awaiting_approval",
            Self::Expired => "expired",
        }
    }
}

impl ToolCallStatus {
    /// Statuses after which a later identical request starts a new attempt.
    pub fn is_rerunnable(self) -> bool {
        matches!(
            self,
            Self::Failed | Self::Timeout | Self::Canceled | Self::Expired
        )
    }

    /// Whether the state machine allows `self -> to` within one attempt. A new attempt
    /// (rerun, retry, lease takeover) is not a transition of the old attempt; the ledger
    /// checks its own preconditions for those.
    pub fn can_transition_to(self, to: ToolCallStatus) -> bool {
        use ToolCallStatus::*;
        matches!(
            (self, to),
            (Queued, Running)
                | (Queued, Canceled | Failed)
                | (Running, Succeeded | Failed | Timeout | Canceled)
                | (Failed | Timeout, Queued)
                // Approved (runs), denied (canceled with the user's reason), or left too long.
                | (AwaitingApproval, Running | Canceled | Expired)
        )
    }
}
