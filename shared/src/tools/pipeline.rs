//! Runs the tool calls of one LLM step (seed 000 §4.1, seed 001): each call is checked
//! (known, allowed, valid arguments), rate-limited, recorded and claimed in the ledger,
//! executed under its own timeout, and finished; calls of one step run concurrently, at
//! most `max_parallel`, and one failing never sinks the others.
//!
//! Every call ends as a [`CallOutcome`] whose result message is what the LLM reads next, so
//! nothing here aborts a turn: the caller decides what a rejected call means.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::agents::ToolPolicy;
use super::{Caller, RegisteredTool, ToolContext, ToolRegistry};
use crate::Error;
use crate::domain::session::{SessionState, SessionStatePatch};
use crate::domain::tool_call::{ToolCallRecord, ToolCallStatus, ToolName};
use crate::domain::tool_result::ToolExecutionResult;
use crate::http::ApiError;
use crate::jobs::{JobKind, JobQueue, RetrySchedule, ToolJob};
use crate::ledger::{Claim, ClaimMode, ClaimRequest, ClaimedCall, Outcome, ToolCallLedger};
use crate::limits::{Decision, RateLimiter};
use crate::llm::ToolCallRequest;

/// Seed 001: at most 5 tools per message.
pub const DEFAULT_MAX_PARALLEL: usize = 5;
/// Added to a tool's timeout for its ledger lease, so a live executor is never taken over.
const LEASE_MARGIN: Duration = Duration::from_secs(30);
/// How often a duplicate of an in-flight call looks for the original's result.
const DUPLICATE_POLL: Duration = Duration::from_millis(100);
/// Less time than this left in the budget: the call is not started at all.
const MIN_TOOL_TIME: Duration = Duration::from_millis(50);

/// How a call ended, as the client and the LLM see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Succeeded,
    Failed,
    Timeout,
    /// The user's per-tool limit is used up; metadata carries `reset_at`.
    RateLimited,
    /// Unknown tool, tool outside the profile, or invalid arguments: the LLM may fix it.
    Rejected,
    /// Not run: too many calls in the step, or the turn's tool budget is spent.
    Skipped,
    /// Sent to the tool queue; the result comes on a later turn.
    Queued,
}

/// Something worth telling the client while a step runs.
#[derive(Debug, Clone, PartialEq)]
pub enum PipelineEvent {
    Started {
        tool: ToolName,
        job_id: String,
        deduped: bool,
        /// True when the call went to the tool queue instead of running now.
        queued: bool,
    },
    Finished {
        tool: ToolName,
        job_id: Option<String>,
        status: CallStatus,
        metadata: Map<String, Value>,
    },
    /// Seed 000 §15 debug entries; the caller forwards them only when debugging.
    Debug { kind: &'static str, payload: Value },
}

/// Where a step's events go (an SSE stream, a log, nowhere).
pub trait EventSink: Send + Sync {
    fn event(&self, event: PipelineEvent);
}

/// Drops every event: for callers without a client (e.g. a queue worker).
pub struct NoEvents;

impl EventSink for NoEvents {
    fn event(&self, _: PipelineEvent) {}
}

/// One call of a step, finished.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The call as the LLM made it.
    pub call: ToolCallRequest,
    pub tool: Option<ToolName>,
    /// The ledger's id; `None` when the call was never recorded (rejected, limited, skipped).
    pub job_id: Option<String>,
    pub status: CallStatus,
    pub deduped: bool,
    /// Worth retrying later (upstream unavailable or slow).
    pub retryable: bool,
    /// The final result comes later from the tool worker (a queued background call or a
    /// scheduled retry); the ledger record under `job_id` will hold it.
    pub background: bool,
    /// What the LLM reads as the tool message; `raw` for the client.
    pub result: ToolExecutionResult,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepOutcome {
    /// In the order the LLM made the calls.
    pub calls: Vec<CallOutcome>,
    /// The succeeded calls' patches, merged in call order.
    pub state_patch: SessionStatePatch,
}

impl StepOutcome {
    /// True when a call was rejected as the LLM's mistake (a repair round is due).
    pub fn needs_repair(&self) -> bool {
        self.calls.iter().any(|c| c.status == CallStatus::Rejected)
    }
}

pub struct Pipeline {
    pub registry: Arc<ToolRegistry>,
    pub ledger: Arc<dyn ToolCallLedger>,
    pub limiter: Arc<dyn RateLimiter>,
    pub max_parallel: usize,
    /// The tool queue for retries and background calls; `None` runs everything inline and
    /// retries nothing.
    pub jobs: Option<JobScheduler>,
}

/// The tool queue and the retry schedule.
#[derive(Clone)]
pub struct JobScheduler {
    pub queue: Arc<dyn JobQueue>,
    pub retry: RetrySchedule,
}

/// What the worker did with a job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobReport {
    /// The attempt ran. `retry` is the next attempt and its delay when one was scheduled.
    Ran {
        status: CallStatus,
        attempt: u32,
        retry: Option<(u32, Duration)>,
        result: Box<ToolExecutionResult>,
    },
    /// Nothing to run (done, canceled, superseded or held elsewhere); acknowledge the message.
    Skipped(String),
}

