//! A turn that continues a chat after the user approved or denied a call that waited for
//! them (`POST /chats/{id}/tool-calls/{job_id}/approve|deny`). It is opened like a message
//! turn (the chat held, the turn counted), but instead of a user message it starts with the
//! decision: the ledger takes it once (a concurrent or repeated decision is refused there),
//! an approved call runs here, a denied one is reported, and the model is told the outcome
//! and answers as in any turn.

use std::sync::Arc;

use shared::Result;
use shared::domain::tool_call::ToolCallRecord;
use shared::ledger::{ApprovalChoice, Decided};

use super::{Agent, TurnInput, TurnState, prompt};
use crate::llm::PromptMessage;
use crate::pipeline::CallOutcome;
use agent_core::events::EventSink;

/// The user's say over a call awaiting approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallDecision {
    /// The ledger's id of the call (the `approval_required` event's `job_id`).
    pub job_id: String,
    /// `true`: the user approved the call, which then runs; `false`: they denied it.
    pub approve: bool,
    /// With a denial: the user's reason (their text, shown to the model as data).
    pub reason: Option<String>,
}

/// The decision as the ledger took it, with the call as it was asked for.
pub(super) struct TakenDecision {
    record: ToolCallRecord,
    decided: Decided,
}

impl Agent {
    /// Takes the decision in the ledger: `Err(NotFound)` for a call that is not the user's
    /// in this chat, `Err(IllegalTransition)` for one that is not waiting (decided before,
    /// expired, never needed approval).
    pub(super) async fn take_decision(
        &self,
        input: &TurnInput,
        chat_id: &str,
        decision: &CallDecision,
    ) -> Result<TakenDecision> {
        let owner = &input.user_id;
        let record = self.ledger.get(owner, chat_id, &decision.job_id).await?;
        let choice = if decision.approve {
            let timeout = self
                .pipeline
                .registry
                .resolve_ready(record.tool, &record.request)
                .await
                .map(|t| t.settings.timeout)
                .unwrap_or_default();
            ApprovalChoice::Approve {
                lease: time::Duration::try_from(timeout).unwrap_or(time::Duration::MINUTE)
                    + time::Duration::seconds(30),
            }
        } else {
            ApprovalChoice::Deny {
                reason: decision.reason.clone(),
            }
        };
        let decided = self
            .ledger
            .decide(owner, chat_id, &decision.job_id, choice)
            .await?;
        tracing::info!(chat_id, job_id = %decision.job_id, tool = %record.tool, approved = decision.approve, "tool call decided by its user");
        Ok(TakenDecision { record, decided })
    }

    /// Runs (approved) or reports (denied) the decided call, and tells the model how it
    /// ended, so the loop that follows answers the user about it.
    pub(super) async fn apply_decision(
        &self,
        input: &TurnInput,
        state: &mut TurnState,
        taken: TakenDecision,
        events: &dyn EventSink,
    ) {
        let TakenDecision { record, decided } = taken;
        let (verdict, outcome): (&str, CallOutcome) = match decided {
            Decided::Approved(claimed) => {
                let ctx = self.tool_context(input, state);
                let outcome = self
                    .pipeline
                    .run_approved(&ctx, &record, claimed, events)
                    .await;
                ("approved", outcome)
            }
            Decided::Denied(denied) => ("denied", self.pipeline.denied(&denied, events)),
        };
        if let Some(patch) = &outcome.result.state_patch {
            state.unsaved_patch.merge(patch.clone());
        }
        let mut body = prompt::tool_message(&outcome);
        if let Some(reason) = outcome
            .result
            .metadata
            .get("reason")
            .and_then(|r| r.as_str())
        {
            body.push_str(&format!("\nThe user's reason: {reason}"));
        }
        let source = format!("tool {}, job {}", record.tool, record.id);
        let max_chars = self.settings.tool_result_max_chars;
        Arc::make_mut(&mut state.prompt).push(PromptMessage::system(format!(
            "The user {verdict} the call of {} that waited for their approval (job {}). Its outcome is in the data block below; tell the user briefly.\n{}",
            record.tool,
            record.id,
            state
                .fence
                .wrap(&source, &super::history::truncate(&body, max_chars))
        )));
        state.last_results = vec![outcome];
    }
}
