//! The SSE events of `POST /chat` (docs/api.md) and the emitter that
//! queues them for the response stream.
//!
//! The turn never waits for the client: events go into an unbounded queue drained by a
//! forwarder task, so a slow or vanished client cannot stall or abort the tool pipeline.

use std::borrow::Cow;

use agent::events::ApprovalRequest;
use agent::pipeline::CallStatus;
use agent::{EventSink, TurnErrorCode, TurnEvent};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Serialize;
use serde_json::{Map, Value, json};
use shared::domain::flight::Locale;
use shared::domain::session::SessionState;
use shared::domain::tool_call::ToolName;
use shared::domain::ui::UiElement;
use shared::http::ErrorCode;
use tokio::sync::mpsc;

// The `data` of each event, typed so the OpenAPI document (`tools/openapi`) describes the
// very structs that are sent.

/// `init`: the turn began.
#[derive(Serialize, JsonSchema)]
pub struct InitData<'a> {
    pub chat_id: &'a str,
    /// A new chat was made for this turn.
    pub created: bool,
    /// This turn: it holds the chat until `done`.
    pub turn_id: &'a str,
    /// The language of the turn's texts for the user (`en` or `de`): the message's, else
    /// the chat's, else the request's. A client labels the turn in it.
    pub language: Locale,
}

/// `tool_started`: a call was admitted and claimed in the ledger (or is a duplicate).
#[derive(Serialize, JsonSchema)]
pub struct ToolStartedData<'a> {
    pub tool: ToolName,
    /// The ledger call id (`tc_` + 32 hex).
    pub job_id: &'a str,
    /// An identical call in this chat is reused.
    pub deduped: bool,
    pub status: StartedStatus,
}

/// `running`, or `queued` for a call sent to the tool queue (no `tool_result` follows).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StartedStatus {
    Running,
    Queued,
}

/// `tool_progress`: a running call got part of the way.
#[derive(Serialize, JsonSchema)]
pub struct ToolProgressData<'a> {
    pub tool: ToolName,
    pub job_id: &'a str,
    /// For the user, in their language.
    pub message: &'a str,
}

/// `tool_result`: a call ended, or was refused before it ran (`job_id` null, `metadata`
/// with `reason` and `message`, no `result`).
#[derive(Serialize, JsonSchema)]
pub struct ToolResultData<'a> {
    /// The tool; for a refused call, the name the model used (it may name no real tool).
    pub tool: &'a str,
    pub job_id: Option<&'a str>,
    pub status: CallStatus,
    /// Tool-specific (docs/api.md, `tool_result.metadata`).
    pub metadata: Map<String, Value>,
    /// The tool's data, at most 32 KiB (else `{"truncated": true, "size_bytes": N}`);
    /// null without data, absent for a refused call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

/// `assistant_token`: text of the answer as it streams.
#[derive(Serialize, JsonSchema)]
pub struct TokenData<'a> {
    pub content: &'a str,
}

/// `final`: the answer, after it was stored.
#[derive(Serialize, JsonSchema)]
pub struct FinalData<'a> {
    pub message: FinalMessage<'a>,
    /// The chat's state after the turn.
    pub session_state: &'a SessionState,
    /// Null without tools; the last tool step's raw result, or a list of
    /// `{tool, job_id, status, raw}` when that step had several calls.
    pub tool_result: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<FinalMetadata<'a>>,
}

#[derive(Serialize, JsonSchema)]
pub struct FinalMessage<'a> {
    pub role: AssistantRole,
    pub content: &'a str,
    /// The user stopped the turn: `content` is what it had said until then (or, when it
    /// had said nothing, a short note that it stopped).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
}

/// The role of a `final` message: always `assistant`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantRole {
    Assistant,
}

#[derive(Serialize, JsonSchema)]
pub struct FinalMetadata<'a> {
    /// The deployment's `STACK_NOTICE`.
    pub notice: &'a str,
}

/// `error`: the turn failed (replaces `final`; `done` follows).
#[derive(Serialize, JsonSchema)]
pub struct ErrorData<'a> {
    #[schemars(with = "ErrorEventCode")]
    pub code: TurnErrorCode,
    /// For the user, in the turn's language.
    pub message: &'a str,
    /// Only on the refusal a resend or resume of a refused turn gets (as its JSON error).
    #[serde(skip_serializing_if = "Option::is_none")]
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
#[derive(Serialize, JsonSchema)]
pub struct HandoffData<'a> {
    pub from: &'a str,
    pub to: &'a str,
    /// The model's words, at most 200 characters.
    pub reason: &'a str,
}

/// `debug`: only with `"debug": true` for a caller who may have them.
#[derive(Serialize, JsonSchema)]
pub struct DebugData<'a> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub payload: &'a Value,
}

/// `done`: last, always.
#[derive(Serialize, JsonSchema)]
pub struct DoneData {}

