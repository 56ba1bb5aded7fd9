//! chat-router configuration, read and checked once at cold start. Every variable has a
//! row in the README's configuration table.

use std::time::Duration;

use agent::TurnSettings;
use agent::runtime::ToolsConfig;
use shared::Result;
use shared::config::Env;

#[derive(Debug, Clone)]
pub struct Config {
    /// Tables, LLM endpoint, tool routes, tool queue: shared with the tool-worker.
    pub tools: ToolsConfig,
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
    /// Sent with every answer as `final.metadata.notice` (`STACK_NOTICE`; the local stack
    /// says there which services are fakes).
    pub stack_notice: Option<String>,
    /// Hosts the answer may link to, comma-separated (`ANSWER_LINK_HOSTS`, default
    /// `seats.aero`; `.example.com` allows its subdomains).
    pub answer_link_hosts: Vec<String>,
    /// Longest user message accepted, in characters (`MAX_MESSAGE_CHARS`, default 8000);
    /// longer ones are refused with 413 before anything is stored.
    pub max_message_chars: usize,
}

impl Config {
    pub fn from_env(env: &Env) -> Result<Self> {
        let tools = ToolsConfig::from_env(env)?;
        let mut r = env.reader();
        let config = Self {
            tools,
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
            stack_notice: r.optional("STACK_NOTICE").filter(|s| !s.trim().is_empty()),
            answer_link_hosts: r
                .or("ANSWER_LINK_HOSTS", "seats.aero")
                .split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_owned)
                .collect(),
            max_message_chars: r.parse_or("MAX_MESSAGE_CHARS", 8000usize).clamp(1, 100_000),
        };
        r.finish(config)
    }
}

impl Config {
    /// How the agent runtime runs this function's turns.
    pub fn turn_settings(&self) -> TurnSettings {
        TurnSettings {
            max_tool_steps: self.max_tool_steps,
            tool_budget: self.tool_budget,
            history_max_messages: self.history_max_messages,
            history_token_budget: self.history_token_budget,
            tool_result_max_chars: self.tool_result_max_chars,
            default_model: self.tools.llm.model.clone(),
            stack_notice: self.stack_notice.clone(),
            answer_link_hosts: self.answer_link_hosts.clone(),
        }
    }
}
