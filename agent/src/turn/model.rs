//! Step 3: one model step. Sends the prompt (with the tools when they are offered), streams
//! the text to the sink as it arrives, and returns the whole completion with its tool calls.
//! The call's usage is recorded with its cost, under the model that served it.
//!
//! A profile may split a step between two models (`decision_model`, `answer_model`): the
//! decision model gets the steps that offer tools and its text is held back; when it wants
//! no tool, the answer model writes the answer over the same prompt, without tools.

use std::sync::Arc;

use serde_json::json;
use shared::Result;

use super::{Agent, TurnInput, TurnState};
use crate::guard::output::{StreamGuard, Violation};
use crate::guard::payload::PayloadGuard;
use crate::llm::metered::{Meter, UsageScope, complete_metered};
use crate::llm::{Completion, CompletionRequest, NoTokens, Provider, TokenSink, ToolChoice};
use crate::profiles::StepModels;
use agent_core::events::{self, EventSink, TurnEvent};

/// What a model call of a step is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StepRole {
    /// One model decides and answers (no split): its text is streamed as it comes.
    Both,
    /// The decision model: its text is not the answer, so it is neither shown nor stored.
    Decide,
    /// The answer model: no tools, its text is streamed.
    Answer,
}

impl StepRole {
    fn as_str(self) -> &'static str {
        match self {
            Self::Both => "both",
            Self::Decide => "decide",
            Self::Answer => "answer",
        }
    }
}

/// One model call: the step, its model, whether tools are offered, and its role.
#[derive(Debug, Clone, Copy)]
pub(super) struct ModelCall<'a> {
    pub step: usize,
    pub provider: Provider,
    pub model: &'a str,
    pub offer_tools: bool,
    pub role: StepRole,
    pub fallback: &'a std::sync::Arc<[crate::llm::ModelRef]>,
}

/// What a step of the loop ends with: the reply to go on with, whether the output guard
/// cut it, and whether that reply was offered tools.
pub(super) struct StepReply {
    pub completion: Completion,
    pub cut: Option<Violation>,
    pub offered_tools: bool,
}

impl Agent {
    /// One step of the loop: the decision model's call and, when it wants no tool, the
    /// answer model's. With one model for both, a single call as always.
    pub(super) async fn step(
        &self,
        input: &TurnInput,
        state: &TurnState,
        models: &StepModels,
        step: usize,
        offer_tools: bool,
        events: &dyn EventSink,
    ) -> Result<StepReply> {
        let role = match (models.split(), offer_tools) {
            (false, _) => StepRole::Both,
            (true, true) => StepRole::Decide,
            (true, false) => StepRole::Answer,
        };
        let model = match role {
            StepRole::Decide => &models.decision,
            StepRole::Both | StepRole::Answer => &models.answer,
        };
        let call = ModelCall {
            step,
            provider: models.provider,
            model,
            offer_tools,
            role,
            fallback: &models.fallback,
        };
        let (completion, cut) = self.model_step(input, state, call, events).await?;
        if role != StepRole::Decide || !completion.tool_calls.is_empty() || input.stop.is_stopped()
        {
            return Ok(StepReply {
                completion,
                cut,
                offered_tools: offer_tools,
            });
        }
        // The decision model answered: the answer model writes what the client sees.
        let call = ModelCall {
            step,
            provider: models.provider,
            model: &models.answer,
            offer_tools: false,
            role: StepRole::Answer,
            fallback: &models.fallback,
        };
        let (completion, cut) = self.model_step(input, state, call, events).await?;
        Ok(StepReply {
            completion,
            cut,
            offered_tools: false,
        })
    }

    async fn model_step(
        &self,
        input: &TurnInput,
        state: &TurnState,
        call: ModelCall<'_>,
        events: &dyn EventSink,
    ) -> Result<(Completion, Option<Violation>)> {
        let request = self.completion_request(state, &call);
        let (completion, violation) = if call.role == StepRole::Decide {
            let mut completion = self.metered(input, state, &request, &mut NoTokens).await?;
            // Not the answer: what a decision step says beside its calls is dropped.
            completion.content.clear();
            (completion, None)
        } else {
            self.streamed(input, state, &request, events).await?
        };
        tracing::debug!(chat_id = %state.chat.id, step = call.step, model = %completion.model, role = call.role.as_str(), "model step");
        events::debug(events, "llm_choice", || {
            json!({
                "step": call.step,
                "model": completion.model,
                "role": call.role.as_str(),
                "finish_reason": completion.finish_reason,
                "tool_calls": completion.tool_calls.len(),
                "usage": completion.usage,
            })
        });
        if call.offer_tools && !completion.tool_calls.is_empty() {
            events::debug(events, "llm_tool_call_arguments", || {
                json!(
                    completion
                        .tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                        .collect::<Vec<_>>()
                )
            });
        }
        Ok((completion, violation))
    }

