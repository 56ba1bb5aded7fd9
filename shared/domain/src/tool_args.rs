//! Arguments of the `search_knowledge_base` and `ask_gpt` tools exactly as seed 000 §2.2
//! defines them, and of `select_flight` (`search_flights` takes
//! [`super::flight::FlightSearchInput`], `remember` [`super::memory::RememberArgs`]). The JSON Schemas offered to the LLM are derived
//! from these types; field docs are what the model reads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::Error;

/// Search the knowledge base (help articles, programme rules, FAQs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "Search the knowledge base (RAG) for answers.")]
pub struct KnowledgeBaseArgs {
    /// What to look for, in the user's words.
    #[schemars(length(min = 1, max = 2000))]
    pub query: String,
    /// Number of passages to return, 1 to 20. Defaults to 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 20), extend("default" = 6))]
    pub top_k: Option<u32>,
}

impl KnowledgeBaseArgs {
    /// Passages returned when `top_k` is not given.
    pub const DEFAULT_TOP_K: u32 = 6;
    /// The most passages one search returns.
    pub const MAX_TOP_K: u32 = 20;
    /// The longest query, in characters.
    pub const MAX_QUERY_CHARS: usize = 2000;

    /// `top_k` clamped to 1..=20, default 6.
    pub fn top_k(&self) -> u32 {
        self.top_k
            .unwrap_or(Self::DEFAULT_TOP_K)
            .clamp(1, Self::MAX_TOP_K)
    }

    /// Checks the query: not blank, at most [`Self::MAX_QUERY_CHARS`] characters.
    pub fn validate(&self) -> Result<(), Error> {
        check_text("query", &self.query, Self::MAX_QUERY_CHARS)
    }

    /// Whitespace-trimmed query and clamped `top_k`, for dedupe and execution alike.
    pub fn canonical(&self) -> Value {
        json!({ "query": self.query.trim(), "top_k": self.top_k() })
    }
}

/// Ask the general-purpose model directly, without tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    description = "Answer a general question with the language model's own knowledge, e.g. when the knowledge base has nothing."
)]
pub struct AskGptArgs {
    /// The question to answer.
    #[schemars(length(min = 1, max = 4000))]
    pub query: String,
    /// Extra context for the answer, e.g. what the user said earlier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8000))]
    pub context: Option<String>,
    /// Whether a web search is wanted. Recorded only; no web search is performed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub web_search: Option<bool>,
    /// Sampling temperature, 0 to 1. Defaults to 0.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1), extend("default" = 0.2))]
    pub temperature: Option<f64>,
}

impl AskGptArgs {
    /// Temperature when none (or NaN) is given.
    pub const DEFAULT_TEMPERATURE: f64 = 0.2;
    /// The longest question, in characters.
    pub const MAX_QUERY_CHARS: usize = 4000;
    /// The longest context, in characters.
    pub const MAX_CONTEXT_CHARS: usize = 8000;

    /// Temperature clamped to 0..=1 (default 0.2); NaN falls back to the default.
    pub fn temperature(&self) -> f64 {
        match self.temperature {
            Some(t) if t.is_finite() => t.clamp(0.0, 1.0),
            _ => Self::DEFAULT_TEMPERATURE,
        }
    }

    /// Checks the query (not blank, at most [`Self::MAX_QUERY_CHARS`] characters) and the
    /// context's length.
    pub fn validate(&self) -> Result<(), Error> {
        check_text("query", &self.query, Self::MAX_QUERY_CHARS)?;
        match self.context.as_deref() {
            Some(context) if context.chars().count() > Self::MAX_CONTEXT_CHARS => {
                Err(Error::Invalid(format!(
                    "context: at most {} characters",
                    Self::MAX_CONTEXT_CHARS
                )))
            }
            _ => Ok(()),
        }
    }

    /// Trimmed query and context (a blank context dropped), the clamped temperature and
    /// `web_search` with its default: for dedupe and execution alike.
    pub fn canonical(&self) -> Value {
        let context = self
            .context
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty());
        json!({
            "context": context,
            "query": self.query.trim(),
            "temperature": self.temperature(),
            "web_search": self.web_search.unwrap_or(false),
        })
    }
}

/// Record the flight the user picks from the last search's list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    description = "Record the flight the user chose from the last flight search, by the number it was listed under."
)]
pub struct SelectFlightArgs {
    /// The number of the flight in the last search's list, e.g. 3.
    #[schemars(range(min = 1, max = 20))]
    pub option: u8,
}

