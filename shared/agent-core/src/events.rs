//! What a turn tells its caller while it runs: the runtime's events, in the order of the
//! public SSE contract (`init` → `tool_started`/`tool_progress`/`tool_result` →
//! `assistant_token` → `final` →
//! `done`, `error` at any point before `done`). The chat-router frames them as SSE; the
//! tool worker, which has no client, drops them.

use domain::flight::Locale;
use domain::schema::DateTimeSchema;
use domain::session::SessionState;
use domain::tool_call::{RefusalReason, ToolName};
use domain::ui::UiElement;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::call_status::CallStatus;

/// Why a turn ended with an `error` event. Serialised as the event's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnErrorCode {
    /// The model could not be reached or answered garbage.
    LlmError,
    /// The model made invalid tool calls twice in a row (no second repair round).
    InvalidToolCall,
    /// A guard stopped the turn: an attack in the message (profile in `block` mode), or the
    /// answer leaked the system prompt, its canary or a secret.
    Guardrail,
    /// The turn's host ended it before it finished; a resume reports it.
    Interrupted,
    /// The chat does not exist or is not the caller's.
    NotFound,
    /// Another turn holds the chat, or the request contradicts its state.
    Conflict,
    /// The user's turn or budget limit is used up.
    RateLimited,
    /// Anything else; the log has the details.
    Internal,
}

/// One thing a turn tells its caller; `name` gives its SSE event name.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// The turn began (`init`).
    Init {
        /// The chat the turn belongs to.
        chat_id: String,
        /// The chat was made for this turn.
        created: bool,
        /// This turn: it holds the chat until `done` (a second message meanwhile is 409).
        turn_id: String,
        /// The language of the turn's texts for the user, so a client labels the turn in it.
        language: Locale,
    },
    /// A call was admitted and claimed in the ledger, or reuses an identical one.
    ToolStarted {
        /// The tool called.
        tool: ToolName,
        /// The ledger's call id.
        job_id: String,
        /// An identical call in this chat is reused.
        deduped: bool,
        /// True when the call went to the tool queue (`status: "queued"`).
        queued: bool,
    },
    /// A call ended.
    ToolResult {
        /// The tool called.
        tool: ToolName,
        /// The ledger's call id; `None` for a call never recorded.
        job_id: Option<String>,
        /// How it ended.
        status: CallStatus,
        /// Tool-specific facts (docs/api.md, `tool_result.metadata`).
        metadata: Map<String, Value>,
        /// The result's data (e.g. the flights, for cards), at most
        /// [`MAX_EVENT_RESULT_BYTES`]; above it `{"truncated": true, "size_bytes": N}`
        /// (the whole result is in the call's audit record).
        result: Option<Value>,
    },
    /// A running call's progress, for the user (e.g. one of two searches done).
    ToolProgress {
        /// The tool running.
        tool: ToolName,
        /// The ledger's call id.
        job_id: String,
        /// For the user, in their language.
        message: String,
    },
    /// A call refused before it ran; framed as a `tool_result` whose metadata carries the
    /// reason and what the model was told. `tool` is the name the model used (it may name no
    /// real tool), shortened.
    ToolRefused {
        /// The name the model used, shortened.
        tool: String,
        /// `rejected`, `rate_limited` or `skipped`.
        status: CallStatus,
        /// Why it was refused.
        reason: RefusalReason,
        /// What the model was told.
        message: String,
        /// Further facts (e.g. `reset_at` of a rate limit).
        metadata: Map<String, Value>,
    },
    /// A piece of the answer as the model streams it (or a tool's direct answer, whole).
    Token {
        /// The text.
        content: String,
    },
    /// The answer is complete (`final`).
    Final {
        /// The whole answer, as stored.
        content: String,
        // Boxed: the state is large and the event rare.
        /// The chat's state after the turn.
        session_state: Box<SessionState>,
        /// The turn's tool results, each at most [`MAX_EVENT_RESULT_BYTES`].
        tool_result: Value,
        /// `STACK_NOTICE`, e.g. that the local stack answers with fakes.
        notice: Option<String>,
        /// The user stopped the turn; `content` is what it had said until then.
        stopped: bool,
    },
    /// The turn failed; `done` follows.
    Error {
        /// Why, as a code clients branch on.
        code: TurnErrorCode,
        /// For the user, in their language.
        message: String,
    },
    /// The turn goes on with another agent profile (a `transfer_to_<agent>` call).
    Handoff {
        /// The profile handing over.
        from: String,
        /// The profile taking over.
        to: String,
        /// The model's reason, as it gave it (shortened).
        reason: String,
    },
    /// Something the client renders (quick replies, flight cards, an approval box).
    Ui(UiElement),
    /// A call waits for the user's approval; the turn ends after it. The payload is also
    /// stored with the answer as a `ui` element of kind `approval`.
    ApprovalRequired(ApprovalRequest),
    /// Seed 000 §15 debug entries; only produced when the sink asks for them.
    Debug {
        /// What the entry is about (`llm_choice`, `tool_plan`, ...).
        kind: &'static str,
        /// Its details.
        payload: Value,
    },
    /// The turn is over and the chat free (`done`), always last.
    Done,
}