    /// A completion whose text is the answer: streamed to the client through the output
    /// guard as it arrives.
    async fn streamed(
        &self,
        input: &TurnInput,
        state: &TurnState,
        request: &CompletionRequest,
        events: &dyn EventSink,
    ) -> Result<(Completion, Option<Violation>)> {
        let mut guard = self.output_guard(state);
        let mut shown = String::new();
        let show = |text: String, shown: &mut String| {
            if !text.is_empty() {
                shown.push_str(&text);
                events.emit(TurnEvent::token(text));
            }
        };
        let mut on_token = |text: &str| show(guard.push(text), &mut shown);
        let completion = self.metered(input, state, request, &mut on_token).await;
        let tail = guard.finish();
        show(tail, &mut shown);
        let mut completion = completion?;
        // What the client saw (links rewritten) is the answer; a cut one is replaced.
        completion.content = shown;
        if let Some(violation) = guard.violation() {
            tracing::warn!(chat_id = %state.chat.id, violation = violation.as_str(), "output guard: the answer was cut");
        }
        Ok((completion, guard.violation()))
    }

    /// Runs `request`, recording its usage for this turn's user and chat.
    async fn metered(
        &self,
        input: &TurnInput,
        state: &TurnState,
        request: &CompletionRequest,
        tokens: &mut dyn TokenSink,
    ) -> Result<Completion> {
        let scope = UsageScope {
            user_id: &input.user_id,
            chat_id: Some(&state.chat.id),
            operation: "chat",
        };
        let meter = Meter {
            llm: self.llm.as_ref(),
            // Written with the turn's next chat write.
            usage: &state.usage,
            metrics: &self.metrics,
        };
        complete_metered(
            meter,
            scope,
            request,
            input.deadline,
            tokens,
            Some(&input.stop),
        )
        .await
    }

    /// The secrets this container has read (the LLM key, the JWT key, ...): no check lets
    /// them through.
    fn held_secrets(&self) -> Vec<String> {
        self.secrets
            .held_values()
            .iter()
            .map(|s| s.expose().to_owned())
            .collect()
    }

    /// The same checks as [`Agent::output_guard`], for the turn's other payloads, with every
    /// profile's system prompt for the echo check (the index the pipeline built once): a
    /// handoff changes the turn's profile while this guard stands.
    pub(super) fn payload_guard(&self, state: &TurnState) -> PayloadGuard {
        PayloadGuard::new(
            &state.canary,
            self.pipeline.stored_texts.echo(),
            self.held_secrets(),
            self.settings.answer_link_hosts.clone(),
        )
    }

    /// Whether a call of `tool` may run again while an earlier one might still be under
    /// way: its result depends only on its request (`DynTool::cache_scope`), so it reads
    /// and writes nothing of the user's, or it is a UI skill (`DynTool::ui_kind`), whose
    /// run only checks its request.
    pub fn reruns_safely(&self, tool: shared::domain::tool_call::ToolName) -> bool {
        self.pipeline
            .registry
            .get(tool)
            .is_some_and(|t| t.tool.cache_scope().is_some() || t.tool.ui_kind().is_some())
    }

    /// The payload checks for what the routes return of stored texts (the requests the
    /// model made, results, refusals, messages): those the ledger's writes pass.
    pub fn audit_guard(&self) -> PayloadGuard {
        self.pipeline.stored_texts.guard()
    }

    /// The output guard for one answer of this turn: its canary, every profile's system
    /// prompt (one index per container; echoing any profile's prompt is a leak), the
    /// secrets this container holds now (the LLM key, the JWT key, ...), the link hosts.
    pub(super) fn output_guard(&self, state: &TurnState) -> StreamGuard {
        let secrets = self.held_secrets();
        StreamGuard::with_echo_index(
            &state.canary,
            self.pipeline.stored_texts.echo(),
            secrets,
            self.settings.answer_link_hosts.clone(),
        )
    }

    /// The prompt so far for `call`'s model, with the profile's tools and tool choice when
    /// tools are offered.
    fn completion_request(&self, state: &TurnState, call: &ModelCall<'_>) -> CompletionRequest {
        let profile = &state.profile;
        let (tools, tool_choice) = if call.offer_tools {
            // Forcing applies to the first step of the agent holding the turn.
            (
                state.tools.clone(),
                profile.tool_choice.for_step(state.agent_step),
            )
        } else {
            (Arc::default(), ToolChoice::None)
        };
        CompletionRequest {
            provider: Some(call.provider),
            model: call.model.to_owned(),
            fallback: call.fallback.clone(),
            messages: state.prompt.clone(),
            tools,
            tool_choice,
            temperature: profile.temperature,
            max_tokens: Some(
                profile
                    .max_tokens
                    .unwrap_or(self.settings.default_max_tokens),
            ),
        }
    }
}
