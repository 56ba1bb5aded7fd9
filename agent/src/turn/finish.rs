//! Step 6: finish. The answer is written with whatever the turn has not written yet and
//! `final` is emitted (for a stopped turn, what it had said, marked as stopped); a turn that
//! was refused or could not be repaired streams and stores its short answer (in the user's
//! language) and ends with an `error` event instead.

use serde_json::{Value, json};
use shared::Result;
use shared::domain::chat::NewMessage;
use shared::domain::session::SessionStatePatch;

use super::{Agent, Ending, TurnState};
use crate::pipeline::CallOutcome;
use crate::texts::{self, UserText};
use agent_core::events::{
    AssistantRole, EventSink, FinalData, FinalMessage, FinalMetadata, TurnErrorCode, TurnEvent,
};
use shared::domain::ui::UiKind;

impl Agent {
    pub(super) async fn finish(
        &self,
        state: &mut TurnState,
        ending: Ending,
        events: &dyn EventSink,
    ) -> Result<()> {
        let mut stopped = false;
        let content = match self.guard_direct(state, ending) {
            Ending::Answer(text) if !text.trim().is_empty() => text,
            // A model that still wants tools when none are offered may answer with nothing.
            Ending::Answer(_) => streamed(events, UserText::NoAnswer.text(state.locale)),
            Ending::Direct(text) => streamed(events, text),
            Ending::AwaitingApproval => {
                let summaries: Vec<&str> = state
                    .ui
                    .iter()
                    .filter(|e| e.kind == UiKind::Approval)
                    .filter_map(|e| e.payload["summary"].as_str())
                    .collect();
                streamed(events, texts::approval_question(&summaries, state.locale))
            }
            Ending::Guarded(reason) => {
                tracing::warn!(chat_id = %state.chat.id, reason, "a guardrail stopped the turn");
                return self
                    .end_with_error(state, events, TurnErrorCode::Guardrail)
                    .await;
            }
            Ending::Stopped(said) => {
                tracing::info!(chat_id = %state.chat.id, "turn stopped by a cancel");
                stopped = true;
                // What the user saw stays the answer; with nothing said, a short note.
                if said.trim().is_empty() {
                    streamed(events, UserText::Stopped.text(state.locale))
                } else {
                    said
                }
            }
            Ending::Unrepairable(problems) => {
                // What the model got wrong is for the log; the user gets the apology.
                tracing::warn!(chat_id = %state.chat.id, problems, "model kept making invalid tool calls");
                return self
                    .end_with_error(state, events, TurnErrorCode::InvalidToolCall)
                    .await;
            }
        };
        let ui = std::mem::take(&mut state.ui);
        let mut answer = NewMessage::assistant(content.clone(), Vec::new())
            .with_ui(ui)
            .in_language(state.locale);
        if stopped {
            answer = answer.stopped();
        }
        state.unsaved.push(answer);
        self.save_last(state, &SessionStatePatch::default()).await?;
        tracing::debug!(chat_id = %state.chat.id, agent = %state.profile.name, "turn answered");
        events.emit(TurnEvent::Final(FinalData {
            message: FinalMessage {
                role: AssistantRole::Assistant,
                content,
                stopped,
            },
            session_state: Box::new(state.chat.session_state.clone()),
            tool_result: tool_result(&state.last_results),
            metadata: FinalMetadata::of(
                self.settings.stack_notice.clone(),
                state.answered_by.take(),
            ),
        }));
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
        // Upstream text may carry control and invisible characters, as any payload may.
        let text = crate::guard::input::normalise(&text).text;
        let mut guard = self.output_guard(state);
        let mut shown = guard.push(&text);
        shown.push_str(&guard.finish());
        match guard.violation() {
            Some(violation) => Ending::Guarded(violation.as_str().to_owned()),
            None => Ending::Direct(shown),
        }
    }

    /// Ends a turn without `final`: the code's short answer (an apology, a refusal) is
    /// streamed and stored as the chat's answer, then the `error` event repeats it.
    async fn end_with_error(
        &self,
        state: &mut TurnState,
        events: &dyn EventSink,
        code: TurnErrorCode,
    ) -> Result<()> {
        let answer = streamed(events, UserText::for_error(code).text(state.locale));
        state
            .unsaved
            .push(NewMessage::assistant(answer.clone(), Vec::new()).in_language(state.locale));
        self.save_last(state, &SessionStatePatch::default()).await?;
        events.emit(TurnEvent::error(code, answer));
        Ok(())
    }
}

/// Streams a text the model did not stream itself, and returns it.
fn streamed(events: &dyn EventSink, text: String) -> String {
    events.emit(TurnEvent::token(text.clone()));
    text
}

/// `final.tool_result`: `null` without tools, the one tool's raw result, or a list of
/// `{tool, job_id, status, raw}` when several ran.
fn tool_result(calls: &[CallOutcome]) -> Value {
    match calls {
        [] => Value::Null,
        [one] => agent_core::events::event_result(one.result.raw.as_ref()).unwrap_or(Value::Null),
        many => Value::Array(
            many.iter()
                .map(|c| {
                    json!({
                        "tool": c.tool,
                        "job_id": c.job_id,
                        "status": c.status,
                        "raw": agent_core::events::event_result(c.result.raw.as_ref()),
                    })
                })
                .collect(),
        ),
    }
}
