//! What tools are built from (`Tool::build`), once per container.

use std::sync::Arc;

use agent_core::llm::{LlmProvider, ModelRef, Provider};
use guardrails::links::LinkPolicy;
use shared::alerts::AlertStore;
use shared::memory::MemoryStore;
use shared::metrics::Metrics;
use shared::support::SupportRequests;
use shared::usage::UsageStore;

use crate::functions::FunctionClient;
use shared::Error;
use shared::Result;

/// The container's clients and the deployment's settings, for every tool to take what it
/// needs from. A tool with a setting of its own adds a field here.
#[derive(Clone)]
pub struct ToolDeps {
    /// Signed calls to this project's tool functions.
    pub functions: FunctionClient,
    /// Where those functions answer.
    pub urls: FunctionUrls,
    /// Booking links that may reach the client and the model (`ANSWER_LINK_HOSTS`).
    pub links: LinkPolicy,
    /// The deployment's model providers.
    pub llm: Arc<dyn LlmProvider>,
    /// Token usage and the users' daily budgets.
    pub usage: Arc<dyn UsageStore>,
    /// What users asked to be remembered.
    pub memory: Arc<dyn MemoryStore>,
    /// Users' fare alerts.
    pub alerts: Arc<dyn AlertStore>,
    /// Requests for a person, for the operator (`contact_support`).
    pub support: Arc<dyn SupportRequests>,
    /// How users reach support outside the chat (`SUPPORT_CONTACT`), when the operator says.
    pub support_contact: Option<String>,
    /// Where tool metrics go.
    pub metrics: Metrics,
    /// `ask_gpt`'s model and prompt.
    pub ask_gpt: AskGptConfig,
}

/// Where this project's tool functions answer (`TOOL_FUNCTION_URLS`): comma-separated
/// entries, `<function>=<base URL>` for one function and a bare base URL for every other;
/// `{function}` in a base stands for the function's name. A tool's URL is its function's
/// base followed by its route: with `https://tools.example/internal`, kb-retrieve's
/// `/kb/search` is `https://tools.example/internal/kb/search`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FunctionUrls {
    /// The base of every function without an entry of its own.
    default: Option<String>,
    /// Bases of named functions; a later entry for a function replaces an earlier one.
    named: Vec<(String, String)>,
}

impl FunctionUrls {
    /// The URL of `route` (`/kb/search`) on `function` (`kb-retrieve`).
    pub fn url(&self, function: &str, route: &str) -> Result<String> {
        let base = self
            .named
            .iter()
            .rev()
            .find(|(name, _)| name == function)
            .map(|(_, base)| base)
            .or(self.default.as_ref())
            .ok_or_else(|| {
                Error::Config(format!(
                    "TOOL_FUNCTION_URLS has no URL for {function}: add `{function}=<URL>` or a URL for every function"
                ))
            })?;
        Ok(format!("{}{route}", base.replace("{function}", function)))
    }
}

impl std::str::FromStr for FunctionUrls {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let mut urls = Self::default();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, base) = match entry.split_once('=') {
                Some((name, base)) if is_function_name(name) => (Some(name), base),
                _ => (None, entry),
            };
            let base = base.trim().trim_end_matches('/');
            if !(base.starts_with("https://") || base.starts_with("http://")) {
                return Err(Error::Config(format!(
                    "TOOL_FUNCTION_URLS: `{entry}` is neither a URL nor `<function>=<URL>`"
                )));
            }
            match name {
                Some(name) => urls.named.push((name.to_owned(), base.to_owned())),
                None if urls.default.is_some() => {
                    return Err(Error::Config(
                        "TOOL_FUNCTION_URLS: more than one URL for every function".into(),
                    ));
                }
                None => urls.default = Some(base.to_owned()),
            }
        }
        Ok(urls)
    }
}

/// A function's name as the workspace spells it: `kb-retrieve`.
fn is_function_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_url_is_its_functions_base_and_its_route() {
        let urls: FunctionUrls = "https://tools.example/internal/".parse().unwrap();
        assert_eq!(
            urls.url("kb-retrieve", "/kb/search").unwrap(),
            "https://tools.example/internal/kb/search"
        );
        let local: FunctionUrls = "http://127.0.0.1:9000/lambda-url/{function}"
            .parse()
            .unwrap();
        assert_eq!(
            local.url("cash-search", "/flights/cash").unwrap(),
            "http://127.0.0.1:9000/lambda-url/cash-search/flights/cash"
        );
    }

    #[test]
    fn a_named_function_has_its_own_base_and_the_last_entry_wins() {
        let urls: FunctionUrls =
            "http://127.0.0.1:9, kb-retrieve=http://127.0.0.1:1, kb-retrieve=http://127.0.0.1:2"
                .parse()
                .unwrap();
        assert_eq!(
            urls.url("kb-retrieve", "/kb/search").unwrap(),
            "http://127.0.0.1:2/kb/search"
        );
        assert_eq!(
            urls.url("cash-search", "/flights/cash").unwrap(),
            "http://127.0.0.1:9/flights/cash"
        );
    }

    #[test]
    fn a_function_without_a_url_and_bad_entries_are_refused_by_name() {
        let only_kb: FunctionUrls = "kb-retrieve=http://127.0.0.1:1".parse().unwrap();
        let err = only_kb.url("cash-search", "/flights/cash").unwrap_err();
        assert!(err.to_string().contains("cash-search"), "{err}");
        for bad in ["kb-retrieve=ftp://x", "not a url", "https://a,https://b"] {
            assert!(bad.parse::<FunctionUrls>().is_err(), "{bad}");
        }
    }
}

/// `ask_gpt`'s model and prompt, from the deployment's LLM settings.
#[derive(Debug, Clone)]
pub struct AskGptConfig {
    /// Who answers: the deployment's provider (`LLM_PROVIDER`).
    pub provider: Provider,
    /// The model that answers (the deployment's default, not the profile's).
    pub model: String,
    /// Where the call goes, in order, when `model` stays unavailable before its first token
    /// (`[tools.ask_gpt] fallback` in the agent catalog); empty: nowhere.
    pub fallback: Arc<[ModelRef]>,
    /// Prepended to the question; says how to answer.
    pub system_prompt: String,
    /// Model-name prefixes that reject a custom temperature (e.g. `gpt-5`, `o1`): for them
    /// the parameter is left out (seed 000 §8.5).
    pub fixed_temperature_models: Vec<String>,
    /// `max_tokens` of the answer (`LLM_MAX_TOKENS`).
    pub max_tokens: u32,
}

impl AskGptConfig {
    /// Whether the model takes a custom temperature.
    pub(crate) fn accepts_temperature(&self) -> bool {
        let model = self.model.to_ascii_lowercase();
        !self
            .fixed_temperature_models
            .iter()
            .any(|prefix| model.starts_with(&prefix.to_ascii_lowercase()))
    }
}
