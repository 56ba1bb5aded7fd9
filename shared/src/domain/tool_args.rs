//! Arguments of the `search_knowledge_base` and `ask_gpt` tools exactly as seed 000 §2.2
//! defines them (`search_flights` takes [`super::flight::FlightSearchInput`]). The JSON
//! Schemas offered to the LLM are derived from these types; field docs are what the model
//! reads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Error;

/// Search the knowledge base (help articles, programme rules, FAQs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "Search the knowledge base (RAG) for answers.")]
pub struct KnowledgeBaseArgs {
    /// What to look for, in the user's words.
    #[schemars(length(min = 1))]
    pub query: String,
    /// Number of passages to return, 1 to 20. Defaults to 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 20), extend("default" = 6))]
    pub top_k: Option<u32>,
}

impl KnowledgeBaseArgs {
    pub const DEFAULT_TOP_K: u32 = 6;
    pub const MAX_TOP_K: u32 = 20;

    /// `top_k` clamped to 1..=20, default 6.
    pub fn top_k(&self) -> u32 {
        self.top_k
            .unwrap_or(Self::DEFAULT_TOP_K)
            .clamp(1, Self::MAX_TOP_K)
    }

    pub fn validate(&self) -> Result<(), Error> {
        if self.query.trim().is_empty() {
            return Err(Error::Invalid("query must not be empty".into()));
        }
        Ok(())
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
    #[schemars(length(min = 1))]
    pub query: String,
    /// Extra context for the answer, e.g. what the user said earlier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
    pub const DEFAULT_TEMPERATURE: f64 = 0.2;

    /// Temperature clamped to 0..=1 (default 0.2); NaN falls back to the default.
    pub fn temperature(&self) -> f64 {
        match self.temperature {
            Some(t) if t.is_finite() => t.clamp(0.0, 1.0),
            _ => Self::DEFAULT_TEMPERATURE,
        }
    }

    pub fn validate(&self) -> Result<(), Error> {
        if self.query.trim().is_empty() {
            return Err(Error::Invalid("query must not be empty".into()));
        }
        Ok(())
    }

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

#[cfg(test)]
mod tests {
    use super::*;

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
