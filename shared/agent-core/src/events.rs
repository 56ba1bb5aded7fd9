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
use std::borrow::Cow;

use lambda_kit::http::ErrorCode;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::call_status::CallStatus;

/// Why a turn ended with an `error` event. Serialised as the event's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

/// One thing a turn tells its caller, as the public contract spells it: serialised, it is
/// `{"event": NAME, "data": {...}}`, and the SSE frame is `event: NAME` with `data` as its
/// one data line. Each variant's data is a type of its own, so the OpenAPI document, the
/// web's generated types and the payload guard all read the one serialised form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", content = "data", rename_all = "snake_case")]
pub enum TurnEvent {
    /// The turn began.
    Init(InitData),
    /// A call was admitted and claimed in the ledger, or reuses an identical one.
    ToolStarted(ToolStartedData),
    /// A running call's progress, for the user (e.g. one of two searches done).
    ToolProgress(ToolProgressData),
    /// A call ended, or was refused before it ran (then `job_id` is null).
    ToolResult(ToolResultData),
    /// A piece of the answer as the model streams it (or a tool's direct answer, whole).
    AssistantToken(TokenData),
    /// The turn goes on with another agent profile (a `transfer_to_<agent>` call).
    Handoff(HandoffData),
    /// Something the client renders (quick replies, flight cards, an approval box).
    Ui(UiElement),
    /// A call waits for the user's approval; the turn ends after it. The payload is also
    /// stored with the answer as a `ui` element of kind `approval`.
    ApprovalRequired(ApprovalRequest),
    /// The answer is complete.
    Final(FinalData),
    /// The turn failed; `done` follows.
    Error(ErrorData),
    /// Seed 000 §15 debug entries; only produced when the sink asks for them.
    Debug(DebugData),
    /// The turn is over and the chat free, always last.
    Done(DoneData),
}

impl TurnEvent {
    /// `done`.
    pub const DONE: Self = Self::Done(DoneData {});

    /// The event's name in the public contract (the SSE `event:` field); the serde tag.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Init(_) => "init",
            Self::ToolStarted(_) => "tool_started",
            Self::ToolProgress(_) => "tool_progress",
            Self::ToolResult(_) => "tool_result",
            Self::AssistantToken(_) => "assistant_token",
            Self::Handoff(_) => "handoff",
            Self::Ui(_) => "ui",
            Self::ApprovalRequired(_) => "approval_required",
            Self::Final(_) => "final",
            Self::Error(_) => "error",
            Self::Debug(_) => "debug",
            Self::Done(_) => "done",
        }
    }

    /// A piece of the answer.
    pub fn token(content: impl Into<String>) -> Self {
        Self::AssistantToken(TokenData {
            content: content.into(),
        })
    }

    /// A turn's error: `code` and the text for the user.
    pub fn error(code: TurnErrorCode, message: impl Into<String>) -> Self {
        Self::Error(ErrorData {
            code,
            message: message.into(),
            details: None,
        })
    }

    /// The event as its SSE frame carries it: its name and its `data` object. Serialises
    /// once; `data` is `{}` should a value ever fail to serialise (none of ours can).
    pub fn to_wire(&self) -> (&'static str, Value) {
        let data = match serde_json::to_value(self) {
            Ok(Value::Object(mut event)) => event.remove("data"),
            _ => None,
        };
        (
            self.name(),
            data.unwrap_or_else(|| Value::Object(Map::new())),
        )
    }
}

/// `init`: the turn began.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitData {
    /// The chat the turn belongs to.
    pub chat_id: String,
    /// A new chat was made for this turn.
    pub created: bool,
    /// This turn: it holds the chat until `done`.
    pub turn_id: String,
    /// The language of the turn's texts for the user (`en` or `de`): the message's, else
    /// the chat's, else the request's. A client labels the turn in it.
    pub language: Locale,
    /// The turn's trace, while the deployment records traces (docs/operations.md#traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceRef>,
}