/// How a checked call runs: until when, and whether through the tool queue.
#[derive(Debug, Clone, Copy)]
struct Run {
    budget: Instant,
    background: bool,
}

/// The ledger lease of an attempt with this timeout.
fn lease_for(timeout: Duration) -> time::Duration {
    time::Duration::try_from(timeout + LEASE_MARGIN).unwrap_or(time::Duration::MINUTE)
}

/// Tells the LLM (and the client, in metadata) that a failed call will be tried again.
fn with_retry_note(
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

/// A call that passed the checks and may run.
struct Accepted<'a> {
    index: usize,
    tool: &'a RegisteredTool,
    request: Value,
}

impl Pipeline {
    /// Runs one step's calls. `allowed` is the agent profile's tool list; `budget` is when
    /// the turn's tool time runs out.
    pub async fn run_step(
        &self,
        ctx: &ToolContext,
        policy: ToolPolicy<'_>,
        calls: &[ToolCallRequest],
        budget: Instant,
        events: &dyn EventSink,
    ) -> StepOutcome {
        let allowed = policy.allowed;
        let mut outcomes: Vec<Option<CallOutcome>> = vec![None; calls.len()];
        let mut accepted = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            match self.check(ctx, allowed, call, index) {
                Ok((tool, request)) => {
                    events.event(PipelineEvent::Debug {
                        kind: "tool_pipeline_start",
                        payload: json!({ "tool": tool.tool.name(), "request": request }),
                    });
                    accepted.push(Accepted {
                        index,
                        tool,
                        request,
                    });
                }
                Err(outcome) => {
                    events.event(PipelineEvent::Debug {
                        kind: "tool_call_rejected",
                        payload: json!({
                            "tool": call.name,
                            "status": outcome.status,
                            "message": outcome.result.message,
                        }),
                    });
                    outcomes[index] = Some(*outcome);
                }
            }
        }
        let runs = accepted.into_iter().map(|a| async move {
            let background = policy.background.contains(&a.tool.tool.name());
            let outcome = self.run_one(
                ctx,
                &calls[a.index],
                a.tool,
                a.request,
                Run { budget, background },
                events,
            );
            (a.index, outcome.await)
        });
        for (index, outcome) in join_all(runs).await {
            outcomes[index] = Some(outcome);
        }
        let calls: Vec<CallOutcome> = outcomes.into_iter().flatten().collect();
        let mut state_patch = SessionStatePatch::default();
        for call in &calls {
            if let Some(patch) = &call.result.state_patch {
                state_patch.merge(patch.clone());
            }
        }
        if !state_patch.is_empty() {
            events.event(PipelineEvent::Debug {
                kind: "tool_pipeline_state_patch",
                payload: serde_json::to_value(&state_patch).unwrap_or_default(),
            });
        }
        StepOutcome { calls, state_patch }
    }

    /// The synchronous checks: position, name, profile, JSON, schema and domain rules.
    #[allow(clippy::result_large_err)]
    fn check<'a>(
        &'a self,
        ctx: &ToolContext,
        allowed: &[ToolName],
        call: &ToolCallRequest,
        index: usize,
    ) -> Result<(&'a RegisteredTool, Value), Box<CallOutcome>> {
        let refuse = |tool: Option<ToolName>, status: CallStatus, message: String| {
            Box::new(CallOutcome {
                call: call.clone(),
                tool,
                job_id: None,
                status,
                deduped: false,
                retryable: false,
                background: false,
                result: ToolExecutionResult::failed(message),
            })
        };
        if index >= self.max_parallel {
            return Err(refuse(
                call.name.parse().ok(),
                CallStatus::Skipped,
                format!(
                    "Not run: at most {} tool calls run per step. Call it again in the next step if it is still needed.",
                    self.max_parallel
                ),
            ));
        }
        let offered = || {
            allowed
                .iter()
                .filter(|t| self.registry.get(**t).is_some())
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some(name) = call.name.parse::<ToolName>().ok() else {
            return Err(refuse(
                None,
                CallStatus::Rejected,
                format!(
                    "Unknown tool `{}`. Available tools: {}.",
                    call.name,
                    offered()
                ),
            ));
        };
        let tool = match self.registry.get(name) {
            Some(tool) if allowed.contains(&name) => tool,
            _ => {
                return Err(refuse(
                    Some(name),
                    CallStatus::Rejected,
                    format!(
                        "Tool `{name}` is not available here. Available tools: {}.",
                        offered()
                    ),
                ));
            }
        };
        let text = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        let args: Value = serde_json::from_str(text).map_err(|e| {
            refuse(
                Some(name),
                CallStatus::Rejected,
                format!("The arguments are not valid JSON ({e}). Send a JSON object."),
            )
        })?;
        match tool.tool.prepare(args, &ctx.session_state) {
            Ok(request) => Ok((tool, request)),
            Err(Error::Invalid(problem)) => Err(refuse(
                Some(name),
                CallStatus::Rejected,
                format!("Invalid arguments for {name}: {problem}. Correct them and call again."),
            )),
            Err(other) => {
                tracing::error!(tool = %name, error = %other, "preparing a tool call failed");
                Err(refuse(
                    Some(name),
                    CallStatus::Failed,
                    format!("{name} could not be prepared."),
                ))
            }
        }
    }

    /// Rate limit, claim, then execute, queue or reuse; finish; schedule a retry.
    async fn run_one(
        &self,
        ctx: &ToolContext,
        call: &ToolCallRequest,
        registered: &RegisteredTool,
        request: Value,
        run: Run,
        events: &dyn EventSink,
    ) -> CallOutcome {
        let name = registered.tool.name();
        let settings = registered.settings;
        let outcome =
            |status: CallStatus, job_id: Option<String>, result: ToolExecutionResult| CallOutcome {
                call: call.clone(),
                tool: Some(name),
                job_id,
                status,
                deduped: false,
                retryable: false,
                background: false,
                result,
            };
        let background = run.background && self.jobs.is_some();
        let now = Instant::now();
        let deadline = (now + settings.timeout).min(run.budget);
        if !background && deadline.saturating_duration_since(now) < MIN_TOOL_TIME {
            let result =
                ToolExecutionResult::failed("Not run: this turn's time for tools is used up.");
            return outcome(CallStatus::Skipped, None, result);
        }

        if let Some(limit) = settings.rate_limit {
            match self.limiter.check(&ctx.user_id, name, limit).await {
                Ok(Decision::Allowed { .. }) => {}
                Ok(Decision::Limited { reset_at }) => {
                    let reset = reset_at
                        .format(&time::format_description::well_known::Rfc3339)
                        .unwrap_or_default();
                    let result = ToolExecutionResult::failed(format!(
                        "Rate limit reached for {name}: at most {} calls per {} s. It can be used again after {reset}. Tell the user.",
                        limit.max,
                        limit.window.whole_seconds()
                    ))
                    .with_metadata("reset_at", reset)
                    .with_metadata("limit", limit.max);
                    events.event(PipelineEvent::Finished {
                        tool: name,
                        job_id: None,
                        status: CallStatus::RateLimited,
                        metadata: result.metadata.clone(),
                    });
                    return outcome(CallStatus::RateLimited, None, result);
                }
                Err(e) => {
                    tracing::error!(tool = %name, error = %e, "rate-limit check failed");
                    let result =
                        ToolExecutionResult::failed(format!("{name} is unavailable right now."));
                    let mut failed = outcome(CallStatus::Failed, None, result);
                    failed.retryable = true;
                    return failed;
                }
            }
        }

        let lease = lease_for(settings.timeout);
        let claim = self
            .ledger
            .record_and_claim(ClaimRequest {
                owner_id: ctx.user_id.clone(),
                chat_id: ctx.chat_id.clone(),
                tool: name,
                request: request.clone(),
                mode: if background {
                    ClaimMode::Enqueue
                } else {
                    ClaimMode::Run { lease }
                },
            })
            .await;
        let mut claimed = match claim {
            Ok(Claim::Claimed(claimed)) => claimed,
            Ok(Claim::Duplicate(record)) => {
                events.event(PipelineEvent::Started {
                    tool: name,
                    job_id: record.id.clone(),
                    deduped: true,
                    queued: false,
                });
                // A background duplicate is not waited for: the original's job delivers it.
                let wait_until = if background { Instant::now() } else { deadline };
                let reused = self.reuse(ctx, call, record, wait_until).await;
                events.event(PipelineEvent::Finished {
                    tool: name,
                    job_id: reused.job_id.clone(),
                    status: reused.status,
                    metadata: reused.result.metadata.clone(),
                });
                return reused;
            }
            Err(e) => {
                tracing::error!(tool = %name, error = %e, "recording the tool call failed");
                let result =
                    ToolExecutionResult::failed(format!("{name} is unavailable right now."));
                let mut failed = outcome(CallStatus::Failed, None, result);
                failed.retryable = true;
                return failed;
            }
        };
        if claimed.status == ToolCallStatus::Queued {
            match self
                .enqueue(ctx, &claimed, JobKind::Background, Duration::ZERO)
                .await
            {
                Ok(()) => {
                    events.event(PipelineEvent::Started {
                        tool: name,
                        job_id: claimed.id.clone(),
                        deduped: false,
                        queued: true,
                    });
                    let result = ToolExecutionResult::failed(format!(
                        "{name} runs in the background as job {}. Its result is not available in this turn; it will be on a later one. Tell the user it is in progress.",
                        claimed.id
                    ))
                    .with_metadata("queued", true);
                    let mut queued = outcome(CallStatus::Queued, Some(claimed.id), result);
                    queued.background = true;
                    return queued;
                }
                // No queue right now: run it here rather than leave it waiting for nobody.
                Err(e) => {
                    tracing::error!(tool = %name, error = %e, "queueing a background call failed; running it inline");
                    match self
                        .ledger
                        .start_queued(&claimed.chat_id, &claimed.id, claimed.attempt, lease)
                        .await
                    {
                        Ok(started) => claimed = started,
                        Err(e) => {
                            tracing::error!(tool = %name, error = %e, "starting the call failed");
                            let result = ToolExecutionResult::failed(format!(
                                "{name} is unavailable right now."
                            ));
                            return outcome(CallStatus::Failed, Some(claimed.id), result);
                        }
                    }
                }
            }
        }
        events.event(PipelineEvent::Started {
            tool: name,
            job_id: claimed.id.clone(),
            deduped: false,
            queued: false,
        });
        let tool_ctx = ToolContext {
            deadline,
            ..ctx.clone()
        };
        let (status, mut result, retryable) = self
            .execute_claimed(&tool_ctx, registered, &request, &claimed, events)
            .await;
        let mut background = false;
        if retryable && let Some((attempt, delay)) = self.schedule_retry(ctx, &claimed).await {
            result = with_retry_note(result, attempt, delay);
            background = true;
        }
        events.event(PipelineEvent::Finished {
            tool: name,
            job_id: Some(claimed.id.clone()),
            status,
            metadata: result.metadata.clone(),
        });
        CallOutcome {
            retryable,
            background,
            ..outcome(status, Some(claimed.id), result)
        }
    }

    /// Executes a claimed (running) attempt under `ctx.deadline` and writes how it ended.
    /// Returns the status, the result for the LLM, and whether a retry could help.
    async fn execute_claimed(
        &self,
        ctx: &ToolContext,
        registered: &RegisteredTool,
        request: &Value,
        claimed: &ClaimedCall,
        events: &dyn EventSink,
    ) -> (CallStatus, ToolExecutionResult, bool) {
        let name = registered.tool.name();
        let started = Instant::now();
        let executed = tokio::time::timeout(
            ctx.deadline.saturating_duration_since(started),
            registered.tool.execute(ctx, request),
        )
        .await;
        let (status, result, retryable, ledger_outcome) =
            settle(name, executed, ctx.deadline, started);
        events.event(PipelineEvent::Debug {
            kind: "tool_pipeline_execution",
            payload: json!({
                "tool": name,
                "job_id": claimed.id,
                "attempt": claimed.attempt,
                "status": status,
                "duration_ms": started.elapsed().as_millis() as u64,
            }),
        });
        self.finish(claimed, ledger_outcome).await;
        (status, result, retryable)
    }

    /// Sends the job for `claimed`'s queued attempt.
    async fn enqueue(
        &self,
        ctx: &ToolContext,
        claimed: &ClaimedCall,
        kind: JobKind,
        delay: Duration,
    ) -> crate::Result<()> {
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
    async fn schedule_retry(
        &self,
        ctx: &ToolContext,
        failed: &ClaimedCall,
    ) -> Option<(u32, Duration)> {
        let jobs = self.jobs.as_ref()?;
        if !jobs.retry.allows_retry_after(failed.attempt) {
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
        let delay = jobs.retry.delay_after(failed.attempt);
        match self.enqueue(ctx, &next, JobKind::Retry, delay).await {
            Ok(()) => {
                tracing::info!(call_id = %next.id, attempt = next.attempt, delay_secs = delay.as_secs(), "retry scheduled");
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

    /// Runs one tool job from the queue (the tool worker): starts the queued attempt it names
    /// (queued → running, conditional), executes it like a chat turn would, finishes it, and
    /// schedules the next attempt after a retryable failure. A job whose attempt is no
    /// longer queued (done, canceled, superseded, held by another worker) is skipped.
    /// `Err` means the ledger could not be read or written: let the queue deliver it again.
    pub async fn run_job(&self, job: &ToolJob) -> crate::Result<JobReport> {
        let record = match self
            .ledger
            .get(&job.owner_id, &job.chat_id, &job.call_id)
            .await
        {
            Ok(record) => record,
            Err(Error::NotFound) => {
                return Ok(JobReport::Skipped("no such tool call".into()));
            }
            Err(e) => return Err(e),
        };
        if record.attempt != job.attempt {
            return Ok(JobReport::Skipped(format!(
                "attempt {} was superseded by attempt {}",
                job.attempt, record.attempt
            )));
        }
        if record.status != ToolCallStatus::Queued {
            return Ok(JobReport::Skipped(format!(
                "attempt {} is already {}",
                job.attempt, record.status
            )));
        }
        let registered = self.registry.get(record.tool);
        let settings = registered.map(|r| r.settings).unwrap_or_default();
        let claimed = match self
            .ledger
            .start_queued(
                &job.chat_id,
                &job.call_id,
                job.attempt,
                lease_for(settings.timeout),
            )
            .await
        {
            Ok(claimed) => claimed,
            Err(Error::Fenced { current, .. }) => {
                return Ok(JobReport::Skipped(format!(
                    "attempt {} was superseded by attempt {current}",
                    job.attempt
                )));
            }
            Err(Error::IllegalTransition { from, .. }) => {
                return Ok(JobReport::Skipped(format!(
                    "attempt {} is already {from}",
                    job.attempt
                )));
            }
            Err(Error::NotFound) => return Ok(JobReport::Skipped("no such tool call".into())),
            Err(e) => return Err(e),
        };
        let Some(registered) = registered else {
            let message = format!("{} is not available in this deployment", record.tool);
            self.finish(&claimed, Outcome::Failed(message.clone()))
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
            caller: Caller::Service,
            session_state: SessionState::default(),
            locale: job.locale,
            deadline: Instant::now() + settings.timeout,
        };
        let (status, mut result, retryable) = self
            .execute_claimed(&ctx, registered, &record.request, &claimed, &NoEvents)
            .await;
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

    /// Writes the attempt's end. A failure here is logged, not returned: the result is
    /// already computed, and the lease lets a later call take over the record.
    async fn finish(&self, claimed: &ClaimedCall, outcome: Outcome) {
        if let Err(e) = self.ledger.finish(claimed, outcome).await {
            tracing::error!(call_id = %claimed.id, attempt = claimed.attempt, error = %e, "finishing the tool call failed");
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
        let mut outcome = deduped(
            call,
            record,
            status,
            true,
            ToolExecutionResult::failed(message),
        );
        outcome.background = in_flight;
        outcome
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
    deduped(call, record, status, false, result)
}

fn deduped(
    call: &ToolCallRequest,
    record: ToolCallRecord,
    status: CallStatus,
    retryable: bool,
    result: ToolExecutionResult,
) -> CallOutcome {
    CallOutcome {
        call: call.clone(),
        tool: Some(record.tool),
        job_id: Some(record.id),
        status,
        deduped: true,
        retryable,
        background: false,
        result,
    }
}

type Settled = (CallStatus, ToolExecutionResult, bool, Outcome);

/// Maps an execution (or its timeout) to the client status, the LLM's result, whether a
/// retry could help, and the ledger outcome. Error texts shown are the client-safe ones.
fn settle(
    name: ToolName,
    executed: Result<crate::Result<ToolExecutionResult>, tokio::time::error::Elapsed>,
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
            let retryable = matches!(e, Error::Upstream { .. } | Error::UpstreamTimeout { .. });
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