/// A required text: not blank, at most `max` characters.
fn check_text(field: &str, text: &str, max: usize) -> Result<(), Error> {
    if text.trim().is_empty() {
        return Err(Error::Invalid(format!("{field} must not be empty")));
    }
    if text.chars().count() > max {
        return Err(Error::Invalid(format!("{field}: at most {max} characters")));
    }
    Ok(())
}

/// `transfer_to_<agent>`: the turn goes on with another specialist. The
/// description comes from the target profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffArgs {
    /// Why the other agent should take over, in a few words.
    #[schemars(length(min = 1, max = 200))]
    pub reason: String,
}

/// The most quick replies `suggest_replies` offers, and the fewest.
pub const MAX_QUICK_REPLIES: usize = 4;
/// The fewest quick replies `suggest_replies` offers.
pub const MIN_QUICK_REPLIES: usize = 2;

/// `suggest_replies`: answers the user can send with one tap, shown under the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    description = "Offer the user 2 to 4 short replies they can send with one tap, shown under your answer (e.g. \"Search business instead\", \"Yes, set an alert\"). Write your answer text in the same message; the replies are not the answer."
)]
pub struct SuggestRepliesArgs {
    /// In the user's language, each at most 60 characters, written as the user would say it.
    #[schemars(length(min = 2, max = 4), inner(length(min = 1, max = 60)))]
    pub replies: Vec<String>,
}

impl SuggestRepliesArgs {
    /// The replies trimmed, without blanks or repeats; 2 to 4 must be left.
    pub fn canonical(&self) -> Result<Vec<String>, Error> {
        let mut replies: Vec<String> = Vec::new();
        for reply in &self.replies {
            let reply = reply.split_whitespace().collect::<Vec<_>>().join(" ");
            if !reply.is_empty() && !replies.contains(&reply) {
                replies.push(reply);
            }
        }
        if !(MIN_QUICK_REPLIES..=MAX_QUICK_REPLIES).contains(&replies.len()) {
            return Err(Error::Invalid(format!(
                "replies: {MIN_QUICK_REPLIES} to {MAX_QUICK_REPLIES} different, non-empty replies"
            )));
        }
        Ok(replies)
    }
}

/// `show_flight_options`: flights of the last search shown as cards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    description = "Show flights from the last search list as cards the user can look at and pick from, by their option numbers. Use it when the user wants to compare a few of them."
)]
pub struct ShowFlightOptionsArgs {
    /// Option numbers as listed to the user (1 to 6 of them).
    #[schemars(length(min = 1, max = 6), inner(range(min = 1, max = 99)))]
    pub options: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_bounded_in_schema_and_validation() {
        let schema = serde_json::to_value(schemars::schema_for!(AskGptArgs)).unwrap_or_default();
        assert_eq!(schema["properties"]["query"]["maxLength"], json!(4000));
        let long = AskGptArgs {
            query: "x".repeat(4001),
            context: None,
            web_search: None,
            temperature: None,
        };
        assert!(long.validate().is_err());
        let kb = KnowledgeBaseArgs {
            query: "y".repeat(2001),
            top_k: None,
        };
        assert!(kb.validate().is_err());
    }

    #[test]
    fn kb_top_k_is_clamped_and_defaulted() {
        let args: KnowledgeBaseArgs = serde_json::from_value(json!({"query": " miles "})).unwrap();
        assert_eq!(args.canonical(), json!({"query": "miles", "top_k": 6}));
        let args: KnowledgeBaseArgs =
            serde_json::from_value(json!({"query": "x", "top_k": 99})).unwrap();
        assert_eq!(args.top_k(), 20);
    }

    #[test]
    fn ask_gpt_temperature_is_clamped() {
        let args: AskGptArgs =
            serde_json::from_value(json!({"query": "q", "temperature": 3.0})).unwrap();
        assert_eq!(args.temperature(), 1.0);
        let args: AskGptArgs = serde_json::from_value(json!({"query": "q"})).unwrap();
        assert_eq!(args.canonical()["temperature"], json!(0.2));
        assert!(
            serde_json::from_value::<AskGptArgs>(json!({"query": " "}))
                .unwrap()
                .validate()
                .is_err()
        );
    }
}
