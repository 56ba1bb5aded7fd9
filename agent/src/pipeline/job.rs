//! One queued attempt from the tool queue (the tool worker's entry): admitted by the ledger
//! alone (queued → running, conditional), then run and recorded like a call in a chat turn.

use std::time::{Duration, Instant};

use serde_json::Value;
use shared::Error;
use shared::domain::session::SessionState;
use shared::domain::tool_call::ToolCallStatus;
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::{ClaimedCall, Outcome};
use shared::observability::Trace;

use super::record::with_retry_note;
use super::{CallStatus, Pipeline, lease_for};
use crate::jobs::ToolJob;
use agent_core::events::NoEvents;
use agent_tools::ToolContext;

/// What the worker did with a job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobReport {
    /// The attempt ran. `retry` is the next attempt and its delay when one was scheduled.
    Ran {
        /// How the attempt ended.
        status: CallStatus,
        /// The attempt that ran: the job's, or a new one when it took over an expired lease.
        attempt: u32,
        /// The next attempt's number and delay, if one was queued.
        retry: Option<(u32, Duration)>,
        /// The tool's result, with a note on the retry when one was queued.
        result: Box<ToolExecutionResult>,
    },
    /// The attempt had succeeded already (a redelivery): its stored result, so the worker
    /// can finish what follows a success (the session-state patch) if that failed before.
    AlreadySucceeded(Box<ToolExecutionResult>),
    /// Nothing to run (failed, canceled, superseded or held elsewhere); acknowledge the
    /// message.
    Skipped(String),
}

impl Pipeline {
    /// Runs one tool job: starts the queued attempt it names, executes it like a chat turn
    /// would, finishes it, and schedules the next attempt after a retryable failure. A job
    /// whose attempt is no longer queued (done, canceled, superseded, held by another worker)
    /// is skipped. `Err` means the ledger could not be read or written: let the queue deliver
    /// it again.
    pub async fn run_job(&self, job: &ToolJob, trace: Option<&Trace>) -> shared::Result<JobReport> {
        let (claimed, request) = match self.start_job(job).await? {
            Ok(started) => started,
            Err(skipped) => return Ok(skipped),
        };
        let Some(registered) = self.registry.resolve_ready(claimed.tool, &request).await else {
            let message = format!("{} is not available in this deployment", claimed.tool);
            self.finish(&claimed, Outcome::Failed(message.clone()), &[])
                .await;
            return Ok(JobReport::Ran {
                status: CallStatus::Failed,
                attempt: claimed.attempt,
                retry: None,
                result: Box::new(ToolExecutionResult::failed(message)),
            });
        };
        let ctx = ToolContext {
            user_id: job.owner_id.clone(),
            chat_id: job.chat_id.clone(),
            session_state: SessionState::default(),
            // Likewise: preferences were applied when the request was checked.
            memory: Default::default(),
            // The job's request was checked in its turn; nothing here reads the date.
            today: time::OffsetDateTime::now_utc().date(),
            locale: job.locale,
            deadline: Instant::now() + registered.settings.timeout,
            progress: Default::default(),
            trace_header: trace.map(|t| t.header.clone()),
        };
        let started = Instant::now();
        let (status, mut result, retryable) = self
            .execute_claimed(&ctx, &registered, &request, &claimed, &NoEvents)
            .await;
        self.observe_call(&ctx, claimed.tool, status, false, started);
        let retry = if retryable {
            self.schedule_retry(&ctx, &claimed).await
        } else {
            None
        };
        if let Some((attempt, delay)) = retry {
            result = with_retry_note(result, attempt, delay);
        }
        Ok(JobReport::Ran {
            status,
            attempt: claimed.attempt,
            retry,
            result: Box::new(result),
        })
    }

    /// Reads the job's record and starts its attempt: the claim and the canonical request,
    /// or `Ok(Err(report))` when there is nothing to run.
    async fn start_job(
        &self,
        job: &ToolJob,
    ) -> shared::Result<Result<(ClaimedCall, Value), JobReport>> {
        let skipped = |reason: String| Ok(Err(JobReport::Skipped(reason)));
        let record = match self
            .ledger
            .get(&job.owner_id, &job.chat_id, &job.call_id)
            .await
        {
            Ok(record) => record,
            Err(Error::NotFound) => return skipped("no such tool call".into()),
            Err(e) => return Err(e),
        };
        if record.attempt != job.attempt {
            return skipped(format!(
                "attempt {} was superseded by attempt {}",
                job.attempt, record.attempt
            ));
        }
        if record.status == ToolCallStatus::Succeeded
            && let Some(result) = record
                .response
                .and_then(|r| serde_json::from_value::<ToolExecutionResult>(r).ok())
        {
            return Ok(Err(JobReport::AlreadySucceeded(Box::new(result))));
        }
        let running = record.status == ToolCallStatus::Running;
        if record.status != ToolCallStatus::Queued && !running {
            return skipped(format!(
                "attempt {} is already {}",
                job.attempt, record.status
            ));
        }
        let settings = self
            .registry
            .resolve_ready(record.tool, &record.request)
            .await
            .map(|r| r.settings)
            .unwrap_or_default();
        let lease = lease_for(settings.timeout);
        // A job redelivered while its attempt runs: the worker that ran it may have died.
        // Only an expired lease is taken over (under a new attempt, which fences the old).
        let claim = if running {
            self.ledger
                .take_over_expired(&job.chat_id, &job.call_id, job.attempt, lease)
                .await
        } else {
            self.ledger
                .start_queued(&job.chat_id, &job.call_id, job.attempt, lease)
                .await
        };
        match claim {
            Ok(claimed) => Ok(Ok((claimed, record.request))),
            Err(Error::Fenced { current, .. }) => skipped(format!(
                "attempt {} was superseded by attempt {current}",
                job.attempt
            )),
            Err(Error::IllegalTransition { from, .. }) => {
                skipped(format!("attempt {} is already {from}", job.attempt))
            }
            Err(Error::NotFound) => skipped("no such tool call".into()),
            Err(e) => Err(e),
        }
    }
}
