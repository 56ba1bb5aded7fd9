//! Every text the runtime itself writes for a user (not the model's, not a tool's own
//! answer), in each supported language. Texts for the model (a refused call's tool
//! message, "Tell the user …") stay English and never reach a user: where a user would see
//! a call's outcome, [`UserText::for_call`] says it for them instead.
//!
//! Another language is one more [`Locale`] variant, one arm in [`UserText::text`] and one
//! function like [`UserText::english`].

use shared::domain::flight::Locale;
use shared::domain::tool_call::ToolName;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

use crate::pipeline::{CallOutcome, CallStatus};
use agent_core::events::TurnErrorCode;

/// A user text, with what it needs filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserText {
    /// The model ended without a usable answer.
    NoAnswer,
    /// The stored answer of a turn stopped by a cancel.
    Stopped,
    /// The model kept making invalid tool calls.
    CouldNotComplete,
    /// A guard stopped the turn.
    Refusal,
    /// The user's limit for `tool` is used up until `reset`.
    RateLimited {
        /// The tool whose limit it is.
        tool: ToolName,
        /// When the limit resets, if the call's result says (`reset_at`).
        reset: Option<Reset>,
    },
    /// The tool failed or timed out, or its checks could not run.
    Unavailable {
        /// The tool called.
        tool: ToolName,
    },
    /// The call goes on in the background (queued, or a retry was scheduled).
    InBackground {
        /// The tool called.
        tool: ToolName,
    },
    /// Not run: the turn's time or calls were used up.
    NotRun {
        /// The tool called.
        tool: ToolName,
    },
    /// Canceled by its owner while it ran.
    Canceled {
        /// The tool called.
        tool: ToolName,
    },
    /// `error` events without an answer of their own.
    LlmUnavailable,
    /// `not_found`: the chat does not exist or is not the caller's.
    ChatNotFound,
    /// `conflict`: another turn holds the chat, or the request contradicts its state.
    ChatChanged,
    /// `rate_limited`: the user's turn or budget limit is used up.
    TooManyRequests,
    /// `interrupted`: the turn's host ended it before it finished.
    Interrupted,
    /// `internal`: anything else.
    Failed,
}

/// When a limit resets; the date is shown only when it is not today (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reset {
    /// When the limit resets.
    pub at: OffsetDateTime,
    /// Whether `at` is on the current UTC day: then only its time is shown.
    pub today: bool,
}

impl UserText {
    /// The text in `locale`'s language.
    pub fn text(&self, locale: Locale) -> String {
        match locale {
            Locale::De => self.german(),
            Locale::En => self.english(),
        }
    }

    /// The `error` event's message for `code`: for the codes whose turn streamed and stored
    /// an answer (an apology, a refusal), that answer.
    pub fn for_error(code: TurnErrorCode) -> Self {
        match code {
            TurnErrorCode::LlmError => Self::LlmUnavailable,
            TurnErrorCode::InvalidToolCall => Self::CouldNotComplete,
            TurnErrorCode::Guardrail => Self::Refusal,
            TurnErrorCode::Interrupted => Self::Interrupted,
            TurnErrorCode::NotFound => Self::ChatNotFound,
            TurnErrorCode::Conflict => Self::ChatChanged,
            TurnErrorCode::RateLimited => Self::TooManyRequests,
            TurnErrorCode::Internal => Self::Failed,
        }
    }

    /// What the user is told of a call that did not succeed; `None` for one that did (its
    /// message is the tool's answer, written in the user's language by the tool).
    pub fn for_call(call: &CallOutcome, now: OffsetDateTime) -> Option<Self> {
        if call.status == CallStatus::Succeeded {
            return None;
        }
        // A call the model named wrongly never answers directly; the name is a fallback.
        let tool = call.tool.unwrap_or(ToolName::SEARCH_FLIGHTS);
        Some(match call.status {
            CallStatus::RateLimited => {
                let reset = call
                    .result
                    .metadata
                    .get("reset_at")
                    .and_then(|v| v.as_str())
                    .and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
                    .map(|at| Reset {
                        at,
                        today: at.to_offset(time::UtcOffset::UTC).date() == now.date(),
                    });
                Self::RateLimited { tool, reset }
            }
            _ if call.background => Self::InBackground { tool },
            CallStatus::Queued => Self::InBackground { tool },
            CallStatus::Skipped => Self::NotRun { tool },
            CallStatus::Canceled => Self::Canceled { tool },
            _ => Self::Unavailable { tool },
        })
    }

