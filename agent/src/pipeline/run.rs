//! Phase 2 of a step: run what was admitted. A claimed call executes under its deadline (or
//! goes to the tool queue when its profile runs it in the background); a duplicate reuses the
//! original's stored result, or waits for an in-flight original until its own deadline.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shared::Error;
use shared::domain::tool_call::{ToolCallRecord, ToolCallStatus};
use shared::domain::tool_result::ToolExecutionResult;
use shared::http::ApiError;
use shared::ledger::{ClaimedCall, Outcome};

use super::admit::{Admission, Claimed};
use super::{CallOutcome, CallStatus, Pipeline, lease_for};
use crate::guard::detect;
use crate::jobs::JobKind;
use crate::llm::ToolCallRequest;
use agent_core::events::{
    self, EventSink, StartedStatus, ToolProgressData, ToolStartedData, TurnEvent,
};
use agent_tools::{Progress, RegisteredTool, ToolContext};

/// Runs `execution`, emitting each progress report it sends meanwhile (reports first, so
/// none sent before it ended is lost).
async fn forward_progress<F: std::future::Future>(
    execution: F,
    mut updates: tokio::sync::mpsc::UnboundedReceiver<String>,
    emit: impl Fn(String),
) -> F::Output {
    tokio::pin!(execution);
    loop {
        tokio::select! {
            biased;
            Some(message) = updates.recv() => emit(message),
            done = &mut execution => return done,
        }
    }
}

/// How often a running call looks in the ledger for a cancel.
const CANCEL_POLL: Duration = Duration::from_secs(1);

/// How often a duplicate of an in-flight call looks for the original's result.
const DUPLICATE_POLL: Duration = Duration::from_millis(100);

impl Pipeline {
    pub(super) async fn run_admitted(
        &self,
        ctx: &ToolContext,
        admission: Admission<'_>,
        events: &dyn EventSink,
    ) -> CallOutcome {
        match admission {
            Admission::Refused { outcome, reason } => {
                match reason {
                    Some(reason) => self.report_refusal(ctx, &outcome, reason, events).await,
                    None => outcome.announce(events),
                }
                *outcome
            }
            Admission::Duplicate { call, record, .. }
                if record.status == ToolCallStatus::AwaitingApproval =>
            {
                self.awaiting(
                    call,
                    record.tool,
                    &record.id,
                    &record.request,
                    record.approval.as_ref(),
                    events,
                )
            }
            Admission::Duplicate {
                call,
                record,
                wait_until,
            } => {
                events.emit(TurnEvent::ToolStarted(ToolStartedData {
                    tool: record.tool,
                    job_id: record.id.clone(),
                    deduped: true,
                    status: StartedStatus::Running,
                }));
                let reused = self.reuse(ctx, call, *record, wait_until).await;
                reused.announce(events);
                reused
            }
            Admission::Claimed(claimed)
                if claimed.claimed.status == ToolCallStatus::AwaitingApproval =>
            {
                let name = claimed.tool.tool.name();
                self.awaiting(
                    claimed.call,
                    name,
                    &claimed.claimed.id,
                    &claimed.request,
                    claimed.approval.as_ref(),
                    events,
                )
            }
            Admission::Claimed(claimed) if claimed.claimed.status == ToolCallStatus::Queued => {
                self.run_background(ctx, *claimed, events).await
            }
            Admission::Claimed(claimed) => self.run_claimed(ctx, *claimed, events).await,
        }
    }

