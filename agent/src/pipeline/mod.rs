//! Runs the tool calls of one LLM step (seed 000 §4.1, seed 001) in three phases:
//!
//! 1. [`admit`]: each call is checked (position, known, in the profile, valid arguments),
//!    given time from the turn's budget, rate-limited, then recorded and claimed in the
//!    ledger, which dedupes it.
//! 2. [`run`]: the admitted calls run concurrently, each under its own timeout; a background
//!    call goes to the tool queue, a duplicate reuses (or waits for) the original's result.
//! 3. [`record`]: each attempt's end is written to the ledger (fenced by its attempt), and a
//!    retryable failure schedules the next attempt on the tool queue.
//!
//! Every call ends as a [`CallOutcome`] whose result message is what the LLM reads next, so
//! nothing here aborts a turn: the turn decides what a rejected call means. The tool worker
//! runs one queued attempt through the same run and record phases ([`Pipeline::run_job`]).

mod admit;
mod approval;
mod cache;
mod job;
mod record;
mod refuse;
mod run;

use crate::guard::payload::StoredTexts;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use shared::cache::ResultCache;
use shared::domain::session::SessionStatePatch;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::ToolCallLedger;
use shared::limits::RateLimiter;
use shared::metrics::{Dimension, Metric, Metrics, Point};

pub use agent_core::call_status::CallStatus;
pub use job::JobReport;

use crate::jobs::{JobQueue, RetrySchedule};
use crate::llm::ToolCallRequest;
use crate::profiles::ToolPolicy;
use agent_core::events::{self, EventSink, ToolResultData, TurnEvent};
use agent_core::genai;
use agent_tools::{ToolContext, ToolRegistry};
use tracing::Instrument;

/// Seed 001: at most 5 tools per message.
pub const DEFAULT_MAX_PARALLEL: usize = 5;

/// One call of a step, finished.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The call as the LLM made it.
    pub call: ToolCallRequest,
    /// The tool the call named (`mcp` for an external one); `None` when it named no tool
    /// we know.
    pub tool: Option<ToolName>,
    /// The ledger's id; `None` when the call was never recorded (rejected, limited, skipped).
    pub job_id: Option<String>,
    /// How the call ended, as the client and the LLM see it.
    pub status: CallStatus,
    /// An identical call's record answered it (its stored result, or that it still runs)
    /// instead of a run of its own.
    pub deduped: bool,
    /// Worth retrying later (upstream unavailable or slow).
    pub retryable: bool,
    /// The final result comes later from the tool worker (a queued background call or a
    /// scheduled retry); the ledger record under `job_id` will hold it.
    pub background: bool,
    /// What the LLM reads as the tool message; `raw` for the client.
    pub result: ToolExecutionResult,
}

impl CallOutcome {
    /// How the call went, as its `execute_tool` span says: the ledger's view.
    fn trace(&self, span: &tracing::Span) {
        let outcome = if self.status == CallStatus::AwaitingApproval {
            "approval_pending"
        } else if self.job_id.is_none() {
            "refused"
        } else if self.deduped {
            "deduplicated"
        } else if self.result.metadata.get("cached") == Some(&serde_json::Value::Bool(true)) {
            "cached"
        } else if self.background {
            "queued"
        } else {
            "executed"
        };
        genai::record_tool(span, outcome, self.status.as_str(), self.job_id.as_deref());
        genai::record_tool_content(span, &self.call.arguments, &self.result.message);
        if self.status.is_failure() && outcome != "refused" {
            genai::record_error(span, self.status.as_str());
        }
    }

    /// An outcome with no flags set; callers set the ones that apply.
    pub(crate) fn new(
        call: &ToolCallRequest,
        tool: Option<ToolName>,
        status: CallStatus,
        job_id: Option<String>,
        result: ToolExecutionResult,
    ) -> Self {
        Self {
            call: call.clone(),
            tool,
            job_id,
            status,
            deduped: false,
            retryable: false,
            background: false,
            result,
        }
    }

    /// The call could not be recorded or checked for a passing reason (storage down).
    fn unavailable(call: &ToolCallRequest, tool: ToolName, job_id: Option<String>) -> Self {
        let result = ToolExecutionResult::failed(format!("{tool} is unavailable right now."));
        Self {
            retryable: true,
            ..Self::new(call, Some(tool), CallStatus::Failed, job_id, result)
        }
    }

    /// Tells the client how the call ended.
    fn announce(&self, events: &dyn EventSink) {
        if let Some(tool) = self.tool {
            events.emit(TurnEvent::ToolResult(ToolResultData::ended(
                tool,
                self.job_id.clone(),
                self.status,
                self.result.metadata.clone(),
                self.result.raw.as_ref(),
            )));
        }
    }
}

