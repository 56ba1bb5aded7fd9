//! Phase 1 of a step: may this call run, and under which ledger record?
//!
//! The checks that need no I/O come first (position in the step, known tool, allowed by the
//! profile, valid arguments), then the turn's remaining tool time, then the ledger's
//! record-and-claim, which dedupes identical calls, with the user's rate limit, so that only
//! calls that will run count against it: a new call's count is written with its claim (one
//! request; a call over its limit is not recorded as claimed at all), a call claimed again
//! after an earlier attempt is counted once it holds the claim.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shared::Error;
use shared::domain::tool_call::{
    ApprovalRecord, RefusalReason, ToolCallRecord, ToolCallStatus, ToolName,
};
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::{Claim, ClaimMode, ClaimRequest, ClaimedCall, Outcome};
use shared::limits::{Decision, RateLimit};

use super::{CallOutcome, CallStatus, Pipeline, StepLimits, lease_for};
use crate::llm::ToolCallRequest;
use crate::profiles::ToolPolicy;
use agent_core::events::{self, EventSink};
use agent_tools::{RegisteredTool, ToolContext};

/// Less time than this left in the budget: the call is not started at all.
const MIN_TOOL_TIME: Duration = Duration::from_millis(50);

/// What admission decided for one call.
pub(super) enum Admission<'a> {
    /// Ended before running (rejected, skipped, rate-limited, storage unavailable). With a
    /// reason when the refusal belongs in the audit (everything but our own failures).
    Refused {
        outcome: Box<CallOutcome>,
        reason: Option<RefusalReason>,
    },
    /// This caller holds the attempt: run it now (`running`) or queue it (`queued`).
    Claimed(Box<Claimed<'a>>),
    /// An identical call exists within the dedupe window: reuse or wait for it until
    /// `wait_until`.
    Duplicate {
        call: &'a ToolCallRequest,
        record: Box<ToolCallRecord>,
        wait_until: Instant,
    },
}

/// A claimed attempt and what it needs to run.
pub(super) struct Claimed<'a> {
    pub call: &'a ToolCallRequest,
    pub tool: RegisteredTool,
    /// The canonical request (what runs, what was hashed).
    pub request: Value,
    pub claimed: ClaimedCall,
    /// The call's own timeout, capped by the turn's tool budget.
    pub deadline: Instant,
    /// What the user is asked, for a call recorded as awaiting approval.
    pub approval: Option<ApprovalRecord>,
}

