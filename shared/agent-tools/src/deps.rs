//! What tools are built from (`Tool::build`), once per container.

use std::sync::Arc;

use agent_core::llm::LlmProvider;
use guardrails::links::LinkPolicy;
use shared::alerts::AlertStore;
use shared::memory::MemoryStore;
use shared::metrics::Metrics;
use shared::usage::UsageStore;

use crate::FunctionClient;
use crate::ask_gpt::AskGptConfig;

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
    pub llm: Arc<dyn LlmProvider>,
    /// Token usage and the users' daily budgets.
    pub usage: Arc<dyn UsageStore>,
    /// What users asked to be remembered.
    pub memory: Arc<dyn MemoryStore>,
    /// Users' fare alerts.
    pub alerts: Arc<dyn AlertStore>,
    pub metrics: Metrics,
    /// `ask_gpt`'s model and prompt.
    pub ask_gpt: AskGptConfig,
}

/// The `POST` endpoints of the tool functions.
#[derive(Debug, Clone, Default)]
pub struct FunctionUrls {
    /// seatsaero-search (`AWARD_SEARCH_URL`).
    pub award_search: String,
    /// cash-search (`CASH_SEARCH_URL`).
    pub cash_search: String,
    /// kb-retrieve (`KB_SEARCH_URL`).
    pub kb_search: String,
}
