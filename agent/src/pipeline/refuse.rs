//! Every refused call is visible (seed 004's execution tracker): a call refused before it
//! ran (unknown tool, outside the profile, invalid arguments, over the cap, not offered,
//! out of time, rate-limited, checks unavailable) is streamed to the client as a
//! `tool_result` with its status and reason, and kept in the ledger's audit, so an operator
//! sees what the model tried.

use shared::domain::tool_call::{RefusalReason, RefusedCall};
use shared::domain::tool_result::ToolExecutionResult;

use super::{CallOutcome, CallStatus, Pipeline};
use crate::llm::ToolCallRequest;
use agent_core::events::{EventSink, ToolResultData, TurnEvent};
use agent_tools::ToolContext;

/// The model's text, cut to `max` characters (it is untrusted and may be long).
fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

impl Pipeline {
    /// Streams a refused call to the client and writes it to the audit. Best effort: a lost
    /// audit record is logged and does not change the turn.
    pub(crate) async fn report_refusal(
        &self,
        ctx: &ToolContext,
        outcome: &CallOutcome,
        reason: RefusalReason,
        events: &dyn EventSink,
    ) {
        let tool = clip(&outcome.call.name, RefusedCall::MAX_TOOL_CHARS);
        events.emit(TurnEvent::ToolResult(ToolResultData::refused(
            tool.clone(),
            outcome.status,
            reason,
            outcome.result.message.clone(),
            outcome.result.metadata.clone(),
        )));
        let refused = RefusedCall {
            id: shared::ids::new_id(),
            chat_id: ctx.chat_id.clone(),
            tool,
            arguments: clip(&outcome.call.arguments, RefusedCall::MAX_ARGUMENT_CHARS),
            reason,
            message: outcome.result.message.clone(),
            created_at: time::OffsetDateTime::now_utc(),
        };
        tracing::info!(chat_id = %ctx.chat_id, tool = %refused.tool, reason = reason.as_str(), "tool call refused");
        if let Err(e) = self.ledger.record_refused(&ctx.user_id, &refused).await {
            tracing::error!(chat_id = %ctx.chat_id, error = %e, "recording a refused tool call failed");
        }
    }

    /// Calls the model made in a step that offered no tools (the per-message cap or the
    /// step limit was reached): none runs; each is refused, streamed and audited.
    pub async fn refuse_unoffered(
        &self,
        ctx: &ToolContext,
        calls: &[ToolCallRequest],
        events: &dyn EventSink,
    ) -> Vec<CallOutcome> {
        let mut outcomes = Vec::with_capacity(calls.len());
        for call in calls {
            let result = ToolExecutionResult::failed(
                "Not run: no tools are available in this step. Answer with what you have.",
            );
            let outcome = CallOutcome::new(
                call,
                call.name.parse().ok(),
                CallStatus::Skipped,
                None,
                result,
            );
            self.report_refusal(ctx, &outcome, RefusalReason::NotOffered, events)
                .await;
            outcomes.push(outcome);
        }
        outcomes
    }
}
