//! Handoffs between specialists (seed 002's `nextAgent`): a profile that lists `handoffs`
//! offers the model one `transfer_to_<agent>` tool per target. A call to one ends the
//! current agent's part of the turn: the turn goes on in the same request with the target's
//! prompt, tools, tool choice and models, sends `handoff {from, to, reason}`, and remembers
//! the target as the chat's active agent. At most [`MAX_HANDOFFS_PER_TURN`] per turn; then
//! the agent holding the turn must answer.
//!
//! A name outside the current profile's list is not a handoff: it reaches the pipeline,
//! which refuses it as an unknown tool.

use std::sync::{Arc, LazyLock};

use serde_json::{Value, json};
use shared::domain::tool_args::HandoffArgs;
use shared::domain::tool_call::{RefusalReason, ToolName};
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::{Claim, ClaimMode, ClaimRequest, Outcome};

use super::{Agent, TurnState, prompt};
use crate::llm::{PromptMessage, ToolCallRequest, ToolSpec};
use crate::pipeline::{CallOutcome, CallStatus};
use crate::profiles::{AgentCatalog, AgentProfile};
use agent_core::events::{EventSink, HandoffData, TurnEvent};
use agent_tools::{ToolContext, ToolSchema};

/// Handoffs one turn may make; a further one is refused and the current agent answers.
pub const MAX_HANDOFFS_PER_TURN: usize = 2;

const PREFIX: &str = "transfer_to_";

/// The tool name that hands the turn to `agent`.
pub fn tool_name(agent: &str) -> String {
    format!("{PREFIX}{agent}")
}

/// The arguments' schema of every handoff tool (only the name and description differ),
/// derived once: at init through [`warm`], not at every turn.
static PARAMETERS: LazyLock<Option<Arc<Value>>> = LazyLock::new(|| {
    ToolSchema::named::<HandoffArgs>(PREFIX)
        .map(|schema| schema.spec.parameters)
        .map_err(|e| tracing::error!(error = %e, "building a handoff tool failed"))
        .ok()
});

/// Derives the handoff tools' schema now.
pub(super) fn warm() {
    LazyLock::force(&PARAMETERS);
}

/// The handoff tools `profile` offers: one per target the catalog knows.
pub(super) fn specs(catalog: &AgentCatalog, profile: &AgentProfile) -> Vec<ToolSpec> {
    let Some(parameters) = PARAMETERS.as_ref() else {
        return Vec::new();
    };
    profile
        .handoffs
        .iter()
        .filter_map(|target| catalog.profile(Some(target)))
        .map(|target| ToolSpec {
            name: tool_name(&target.name),
            description: format!(
                "Hand the conversation to the {} agent when it fits the user's request better: {}",
                target.name, target.description
            ),
            parameters: parameters.clone(),
        })
        .collect()
}

/// The target a call names, if it is one of `profile`'s handoffs.
pub(super) fn target<'a>(profile: &'a AgentProfile, call: &ToolCallRequest) -> Option<&'a str> {
    let name = call.name.strip_prefix(PREFIX)?;
    profile
        .handoffs
        .iter()
        .find(|t| t.as_str() == name)
        .map(String::as_str)
}

/// The call's `reason`, when its arguments are valid.
fn reason(call: &ToolCallRequest) -> Option<String> {
    serde_json::from_str::<HandoffArgs>(&call.arguments)
        .ok()
        .map(|a| a.reason.trim().chars().take(200).collect::<String>())
        .filter(|r| !r.is_empty())
}

/// Why a handoff call to a listed target is refused, if it is: the turn used its handoffs
/// or the step made one already (`taken`), or it gives no valid reason.
fn refusal(
    state: &TurnState,
    call: &ToolCallRequest,
    taken: bool,
) -> Option<(&'static str, CallStatus, RefusalReason)> {
    if taken || state.handoffs >= MAX_HANDOFFS_PER_TURN {
        return Some((
            "Not handed over: no more handoffs in this turn. Answer the user yourself.",
            CallStatus::Skipped,
            RefusalReason::OverCap,
        ));
    }
    reason(call).is_none().then_some((
        "Invalid arguments: give a `reason` (1 to 200 characters).",
        CallStatus::Rejected,
        RefusalReason::InvalidArguments,
    ))
}

/// A handoff as decided for one call of a step.
pub(super) struct HandoffCall {
    pub outcome: CallOutcome,
    /// The profile to continue with, when this call hands the turn over.
    pub to: Option<AgentProfile>,
}