    fn english(&self) -> String {
        match *self {
            Self::NoAnswer => {
                "Sorry, I could not finish this request. Please try again or rephrase it.".into()
            }
            Self::Stopped => "Stopped at your request.".into(),
            Self::CouldNotComplete => {
                "Sorry, I could not complete that request. Please rephrase it.".into()
            }
            Self::Refusal => "Sorry, I can't help with that request.".into(),
            Self::RateLimited { tool, reset } => {
                let name = tool_en(tool);
                match reset {
                    Some(reset) => format!(
                        "You have reached the limit for {name}; it can be used again after {}.",
                        reset_en(reset)
                    ),
                    None => {
                        format!("You have reached the limit for {name}; please try again later.")
                    }
                }
            }
            Self::Unavailable { tool } => format!(
                "{} is unavailable right now. Please try again later.",
                capitalised(tool_en(tool))
            ),
            Self::InBackground { tool } => format!(
                "{} is taking longer and goes on in the background. Ask again in a moment and I'll show you the result.",
                capitalised(tool_en(tool))
            ),
            Self::NotRun { tool } => format!(
                "{} could not run this time. Please ask again.",
                capitalised(tool_en(tool))
            ),
            Self::Canceled { tool } => format!("{} was canceled.", capitalised(tool_en(tool))),
            Self::LlmUnavailable => {
                "The assistant is unavailable right now. Please try again in a moment.".into()
            }
            Self::ChatNotFound => "This chat was not found.".into(),
            Self::ChatChanged => {
                "The chat was changed at the same time. Please send your message again.".into()
            }
            Self::TooManyRequests => {
                "Too many requests. Please wait a moment and try again.".into()
            }
            Self::Interrupted => {
                "The answer was interrupted. Please send your message again.".into()
            }
            Self::Failed => "Something went wrong. Please try again.".into(),
        }
    }

    fn german(&self) -> String {
        match *self {
            Self::NoAnswer => "Entschuldigung, ich konnte diese Anfrage nicht abschließen. Bitte versuche es noch einmal oder formuliere sie anders.".into(),
            Self::Stopped => "Auf deinen Wunsch abgebrochen.".into(),
            Self::CouldNotComplete => {
                "Entschuldigung, das konnte ich nicht erledigen. Bitte formuliere die Anfrage anders.".into()
            }
            Self::Refusal => "Entschuldigung, bei dieser Anfrage kann ich nicht helfen.".into(),
            Self::RateLimited { tool, reset } => {
                let name = tool_de(tool);
                match reset {
                    Some(reset) => format!(
                        "Du hast das Limit für {name} erreicht; ab {} wieder möglich.",
                        reset_de(reset)
                    ),
                    None => format!(
                        "Du hast das Limit für {name} erreicht; bitte versuche es später noch einmal."
                    ),
                }
            }
            Self::Unavailable { tool } => format!(
                "{} ist gerade nicht verfügbar. Bitte versuche es später noch einmal.",
                capitalised(tool_de(tool))
            ),
            // Every tool's German name is feminine ("sie").
            Self::InBackground { tool } => format!(
                "{} dauert länger und läuft im Hintergrund weiter. Frag gleich noch einmal, dann zeige ich dir das Ergebnis.",
                capitalised(tool_de(tool))
            ),
            Self::NotRun { tool } => format!(
                "{} konnte diesmal nicht laufen. Bitte frag noch einmal.",
                capitalised(tool_de(tool))
            ),
            Self::Canceled { tool } => {
                format!("{} wurde abgebrochen.", capitalised(tool_de(tool)))
            }
            Self::LlmUnavailable => {
                "Der Assistent ist gerade nicht erreichbar. Bitte versuche es gleich noch einmal.".into()
            }
            Self::ChatNotFound => "Dieser Chat wurde nicht gefunden.".into(),
            Self::ChatChanged => {
                "Der Chat wurde gleichzeitig geändert. Bitte sende deine Nachricht noch einmal.".into()
            }
            Self::TooManyRequests => {
                "Zu viele Anfragen. Bitte warte einen Moment und versuche es dann noch einmal.".into()
            }
            Self::Interrupted => {
                "Die Antwort wurde unterbrochen. Bitte sende deine Nachricht noch einmal.".into()
            }
            Self::Failed => "Etwas ist schiefgelaufen. Bitte versuche es noch einmal.".into(),
        }
    }
}

/// The answer of a turn that waits for the user's approval: what each call will do.
pub fn approval_question(summaries: &[&str], locale: Locale) -> String {
    let list = summaries
        .iter()
        .map(|s| format!("- {s}"))
        .collect::<Vec<_>>()
        .join("\n");
    match locale {
        Locale::De => format!("Bitte bestätige, bevor ich das ausführe:\n{list}"),
        Locale::En => format!("Please confirm before I go ahead:\n{list}"),
    }
}

/// A tool as English users call it, mid-sentence (declared on the tool).
fn tool_en(tool: ToolName) -> &'static str {
    agent_tools::label(tool).en
}

/// A tool as German users call it, mid-sentence; every name takes "die", which fits both
/// the nominative and the accusative.
fn tool_de(tool: ToolName) -> &'static str {
    agent_tools::label(tool).de
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

fn reset_en(reset: Reset) -> String {
    let at = reset.at.to_offset(time::UtcOffset::UTC);
    let format = if reset.today {
        format_description!("[hour]:[minute] UTC")
    } else {
        format_description!("[year]-[month]-[day] [hour]:[minute] UTC")
    };
    at.format(&format).unwrap_or_default()
}

