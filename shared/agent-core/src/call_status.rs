//! How one tool call of a step ended, as the client and the LLM see it. The events, the
//! tools' retry settings and the pipeline all name it, so it sits below all three.

use serde::{Deserialize, Serialize};

/// How a call ended, as the client and the LLM see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// It ran and answered.
    Succeeded,
    /// It ran and could not do its job.
    Failed,
    /// It did not answer in its time.
    Timeout,
    /// The user's per-tool limit is used up; metadata carries `reset_at`.
    RateLimited,
    /// Unknown tool, tool outside the profile, or invalid arguments: the LLM may fix it.
    Rejected,
    /// Not run: too many calls in the step, or the turn's tool budget is spent.
    Skipped,
    /// Sent to the tool queue; the result comes on a later turn.
    Queued,
    /// Canceled (by its owner) while it ran: whatever it returned was discarded; or denied
    /// by the user before it ran.
    Canceled,
    /// Recorded, not run: waits for the user's approval (`approval_required`).
    AwaitingApproval,
}

impl CallStatus {
    /// The call produced no result the model can use (it failed, was refused or not run);
    /// queued and approval-waiting calls are on their way, not failed.
    pub fn is_failure(self) -> bool {
        !matches!(
            self,
            Self::Succeeded | Self::Queued | Self::AwaitingApproval
        )
    }

    /// The status as the wire writes it (`succeeded`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Timeout => "timeout",
            Self::RateLimited => "rate_limited",
            Self::Rejected => "rejected",
            Self::Skipped => "skipped",
            Self::Queued => "queued",
            Self::Canceled => "canceled",
            Self::AwaitingApproval => "awaiting_approval",
        }
    }
}
