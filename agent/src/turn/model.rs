//! Step 3: one model step. Sends the prompt (with the tools when they are offered), streams
//! the text to the sink as it arrives, and returns the whole completion with its tool calls.
//! The call's usage is recorded with its cost.

use std::sync::Arc;

use serde_json::json;
use shared::Result;

use super::{Agent, TurnInput, TurnState};
use crate::events::{self, EventSink, TurnEvent};
use crate::guard::output::{StreamGuard, Violation};
use crate::llm::metered::{UsageScope, complete_metered};
use crate::llm::{Completion, CompletionRequest, ToolChoice};

impl Agent {
    pub(super) async fn model_step(
        &self,
        input: &TurnInput,
        state: &TurnState,
        step: usize,
        offer_tools: bool,
        events: &dyn EventSink,
    ) -> Result<(Completion, Option<Violation>)> {
        let request = self.completion_request(input, state, step, offer_tools);
        let mut guard = self.output_guard(state);
        let mut shown = String::new();
        let show = |text: String, shown: &mut String| {
            if !text.is_empty() {
                shown.push_str(&text);
                events.emit(TurnEvent::Token { content: text });
            }
        };
        let mut on_token = |text: &str| show(guard.push(text), &mut shown);
        let scope = UsageScope {
            user_id: &input.user_id,
            chat_id: Some(&state.chat.id),
            operation: "chat",
        };
        let completion = complete_metered(
            self.llm.as_ref(),
            self.usage.as_ref(),
            scope,
            &request,
            input.deadline,
            &mut on_token,
            Some(&input.stop),
        )
        .await;
        let tail = guard.finish();
        show(tail, &mut shown);
        let mut completion = completion?;
        // What the client saw (links rewritten) is the answer; a cut one is replaced.
        completion.content = shown;
        if let Some(violation) = guard.violation() {
            tracing::warn!(chat_id = %state.chat.id, violation = violation.as_str(), "output guard: the answer was cut");
        }
        events::debug(events, "llm_choice", || {
            json!({
                "step": step,
                "finish_reason": completion.finish_reason,
                "tool_calls": completion.tool_calls.len(),
                "usage": completion.usage,
            })
        });
        if offer_tools && !completion.tool_calls.is_empty() {
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
        Ok((completion, guard.violation()))
    }

    /// The output guard for one answer of this turn: its canary and system prompt, the
    /// secrets this container holds now (the LLM key, the JWT key, ...), the link hosts.
    pub(super) fn output_guard(&self, state: &TurnState) -> StreamGuard {
        let secrets = self
            .secrets
            .held_values()
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        StreamGuard::with_echo_index(
            &state.canary,
            Arc::clone(&state.echo),
            secrets,
            self.settings.answer_link_hosts.clone(),
        )
    }

    /// The prompt so far, with the profile's tools and tool choice when tools are offered.
    fn completion_request(
        &self,
        input: &TurnInput,
        state: &TurnState,
        step: usize,
        offer_tools: bool,
    ) -> CompletionRequest {
        let profile = &input.profile;
        let (tools, tool_choice) = if offer_tools {
            (state.tools.clone(), profile.tool_choice.for_step(step))
        } else {
            (Vec::new(), ToolChoice::None)
        };
        CompletionRequest {
            model: profile
                .model
                .clone()
                .unwrap_or_else(|| self.settings.default_model.clone()),
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
