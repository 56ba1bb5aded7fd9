//! Operations: the EMF documents a flight turn emits (router and award function), the trace
//! header passed on to the flight function, and counted auth failures.

use crate::common::{Rig, flight_args, post_chat};
use serde_json::{Value, json};
use test_support::fake_llm::Reply;

/// The documents of `docs` that carry `metric`.
fn with_metric<'a>(docs: &'a [Value], metric: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d.get(metric).is_some()).collect()
}

/// The metric names and dimension sets an EMF document declares.
fn declared(doc: &Value) -> (Vec<String>, Value) {
    let directive = &doc["_aws"]["CloudWatchMetrics"][0];
    let names = directive["Metrics"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["Name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    (names, directive["Dimensions"].clone())
}

const TRACE_ROOT: &str = "1-6761f0a2-3c5b1e0f9a8d7c6b5a493827";

#[tokio::test]
async fn a_flight_turn_emits_tool_llm_and_turn_metrics_and_passes_its_trace_on() {
    let rig = Rig::start().await;
    rig.llm
        .push(Reply::tool_calls(vec![("search_flights", flight_args())]));
    let user = test_support::unique("ops");
    let mut req = post_chat(
        Some(&rig.token(&user)),
        &json!({"message": "Business FRA to JFK"}),
    );
    req.headers_mut().insert(
        "x-amzn-trace-id",
        format!("Root={TRACE_ROOT};Parent=53995c3f42cd8ad8;Sampled=1")
            .parse()
            .unwrap_or_else(|e| panic!("header: {e}")),
    );
    let turn = rig.send(req).await;
    assert_eq!(turn.status, 200, "{:?}", turn.json);
    assert_eq!(turn.names().last(), Some(&"done"));
    let chat_id = turn.first("init")["chat_id"].clone();
    let docs = rig.metrics.captured();

    // Every document is EMF in the namespace, with `function` as a dimension.
    for doc in &docs {
        let directive = &doc["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], json!("ToolCalling"), "{doc}");
        assert_eq!(doc["function"], json!("chat-router"), "{doc}");
        assert!(doc["_aws"]["Timestamp"].as_u64().is_some(), "{doc}");
    }

    let tools = with_metric(&docs, "ToolCalls");
    assert_eq!(tools.len(), 1, "{docs:#?}");
    let tool = tools[0];
    assert_eq!(tool["tool"], json!("search_flights"));
    assert_eq!(tool["status"], json!("succeeded"));
    assert_eq!(tool["ToolCalls"], json!(1.0));
    assert_eq!(tool["ToolDedupeHits"], json!(0.0));
    assert!(tool["ToolLatency"].as_f64().is_some_and(|ms| ms > 0.0));
    assert_eq!(tool["chat_id"], chat_id);
    assert_eq!(
        declared(tool),
        (
            vec![
                "ToolCalls".into(),
                "ToolLatency".into(),
                "ToolDedupeHits".into()
            ],
            json!([["function", "tool", "status"], ["function", "tool"]])
        )
    );

    // One LLM call (the flight results answer directly), with tokens and a duration.
    let llm = with_metric(&docs, "LlmCalls");
    assert_eq!(llm.len(), 1, "{docs:#?}");
    assert_eq!(llm[0]["operation"], json!("chat"));
    assert!(llm[0]["LlmInputTokens"].as_f64().is_some_and(|t| t > 0.0));
    assert!(llm[0]["LlmDuration"].as_f64().is_some());
    assert!(with_metric(&docs, "LlmErrors").is_empty());

    let turns = with_metric(&docs, "Turns");
    assert_eq!(turns.len(), 1, "{docs:#?}");
    let done = turns[0];
    assert_eq!(done["agent"], json!("travel"));
    assert_eq!(done["status"], json!("answered"));
    assert_eq!(done["TurnSteps"], json!(1.0));
    assert_eq!(done["TurnToolCalls"], json!(1.0));
    assert!(done["TurnDuration"].as_f64().is_some_and(|ms| ms > 0.0));
    assert_eq!(
        declared(done).1,
        json!([
            ["function", "agent", "status"],
            ["function", "agent"],
            ["function"]
        ])
    );

    // The award function: one search, its outcome and latency; it got the turn's trace.
    let searches = rig.functions.award_metrics.captured();
    let searches = with_metric(&searches, "SearchRequests");
    assert_eq!(searches.len(), 1);
    assert_eq!(searches[0]["function"], json!("seatsaero-search"));
    assert_eq!(searches[0]["status"], json!("ok"));
    let traces = rig
        .functions
        .award_traces
        .lock()
        .map(|t| t.clone())
        .unwrap_or_default();
    assert_eq!(traces, [format!("Root={TRACE_ROOT}")]);
}

#[tokio::test]
async fn a_rejected_token_is_counted_by_reason() {
    let rig = Rig::start().await;
    let turn = rig
        .chat(Some("not-a-token"), json!({"message": "hi"}))
        .await;
    assert_eq!(turn.status, 401);
    let turn = rig.chat(None, json!({"message": "hi"})).await;
    assert_eq!(turn.status, 401);
    let docs = rig.metrics.captured();
    let reasons: Vec<&Value> = with_metric(&docs, "AuthFailures")
        .iter()
        .map(|d| &d["reason"])
        .collect();
    assert_eq!(
        reasons,
        [&json!("malformed_token"), &json!("missing_bearer_token")]
    );
}
