//! Every event the router sends validates against the schema the document gives its name:
//! the event streams are not checked by the contract run (schemathesis reads JSON only).

use agent::events::{
    ApprovalRequest, AssistantRole, DebugData, FinalData, FinalMessage, FinalMetadata, HandoffData,
    InitData, StartedStatus, ToolProgressData, ToolResultData, ToolStartedData, TraceRef,
};
use agent::pipeline::CallStatus;
use agent::{TurnErrorCode, TurnEvent};
use serde_json::{Map, Value, json};
use shared::domain::session::SessionState;
use shared::domain::tool_call::{RefusalReason, ToolName};
use shared::domain::ui::{UiElement, UiKind};

/// One event of every kind, in the shapes the turn produces.
fn samples() -> Vec<TurnEvent> {
    let metadata: Map<String, Value> = json!({"mode": "flights", "award_count": 3})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let state: SessionState = serde_json::from_value(json!({
        "timezone": "Europe/Berlin",
        "language": "de",
        "pending_gpt_query": {"query": "Meilen?"}
    }))
    .unwrap();
    vec![
        TurnEvent::Init(InitData {
            chat_id: "c1".into(),
            created: true,
            turn_id: "t1".into(),
            language: shared::domain::flight::Locale::De,
            trace: Some(TraceRef {
                id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
                url: Some("http://127.0.0.1:6006/trace/4bf92f3577b34da6a3ce929d0e0e4736".into()),
            }),
        }),
        TurnEvent::ToolStarted(ToolStartedData {
            tool: ToolName::SEARCH_FLIGHTS,
            job_id: "tc_1".into(),
            deduped: false,
            status: StartedStatus::Queued,
        }),
        TurnEvent::ToolProgress(ToolProgressData {
            tool: ToolName::SEARCH_FLIGHTS,
            job_id: "tc_1".into(),
            message: "halfway".into(),
        }),
        TurnEvent::ToolResult(ToolResultData::ended(
            ToolName::SEARCH_FLIGHTS,
            Some("tc_1".into()),
            CallStatus::Succeeded,
            metadata.clone(),
            Some(&json!({"seatsResult": null})),
        )),
        TurnEvent::ToolResult(ToolResultData::ended(
            ToolName::ASK_GPT,
            Some("tc_2".into()),
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
        TurnEvent::token("Hallo"),
        TurnEvent::Final(FinalData {
            message: FinalMessage {
                role: AssistantRole::Assistant,
                content: "Hallo".into(),
                stopped: false,
            },
            session_state: Box::new(state),
            tool_result: json!([{"tool": "ask_gpt", "job_id": "tc_2", "status": "failed", "raw": null}]),
            metadata: Some(FinalMetadata {
                notice: Some("local stack".into()),
                model: Some("gpt-4.1-mini".into()),
            }),
        }),
        TurnEvent::Final(FinalData {
            message: FinalMessage {
                role: AssistantRole::Assistant,
                content: String::new(),
                stopped: true,
            },
            session_state: Box::default(),
            tool_result: Value::Null,
            metadata: None,
        }),
        TurnEvent::error(TurnErrorCode::Guardrail, "no"),
        TurnEvent::Handoff(HandoffData {
            from: "travel".into(),
            to: "support".into(),
            reason: "kb".into(),
        }),
        TurnEvent::Ui(UiElement {
            kind: UiKind::QuickReplies,
            payload: json!({"replies": ["a", "b"]}),
        }),
        TurnEvent::ApprovalRequired(ApprovalRequest {
            job_id: "tc_3".into(),
            tool: ToolName::new("create_fare_alert"),
            arguments: json!({"origin": "FRA"}),
            summary: "Fare alert".into(),
            expires_at: time::OffsetDateTime::UNIX_EPOCH,
        }),
        TurnEvent::Debug(DebugData {
            kind: "llm_choice".into(),
            payload: json!({"step": 1}),
        }),
        TurnEvent::DONE,
    ]
}

#[test]
fn every_event_matches_its_schema() {
    let doc = openapi::document().unwrap();
    let events = &doc["paths"]["/chat"]["post"]["responses"]["200"]["content"]["text/event-stream"]
        ["x-sse-events"];
    let mut seen = std::collections::BTreeSet::new();
    for event in samples() {
        let name = event.name();
        seen.insert(name);
        // The document's components go along, for the `$ref`s to resolve.
        let mut schema = events[name].clone();
        assert!(schema.is_object(), "no schema for the event `{name}`");
        schema["components"] = doc["components"].clone();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let (_, data) = event.to_wire();
        let errors: Vec<String> = validator
            .iter_errors(&data)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "`{name}` {data}: {errors:?}");
    }
    let documented: std::collections::BTreeSet<&str> = events
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        seen, documented,
        "an event is documented but not sampled here, or the reverse"
    );
}

#[test]
fn a_refusal_replayed_as_an_error_event_matches_too() {
    let doc = openapi::document().unwrap();
    let mut schema = doc["paths"]["/chat"]["post"]["responses"]["200"]["content"]["text/event-stream"]["x-sse-events"]["error"].clone();
    schema["components"] = doc["components"].clone();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let refusal =
        json!({"code": "turn_in_progress", "message": "busy", "details": {"turn_id": "t0"}});
    assert!(validator.is_valid(&refusal));
    assert!(!validator.is_valid(&json!({"code": "nonsense", "message": "x"})));
}
