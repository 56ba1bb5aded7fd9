//! Step 5: after a step's tools, what next. A pure function of the step's outcome, so the
//! rules are in one place and tested without a model.

use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;
use time::OffsetDateTime;

use crate::pipeline::{CallOutcome, CallStatus, StepOutcome};
use crate::texts::UserText;

#[derive(Debug, PartialEq)]
pub(super) enum Decision {
    /// Give the results to the model in another step.
    NextStep,
    /// A call was the model's mistake (unknown tool, invalid arguments): one more step to
    /// fix it.
    Repair,
    /// Every call was to a tool whose message is the answer (seed 000 §12.1): no further
    /// model call. The joined answers, each the tool's own or, for a call that did not
    /// succeed, a user text in the turn's language (never what the model was told).
    AnswerDirectly(String),
    /// The model erred again after its repair round. The problems, joined.
    GiveUp(String),
}

/// How a turn's step is seen: the user's language and the time (for a limit's reset).
#[derive(Debug, Clone, Copy)]
pub(super) struct Audience {
    pub locale: Locale,
    pub now: OffsetDateTime,
}

/// `answers_directly` tells whether a tool's message is the answer itself; `shows_ui`
/// whether a tool is a UI skill (the client renders its result, e.g. quick replies), which
/// may stand beside such a call without costing the answer its direct path.
pub(super) fn after_tools(
    outcome: &StepOutcome,
    repaired: bool,
    answers_directly: impl Fn(ToolName) -> bool,
    shows_ui: impl Fn(ToolName) -> bool,
    audience: Audience,
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
    let answers = |c: &&CallOutcome| c.tool.is_some_and(&answers_directly);
    // Quick replies beside a flight search: the client shows them with its answer, so
    // they need no model call of their own (and have no text to add to the answer).
    let beside = |c: &CallOutcome| answers(&c) || c.tool.is_some_and(&shows_ui);
    if outcome.calls.iter().any(|c| answers(&c)) && outcome.calls.iter().all(beside) {
        let text = outcome
            .calls
            .iter()
            .filter(answers)
            .map(|c| shown(c, audience))
            .collect::<Vec<_>>()
            .join("\n\n");
        return Decision::AnswerDirectly(text);
    }
    Decision::NextStep
}

/// What the user sees of a call whose message would be the answer: its user text when it
/// did not succeed, else its answer for the user (e.g. beside the flight tables), else its
/// message.
fn shown(call: &CallOutcome, audience: Audience) -> String {
    match UserText::for_call(call, audience.now) {
        Some(text) => text.text(audience.locale),
        None => call
            .result
            .answer
            .clone()
            .unwrap_or_else(|| call.result.message.clone()),
    }
}

#[cfg(test)]
mod tests {
    use shared::domain::tool_result::ToolExecutionResult;

    use super::*;

    const GERMAN: Audience = Audience {
        locale: Locale::De,
        now: time::macros::datetime!(2027-01-21 14:03 UTC),
    };

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
        tool == ToolName::SEARCH_FLIGHTS
    }

    fn replies(tool: ToolName) -> bool {
        tool == ToolName::SUGGEST_REPLIES
    }

    #[test]
    fn a_rejected_call_gets_one_repair_round_then_the_turn_gives_up() {
        let bad = step(vec![
            call(
                ToolName::SEARCH_FLIGHTS,
                CallStatus::Rejected,
                "origin: required.",
            ),
            call(ToolName::ASK_GPT, CallStatus::Succeeded, "fine"),
        ]);
        assert_eq!(
            after_tools(&bad, false, flights_answer, replies, GERMAN),
            Decision::Repair
        );
        assert_eq!(
            after_tools(&bad, true, flights_answer, replies, GERMAN),
            Decision::GiveUp("origin: required.".into())
        );
    }

    #[test]
    fn tools_that_answer_directly_end_the_turn_only_when_every_call_does() {
        let two = step(vec![
            call(ToolName::SEARCH_FLIGHTS, CallStatus::Succeeded, "outbound"),
            call(
                ToolName::SEARCH_FLIGHTS,
                CallStatus::Failed,
                "return failed",
            ),
        ]);
        assert_eq!(
            after_tools(&two, false, flights_answer, replies, GERMAN),
            Decision::AnswerDirectly(
                "outbound\n\nDie Flugsuche ist gerade nicht verfügbar. Bitte versuche es später noch einmal."
                    .into()
            ),
            "a failed call's answer is the user's text, not the model's"
        );
        let mixed = step(vec![
            call(ToolName::SEARCH_FLIGHTS, CallStatus::Succeeded, "flights"),
            call(
                ToolName::SEARCH_KNOWLEDGE_BASE,
                CallStatus::Succeeded,
                "passages",
            ),
        ]);
        assert_eq!(
            after_tools(&mixed, true, flights_answer, replies, GERMAN),
            Decision::NextStep
        );
    }

    #[test]
    fn quick_replies_beside_a_direct_answer_keep_it_direct_but_alone_do_not_answer() {
        let beside = step(vec![
            call(ToolName::SEARCH_FLIGHTS, CallStatus::Succeeded, "flights"),
            call(
                ToolName::SUGGEST_REPLIES,
                CallStatus::Succeeded,
                "The replies are shown to the user under your answer.",
            ),
        ]);
        assert_eq!(
            after_tools(&beside, false, flights_answer, replies, GERMAN),
            Decision::AnswerDirectly("flights".into()),
            "the replies' message is for the model, not the answer"
        );
        // Replies that did not make it (e.g. a timeout) do not cost the answer its path.
        let failed = step(vec![
            call(ToolName::SUGGEST_REPLIES, CallStatus::Timeout, "timeout"),
            call(ToolName::SEARCH_FLIGHTS, CallStatus::Succeeded, "flights"),
        ]);
        assert_eq!(
            after_tools(&failed, false, flights_answer, replies, GERMAN),
            Decision::AnswerDirectly("flights".into())
        );
        // A call's answer for the user, when it has one, stands in for its message.
        let mut flights = call(ToolName::SEARCH_FLIGHTS, CallStatus::Succeeded, "1. LH …");
        flights.result = flights.result.with_answer("I found 1 award flight.");
        assert_eq!(
            after_tools(&step(vec![flights]), false, flights_answer, replies, GERMAN),
            Decision::AnswerDirectly("I found 1 award flight.".into())
        );
        let alone = step(vec![call(
            ToolName::SUGGEST_REPLIES,
            CallStatus::Succeeded,
            "shown",
        )]);
        assert_eq!(
            after_tools(&alone, false, flights_answer, replies, GERMAN),
            Decision::NextStep
        );
    }
}