    /// Hands a queued call to the tool queue; without a queue right now, runs it here rather
    /// than leave it waiting for nobody.
    async fn run_background(
        &self,
        ctx: &ToolContext,
        admitted: Claimed<'_>,
        events: &dyn EventSink,
    ) -> CallOutcome {
        let name = admitted.tool.tool.name();
        let claimed = &admitted.claimed;
        match self
            .enqueue(ctx, claimed, JobKind::Background, Duration::ZERO)
            .await
        {
            Ok(()) => {
                events.emit(TurnEvent::ToolStarted(ToolStartedData {
                    tool: name,
                    job_id: claimed.id.clone(),
                    deduped: false,
                    status: StartedStatus::Queued,
                }));
                let result = ToolExecutionResult::failed(format!(
                    "{name} runs in the background as job {}. Its result is not available in this turn; it will be on a later one. Tell the user it is in progress.",
                    claimed.id
                ))
                .with_metadata("queued", true);
                let job_id = Some(claimed.id.clone());
                CallOutcome {
                    background: true,
                    ..CallOutcome::new(
                        admitted.call,
                        Some(name),
                        CallStatus::Queued,
                        job_id,
                        result,
                    )
                }
            }
            Err(e) => {
                tracing::error!(tool = %name, error = %e, "queueing a background call failed; running it inline");
                self.run_inline_instead(ctx, admitted, events).await
            }
        }
    }

    /// A queued call that could not be queued: start it here (queued → running) and run it.
    async fn run_inline_instead(
        &self,
        ctx: &ToolContext,
        mut admitted: Claimed<'_>,
        events: &dyn EventSink,
    ) -> CallOutcome {
        let claimed = &admitted.claimed;
        let lease = lease_for(admitted.tool.settings.timeout);
        match self
            .ledger
            .start_queued(&claimed.chat_id, &claimed.id, claimed.attempt, lease)
            .await
        {
            Ok(started) => {
                admitted.claimed = started;
                self.run_claimed(ctx, admitted, events).await
            }
            Err(e) => {
                let name = admitted.tool.tool.name();
                tracing::error!(tool = %name, error = %e, "starting the call failed");
                let job_id = Some(claimed.id.clone());
                CallOutcome {
                    retryable: false,
                    ..CallOutcome::unavailable(admitted.call, name, job_id)
                }
            }
        }
    }

    /// Executes a running attempt this caller holds, records its end, and schedules a retry
    /// after a retryable failure.
    pub(super) async fn run_claimed(
        &self,
        ctx: &ToolContext,
        admitted: Claimed<'_>,
        events: &dyn EventSink,
    ) -> CallOutcome {
        let name = admitted.tool.tool.name();
        let claimed = &admitted.claimed;
        events.emit(TurnEvent::ToolStarted(ToolStartedData {
            tool: name,
            job_id: claimed.id.clone(),
            deduped: false,
            status: StartedStatus::Running,
        }));
        let tool_ctx = ToolContext {
            deadline: admitted.deadline,
            ..ctx.clone()
        };
        let (status, mut result, retryable) = self
            .execute_claimed(
                &tool_ctx,
                &admitted.tool,
                &admitted.request,
                claimed,
                events,
            )
            .await;
        let mut background = false;
        if retryable && let Some((attempt, delay)) = self.schedule_retry(ctx, claimed).await {
            result = super::record::with_retry_note(result, attempt, delay);
            background = true;
        }
        let job_id = Some(claimed.id.clone());
        let outcome = CallOutcome {
            retryable,
            background,
            ..CallOutcome::new(admitted.call, Some(name), status, job_id, result)
        };
        outcome.announce(events);
        outcome
    }

