//! Step 4: execute the step's tool calls through the pipeline, then write the step: the
//! assistant's calls, each call's result and the merged state patch, in one chat write.
//! The prompt grows by the same messages for the next model step. A cancel seen while the
//! calls run aborts them: their calls in the ledger are cancelled (so a late finish is
//! fenced off) and nothing of the step is written.

use std::sync::Arc;

use shared::Result;
use shared::domain::chat::{MessageToolCall, NewMessage};
use shared::domain::tool_call::ToolCallStatus;
use time::OffsetDateTime;

use super::{Agent, TurnInput, TurnState, handoff, prompt};
use crate::llm::{Completion, PromptMessage};
use crate::pipeline::CallStatus;
use crate::pipeline::{StepLimits, StepOutcome};
use crate::profiles::AgentProfile;
use agent_core::events::{EventSink, TurnEvent};
use agent_tools::ToolContext;
use shared::domain::ui::{UiElement, UiKind};

/// Tool calls of one model step that are stored and answered (run or "skipped"); more are
/// dropped unanswered.
pub const MAX_CALLS_STORED_PER_STEP: usize = 20;

impl Agent {
    pub(super) async fn execute_step(
        &self,
        input: &TurnInput,
        state: &mut TurnState,
        mut reply: Completion,
        events: &dyn EventSink,
    ) -> Result<Option<(StepOutcome, Option<AgentProfile>)>> {
        if input.stop.is_stopped() {
            return Ok(None);
        }
        // Beyond the calls a step runs (the rest are answered "skipped"), a model's flood
        // of calls is dropped before anything is stored: no step writes an unbounded list.
        if reply.tool_calls.len() > MAX_CALLS_STORED_PER_STEP {
            tracing::warn!(
                chat_id = %state.chat.id,
                calls = reply.tool_calls.len(),
                kept = MAX_CALLS_STORED_PER_STEP,
                "the model asked for too many tool calls in one step; the rest are dropped"
            );
            reply.tool_calls.truncate(MAX_CALLS_STORED_PER_STEP);
        }
        let ctx = self.tool_context(input, state);
        let limits = StepLimits {
            budget: state.tool_budget,
            calls_left: state.calls_left,
        };
        // Handoffs are the turn's own; the other calls go through the pipeline.
        let (handoffs, calls): (Vec<_>, Vec<_>) = reply
            .tool_calls
            .iter()
            .cloned()
            .partition(|c| handoff::target(&state.profile, c).is_some());
        let started = self.clock.now();
        let run = self
            .pipeline
            .run_step(&ctx, state.profile.tool_policy(), &calls, limits, events);
        let mut outcome = tokio::select! {
            outcome = run => outcome,
            () = input.stop.stopped() => {
                self.cancel_calls_since(input, state, started).await;
                return Ok(None);
            }
        };
        state.tool_calls += outcome.calls.len();
        let used = limits.used_by(calls.len(), self.pipeline.max_parallel);
        state.calls_left = state.calls_left.saturating_sub(used);
        let handed_to = self
            .run_handoffs(&ctx, state, &handoffs, &mut outcome, events)
            .await;
        // Answers in the order the model made the calls.
        let order = |id: &str| reply.tool_calls.iter().position(|c| c.id == id);
        outcome.calls.sort_by_key(|c| order(&c.call.id));
        self.show_ui(state, &outcome, events);

        self.keep_step(state, reply, &outcome);
        Ok(Some((outcome, handed_to)))
    }

    /// The step's messages, to be written with the next chat write, and the same calls and
    /// results in the prompt for the next model step.
    fn keep_step(&self, state: &mut TurnState, reply: Completion, outcome: &StepOutcome) {
        let calls = reply
            .tool_calls
            .iter()
            .map(|c| MessageToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        state
            .unsaved
            .push(NewMessage::assistant(reply.content.clone(), calls));
        state.unsaved.extend(outcome.calls.iter().map(|c| {
            NewMessage::tool(c.call.id.clone(), c.job_id.clone(), prompt::tool_message(c))
                .in_background(c.background)
        }));
        state.unsaved_patch.merge(outcome.state_patch.clone());

        // The step's request has ended: the turn holds the prompt alone again, so it grows
        // in place.
        let prompt = Arc::make_mut(&mut state.prompt);
        prompt.push(PromptMessage::assistant(reply.content, reply.tool_calls));
        let max_chars = self.settings.tool_result_max_chars;
        prompt.extend(outcome.calls.iter().map(|call| {
            PromptMessage::tool(
                call.call.id.clone(),
                prompt::fenced_tool_message(call, &state.fence, max_chars),
            )
            .with_failure(call.status.is_failure())
        }));
    }

    /// Sends what the step's UI skills produced (`ui` events) and keeps it for the answer.
    fn show_ui(&self, state: &mut TurnState, outcome: &StepOutcome, events: &dyn EventSink) {
        for call in &outcome.calls {
            let kind = call
                .tool
                .and_then(|t| self.pipeline.registry.get(t))
                .and_then(|t| t.tool.ui_kind());
            // The approval box: its event was sent when the call was admitted.
            if let (CallStatus::AwaitingApproval, Some(payload)) = (call.status, &call.result.raw) {
                state.ui.push(UiElement {
                    kind: UiKind::Approval,
                    payload: payload.clone(),
                });
                continue;
            }
            if let (Some(kind), CallStatus::Succeeded, Some(payload)) =
                (kind, call.status, &call.result.raw)
            {
                // Quick replies are the model's words: they pass the answer's guard.
                let words: Vec<&str> = payload["replies"]
                    .as_array()
                    .map(|r| r.iter().filter_map(|r| r.as_str()).collect())
                    .unwrap_or_default();
                if let Some(violation) = self.guard_model_text(state, &words.join("\n")) {
                    tracing::warn!(chat_id = %state.chat.id, violation = violation.as_str(), "output guard: quick replies dropped");
                    continue;
                }
                let element = UiElement {
                    kind,
                    payload: payload.clone(),
                };
                events.emit(TurnEvent::Ui(element.clone()));
                state.ui.push(element);
            }
        }
    }

    /// Cancels the chat's calls this step left queued or running (their futures are gone).
    async fn cancel_calls_since(
        &self,
        input: &TurnInput,
        state: &TurnState,
        since: OffsetDateTime,
    ) {
        let (owner, chat_id) = (&input.user_id, &state.chat.id);
        let page = match self.ledger.list(owner, chat_id, 20, None).await {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(chat_id, error = %e, "listing the stopped step's calls failed");
                return;
            }
        };
        for call in page.items.iter().filter(|c| {
            c.updated_at >= since
                && matches!(c.status, ToolCallStatus::Queued | ToolCallStatus::Running)
        }) {
            match self.ledger.cancel(owner, chat_id, &call.id).await {
                Ok(_) => {
                    tracing::info!(chat_id, call_id = %call.id, "tool call cancelled with its turn")
                }
                Err(e) => {
                    tracing::warn!(chat_id, call_id = %call.id, error = %e, "cancelling a stopped turn's call failed")
                }
            }
        }
    }

    /// What the tools of this turn's steps are told about the caller and the chat.
    pub(super) fn tool_context(&self, input: &TurnInput, state: &TurnState) -> ToolContext {
        ToolContext {
            user_id: input.user_id.clone(),
            chat_id: state.chat.id.clone(),
            session_state: state.chat.session_state.clone(),
            memory: state.memory.clone(),
            today: state.today,
            locale: state.locale,
            deadline: state.tool_budget,
            progress: Default::default(),
            trace_header: input.trace.as_ref().map(|t| t.header.clone()),
        }
    }
}
