//! chat-router configuration, read and checked once at cold start. Every variable has a
//! row in the README's configuration table.

use std::time::Duration;

use shared::Result;
use shared::config::{Env, LedgerConfig, StorageConfig};
use shared::upstream::RetryPolicy;
use shared::usage::PriceTable;

#[derive(Debug, Clone)]
pub struct Config {
    pub storage: StorageConfig,
    pub ledger: LedgerConfig,
    /// OpenAI-compatible endpoint, e.g. `https://api.openai.com/v1` (`OPENAI_BASE_URL`).
    pub openai_base_url: String,
    /// Default model of every profile that names none (`OPENAI_MODEL`).
    pub openai_model: String,
    /// Secret holding the API key (`OPENAI_API_KEY_SECRET`); unset for keyless local
    /// servers such as Ollama or vLLM.
    pub openai_key_secret: Option<String>,
    /// Ask for token usage in the stream (`LLM_STREAM_USAGE`, default true).
    pub stream_usage: bool,
    /// Model prefixes that reject a custom temperature (`LLM_FIXED_TEMPERATURE_MODELS`).
    pub fixed_temperature_models: Vec<String>,
    pub prices: PriceTable,
    pub award_search_url: String,
    pub cash_search_url: String,
    pub kb_search_url: String,
    /// Tool rounds per turn before the model must answer (`MAX_TOOL_STEPS`, default 4).
    pub max_tool_steps: usize,
    /// Tool calls run per step (`MAX_PARALLEL_TOOLS`, default 5).
    pub max_parallel_tools: usize,
    /// Wall time all tool calls of a turn may use together (`TOOL_BUDGET_SECS`, default 15).
    pub tool_budget: Duration,
    /// Turn deadline when there is no Lambda deadline, e.g. in tests (`TURN_TIMEOUT_SECS`).
    pub turn_timeout: Duration,
    /// Messages read from the chat for the prompt (`HISTORY_MAX_MESSAGES`, default 30).
    pub history_max_messages: u32,
    /// Estimated tokens of history in the prompt (`HISTORY_TOKEN_BUDGET`, default 3000).
    pub history_token_budget: usize,
    /// Characters of one tool result in the prompt (`TOOL_RESULT_MAX_CHARS`, default 6000).
    pub tool_result_max_chars: usize,
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Config {
    pub fn from_env(env: &Env) -> Result<Self> {
        let storage = StorageConfig::from_env(env)?;
        let ledger = LedgerConfig::from_env(env)?;
        let prices = match env.get("LLM_PRICES_JSON") {
            Some(json) => PriceTable::from_json(json)?,
            None => PriceTable::default(),
        };
        let mut r = env.reader();
        let url_hint = "URL of the function's HTTP API route; set by template.yaml";
        let config = Self {
            storage,
            ledger,
            openai_base_url: r
                .or("OPENAI_BASE_URL", "https://api.openai.com/v1")
                .trim_end_matches('/')
                .to_owned(),
            openai_model: r.or("OPENAI_MODEL", "gpt-4o-mini"),
            openai_key_secret: r
                .optional("OPENAI_API_KEY_SECRET")
                .filter(|s| !s.is_empty()),
            stream_usage: r.parse_or("LLM_STREAM_USAGE", true),
            fixed_temperature_models: list(&r.or("LLM_FIXED_TEMPERATURE_MODELS", "gpt-5,o1,o3,o4")),
            prices,
            award_search_url: r.required("AWARD_SEARCH_URL", url_hint),
            cash_search_url: r.required("CASH_SEARCH_URL", url_hint),
            kb_search_url: r.required("KB_SEARCH_URL", url_hint),
            max_tool_steps: r.parse_or("MAX_TOOL_STEPS", 4usize).clamp(1, 10),
            max_parallel_tools: r.parse_or("MAX_PARALLEL_TOOLS", 5usize).clamp(1, 20),
            tool_budget: Duration::from_secs_f64(
                r.parse_or("TOOL_BUDGET_SECS", 15.0f64).clamp(0.1, 900.0),
            ),
            turn_timeout: Duration::from_secs_f64(
                r.parse_or("TURN_TIMEOUT_SECS", 120.0f64).clamp(1.0, 900.0),
            ),
            history_max_messages: r.parse_or("HISTORY_MAX_MESSAGES", 30u32).clamp(1, 200),
            history_token_budget: r.parse_or("HISTORY_TOKEN_BUDGET", 3000usize),
            tool_result_max_chars: r.parse_or("TOOL_RESULT_MAX_CHARS", 6000usize).max(200),
        };
        r.finish(config)
    }

    /// Retries of calls to the other functions: a couple, quickly; the tool timeout bounds them.
    pub fn tool_retry(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
            attempt_timeout: Duration::from_secs(30),
        }
    }

    /// Retries of LLM calls before the first byte.
    pub fn llm_retry(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(300),
            max_delay: Duration::from_secs(3),
            attempt_timeout: Duration::from_secs(60),
        }
    }
}
