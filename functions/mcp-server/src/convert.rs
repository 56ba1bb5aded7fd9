//! A pipeline call's outcome as an MCP tool result. Every outcome is a result, never a
//! protocol error: a refused or failed call is `isError` with the text the model would have
//! read (already through the output guard), so the client's user sees why. How the call
//! ended (status, served from the ledger, retryable, job id, when a limit resets) goes in
//! `_meta` under this project's prefix.

use agent::pipeline::{CallOutcome, CallStatus};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value, json};

/// The `_meta` prefix of this project's keys (MCP reserves unprefixed ones).
pub const META_PREFIX: &str = "tool-calling/";

pub fn call_result(outcome: &CallOutcome) -> CallToolResult {
    let content = vec![ContentBlock::text(outcome.result.message.clone())];
    let mut result = match outcome.status {
        // On its way: not an error, and the text says where the result will be.
        CallStatus::Succeeded | CallStatus::Queued | CallStatus::AwaitingApproval => {
            CallToolResult::success(content)
        }
        _ => CallToolResult::error(content),
    };
    // Structured content must be an object; a succeeded call's data is.
    if outcome.status == CallStatus::Succeeded
        && let Some(raw @ Value::Object(_)) = &outcome.result.raw
    {
        result.structured_content = Some(raw.clone());
    }
    result.meta = Some(MetaObject(meta(outcome)));
    result
}

fn meta(outcome: &CallOutcome) -> Map<String, Value> {
    let mut meta = Map::new();
    let mut put = |key: &str, value: Value| {
        meta.insert(format!("{META_PREFIX}{key}"), value);
    };
    put("status", json!(outcome.status.as_str()));
    put("deduplicated", json!(outcome.deduped));
    put("retryable", json!(outcome.retryable));
    if let Some(job) = &outcome.job_id {
        put("jobId", json!(job));
    }
    if let Some(reset) = outcome.result.metadata.get("reset_at") {
        put("resetAt", reset.clone());
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent::llm::ToolCallRequest;
    use shared::domain::tool_call::ToolName;
    use shared::domain::tool_result::ToolExecutionResult;

    fn outcome(status: CallStatus, result: ToolExecutionResult) -> CallOutcome {
        CallOutcome {
            call: ToolCallRequest {
                id: "c1".into(),
                name: "search_flights".into(),
                arguments: "{}".into(),
            },
            tool: Some(ToolName::SEARCH_FLIGHTS),
            job_id: Some("tc_1".into()),
            status,
            deduped: false,
            retryable: false,
            background: false,
            result,
        }
    }

    #[test]
    fn a_succeeded_call_carries_its_data_and_how_it_ended() {
        let mut done = outcome(
            CallStatus::Succeeded,
            ToolExecutionResult::succeeded("3 flights").with_raw(json!({"seatsResult": null})),
        );
        done.deduped = true;
        let wire = serde_json::to_value(call_result(&done)).unwrap_or_default();
        assert_eq!(wire["isError"], json!(false), "{wire}");
        assert_eq!(wire["content"][0]["text"], json!("3 flights"));
        assert_eq!(wire["structuredContent"], json!({"seatsResult": null}));
        assert_eq!(wire["_meta"]["tool-calling/deduplicated"], json!(true));
        assert_eq!(wire["_meta"]["tool-calling/jobId"], json!("tc_1"));
    }

    #[test]
    fn refused_and_failed_calls_are_error_results_not_protocol_errors() {
        let limited = outcome(
            CallStatus::RateLimited,
            ToolExecutionResult::failed("limit reached")
                .with_metadata("reset_at", "2027-01-01T00:00:00Z"),
        );
        let wire = serde_json::to_value(call_result(&limited)).unwrap_or_default();
        assert_eq!(wire["isError"], json!(true));
        assert_eq!(wire["_meta"]["tool-calling/status"], json!("rate_limited"));
        assert_eq!(
            wire["_meta"]["tool-calling/resetAt"],
            json!("2027-01-01T00:00:00Z")
        );
        assert!(wire.get("structuredContent").is_none());
        let rejected = outcome(
            CallStatus::Rejected,
            ToolExecutionResult::failed("bad args"),
        );
        assert_eq!(
            serde_json::to_value(call_result(&rejected)).unwrap_or_default()["isError"],
            json!(true)
        );
    }
}