/// One step's calls, finished, and what they change in the session state.
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

    fn collect(calls: Vec<CallOutcome>, events: &dyn EventSink) -> Self {
        let mut state_patch = SessionStatePatch::default();
        for call in &calls {
            if let Some(patch) = &call.result.state_patch {
                state_patch.merge(patch.clone());
            }
        }
        if !state_patch.is_empty() {
            events::debug(events, "tool_pipeline_state_patch", || {
                serde_json::to_value(&state_patch).unwrap_or_default()
            });
        }
        Self { calls, state_patch }
    }
}

/// Runs tool calls: the admit, run and record phases, with everything they need.
pub struct Pipeline {
    /// The tools that can be called, with their settings, and the external MCP servers'.
    pub registry: Arc<ToolRegistry>,
    /// Where every call is recorded, claimed, deduped and finished.
    pub ledger: Arc<dyn ToolCallLedger>,
    /// Counts each user's calls against the tools' rate limits.
    pub limiter: Arc<dyn RateLimiter>,
    /// At most this many calls of one step run; the ones after are skipped.
    pub max_parallel: usize,
    /// The tool queue for retries and background calls; `None` runs everything inline and
    /// retries nothing.
    pub jobs: Option<JobScheduler>,
    /// Results shared across chats and users (tools with `cache_secs`); `None`: no cache.
    pub cache: Option<Arc<dyn ResultCache>>,
    /// How long a call may wait for the user's approval before it expires.
    pub approval_window: Duration,
    /// Where each call's metrics go (calls by status, latency, dedupe hits, retries).
    pub metrics: Metrics,
    /// The output guard's checks for what the ledger keeps of a call: a field they cut is
    /// stored as the marker, and the call is flagged.
    pub stored_texts: StoredTexts,
}

/// The approval window unless configured (`APPROVAL_WINDOW_SECS`): a day.
pub const DEFAULT_APPROVAL_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The tool queue and the retry schedule.
#[derive(Clone)]
pub struct JobScheduler {
    /// Where retries and background calls are sent.
    pub queue: Arc<dyn JobQueue>,
    /// The deployment's retry schedule, for tools that set none of their own.
    pub retry: RetrySchedule,
}

impl Pipeline {
    /// Runs one step's calls: admits each, runs the admitted ones concurrently, records
    /// each as it ends. `policy` is the agent profile's; `limits` what is left of the turn's.
    pub async fn run_step(
        &self,
        ctx: &ToolContext,
        policy: ToolPolicy<'_>,
        calls: &[ToolCallRequest],
        limits: StepLimits,
        events: &dyn EventSink,
    ) -> StepOutcome {
        // One `execute_tool` span per call, from its admission to its record.
        let spans: Vec<tracing::Span> = calls
            .iter()
            .map(|call| genai::execute_tool(&call.name, &call.id))
            .collect();
        let admissions = join_all(calls.iter().enumerate().map(|(index, call)| {
            self.admit(ctx, policy, call, index, limits, events)
                .instrument(spans[index].clone())
        }))
        .await;
        let outcomes = join_all(admissions.into_iter().zip(spans).map(
            |(admission, span)| async move {
                let started = Instant::now();
                let outcome = self
                    .run_admitted(ctx, admission, events)
                    .instrument(span.clone())
                    .await;
                if let Some(tool) = outcome.tool {
                    self.observe_call(ctx, tool, outcome.status, outcome.deduped, started);
                }
                outcome.trace(&span);
                outcome
            },
        ))
        .await;
        StepOutcome::collect(outcomes, events)
    }

    /// A call's metrics: one call ended with `status`, after this long, deduped or not.
    fn observe_call(
        &self,
        ctx: &ToolContext,
        tool: ToolName,
        status: CallStatus,
        deduped: bool,
        started: Instant,
    ) {
        self.metrics.emit(
            Point::new()
                .dimension(Dimension::Tool, tool.as_str())
                .dimension(Dimension::Status, status.as_str())
                .rollup(&[Dimension::Tool])
                .count(Metric::ToolCalls, 1)
                .millis(Metric::ToolLatency, started.elapsed())
                .count(Metric::ToolDedupeHits, usize::from(deduped))
                .property(
                    "chat_id",
                    Some(ctx.chat_id.as_str()).filter(|c| !c.is_empty()),
                ),
        );
    }
}

/// What is left of the turn's limits when a step starts.
#[derive(Debug, Clone, Copy)]
pub struct StepLimits {
    /// When the turn's time for tools runs out.
    pub budget: Instant,
    /// Tool calls this message may still make (the cap per message, less earlier steps').
    pub calls_left: usize,
}

impl StepLimits {
    /// What a step with `calls` calls uses of the per-message cap: every call it could
    /// admit, whether or not it then ran.
    pub fn used_by(&self, calls: usize, max_parallel: usize) -> usize {
        calls.min(self.calls_left).min(max_parallel)
    }
}

/// Added to a tool's timeout for its ledger lease, so a live executor is never taken over.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// The ledger lease of an attempt with this timeout.
fn lease_for(timeout: Duration) -> time::Duration {
    time::Duration::try_from(timeout + LEASE_MARGIN).unwrap_or(time::Duration::MINUTE)
}