impl Pipeline {
    pub(super) async fn admit<'a>(
        &'a self,
        ctx: &ToolContext,
        policy: ToolPolicy<'_>,
        call: &'a ToolCallRequest,
        index: usize,
        limits: StepLimits,
        events: &dyn EventSink,
    ) -> Admission<'a> {
        let (tool, request) = match self.check(ctx, policy, call, index, limits) {
            Ok(checked) => checked,
            Err(refused) => {
                events::debug(events, "tool_call_rejected", || {
                    json!({
                        "tool": call.name,
                        "status": refused.outcome.status,
                        "message": refused.outcome.result.message,
                    })
                });
                return Admission::Refused {
                    outcome: refused.outcome,
                    reason: refused.reason,
                };
            }
        };
        let name = tool.tool.name();
        events::debug(
            events,
            "tool_pipeline_start",
            || json!({ "tool": name, "request": request }),
        );
        let background = policy.background.contains(&name) && self.jobs.is_some();
        let now = Instant::now();
        let deadline = (now + tool.settings.timeout).min(limits.budget);
        if !background && deadline.saturating_duration_since(now) < MIN_TOOL_TIME {
            let result =
                ToolExecutionResult::failed("Not run: this turn's time for tools is used up.");
            let outcome = CallOutcome::new(call, Some(name), CallStatus::Skipped, None, result);
            return refused(outcome, Some(RefusalReason::NoTimeLeft));
        }
        // A call that would change nothing (an alert the user has) is not put to them.
        let asks = policy.needs_approval(name, tool.settings.approval)
            && tool.tool.needs_approval(ctx, &request).await;
        let mode = if asks {
            ClaimMode::AwaitApproval {
                approval: self.approval_for(ctx, &tool, &request),
            }
        } else if background {
            ClaimMode::Enqueue
        } else {
            ClaimMode::Run {
                lease: lease_for(tool.settings.timeout),
            }
        };
        // The quota counts work, not requests: a call the ledger serves (a duplicate) or
        // cannot record uses none, so a new call is counted in its claim's write, and one
        // claimed again after an earlier attempt once it is claimed (a call that waits for
        // approval is counted when it runs).
        let (admission, counted) = self.claim(ctx, call, tool, request, deadline, mode).await;
        let Admission::Claimed(claimed) = admission else {
            return admission;
        };
        if counted || claimed.claimed.status == ToolCallStatus::AwaitingApproval {
            return Admission::Claimed(claimed);
        }
        match self.rate_limit(ctx, call, &claimed.tool).await {
            None => Admission::Claimed(claimed),
            Some((limited, reason)) => {
                self.release(&claimed.claimed, &limited.result.message)
                    .await;
                refused(limited, Some(reason))
            }
        }
    }

    /// Gives up a claim the rate limit refused: the attempt ends `canceled` (a queued one is
    /// withdrawn), so the next identical call starts afresh. If that write fails, a running
    /// claim frees itself when its lease ends.
    pub(super) async fn release(&self, claimed: &ClaimedCall, reason: &str) {
        let released = if claimed.status == ToolCallStatus::Queued {
            let (chat, id) = (&claimed.chat_id, &claimed.id);
            self.ledger
                .withdraw(chat, id, claimed.attempt, reason)
                .await
        } else {
            let outcome = Outcome::Canceled(reason.to_owned());
            self.ledger.finish(claimed, outcome).await
        };
        if let Err(e) = released {
            tracing::warn!(call_id = %claimed.id, error = %e, "releasing a rate-limited claim failed");
        }
    }

    /// Records the call in the ledger and claims it (to run now, or queued for the worker);
    /// an identical call within the dedupe window comes back as a duplicate instead. The
    /// tool's rate-limit count goes with a new call's claim (not with one that waits for
    /// approval); the flag says whether it was written.
    async fn claim<'a>(
        &self,
        ctx: &ToolContext,
        call: &'a ToolCallRequest,
        tool: RegisteredTool,
        request: Value,
        deadline: Instant,
        mode: ClaimMode,
    ) -> (Admission<'a>, bool) {
        let name = tool.tool.name();
        let counter = match (&mode, tool.settings.rate_limit) {
            (ClaimMode::AwaitApproval { .. }, _) | (_, None) => None,
            (_, Some(limit)) => {
                let scope = tool.tool.limit_scope();
                match self.limiter.count_companion(&ctx.user_id, scope, limit) {
                    Ok(counter) => Some(counter),
                    Err(e) => return (self.limit_refusal(call, &tool, &e), false),
                }
            }
        };
        let background = mode == ClaimMode::Enqueue;
        let approval = match &mode {
            ClaimMode::AwaitApproval { approval } => Some(approval.clone()),
            _ => None,
        };
        let claim = self
            .ledger
            .record_and_claim_with(
                ClaimRequest {
                    owner_id: ctx.user_id.clone(),
                    chat_id: ctx.chat_id.clone(),
                    tool: name,
                    request: request.clone(),
                    mode,
                },
                counter.as_slice(),
            )
            .await;
        match claim {
            Ok((Claim::Claimed(claimed), counted)) => (
                Admission::Claimed(Box::new(Claimed {
                    call,
                    tool,
                    request,
                    claimed,
                    deadline,
                    approval,
                })),
                counted,
            ),
            // A background duplicate is not waited for: the original's job delivers it.
            Ok((Claim::Duplicate(record), _)) => (
                Admission::Duplicate {
                    call,
                    record: Box::new(record),
                    wait_until: if background { Instant::now() } else { deadline },
                },
                false,
            ),
            Err(e @ Error::Limited { .. }) => (self.limit_refusal(call, &tool, &e), false),
            Err(e) => {
                tracing::error!(tool = %name, error = %e, "recording the tool call failed");
                let outcome = CallOutcome::unavailable(call, name, None);
                (
                    refused(outcome, Some(RefusalReason::ChecksUnavailable)),
                    false,
                )
            }
        }
    }

    /// The checks without I/O: position, name, profile, JSON, schema and domain rules.
    fn check(
        &self,
        ctx: &ToolContext,
        policy: ToolPolicy<'_>,
        call: &ToolCallRequest,
        index: usize,
        limits: StepLimits,
    ) -> Result<(RegisteredTool, Value), Refusal> {
        let refuse = |tool: Option<ToolName>, status: CallStatus, message: String| {
            let result = ToolExecutionResult::failed(message);
            Box::new(CallOutcome::new(call, tool, status, None, result))
        };
        let over_cap = |message: String| Refusal {
            outcome: refuse(call.name.parse().ok(), CallStatus::Skipped, message),
            reason: Some(RefusalReason::OverCap),
        };
        if index >= self.max_parallel {
            return Err(over_cap(format!(
                "Not run: at most {} tool calls run per step. Call it again in the next step if it is still needed.",
                self.max_parallel
            )));
        }
        if index >= limits.calls_left {
            return Err(over_cap(
                "Not run: the tool calls for this message are used up. Answer with the results you have."
                    .to_owned(),
            ));
        }
        let tool = self.lookup(policy, call)?;
        let name = tool.tool.name();
        let text = if call.arguments.trim().is_empty() {
            "{}"
        } else {
            call.arguments.as_str()
        };
        let invalid = |message: String| Refusal {
            outcome: refuse(Some(name), CallStatus::Rejected, message),
            reason: Some(RefusalReason::InvalidArguments),
        };
        let args: Value = serde_json::from_str(text).map_err(|e| {
            invalid(format!(
                "The arguments are not valid JSON ({e}). Send a JSON object."
            ))
        })?;
        match tool.tool.prepare(args, ctx) {
            Ok(request) => Ok((tool, request)),
            Err(Error::Invalid(problem)) => Err(invalid(format!(
                "Invalid arguments for {}: {problem}. Correct them and call again.",
                call.name
            ))),
            Err(other) => {
                tracing::error!(tool = %name, error = %other, "preparing a tool call failed");
                Err(Refusal {
                    outcome: refuse(
                        Some(name),
                        CallStatus::Failed,
                        format!("{name} could not be prepared."),
                    ),
                    reason: None,
                })
            }
        }
    }

    /// The registered tool (or discovered external tool) the call names, if the profile
    /// allows it.
    fn lookup(
        &self,
        policy: ToolPolicy<'_>,
        call: &ToolCallRequest,
    ) -> Result<RegisteredTool, Refusal> {
        let allowed = policy.allowed;
        let offered = || {
            let external = self.registry.external_specs(policy.mcp_servers);
            allowed
                .iter()
                .filter(|t| self.registry.get(**t).is_some())
                .map(|t| t.as_str())
                .chain(external.iter().map(|spec| spec.name.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let rejected = |tool: Option<ToolName>, reason: RefusalReason, message: String| {
            let result = ToolExecutionResult::failed(message);
            Refusal {
                outcome: Box::new(CallOutcome::new(
                    call,
                    tool,
                    CallStatus::Rejected,
                    None,
                    result,
                )),
                reason: Some(reason),
            }
        };
        if crate::mcp::is_offered_name(&call.name) {
            let external = self.registry.external().and_then(|e| e.tool(&call.name));
            return match external {
                Some((tool, server)) if policy.mcp_servers.iter().any(|s| s == server) => Ok(tool),
                Some(_) => Err(rejected(
                    Some(ToolName::MCP),
                    RefusalReason::OutsideProfile,
                    format!(
                        "Tool `{}` is not available here. Available tools: {}.",
                        call.name,
                        offered()
                    ),
                )),
                None => Err(rejected(
                    None,
                    RefusalReason::UnknownTool,
                    format!(
                        "Unknown tool `{}`. Available tools: {}.",
                        call.name,
                        offered()
                    ),
                )),
            };
        }
        let Some(name) = self.registry.lookup(&call.name) else {
            let message = format!(
                "Unknown tool `{}`. Available tools: {}.",
                call.name,
                offered()
            );
            return Err(rejected(None, RefusalReason::UnknownTool, message));
        };
        match self.registry.get(name) {
            Some(tool) if allowed.contains(&name) => Ok(tool.clone()),
            _ => Err(rejected(
                Some(name),
                RefusalReason::OutsideProfile,
                format!(
                    "Tool `{name}` is not available here. Available tools: {}.",
                    offered()
                ),
            )),
        }
    }

    /// `Some` when the call may not run now: the user's limit for the tool is used up (the
    /// client is told when it resets), or the limiter could not be asked; then the call is
    /// refused rather than run unchecked (fail closed, seed 004).
    pub(super) async fn rate_limit(
        &self,
        ctx: &ToolContext,
        call: &ToolCallRequest,
        tool: &RegisteredTool,
    ) -> Option<(CallOutcome, RefusalReason)> {
        let name = tool.tool.name();
        let limit = tool.settings.rate_limit?;
        let scope = tool.tool.limit_scope();
        match self.limiter.check_scope(&ctx.user_id, scope, limit).await {
            Ok(Decision::Allowed { .. }) => None,
            Ok(Decision::Limited { reset_at }) => Some((
                limited(call, name, limit, reset_at),
                RefusalReason::RateLimited,
            )),
            Err(e) => Some((unchecked(call, name, &e), RefusalReason::ChecksUnavailable)),
        }
    }

    /// The refusal of a call whose rate-limit count failed: its limit is used up, or the
    /// limiter could not be asked (then the call is not run unchecked).
    fn limit_refusal<'a>(
        &self,
        call: &ToolCallRequest,
        tool: &RegisteredTool,
        error: &Error,
    ) -> Admission<'a> {
        let name = tool.tool.name();
        match (error, tool.settings.rate_limit) {
            (Error::Limited { reset_at, .. }, Some(limit)) => refused(
                limited(call, name, limit, *reset_at),
                Some(RefusalReason::RateLimited),
            ),
            _ => refused(
                unchecked(call, name, error),
                Some(RefusalReason::ChecksUnavailable),
            ),
        }
    }
}

