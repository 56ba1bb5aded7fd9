//! Step 3: one model step. Sends the prompt (with the tools when they are offered), streams
//! the text to the sink as it arrives, and returns the whole completion with its tool calls.
//! The call's usage is recorded with its cost.

use serde_json::json;
use shared::Result;

use super::{Agent, TurnInput, TurnState};
use crate::events::{self, EventSink, TurnEvent};
use crate::llm::{Completion, CompletionRequest, ToolChoice};

impl Agent {
    pub(super) async fn model_step(
        &self,
        input: &TurnInput,
        state: &TurnState,
        step: usize,
        offer_tools: bool,
        events: &dyn EventSink,
    ) -> Result<Completion> {
        let profile = &input.profile;
        let request = CompletionRequest {
            model: profile
                .model
                .clone()
                .unwrap_or_else(|| self.settings.default_model.clone()),
            messages: state.prompt.clone(),
            tools: if offer_tools {
                state.tools.clone()
            } else {
                Vec::new()
            },
            tool_choice: if offer_tools {
                profile.tool_choice.for_step(step)
            } else {
                ToolChoice::None
            },
            temperature: profile.temperature,
            max_tokens: None,
        };
        let mut on_token = |text: &str| {
            events.emit(TurnEvent::Token {
                content: text.to_owned(),
            })
        };
        let completion = self
            .llm
            .complete(&request, input.deadline, &mut on_token)
            .await?;
        if let Some(usage) = completion.usage
            && let Err(e) = self
                .usage
                .record(
                    &input.user_id,
                    Some(&state.chat.id),
                    &completion.model,
                    "chat",
                    usage,
                )
                .await
        {
            tracing::error!(error = %e, "recording chat usage failed");
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
        Ok(completion)
    }
}
