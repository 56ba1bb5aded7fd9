//! What a tool hands back to the pipeline (seed 000 §10.2): a chat-ready message, the raw
//! upstream data for the ledger, an optional session-state patch and SSE metadata.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::session::SessionStatePatch;
use super::tool_call::ToolCallStatus;

/// Outcome as the tool itself sees it; timeouts and cancellation are decided by the
/// pipeline, so they are not representable here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// The tool did its work.
    Succeeded,
    /// The tool could not do it; `message` says why.
    Failed,
}

impl ExecutionStatus {
    /// The status's name as serialised (`succeeded`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }
}

/// The ledger status a finished execution is recorded with.
impl From<ExecutionStatus> for ToolCallStatus {
    fn from(status: ExecutionStatus) -> Self {
        match status {
            ExecutionStatus::Succeeded => ToolCallStatus::Succeeded,
            ExecutionStatus::Failed => ToolCallStatus::Failed,
        }
    }
}

/// What one tool execution hands back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolExecutionResult {
    /// Whether the tool did its work.
    pub status: ExecutionStatus,
    /// Text for the chat (and the LLM's tool message); also set on failure so the model
    /// can explain or correct.
    pub message: String,
    /// What the user reads instead of `message` when it is the turn's answer (a tool that
    /// answers directly) and the client shows `raw` itself: `search_flights` lists every
    /// flight in `message` for the model, while the user's answer says what was found and
    /// leaves the rows to the tables. The model always reads `message`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The result's structured data ([`crate::tool_output`]): what the ledger keeps and the
    /// client's tables render.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Value>,
    /// Changes to the chat's session state, written with the turn's step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_patch: Option<SessionStatePatch>,
    /// Tool-specific facts for the `tool_result` event's `metadata`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ToolExecutionResult {
    /// A success with `message` for the chat.
    pub fn succeeded(message: impl Into<String>) -> Self {
        Self::new(ExecutionStatus::Succeeded, message)
    }

    /// A failure; `message` tells the model what went wrong.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ExecutionStatus::Failed, message)
    }

    fn new(status: ExecutionStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            answer: None,
            raw: None,
            state_patch: None,
            metadata: Map::new(),
        }
    }

    /// Whether the tool did its work.
    pub fn is_success(&self) -> bool {
        self.status == ExecutionStatus::Succeeded
    }

    /// Sets what the user reads instead of `message` (see [`ToolExecutionResult::answer`]).
    pub fn with_answer(mut self, answer: impl Into<String>) -> Self {
        self.answer = Some(answer.into());
        self
    }

    /// Adds `text` to what both readers see: the message and, when set, the answer.
    pub fn append(&mut self, text: &str) {
        self.message.push_str(text);
        if let Some(answer) = &mut self.answer {
            answer.push_str(text);
        }
    }

    /// Attaches the structured data.
    pub fn with_raw(mut self, raw: Value) -> Self {
        self.raw = Some(raw);
        self
    }

    /// An empty patch is dropped, so callers need not check before attaching one.
    pub fn with_state_patch(mut self, patch: SessionStatePatch) -> Self {
        self.state_patch = (!patch.is_empty()).then_some(patch);
        self
    }

    /// Adds one `metadata` entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minimal_result_serialises_without_empty_parts() {
        let r = ToolExecutionResult::failed("no flights");
        assert!(!r.is_success());
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"status": "failed", "message": "no flights"})
        );
        assert_eq!(ToolCallStatus::from(r.status), ToolCallStatus::Failed);
    }

    #[test]
    fn builders_fill_parts_and_round_trip() {
        let patch = SessionStatePatch {
            pending_gpt_query: Some(None),
            ..Default::default()
        };
        let r = ToolExecutionResult::succeeded("3 flights")
            .with_raw(json!({"seats": []}))
            .with_state_patch(patch.clone())
            .with_metadata("count", 3)
            .with_metadata("provider", "seatsaero");
        assert!(r.is_success());
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["status"], json!("succeeded"));
        assert_eq!(v["state_patch"], json!({"pending_gpt_query": null}));
        assert_eq!(v["metadata"], json!({"count": 3, "provider": "seatsaero"}));
        let back: ToolExecutionResult = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.state_patch, Some(patch));
    }

    #[test]
    fn empty_patch_is_dropped() {
        let r = ToolExecutionResult::succeeded("ok").with_state_patch(SessionStatePatch::default());
        assert_eq!(r.state_patch, None);
    }
}