/// Where a turn's trace is: its id and, where the deployment names a viewer
/// (`TRACE_VIEW_URL`), the page that shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TraceRef {
    /// The W3C trace id, 32 hex digits.
    pub id: String,
    /// The trace in the deployment's viewer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `tool_started`: a call was admitted and claimed in the ledger (or is a duplicate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolStartedData {
    /// The tool called.
    pub tool: ToolName,
    /// The ledger call id (`tc_` + 32 hex).
    pub job_id: String,
    /// An identical call in this chat is reused.
    pub deduped: bool,
    /// Whether it runs now or waits in the tool queue.
    pub status: StartedStatus,
}

/// `running`, or `queued` for a call sent to the tool queue (no `tool_result` follows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartedStatus {
    /// The call runs in this turn.
    Running,
    /// The call went to the tool queue.
    Queued,
}

/// `tool_progress`: a running call got part of the way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolProgressData {
    /// The tool running.
    pub tool: ToolName,
    /// The ledger's call id.
    pub job_id: String,
    /// For the user, in their language.
    pub message: String,
}

/// `tool_result`: a call ended, or was refused before it ran (`job_id` null, `metadata`
/// with `reason` and `message`, no `result`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResultData {
    /// The tool; for a refused call, the name the model used (it may name no real tool).
    pub tool: String,
    /// The ledger's call id; null for a call never recorded.
    pub job_id: Option<String>,
    /// How it ended.
    pub status: CallStatus,
    /// Tool-specific (docs/api.md, `tool_result.metadata`).
    pub metadata: Map<String, Value>,
    /// The tool's data, at most 32 KiB (else `{"truncated": true, "size_bytes": N}`);
    /// null without data, absent for a refused call.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub result: Option<Value>,
}

/// A field that is present reads as `Some`, `null` included (absent is `None` by default).
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl ToolResultData {
    /// A call that ran: `result` is the data [`event_result`] gives, `null` without any.
    pub fn ended(
        tool: ToolName,
        job_id: Option<String>,
        status: CallStatus,
        metadata: Map<String, Value>,
        raw: Option<&Value>,
    ) -> Self {
        Self {
            tool: tool.as_str().to_owned(),
            job_id,
            status,
            metadata,
            result: Some(event_result(raw).unwrap_or(Value::Null)),
        }
    }

    /// A call refused before it ran: `tool` is the name the model used (it may name no real
    /// tool, shortened by the caller); `metadata` gains the `reason` and `message`, what the
    /// model was told.
    pub fn refused(
        tool: String,
        status: CallStatus,
        reason: RefusalReason,
        message: String,
        mut metadata: Map<String, Value>,
    ) -> Self {
        metadata.insert("reason".into(), serde_json::json!(reason));
        metadata.insert("message".into(), Value::String(message));
        Self {
            tool,
            job_id: None,
            status,
            metadata,
            result: None,
        }
    }

    /// What the model was told of a refused call.
    pub fn refusal_message(&self) -> Option<&str> {
        if self.job_id.is_some() {
            return None;
        }
        self.metadata.get("message").and_then(Value::as_str)
    }
}

/// `assistant_token`: text of the answer as it streams.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokenData {
    /// The text.
    pub content: String,
}

/// `final`: the answer, after it was stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalData {
    /// The answer.
    pub message: FinalMessage,
    // Boxed: the state is large and the event rare.
    /// The chat's state after the turn.
    pub session_state: Box<SessionState>,
    /// Null without tools; the last tool step's raw result, or a list of
    /// `{tool, job_id, status, raw}` when that step had several calls; each result at most
    /// 32 KiB.
    pub tool_result: Value,
    /// What the deployment adds to every answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<FinalMetadata>,
}

/// The answer of a `final` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalMessage {
    /// Always `assistant`.
    pub role: AssistantRole,
    /// The whole answer, as stored.
    pub content: String,
    /// The user stopped the turn: `content` is what it had said until then (or, when it
    /// had said nothing, a short note that it stopped).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

