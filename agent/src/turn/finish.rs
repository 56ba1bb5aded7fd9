//! Step 6: finish. The answer is written with whatever the turn has not written yet and
//! `final` is emitted; a turn the model could not repair ends with an apology in the chat
//! and an `error` event instead.

use serde_json::{Value, json};
use shared::Result;
use shared::domain::chat::NewMessage;
use shared::domain::session::SessionStatePatch;

use super::{Agent, Ending, TurnInput, TurnState};
use crate::events::{EventSink, TurnErrorCode, TurnEvent};
use crate::guard::REFUSAL;
use crate::pipeline::CallOutcome;

/// Said when the model ends without a usable answer.
const NO_ANSWER: &str = "Sorry, I could not finish this request. Please try again or rephrase it.";
/// The stored answer of a turn stopped by a cancel.
pub const STOPPED: &str = "Stopped at your request.";
/// Said when the model kept making invalid tool calls.
const UNREPAIRABLE: &str = "Sorry, I could not complete that request. Please rephrase it.";

impl Agent {
    pub(super) async fn finish(
        &self,
        input: &TurnInput,
        state: &mut TurnState,
        ending: Ending,
        events: &dyn EventSink,
    ) -> Result<()> {
        let content = match self.guard_direct(state, ending) {
            Ending::Answer(text) if !text.trim().is_empty() => text,
            // A model that still wants tools when none are offered may answer with nothing.
            Ending::Answer(_) => streamed(events, NO_ANSWER.to_owned()),
            Ending::Direct(text) => streamed(events, text),
            Ending::Guarded(reason) => {
                tracing::warn!(chat_id = %state.chat.id, reason, "a guardrail stopped the turn");
                streamed(events, REFUSAL.to_owned());
                let message = "A guardrail stopped this turn.".to_owned();
                return self
                    .end_with_error(state, events, REFUSAL, TurnErrorCode::Guardrail, message)
                    .await;
            }
            Ending::Stopped => {
                tracing::info!(chat_id = %state.chat.id, "turn stopped by a cancel");
                streamed(events, STOPPED.to_owned());
                let message = "The turn was stopped on request.".to_owned();
                return self
                    .end_with_error(state, events, STOPPED, TurnErrorCode::Canceled, message)
                    .await;
            }
            Ending::Unrepairable(problems) => {
                tracing::warn!(chat_id = %state.chat.id, problems, "model kept making invalid tool calls");
                let message = format!("The model made invalid tool calls twice: {problems}");
                return self
                    .end_with_error(
                        state,
                        events,
                        UNREPAIRABLE,
                        TurnErrorCode::InvalidToolCall,
                        message,
                    )
                    .await;
            }
        };
        state
            .unsaved
            .push(NewMessage::assistant(content.clone(), Vec::new()));
        self.save_last(state, &SessionStatePatch::default()).await?;
        tracing::debug!(chat_id = %state.chat.id, agent = %input.profile.name, "turn answered");
        events.emit(TurnEvent::Final {
            content,
            session_state: Box::new(state.chat.session_state.clone()),
            tool_result: tool_result(&state.last_results),
            notice: self.settings.stack_notice.clone(),
        });
        Ok(())
    }
}

impl Agent {
    /// A tool's message that is the answer comes from upstream text (airline names, error
    /// texts): it passes the same output guard as a model's answer before anyone sees it.
    fn guard_direct(&self, state: &TurnState, ending: Ending) -> Ending {
        let Ending::Direct(text) = ending else {
            return ending;
        };
        let mut guard = self.output_guard(state);
        let mut shown = guard.push(&text);
        shown.push_str(&guard.finish());
        match guard.violation() {
            Some(violation) => Ending::Guarded(violation.as_str().to_owned()),
            None => Ending::Direct(shown),
        }
    }

    /// Ends a turn without `final`: `stored` is the chat's answer, then the error event.
    async fn end_with_error(
        &self,
        state: &mut TurnState,
        events: &dyn EventSink,
        stored: &str,
        code: TurnErrorCode,
        message: String,
    ) -> Result<()> {
        state
            .unsaved
            .push(NewMessage::assistant(stored, Vec::new()));
        self.save_last(state, &SessionStatePatch::default()).await?;
        events.emit(TurnEvent::Error { code, message });
        Ok(())
    }
}

/// Streams a text the model did not stream itself, and returns it.
fn streamed(events: &dyn EventSink, text: String) -> String {
    events.emit(TurnEvent::Token {
        content: text.clone(),
    });
    text
}

/// `final.tool_result`: `null` without tools, the one tool's raw result, or a list of
/// `{tool, job_id, status, raw}` when several ran.
fn tool_result(calls: &[CallOutcome]) -> Value {
    match calls {
        [] => Value::Null,
        [one] => crate::events::event_result(one.result.raw.as_ref()).unwrap_or(Value::Null),
        many => Value::Array(
            many.iter()
                .map(|c| {
                    json!({
                        "tool": c.tool,
                        "job_id": c.job_id,
                        "status": c.status,
                        "raw": crate::events::event_result(c.result.raw.as_ref()),
                    })
                })
                .collect(),
        ),
    }
}
