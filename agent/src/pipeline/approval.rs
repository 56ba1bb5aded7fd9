//! Calls that wait for the user's approval (`approval = "always"`): admitted and recorded
//! as `awaiting_approval` without running, announced with `approval_required`, and run
//! later by the approving request ([`Pipeline::run_approved`]) under the claim the ledger's
//! decision gave it, like any claimed call.

use std::time::Instant;

use serde_json::Value;
use shared::domain::tool_call::{ApprovalRecord, ToolCallRecord, ToolName};
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::ClaimedCall;

use super::admit::Claimed;
use super::{CallOutcome, CallStatus, Pipeline};
use crate::llm::ToolCallRequest;
use agent_core::events::{ApprovalRequest, EventSink, TurnEvent};
use agent_tools::{RegisteredTool, ToolContext, ToolRegistry};

impl Pipeline {
    /// What the user is asked, and until when.
    pub(super) fn approval_for(
        &self,
        ctx: &ToolContext,
        tool: &RegisteredTool,
        request: &Value,
    ) -> ApprovalRecord {
        let window = time::Duration::try_from(self.approval_window).unwrap_or(time::Duration::DAY);
        ApprovalRecord {
            summary: tool.tool.approval_summary(request, ctx.locale),
            expires_at: time::OffsetDateTime::now_utc() + window,
            decision: None,
            reason: None,
            decided_at: None,
        }
    }

    /// A call recorded as awaiting approval (or a repeat of one still waiting): the client is
    /// asked, the model is told it has not run.
    pub(super) fn awaiting(
        &self,
        call: &ToolCallRequest,
        tool: ToolName,
        job_id: &str,
        request: &Value,
        approval: Option<&ApprovalRecord>,
        events: &dyn EventSink,
    ) -> CallOutcome {
        let summary = approval.map(|a| a.summary.clone()).unwrap_or_default();
        let result = ToolExecutionResult::failed(format!(
            "Not run yet: {tool} waits for the user's approval (job {job_id}). Tell the user, in one sentence, what they are asked to approve: {summary}"
        ))
        .with_metadata("approval", true);
        let request = approval.map(|approval| ApprovalRequest {
            job_id: job_id.to_owned(),
            tool,
            arguments: request.clone(),
            summary: summary.clone(),
            expires_at: approval.expires_at,
        });
        // The request rides along as the result's data: the turn stores it with its answer.
        let result = match &request {
            Some(request) => result.with_raw(serde_json::json!(request)),
            None => result,
        };
        let outcome = CallOutcome {
            // Its result comes later: readers look it up in the ledger.
            background: true,
            ..CallOutcome::new(
                call,
                Some(tool),
                CallStatus::AwaitingApproval,
                Some(job_id.to_owned()),
                result,
            )
        };
        outcome.announce(events);
        if let Some(request) = request {
            events.emit(TurnEvent::ApprovalRequired(request));
        }
        outcome
    }

    /// Runs a call the user approved: `claimed` is the running attempt the ledger's
    /// decision handed over. A tool this deployment no longer has fails the call.
    pub async fn run_approved(
        &self,
        ctx: &ToolContext,
        record: &ToolCallRecord,
        claimed: ClaimedCall,
        events: &dyn EventSink,
    ) -> CallOutcome {
        let call = ToolCallRequest {
            id: record.id.clone(),
            name: ToolRegistry::call_name(record.tool, &record.request),
            arguments: record.request.to_string(),
        };
        let Some(tool) = self
            .registry
            .resolve_ready(record.tool, &record.request)
            .await
        else {
            let message = format!("{} is not available in this deployment", record.tool);
            self.finish(
                &claimed,
                shared::ledger::Outcome::Failed(message.clone()),
                &[],
            )
            .await;
            let result = ToolExecutionResult::failed(message);
            let outcome = CallOutcome::new(
                &call,
                Some(record.tool),
                CallStatus::Failed,
                Some(record.id.clone()),
                result,
            );
            outcome.announce(events);
            return outcome;
        };
        // The user's limit for the tool counts calls that run: it is checked now.
        if let Some((limited, _)) = self.rate_limit(ctx, &call, &tool).await {
            self.release(&claimed, &limited.result.message).await;
            let limited = CallOutcome {
                job_id: Some(record.id.clone()),
                ..limited
            };
            limited.announce(events);
            return limited;
        }
        let deadline = (Instant::now() + tool.settings.timeout).min(ctx.deadline);
        let admitted = Claimed {
            call: &call,
            tool,
            request: record.request.clone(),
            claimed,
            deadline,
            approval: None,
        };
        self.run_claimed(ctx, admitted, events).await
    }

    /// A denied call, as the client and the model see it.
    pub fn denied(&self, record: &ToolCallRecord, events: &dyn EventSink) -> CallOutcome {
        let call = ToolCallRequest {
            id: record.id.clone(),
            name: ToolRegistry::call_name(record.tool, &record.request),
            arguments: record.request.to_string(),
        };
        let reason = record.approval.as_ref().and_then(|a| a.reason.clone());
        let mut result = ToolExecutionResult::failed(match &reason {
            Some(_) => format!(
                "The user denied {} (job {}); it did not run. Their reason is in the data block below.",
                record.tool, record.id
            ),
            None => format!(
                "The user denied {} (job {}); it did not run. They gave no reason.",
                record.tool, record.id
            ),
        })
        .with_metadata("denied", true);
        if let Some(reason) = reason {
            result = result.with_metadata("reason", reason);
        }
        let outcome = CallOutcome::new(
            &call,
            Some(record.tool),
            CallStatus::Canceled,
            Some(record.id.clone()),
            result,
        );
        outcome.announce(events);
        outcome
    }
}