/// The role of a `final` message: always `assistant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantRole {
    /// The assistant.
    Assistant,
}

/// What the deployment adds to a `final` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalMetadata {
    /// The deployment's `STACK_NOTICE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// The model that answered the turn's last model step, as its provider names it: a
    /// fallback model when the profile's own was unavailable. Absent when no model was
    /// called (a refused message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl FinalMetadata {
    /// The metadata of an answer; `None` when there is nothing to add.
    pub fn of(notice: Option<String>, model: Option<String>) -> Option<Self> {
        (notice.is_some() || model.is_some()).then_some(Self { notice, model })
    }
}

/// `error`: the turn failed (replaces `final`; `done` follows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorData {
    /// Why, as a code clients branch on.
    #[schemars(with = "ErrorEventCode")]
    pub code: TurnErrorCode,
    /// For the user, in the turn's language.
    pub message: String,
    /// Only on the refusal a resend or resume of a refused turn gets (as its JSON error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// An `error` event's code: a turn's own, or (on a resend or resume of a refused turn)
/// the code of the JSON error it was refused with.
pub struct ErrorEventCode;

impl JsonSchema for ErrorEventCode {
    fn schema_name() -> Cow<'static, str> {
        "ErrorEventCode".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let turn = generator.subschema_for::<TurnErrorCode>();
        let refusal = generator.subschema_for::<ErrorCode>();
        json_schema!({ "anyOf": [turn, refusal] })
    }
}

/// `handoff`: the turn goes on with another agent profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HandoffData {
    /// The profile handing over.
    pub from: String,
    /// The profile taking over.
    pub to: String,
    /// The model's words, at most 200 characters.
    pub reason: String,
}

/// `debug`: only with `"debug": true` for a caller who may have them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DebugData {
    /// What the entry is about (`llm_choice`, `tool_plan`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// Its details.
    pub payload: Value,
}

/// `done`: last, always.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DoneData {}

/// A call waiting for the user's approval, as `approval_required` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
        sink.emit(TurnEvent::Debug(DebugData {
            kind: kind.to_owned(),
            payload: payload(),
        }));
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

    /// The name the SSE frame gets is the serde tag, and the serialised form reads back as
    /// the same event: the payload guard relies on both.
    #[test]
    fn names_are_the_serde_tags_and_events_read_back_as_they_were() {
        let events = [
            TurnEvent::token("Hallo"),
            TurnEvent::error(TurnErrorCode::Guardrail, "no"),
            TurnEvent::ToolResult(ToolResultData::ended(
                ToolName::ASK_GPT,
                Some("tc_1".into()),
                CallStatus::Failed,
                Map::new(),
                None,
            )),
            TurnEvent::ToolResult(ToolResultData::refused(
                "book_hotel".into(),
                CallStatus::Rejected,
                RefusalReason::UnknownTool,
                "Unknown tool".into(),
                Map::new(),
            )),
            TurnEvent::DONE,
        ];
        for event in events {
            let wire = serde_json::to_value(&event).unwrap_or_default();
            assert_eq!(wire["event"], json!(event.name()));
            let (name, data) = event.to_wire();
            assert_eq!((json!(name), &data), (wire["event"].clone(), &wire["data"]));
            let back: Option<TurnEvent> = serde_json::from_value(wire).ok();
            assert_eq!(back.as_ref(), Some(&event));
        }
        let (_, ran) = TurnEvent::ToolResult(ToolResultData::ended(
            ToolName::ASK_GPT,
            None,
            CallStatus::Failed,
            Map::new(),
            None,
        ))
        .to_wire();
        assert_eq!(ran["result"], Value::Null);
        assert!(
            ran.as_object()
                .is_some_and(|data| data.contains_key("result"))
        );
        assert_eq!(TurnEvent::DONE.to_wire().1, json!({}));
    }
}
