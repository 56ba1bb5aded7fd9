//! What the client renders for a turn besides the answer's text (seed 002's frontend
//! skills): quick replies, flight cards, and a tool call waiting for the user's approval.
//! Sent as the SSE event `ui {kind, payload}` and stored with the turn's answer, so a
//! reloaded chat shows them again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which widget a [`UiElement`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UiKind {
    /// `payload: {replies: [string]}`: 2 to 4 answers the user can send with one tap.
    QuickReplies,
    /// `payload: {flights: [{option, flight}]}`: offered flights to show as cards.
    FlightOptions,
    /// `payload`: the `approval_required` event's data (`job_id`, `tool`, `arguments`,
    /// `summary`, `expires_at`): a confirmation box.
    Approval,
}

impl UiKind {
    /// The kind's name as serialised (`quick_replies`, `flight_options`, `approval`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QuickReplies => "quick_replies",
            Self::FlightOptions => "flight_options",
            Self::Approval => "approval",
        }
    }
}

/// One client-rendered element of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UiElement {
    /// Which widget it is.
    pub kind: UiKind,
    /// The widget's data, shaped as its [`UiKind`] describes.
    pub payload: Value,
}
