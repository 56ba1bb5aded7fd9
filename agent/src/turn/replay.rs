//! A turn taken over from its dead host goes on from the model step that host logged but
//! did not finish (chat-router's `takeover`): the step's text and its tool calls come from
//! the log and the ledger, so the model is not asked again; the calls run through the
//! pipeline again, which answers those that ended from the ledger and takes over those
//! left running; the events the client already has are not sent twice.

use std::collections::HashSet;

use serde_json::Value;
use shared::domain::tool_call::ToolName;

use super::model::StepReply;
use crate::llm::{Completion, FinishReason, ToolCallRequest};
use agent_core::events::{EventSink, TurnEvent};

/// A model step the dead host took and logged (its text, its calls' `tool_started`) but
/// did not finish.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayedStep {
    /// What the step's model said before its calls, as the client got it.
    pub said: String,
    /// The step's calls as the ledger recorded them, in the order they started.
    pub calls: Vec<ReplayedCall>,
    /// The job ids of calls whose `tool_result` the client already has.
    pub ended: HashSet<String>,
}

/// One call of a [`ReplayedStep`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayedCall {
    /// The ledger's call id (the `job_id` of its events).
    pub job_id: String,
    /// The tool called.
    pub tool: ToolName,
    /// Its canonical arguments, as the ledger keeps them: run again, they name the same call.
    pub arguments: Value,
}

impl ReplayedStep {
    /// The step's reply as the model gave it: its text and its calls (ids of our own: the
    /// model's are not logged, and only the step's messages pair them).
    pub(super) fn reply(&self, model: &str) -> StepReply {
        let tool_calls = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| ToolCallRequest {
                id: format!("call_replayed_{i}"),
                name: call.tool.to_string(),
                arguments: call.arguments.to_string(),
            })
            .collect();
        StepReply {
            completion: Completion {
                model: model.to_owned(),
                content: self.said.clone(),
                tool_calls,
                finish_reason: Some(FinishReason::ToolCalls),
                usage: None,
            },
            cut: None,
            offered_tools: true,
        }
    }
}

/// The replayed step's events, less those the client has: each call's `tool_started`, and
/// the `tool_result` of the calls that ended.
pub(super) struct Unrepeated<'a> {
    pub inner: &'a dyn EventSink,
    pub step: &'a ReplayedStep,
}

impl EventSink for Unrepeated<'_> {
    fn emit(&self, event: TurnEvent) {
        let sent = match &event {
            TurnEvent::ToolStarted(started) => {
                self.step.calls.iter().any(|c| c.job_id == started.job_id)
            }
            TurnEvent::ToolResult(result) => result
                .job_id
                .as_ref()
                .is_some_and(|id| self.step.ended.contains(id)),
            _ => false,
        };
        if !sent {
            self.inner.emit(event);
        }
    }

    fn wants_debug(&self) -> bool {
        self.inner.wants_debug()
    }
}