    /// Executes a claimed (running) attempt under `ctx.deadline` and records how it ended.
    /// Returns the status, the result for the LLM, and whether a retry could help.
    pub(super) async fn execute_claimed(
        &self,
        ctx: &ToolContext,
        registered: &RegisteredTool,
        request: &Value,
        claimed: &ClaimedCall,
        events: &dyn EventSink,
    ) -> (CallStatus, ToolExecutionResult, bool) {
        let name = registered.tool.name();
        let started = Instant::now();
        let (progress, updates) = Progress::channel();
        let ctx = &ToolContext {
            progress,
            ..ctx.clone()
        };
        let execution = forward_progress(
            tokio::time::timeout(
                ctx.deadline.saturating_duration_since(started),
                self.execute_cached(ctx, registered, request),
            ),
            updates,
            |message| {
                events.emit(TurnEvent::ToolProgress(ToolProgressData {
                    tool: name,
                    job_id: claimed.id.clone(),
                    message,
                }))
            },
        );
        let executed = tokio::select! {
            executed = execution => executed,
            // The execution is dropped here: its upstream request is abandoned. The ledger
            // already says canceled, so there is nothing to record.
            () = self.canceled(ctx, claimed) => {
                tracing::info!(tool = %name, job_id = %claimed.id, "canceled while running; stopped");
                let stopped = ToolExecutionResult::failed(format!(
                    "{name} was canceled while it ran; it was stopped and has no result."
                ));
                return (CallStatus::Canceled, stopped, false);
            }
        };
        let mut cache_entry = None;
        let executed = executed.map(|run| {
            run.map(|(result, entry)| {
                cache_entry = entry;
                result
            })
        });
        let (status, result, retryable, ledger_outcome) = settle(
            &registered.tool.schema().spec.name,
            executed,
            ctx.deadline,
            started,
        );
        let retryable = retryable && registered.settings.retry_on.covers(status);
        events::debug(events, "tool_pipeline_execution", || {
            json!({
                "tool": name,
                "job_id": claimed.id,
                "attempt": claimed.attempt,
                "status": status,
                "duration_ms": started.elapsed().as_millis() as u64,
            })
        });
        if !self
            .finish(claimed, ledger_outcome, cache_entry.as_slice())
            .await
        {
            let discarded = ToolExecutionResult::failed(format!(
                "{name} was canceled while it ran; its result was discarded."
            ));
            return (CallStatus::Canceled, discarded, false);
        }
        self.guard_output(claimed, &result, events).await;
        (status, result, retryable)
    }

    /// Resolves once the ledger says `claimed` was canceled (the cancel route); never
    /// otherwise. A call that ends within [`CANCEL_POLL`] never reads the ledger.
    async fn canceled(&self, ctx: &ToolContext, claimed: &ClaimedCall) {
        loop {
            tokio::time::sleep(CANCEL_POLL).await;
            match self
                .ledger
                .get(&ctx.user_id, &claimed.chat_id, &claimed.id)
                .await
            {
                Ok(record)
                    if record.status == ToolCallStatus::Canceled
                        && record.attempt == claimed.attempt =>
                {
                    return;
                }
                Ok(_) => {}
                // The call goes on; if it was canceled, the fence still discards its result.
                Err(e) => {
                    tracing::warn!(job_id = %claimed.id, error = %e, "checking for a cancel failed")
                }
            }
        }
    }

    /// The tool-output guard: a result that carries instruction-like text still reaches the
    /// model (as data, in its block), but the call's audit record is flagged with what was
    /// found, and the log and a `debug` event say which call brought it.
    async fn guard_output(
        &self,
        claimed: &ClaimedCall,
        result: &ToolExecutionResult,
        events: &dyn EventSink,
    ) {
        let findings = detect::scan(&result.message);
        if findings.is_empty() {
            return;
        }
        let flags: Vec<&str> = findings.iter().map(|f| f.as_str()).collect();
        tracing::warn!(
            chat_id = %claimed.chat_id,
            tool = %claimed.tool,
            job_id = %claimed.id,
            findings = ?flags,
            "tool-output guard: a tool result looks like an attack"
        );
        events::debug(
            events,
            "guard_tool_output",
            || json!({ "tool": claimed.tool, "job_id": claimed.id, "findings": flags }),
        );
        if let Err(e) = self
            .ledger
            .flag(&claimed.chat_id, &claimed.id, &flags)
            .await
        {
            tracing::error!(job_id = %claimed.id, error = %e, "flagging the tool call failed");
        }
    }