impl Agent {
    /// Decides one handoff call: refused when the turn used its handoffs or the step made
    /// one already (`taken`), or the reason is missing; else recorded in the ledger and
    /// announced.
    pub(super) async fn hand_off(
        &self,
        ctx: &ToolContext,
        state: &TurnState,
        call: &ToolCallRequest,
        taken: bool,
        events: &dyn EventSink,
    ) -> HandoffCall {
        let refuse = |message: &str, status: CallStatus| HandoffCall {
            outcome: CallOutcome::new(
                call,
                Some(ToolName::HANDOFF),
                status,
                None,
                ToolExecutionResult::failed(message),
            ),
            to: None,
        };
        let from = state.profile.name.clone();
        let Some(target) = target(&state.profile, call).and_then(|t| self.agents.profile(Some(t)))
        else {
            return refuse("No such agent to hand over to.", CallStatus::Rejected);
        };
        if let Some((message, status, why)) = refusal(state, call, taken) {
            let refused = refuse(message, status);
            self.pipeline
                .report_refusal(ctx, &refused.outcome, why, events)
                .await;
            return refused;
        }
        // The reason reaches the client: the answer's guard applies to it.
        let reason = reason(call).unwrap_or_default();
        let reason = match self.guard_model_text(state, &reason) {
            Some(violation) => {
                tracing::warn!(chat_id = %ctx.chat_id, violation = violation.as_str(), "output guard: handoff reason withheld");
                String::new()
            }
            None => reason,
        };
        let to = target.name.clone();
        let job_id = self.record_handoff(ctx, state, &from, &to, &reason).await;
        tracing::info!(chat_id = %ctx.chat_id, from, to, "handoff");
        agent_core::trace_event!("handoff", app.handoff.from = %from, app.handoff.to = %to);
        events.emit(TurnEvent::Handoff(HandoffData {
            from: from.clone(),
            to: to.clone(),
            reason: reason.clone(),
        }));
        let result = ToolExecutionResult::succeeded(format!(
            "Handed over from {from} to {to}. You are now the {to} agent: continue the conversation."
        ))
        .with_raw(json!({ "from": from, "to": to, "reason": reason }));
        HandoffCall {
            outcome: CallOutcome::new(
                call,
                Some(ToolName::HANDOFF),
                CallStatus::Succeeded,
                job_id,
                result,
            ),
            to: Some(target.clone()),
        }
    }

    /// Decides a step's handoff calls (only the first valid one hands over) and adds their
    /// outcomes to the step's; the profile to continue with, if one handed over.
    pub(super) async fn run_handoffs(
        &self,
        ctx: &ToolContext,
        state: &TurnState,
        calls: &[ToolCallRequest],
        outcome: &mut crate::pipeline::StepOutcome,
        events: &dyn EventSink,
    ) -> Option<AgentProfile> {
        let mut handed_to = None;
        for call in calls {
            let decided = self
                .hand_off(ctx, state, call, handed_to.is_some(), events)
                .await;
            handed_to = handed_to.or(decided.to);
            outcome.calls.push(decided.outcome);
        }
        handed_to
    }

    /// The handoff in the ledger, as a succeeded call; its id, or `None` when the ledger
    /// could not take it (the handoff changes nothing outside the turn, so it goes on).
    async fn record_handoff(
        &self,
        ctx: &ToolContext,
        state: &TurnState,
        from: &str,
        to: &str,
        reason: &str,
    ) -> Option<String> {
        let request = json!({ "from": from, "to": to, "reason": reason, "turn_id": state.turn_id });
        let claim = self
            .ledger
            .record_and_claim(ClaimRequest {
                owner_id: ctx.user_id.clone(),
                chat_id: ctx.chat_id.clone(),
                tool: ToolName::HANDOFF,
                request: request.clone(),
                mode: ClaimMode::Run {
                    lease: time::Duration::MINUTE,
                },
            })
            .await;
        let recorded = match claim {
            Ok(Claim::Claimed(claimed)) => self
                .ledger
                .finish(
                    &claimed,
                    Outcome::Succeeded(json!({ "message": "handed over", "raw": request })),
                )
                .await
                .map(|()| claimed.id),
            Ok(Claim::Duplicate(record)) => Ok(record.id),
            Err(e) => Err(e),
        };
        recorded
            .map_err(|e| tracing::warn!(chat_id = %ctx.chat_id, error = %e, "recording a handoff failed"))
            .ok()
    }

    /// Continues the turn as `to`: its system prompt replaces the current one, its tools
    /// (and its own handoffs while the turn has some left) are offered, its tool choice
    /// applies from its first step.
    pub(super) fn switch_agent(&self, state: &mut TurnState, to: AgentProfile) {
        state.handoffs += 1;
        state.agent_step = 0;
        if let Some(first) = Arc::make_mut(&mut state.prompt).first_mut() {
            *first = PromptMessage::system(prompt::static_prompt(&to));
        }
        state.unsaved_patch.active_agent = Some(to.name.clone());
        state.profile = to;
        state.tools = Arc::new(self.offered_tools(state));
    }

    /// The tools the current agent offers: its registry tools, and its handoffs while the
    /// turn may still make one.
    pub(super) fn offered_tools(&self, state: &TurnState) -> Vec<ToolSpec> {
        let mut tools = prompt::offered_tools(&self.pipeline.registry, &state.profile);
        if state.handoffs < MAX_HANDOFFS_PER_TURN
            && state.profile.tool_choice != crate::profiles::ToolChoiceMode::None
        {
            tools.extend(specs(&self.agents, &state.profile));
        }
        tools
    }
}