/// The event's `data` object, as the HTTP contract spells it.
pub fn data(event: &TurnEvent) -> Value {
    match event {
        TurnEvent::Init {
            chat_id,
            created,
            turn_id,
            language,
        } => json!(InitData {
            chat_id,
            created: *created,
            turn_id,
            language: *language,
        }),
        TurnEvent::ToolStarted {
            tool,
            job_id,
            deduped,
            queued,
        } => json!(ToolStartedData {
            tool: *tool,
            job_id,
            deduped: *deduped,
            status: if *queued {
                StartedStatus::Queued
            } else {
                StartedStatus::Running
            },
        }),
        TurnEvent::ToolProgress {
            tool,
            job_id,
            message,
        } => json!(ToolProgressData {
            tool: *tool,
            job_id,
            message
        }),
        TurnEvent::ToolResult {
            tool,
            job_id,
            status,
            metadata,
            result,
        } => json!(ToolResultData {
            tool: tool.as_str(),
            job_id: job_id.as_deref(),
            status: *status,
            metadata: metadata.clone(),
            result: Some(result.clone().unwrap_or(Value::Null)),
        }),
        TurnEvent::ToolRefused {
            tool,
            status,
            reason,
            message,
            metadata,
        } => {
            let mut metadata = metadata.clone();
            metadata.insert("reason".into(), json!(reason));
            metadata.insert("message".into(), json!(message));
            json!(ToolResultData {
                tool,
                job_id: None,
                status: *status,
                metadata,
                result: None,
            })
        }
        TurnEvent::Token { content } => json!(TokenData { content }),
        TurnEvent::Final {
            content,
            session_state,
            tool_result,
            notice,
            stopped,
        } => json!(FinalData {
            message: FinalMessage {
                role: AssistantRole::Assistant,
                content,
                stopped: *stopped,
            },
            session_state,
            tool_result,
            metadata: notice.as_deref().map(|notice| FinalMetadata { notice }),
        }),
        TurnEvent::Error { code, message } => json!(ErrorData {
            code: *code,
            message,
            details: None,
        }),
        TurnEvent::Handoff { from, to, reason } => json!(HandoffData { from, to, reason }),
        TurnEvent::Ui(element) => json!(element),
        TurnEvent::ApprovalRequired(request) => json!(request),
        TurnEvent::Debug { kind, payload } => json!(DebugData { kind, payload }),
        TurnEvent::Done => json!(DoneData {}),
    }
}

/// Every event name with the schema of its `data`, in the contract's order: what the
/// OpenAPI document lists for the event streams.
pub fn schemas(generator: &mut SchemaGenerator) -> Vec<(&'static str, Schema)> {
    vec![
        ("init", generator.subschema_for::<InitData>()),
        ("tool_started", generator.subschema_for::<ToolStartedData>()),
        (
            "tool_progress",
            generator.subschema_for::<ToolProgressData>(),
        ),
        ("tool_result", generator.subschema_for::<ToolResultData>()),
        ("assistant_token", generator.subschema_for::<TokenData>()),
        ("handoff", generator.subschema_for::<HandoffData>()),
        ("ui", generator.subschema_for::<UiElement>()),
        (
            "approval_required",
            generator.subschema_for::<ApprovalRequest>(),
        ),
        ("final", generator.subschema_for::<FinalData>()),
        ("error", generator.subschema_for::<ErrorData>()),
        ("debug", generator.subschema_for::<DebugData>()),
        ("done", generator.subschema_for::<DoneData>()),
    ]
}

/// `event: NAME\ndata: JSON\n\n`. JSON text has no raw newlines, so one data line suffices.
pub fn to_sse(event: &TurnEvent) -> String {
    format!("event: {}\ndata: {}\n\n", event.name(), data(event))
}

/// Queues a turn's events for the response stream. Cloning shares the queue.
#[derive(Clone)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<TurnEvent>,
    debug: bool,
}

impl Emitter {
    pub fn new(debug: bool) -> (Self, mpsc::UnboundedReceiver<TurnEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx, debug }, rx)
    }
}

impl EventSink for Emitter {
    /// Queues `event`; debug events only when the request asked for them. A gone client
    /// is not an error here: the turn finishes regardless.
    fn emit(&self, event: TurnEvent) {
        if matches!(event, TurnEvent::Debug { .. }) && !self.debug {
            return;
        }
        let _ = self.tx.send(event);
    }

    fn wants_debug(&self) -> bool {
        self.debug
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_event_and_one_data_line() {
        let event = TurnEvent::Token {
            content: "line one\nline two".into(),
        };
        assert_eq!(
            to_sse(&event),
            "event: assistant_token\ndata: {\"content\":\"line one\\nline two\"}\n\n"
        );
        assert_eq!(to_sse(&TurnEvent::Done), "event: done\ndata: {}\n\n");
    }

    #[test]
    fn debug_events_only_when_asked() {
        let (quiet, mut rx) = Emitter::new(false);
        agent::events::debug(&quiet, "x", || json!({}));
        quiet.emit(TurnEvent::Done);
        assert_eq!(rx.try_recv().ok(), Some(TurnEvent::Done));
        let (loud, mut rx) = Emitter::new(true);
        agent::events::debug(&loud, "x", || json!({"a": 1}));
        assert_eq!(rx.try_recv().ok().map(|e| e.name()), Some("debug"));
    }
}
