//! One SQS batch: every message is handled on its own and concurrently; the response names
//! the messages SQS should deliver again (`ReportBatchItemFailures`).
//!
//! Per message:
//! - not a tool job → reported as failed; after `maxReceiveCount` receives the queue's
//!   redrive policy moves it to the DLQ, and the rest of the batch is unaffected;
//! - a job whose attempt is no longer queued (failed, canceled, superseded, held by another
//!   worker) → acknowledged without running anything;
//! - a job that ran and succeeded → its session-state patch is merged into the chat, then it
//!   is acknowledged; if the patch cannot be written it is reported as failed, and the
//!   redelivery (which finds the attempt succeeded) applies the stored patch;
//! - a job canceled by its owner while it ran → its result is discarded, acknowledged;
//! - a job that failed with the next attempt queued → acknowledged;
//!   failed with no retry left (or not retryable) → parked in the DLQ with the reason, the
//!   call stays `failed`/`timeout`;
//! - the ledger unreachable → reported as failed, so SQS delivers it again; on the last
//!   delivery before the redrive policy moves it to the DLQ, its queued call is failed with
//!   the reason first (best effort: a call left queued is freed by its deadline).

use agent::jobs::ToolJob;
use agent::pipeline::{CallStatus, JobReport};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use futures::future::join_all;
use shared::domain::tool_result::ToolExecutionResult;
use shared::metrics::{Dimension, Metric, Point};
use shared::observability::Trace;
use tracing::Instrument;

use crate::Deps;

pub async fn handle(deps: &Deps, event: SqsEvent) -> SqsBatchResponse {
    let results = join_all(event.records.iter().map(|m| process(deps, m))).await;
    // The batch's spans go out before the invocation ends.
    shared::telemetry::flush().await;
    let mut response = SqsBatchResponse::default();
    for (message, ok) in event.records.iter().zip(results) {
        if !ok {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = message.message_id.clone().unwrap_or_default();
            response.batch_item_failures.push(failure);
        }
    }
    response
}

/// Handles one message; `false` asks SQS to deliver it again.
async fn process(deps: &Deps, message: &SqsMessage) -> bool {
    let message_id = message.message_id.as_deref().unwrap_or("");
    let body = message.body.as_deref().unwrap_or("");
    let job = match ToolJob::parse(body) {
        Ok(job) => job,
        Err(e) => {
            tracing::error!(message_id, error = %e, "not a tool job; left to the dead-letter queue");
            observe(deps, None, "not_a_job");
            if receive_count(message) >= deps.max_receive_count {
                dead_lettered(deps, None);
            }
            return false;
        }
    };
    // X-Ray passes the sender's trace through SQS; the job's logs carry it.
    let trace = message
        .attributes
        .get("AWSTraceHeader")
        .and_then(|h| Trace::parse(h));
    let span = tracing::info_span!(
        "job",
        message_id,
        job_id = %job.call_id,
        chat_id = %job.chat_id,
        attempt = job.attempt,
        kind = ?job.kind,
        xrayTraceId = trace.as_ref().map(|t| t.root.as_str()),
    );
    // The job's trace span: a consumer of the tool queue, joined to the turn that sent it.
    let traced =
        shared::telemetry::consumer_span(&format!("process tool-queue {:?}", job.kind), |name| {
            message
                .message_attributes
                .get(name)
                .and_then(|a| a.string_value.clone())
        });
    run(deps, message, &job, body, trace.as_ref())
        .instrument(traced)
        .instrument(span)
        .await
}

async fn run(
    deps: &Deps,
    message: &SqsMessage,
    job: &ToolJob,
    body: &str,
    trace: Option<&Trace>,
) -> bool {
    match deps.pipeline.run_job(job, trace).await {
        Ok(report) => {
            observe(deps, Some(job), report_status(&report));
            settle(deps, job, body, report).await
        }
        Err(e) if receive_count(message) >= deps.max_receive_count => {
            tracing::error!(error = %e, "tool job could not be handled on its last delivery; SQS moves it to the dead-letter queue");
            observe(deps, Some(job), "error");
            dead_lettered(deps, Some(job));
            give_up(deps, job, &e).await;
            false
        }
        Err(e) => {
            tracing::error!(error = %e, "tool job could not be handled; SQS will deliver it again");
            observe(deps, Some(job), "error");
            false
        }
    }
}