impl TurnEvent {
    /// The event's name in the public contract (the SSE `event:` field).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Init { .. } => "init",
            Self::ToolStarted { .. } => "tool_started",
            Self::ToolProgress { .. } => "tool_progress",
            Self::ToolResult { .. } | Self::ToolRefused { .. } => "tool_result",
            Self::Token { .. } => "assistant_token",
            Self::Final { .. } => "final",
            Self::Error { .. } => "error",
            Self::Handoff { .. } => "handoff",
            Self::Ui(_) => "ui",
            Self::ApprovalRequired(_) => "approval_required",
            Self::Debug { .. } => "debug",
            Self::Done => "done",
        }
    }
}

/// A call waiting for the user's approval, as `approval_required` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ApprovalRequest {
    /// The ledger's call id; approve or deny names it.
    pub job_id: String,
    /// The tool waiting.
    pub tool: ToolName,
    /// The canonical request that will run when approved.
    pub arguments: Value,
    /// What the call will do, in the user's language.
    pub summary: String,
    /// When an undecided call expires.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "DateTimeSchema")]
    pub expires_at: OffsetDateTime,
}

/// The most a `tool_result` event (and each result in `final`) carries of a result's data.
/// Events are logged for replay in DynamoDB items of at most 400 KB, written about once a
/// second: a step's results and its `final` must fit in one.
pub const MAX_EVENT_RESULT_BYTES: usize = 32 * 1024;

/// `raw` as a `tool_result` event carries it: whole up to [`MAX_EVENT_RESULT_BYTES`], else
/// a marker with its size.
pub fn event_result(raw: Option<&Value>) -> Option<Value> {
    let raw = raw?;
    let size = serde_json::to_vec(raw).map_or(usize::MAX, |bytes| bytes.len());
    Some(if size <= MAX_EVENT_RESULT_BYTES {
        raw.clone()
    } else {
        serde_json::json!({ "truncated": true, "size_bytes": size })
    })
}

/// Where a turn's events go (an SSE stream, a test's list, nowhere). Shared by the
/// concurrently running tool calls of a step, hence `&self` and `Sync`.
pub trait EventSink: Send + Sync {
    /// Takes one event; never blocks the turn.
    fn emit(&self, event: TurnEvent);

    /// Whether `Debug` events are wanted; producers skip building their payloads otherwise.
    fn wants_debug(&self) -> bool {
        false
    }
}

/// Emits a debug event, building its payload only when the sink wants it.
pub fn debug(sink: &dyn EventSink, kind: &'static str, payload: impl FnOnce() -> Value) {
    if sink.wants_debug() {
        sink.emit(TurnEvent::Debug {
            kind,
            payload: payload(),
        });
    }
}

/// Drops every event: for callers without a client (the tool worker).
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _: TurnEvent) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_results_are_whole_up_to_the_cap_and_a_marker_above() {
        let small = json!({"flights": [1, 2, 3]});
        assert_eq!(event_result(Some(&small)), Some(small));
        let big = json!({"text": "x".repeat(MAX_EVENT_RESULT_BYTES)});
        let capped = event_result(Some(&big)).unwrap_or_default();
        assert_eq!(capped["truncated"], json!(true));
        assert!(capped["size_bytes"].as_u64().unwrap_or(0) > MAX_EVENT_RESULT_BYTES as u64);
        assert_eq!(event_result(None), None);
    }
}
