//! Step 5: after a step's tools, what next. A pure function of the step's outcome, so the
//! rules are in one place and tested without a model.

use shared::domain::tool_call::ToolName;

use crate::pipeline::{CallStatus, StepOutcome};

#[derive(Debug, PartialEq)]
pub(super) enum Decision {
    /// Give the results to the model in another step.
    NextStep,
    /// A call was the model's mistake (unknown tool, invalid arguments): one more step to
    /// fix it.
    Repair,
    /// Every call was to a tool whose message is the answer (seed 000 §12.1): no further
    /// model call. The joined messages.
    AnswerDirectly(String),
    /// The model erred again after its repair round. The problems, joined.
    GiveUp(String),
}

/// `answers_directly` tells whether a tool's message is the answer itself.
pub(super) fn after_tools(
    outcome: &StepOutcome,
    repaired: bool,
    answers_directly: impl Fn(ToolName) -> bool,
) -> Decision {
    if outcome.needs_repair() {
        if !repaired {
            return Decision::Repair;
        }
        let problems: Vec<&str> = outcome
            .calls
            .iter()
            .filter(|c| c.status == CallStatus::Rejected)
            .map(|c| c.result.message.as_str())
            .collect();
        return Decision::GiveUp(problems.join(" "));
    }
    let direct = outcome
        .calls
        .iter()
        .all(|c| c.tool.is_some_and(&answers_directly));
    if direct {
        let text = outcome
            .calls
            .iter()
            .map(|c| c.result.message.as_str())
            .collect::<Vec<_>>()
            .join("\n\n");
        return Decision::AnswerDirectly(text);
    }
    Decision::NextStep
}

#[cfg(test)]
mod tests {
    use shared::domain::tool_result::ToolExecutionResult;

    use super::*;
    use crate::pipeline::CallOutcome;

    fn call(tool: ToolName, status: CallStatus, message: &str) -> CallOutcome {
        CallOutcome {
            call: crate::llm::ToolCallRequest {
                id: "c".into(),
                name: tool.as_str().into(),
                arguments: "{}".into(),
            },
            tool: Some(tool),
            job_id: None,
            status,
            deduped: false,
            retryable: false,
            background: false,
            result: ToolExecutionResult::succeeded(message),
        }
    }

    fn step(calls: Vec<CallOutcome>) -> StepOutcome {
        StepOutcome {
            calls,
            ..StepOutcome::default()
        }
    }

    fn flights_answer(tool: ToolName) -> bool {
        tool == ToolName::SearchFlights
    }

    #[test]
    fn a_rejected_call_gets_one_repair_round_then_the_turn_gives_up() {
        let bad = step(vec![
            call(
                ToolName::SearchFlights,
                CallStatus::Rejected,
                "origin: required.",
            ),
            call(ToolName::AskGpt, CallStatus::Succeeded, "fine"),
        ]);
        assert_eq!(after_tools(&bad, false, flights_answer), Decision::Repair);
        assert_eq!(
            after_tools(&bad, true, flights_answer),
            Decision::GiveUp("origin: required.".into())
        );
    }

    #[test]
    fn tools_that_answer_directly_end_the_turn_only_when_every_call_does() {
        let two = step(vec![
            call(ToolName::SearchFlights, CallStatus::Succeeded, "outbound"),
            call(ToolName::SearchFlights, CallStatus::Failed, "return failed"),
        ]);
        assert_eq!(
            after_tools(&two, false, flights_answer),
            Decision::AnswerDirectly("outbound\n\nreturn failed".into())
        );
        let mixed = step(vec![
            call(ToolName::SearchFlights, CallStatus::Succeeded, "flights"),
            call(
                ToolName::SearchKnowledgeBase,
                CallStatus::Succeeded,
                "passages",
            ),
        ]);
        assert_eq!(
            after_tools(&mixed, true, flights_answer),
            Decision::NextStep
        );
    }
}
