//! Phase 3 of a step: write how each attempt ended, and put the next attempt of a call that
//! failed for a passing reason on the tool queue.

use std::time::Duration;

use shared::Error;
use shared::companion::Companion;
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::{ClaimedCall, Outcome};

use super::Pipeline;
use crate::guard::payload::{CUT_MARKER, cut_fields};

/// The flag of a call whose result had fields the output guard cut before it was stored.
pub const STORED_CUT_FLAG: &str = "output_guard_cut";
use crate::jobs::{JobKind, ToolJob};
use agent_tools::ToolContext;

/// Tells the LLM (and the client, in metadata) that a failed call will be tried again.
pub(super) fn with_retry_note(
    result: ToolExecutionResult,
    attempt: u32,
    delay: Duration,
) -> ToolExecutionResult {
    let mut result = result
        .with_metadata("retry_attempt", attempt)
        .with_metadata("retry_after_secs", delay.as_secs());
    result.message.push_str(&format!(
        " It will be retried automatically in the background (attempt {attempt}); the result will be available on a later turn."
    ));
    result
}

impl Pipeline {
    /// Ends the claimed attempt in the ledger, with `extras` (its result's cache entry) in
    /// the same write. `false` when the attempt no longer held the call (canceled by its
    /// owner, or taken over after its lease): its result must not be used. A ledger failure
    /// is logged, not returned: the result is already computed, and the lease lets a later
    /// call take over the record.
    pub(super) async fn finish(
        &self,
        claimed: &ClaimedCall,
        outcome: Outcome,
        extras: &[Companion],
    ) -> bool {
        let (outcome, cut) = self.guarded(outcome);
        match self.ledger.finish_with(claimed, outcome, extras).await {
            Ok(()) => {
                if cut > 0 {
                    // The audit keeps that something was cut, not what.
                    tracing::warn!(call_id = %claimed.id, fields = cut, "output guard: fields of a tool result were cut before it was stored");
                    if let Err(e) = self
                        .ledger
                        .flag(&claimed.chat_id, &claimed.id, &[STORED_CUT_FLAG])
                        .await
                    {
                        tracing::error!(call_id = %claimed.id, error = %e, "flagging the tool call failed");
                    }
                }
                true
            }
            Err(e @ (Error::Fenced { .. } | Error::IllegalTransition { .. })) => {
                tracing::info!(call_id = %claimed.id, attempt = claimed.attempt, reason = %e, "the call was canceled or taken over while it ran; its result is discarded");
                false
            }
            Err(e) => {
                tracing::error!(call_id = %claimed.id, attempt = claimed.attempt, error = %e, "finishing the tool call failed");
                true
            }
        }
    }

    /// `outcome` as the ledger may keep it: its texts through the output guard's checks;
    /// how many fields were cut.
    fn guarded(&self, outcome: Outcome) -> (Outcome, usize) {
        let guard = self.stored_texts.guard();
        let text = |message: String| match guard.text(&message) {
            Some(shown) => shown,
            None => message,
        };
        match outcome {
            Outcome::Succeeded(mut value) => {
                let before = cut_fields(&value);
                guard.value(&mut value);
                let cut = cut_fields(&value).saturating_sub(before);
                (Outcome::Succeeded(value), cut)
            }
            Outcome::Failed(message) => {
                let shown = text(message);
                let cut = usize::from(shown == CUT_MARKER);
                (Outcome::Failed(shown), cut)
            }
            Outcome::Timeout(message) => (Outcome::Timeout(text(message)), 0),
            Outcome::Canceled(message) => (Outcome::Canceled(text(message)), 0),
        }
    }

    /// Sends the job for `claimed`'s queued attempt.
    pub(super) async fn enqueue(
        &self,
        ctx: &ToolContext,
        claimed: &ClaimedCall,
        kind: JobKind,
        delay: Duration,
    ) -> shared::Result<()> {
        let Some(jobs) = &self.jobs else {
            return Err(Error::Config("no tool queue configured".into()));
        };
        let job = ToolJob {
            v: ToolJob::VERSION,
            kind,
            owner_id: ctx.user_id.clone(),
            chat_id: claimed.chat_id.clone(),
            call_id: claimed.id.clone(),
            attempt: claimed.attempt,
            locale: ctx.locale,
        };
        jobs.queue.send(&job, delay).await
    }

    /// After a retryable failure of `failed`: queues the next attempt (failed|timeout →
    /// queued) with exponential backoff, unless the attempts are used up. Returns the new
    /// attempt and its delay. Best effort: a failure leaves the call as it ended.
    pub(super) async fn schedule_retry(
        &self,
        ctx: &ToolContext,
        failed: &ClaimedCall,
    ) -> Option<(u32, Duration)> {
        let jobs = self.jobs.as_ref()?;
        // The tool's own schedule (config/agents.toml) wins over the deployment's.
        let schedule = self
            .registry
            .get(failed.tool)
            .and_then(|r| r.settings.retry)
            .unwrap_or(jobs.retry);
        if !schedule.allows_retry_after(failed.attempt) {
            return None;
        }
        let next = self
            .ledger
            .requeue(&failed.chat_id, &failed.id, failed.attempt)
            .await
            .inspect_err(
                |e| tracing::warn!(call_id = %failed.id, error = %e, "queueing a retry failed"),
            )
            .ok()?;
        let delay = schedule.delay_after(failed.attempt);
        match self.enqueue(ctx, &next, JobKind::Retry, delay).await {
            Ok(()) => {
                tracing::info!(call_id = %next.id, attempt = next.attempt, delay_secs = delay.as_secs(), "retry scheduled");
                self.metrics.emit(
                    shared::metrics::Point::new()
                        .dimension(shared::metrics::Dimension::Tool, next.tool.as_str())
                        .count(shared::metrics::Metric::ToolRetries, 1)
                        .property("job_id", Some(next.id.as_str())),
                );
                Some((next.attempt, delay))
            }
            Err(e) => {
                tracing::error!(call_id = %next.id, error = %e, "sending a retry failed");
                if let Err(e) = self
                    .ledger
                    .withdraw(
                        &next.chat_id,
                        &next.id,
                        next.attempt,
                        "the retry could not be queued",
                    )
                    .await
                {
                    tracing::error!(call_id = %next.id, error = %e, "withdrawing an unsent retry failed");
                }
                None
            }
        }
    }
}