/// How a job's delivery ended, as `WorkerAttempts` counts it.
fn report_status(report: &JobReport) -> &'static str {
    match report {
        JobReport::Ran { status, .. } => status.as_str(),
        JobReport::AlreadySucceeded(_) => "redelivered",
        JobReport::Skipped(_) => "skipped",
    }
}

/// One delivery handled, by how it ended.
fn observe(deps: &Deps, job: Option<&ToolJob>, status: &'static str) {
    deps.pipeline.metrics.emit(
        Point::new()
            .dimension(Dimension::Status, status)
            .count(Metric::WorkerAttempts, 1)
            .property("job_id", job.map(|j| j.call_id.as_str()))
            .property("attempt", job.map(|j| j.attempt)),
    );
}

/// A message that ends in the dead-letter queue (`None`: not a tool job).
fn dead_lettered(deps: &Deps, job: Option<&ToolJob>) {
    deps.pipeline.metrics.emit(
        Point::new()
            .count(Metric::WorkerDeadLetters, 1)
            .property("job_id", job.map(|j| j.call_id.as_str())),
    );
}

/// How often SQS has delivered `message` (`ApproximateReceiveCount`; 1 when absent).
fn receive_count(message: &SqsMessage) -> u32 {
    message
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

/// Fails the job's call if it is still queued at the job's attempt, so the audit log says
/// why and the next identical call runs at once. A call that started is left to its lease.
async fn give_up(deps: &Deps, job: &ToolJob, error: &shared::Error) {
    let reason = format!(
        "the tool worker gave up after {} deliveries: {error}",
        deps.max_receive_count
    );
    match deps
        .pipeline
        .ledger
        .abandon(&job.chat_id, &job.call_id, job.attempt, &reason)
        .await
    {
        Ok(()) => tracing::warn!("the job's call is failed with the reason"),
        Err(e) => {
            tracing::warn!(error = %e, "could not fail the job's call; its queued deadline frees it")
        }
    }
}

/// Merges a succeeded job's session-state patch into its chat. A failed write is never
/// acknowledged: the redelivered job finds the call succeeded and applies the stored patch
/// then. (A patch merges fields, so applying it twice sets the same values again; a field a
/// later turn changed in between would be set back, a window of one redelivery.)
async fn apply_patch(deps: &Deps, job: &ToolJob, result: &ToolExecutionResult) -> bool {
    let Some(patch) = &result.state_patch else {
        return true;
    };
    match deps
        .chats
        .patch_state(&job.owner_id, &job.chat_id, patch)
        .await
    {
        Ok(_) => true,
        Err(shared::Error::NotFound) => {
            tracing::warn!("the job's chat is gone; its session-state patch is dropped");
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "applying the job's session-state patch failed; SQS will deliver the job again");
            false
        }
    }
}

/// What a job's report means for its message; `false` asks SQS to deliver it again.
async fn settle(deps: &Deps, job: &ToolJob, body: &str, report: JobReport) -> bool {
    match report {
        JobReport::Skipped(reason) => {
            tracing::info!(reason, "nothing to run");
            true
        }
        JobReport::Ran {
            status: CallStatus::Succeeded,
            result,
            ..
        } => {
            tracing::info!("tool job succeeded");
            apply_patch(deps, job, &result).await
        }
        JobReport::Ran {
            status: CallStatus::Canceled,
            ..
        } => {
            tracing::info!("tool job canceled while it ran; its result was discarded");
            true
        }
        JobReport::AlreadySucceeded(result) => {
            tracing::info!("tool job had succeeded already");
            apply_patch(deps, job, &result).await
        }
        JobReport::Ran {
            status,
            retry: Some((next, delay)),
            ..
        } => {
            tracing::warn!(
                ?status,
                next_attempt = next,
                delay_secs = delay.as_secs(),
                "tool job failed; retry queued"
            );
            true
        }
        JobReport::Ran {
            status,
            attempt,
            result,
            ..
        } => {
            let reason = format!(
                "attempt {attempt} ended {}: {}; no retry",
                status.as_str(),
                result.message
            );
            tracing::error!(
                reason,
                "tool job gave up; parking it in the dead-letter queue"
            );
            match deps.dead_letters.park(body, &reason).await {
                Ok(()) => {
                    dead_lettered(deps, Some(job));
                    true
                }
                Err(e) => {
                    tracing::error!(error = %e, "parking in the dead-letter queue failed");
                    false
                }
            }
        }
    }
}