    /// A duplicate: the stored response when it succeeded, else wait for the in-flight
    /// original until `deadline`.
    async fn reuse(
        &self,
        ctx: &ToolContext,
        call: &ToolCallRequest,
        mut record: ToolCallRecord,
        deadline: Instant,
    ) -> CallOutcome {
        let waited_for = deadline.saturating_duration_since(Instant::now());
        loop {
            match record.status {
                ToolCallStatus::Succeeded => return reused(call, record),
                // A queued original waits for the worker (maybe a retry's backoff): no use
                // polling for it within a turn.
                ToolCallStatus::Running if Instant::now() + DUPLICATE_POLL < deadline => {
                    tokio::time::sleep(DUPLICATE_POLL).await;
                    match self
                        .ledger
                        .get(&ctx.user_id, &ctx.chat_id, &record.id)
                        .await
                    {
                        Ok(latest) => record = latest,
                        Err(e) => {
                            tracing::error!(error = %e, "reading a duplicate's original failed");
                            break;
                        }
                    }
                }
                _ => break,
            }
        }
        let in_flight = matches!(
            record.status,
            ToolCallStatus::Running | ToolCallStatus::Queued
        );
        let (status, message) = match record.status {
            // Its result lands in the ledger; later turns read it from there.
            _ if in_flight && (waited_for.is_zero() || record.status == ToolCallStatus::Queued) => {
                (
                    CallStatus::Queued,
                    format!(
                        "An identical call is already in progress in the background as job {}; its result will be available on a later turn.",
                        record.id
                    ),
                )
            }
            _ if in_flight => (
                CallStatus::Timeout,
                "An identical call is still running; its result is not ready yet.".to_owned(),
            ),
            other => (
                CallStatus::Failed,
                format!("An identical call ended as {other}."),
            ),
        };
        CallOutcome {
            retryable: true,
            background: in_flight,
            ..deduped(call, record, status, ToolExecutionResult::failed(message))
        }
    }
}

/// A succeeded duplicate's stored result, as if it had just run.
fn reused(call: &ToolCallRequest, record: ToolCallRecord) -> CallOutcome {
    let result = record
        .response
        .clone()
        .and_then(|r| serde_json::from_value::<ToolExecutionResult>(r).ok())
        .unwrap_or_else(|| {
            ToolExecutionResult::failed("The stored result of an identical call is unavailable.")
        });
    let status = if result.is_success() {
        CallStatus::Succeeded
    } else {
        CallStatus::Failed
    };
    deduped(call, record, status, result)
}

fn deduped(
    call: &ToolCallRequest,
    record: ToolCallRecord,
    status: CallStatus,
    result: ToolExecutionResult,
) -> CallOutcome {
    CallOutcome {
        deduped: true,
        ..CallOutcome::new(call, Some(record.tool), status, Some(record.id), result)
    }
}

type Settled = (CallStatus, ToolExecutionResult, bool, Outcome);

/// Maps an execution (or its timeout) to the client status, the LLM's result, whether a
/// retry could help, and the ledger outcome. Error texts shown are the client-safe ones;
/// `name` is the tool as the model calls it.
pub(super) fn settle(
    name: &str,
    executed: Result<shared::Result<ToolExecutionResult>, tokio::time::error::Elapsed>,
    deadline: Instant,
    started: Instant,
) -> Settled {
    match executed {
        Ok(Ok(result)) if result.is_success() => {
            let stored = serde_json::to_value(&result).unwrap_or(Value::Null);
            (
                CallStatus::Succeeded,
                result,
                false,
                Outcome::Succeeded(stored),
            )
        }
        Ok(Ok(result)) => {
            let message = result.message.clone();
            (CallStatus::Failed, result, false, Outcome::Failed(message))
        }
        Ok(Err(e)) => {
            let retryable = matches!(
                e,
                Error::Upstream { .. }
                    | Error::UpstreamUnavailable { .. }
                    | Error::UpstreamTimeout { .. }
            );
            let safe = ApiError::from(&e).message;
            tracing::warn!(tool = %name, error = %e, "tool failed");
            let (status, outcome) = match e {
                Error::UpstreamTimeout { .. } => {
                    (CallStatus::Timeout, Outcome::Timeout(safe.clone()))
                }
                _ => (CallStatus::Failed, Outcome::Failed(safe.clone())),
            };
            let result = ToolExecutionResult::failed(format!("{name} failed: {safe}"))
                .with_metadata("error", safe);
            (status, result, retryable, outcome)
        }
        Err(_) => {
            let secs = deadline.saturating_duration_since(started).as_secs_f32();
            let message = format!("{name} did not answer within {secs:.1} s.");
            tracing::warn!(tool = %name, "tool timed out");
            let result = ToolExecutionResult::failed(message.clone())
                .with_metadata("error", message.clone());
            (CallStatus::Timeout, result, true, Outcome::Timeout(message))
        }
    }
}