fn reset_de(reset: Reset) -> String {
    let at = reset.at.to_offset(time::UtcOffset::UTC);
    let format = if reset.today {
        format_description!("[hour]:[minute] UTC")
    } else {
        format_description!("[day].[month].[year], [hour]:[minute] UTC")
    };
    at.format(&format).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCallRequest;
    use shared::domain::tool_result::ToolExecutionResult;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2027-01-21 14:03 UTC);

    fn outcome(status: CallStatus, result: ToolExecutionResult) -> CallOutcome {
        CallOutcome {
            call: ToolCallRequest {
                id: "c".into(),
                name: "search_flights".into(),
                arguments: "{}".into(),
            },
            tool: Some(ToolName::SEARCH_FLIGHTS),
            job_id: None,
            status,
            deduped: false,
            retryable: false,
            background: false,
            result,
        }
    }

    fn limited(reset_at: &str) -> CallOutcome {
        outcome(
            CallStatus::RateLimited,
            ToolExecutionResult::failed("Rate limit reached … Tell the user.")
                .with_metadata("reset_at", reset_at),
        )
    }

    #[test]
    fn a_rate_limit_is_told_in_the_users_language_with_its_reset() {
        let text =
            |call: &CallOutcome, locale| UserText::for_call(call, NOW).map(|t| t.text(locale));
        let today = limited("2027-01-21T15:00:00Z");
        assert_eq!(
            text(&today, Locale::De).as_deref(),
            Some("Du hast das Limit für die Flugsuche erreicht; ab 15:00 UTC wieder möglich.")
        );
        assert_eq!(
            text(&today, Locale::En).as_deref(),
            Some(
                "You have reached the limit for the flight search; it can be used again after 15:00 UTC."
            )
        );
        let tomorrow = limited("2027-01-22T09:30:00+01:00");
        assert_eq!(
            text(&tomorrow, Locale::De).as_deref(),
            Some(
                "Du hast das Limit für die Flugsuche erreicht; ab 22.01.2027, 08:30 UTC wieder möglich."
            )
        );
        let unknown = limited("soon");
        assert!(text(&unknown, Locale::En).is_some_and(|t| t.ends_with("please try again later.")),);
    }

    #[test]
    fn each_failed_outcome_has_a_user_text_and_a_success_keeps_the_tools_own() {
        let failed = |status| outcome(status, ToolExecutionResult::failed("for the model"));
        assert_eq!(
            UserText::for_call(
                &outcome(CallStatus::Succeeded, ToolExecutionResult::succeeded("x")),
                NOW
            ),
            None
        );
        let tool = ToolName::SEARCH_FLIGHTS;
        for (status, expected) in [
            (CallStatus::Failed, UserText::Unavailable { tool }),
            (CallStatus::Timeout, UserText::Unavailable { tool }),
            (CallStatus::Queued, UserText::InBackground { tool }),
            (CallStatus::Skipped, UserText::NotRun { tool }),
            (CallStatus::Canceled, UserText::Canceled { tool }),
        ] {
            assert_eq!(UserText::for_call(&failed(status), NOW), Some(expected));
        }
        let retrying = CallOutcome {
            background: true,
            ..failed(CallStatus::Failed)
        };
        assert_eq!(
            UserText::for_call(&retrying, NOW),
            Some(UserText::InBackground { tool })
        );
        assert_eq!(
            UserText::Unavailable { tool }.text(Locale::De),
            "Die Flugsuche ist gerade nicht verfügbar. Bitte versuche es später noch einmal."
        );
    }

    /// No text is empty or the same in both languages, and none speaks to the model.
    #[test]
    fn every_text_exists_in_every_language() {
        let tool = ToolName::SEARCH_KNOWLEDGE_BASE;
        let reset = Some(Reset {
            at: NOW,
            today: true,
        });
        let all = [
            UserText::NoAnswer,
            UserText::Stopped,
            UserText::CouldNotComplete,
            UserText::Refusal,
            UserText::RateLimited { tool, reset },
            UserText::RateLimited { tool, reset: None },
            UserText::Unavailable { tool },
            UserText::InBackground { tool },
            UserText::NotRun { tool },
            UserText::Canceled { tool },
            UserText::LlmUnavailable,
            UserText::ChatNotFound,
            UserText::ChatChanged,
            UserText::TooManyRequests,
            UserText::Interrupted,
            UserText::Failed,
        ];
        for text in all {
            let (de, en) = (text.text(Locale::De), text.text(Locale::En));
            assert!(!de.is_empty() && !en.is_empty(), "{text:?}");
            assert_ne!(de, en, "{text:?}");
            for model_facing in ["Tell the user", "Not run:", "Rate limit reached", "_"] {
                assert!(
                    !de.contains(model_facing) && !en.contains(model_facing),
                    "{text:?}"
                );
            }
        }
        for code in [TurnErrorCode::Guardrail, TurnErrorCode::InvalidToolCall] {
            assert_ne!(UserText::for_error(code), UserText::Failed);
        }
    }
}