/// A call refused because the user's `limit` for the tool is used up until `reset_at`: the
/// model and the client are told when it resets.
fn limited(
    call: &ToolCallRequest,
    name: ToolName,
    limit: RateLimit,
    reset_at: time::OffsetDateTime,
) -> CallOutcome {
    let reset = reset_at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let result = ToolExecutionResult::failed(format!(
        "Rate limit reached for {}: at most {} calls per {} s. It can be used again after {reset}. Tell the user.",
        call.name,
        limit.max,
        limit.window.whole_seconds()
    ))
    .with_metadata("reset_at", reset)
    .with_metadata("limit", limit.max);
    CallOutcome::new(call, Some(name), CallStatus::RateLimited, None, result)
}

/// A call refused because its rate limit could not be checked (fail closed, seed 004).
fn unchecked(call: &ToolCallRequest, name: ToolName, error: &Error) -> CallOutcome {
    tracing::error!(tool = %name, error = %error, "rate-limit check failed; refusing the call (fail closed)");
    let result = ToolExecutionResult::failed(format!(
        "Not run: {}'s rate limit could not be checked, and calls are not run unchecked. Try again later.",
        call.name
    ));
    CallOutcome {
        retryable: true,
        ..CallOutcome::new(call, Some(name), CallStatus::Failed, None, result)
    }
}

/// A call the checks without I/O refused.
struct Refusal {
    outcome: Box<CallOutcome>,
    reason: Option<RefusalReason>,
}

fn refused<'a>(outcome: CallOutcome, reason: Option<RefusalReason>) -> Admission<'a> {
    Admission::Refused {
        outcome: Box::new(outcome),
        reason,
    }
}
