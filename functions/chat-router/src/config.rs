//! chat-router configuration, read and checked once at cold start. Every variable has a
//! row in docs/configuration.md.

use std::time::Duration;

use agent::TurnSettings;
use agent::runtime::ToolsConfig;
use shared::Result;
use shared::config::Env;
use shared::http::auth::AuthenticatedUser;

#[derive(Debug, Clone)]
pub struct Config {
    /// Tables, LLM endpoint, tool routes, tool queue: shared with the tool-worker.
    pub tools: ToolsConfig,
    /// Tool rounds per turn before the model must answer (`MAX_TOOL_STEPS`, default 4).
    pub max_tool_steps: usize,
    /// Tool calls run per step (`MAX_PARALLEL_TOOLS`, default 5).
    pub max_parallel_tools: usize,
    /// Tool calls per message across all steps (`MAX_TOOL_CALLS_PER_MESSAGE`, default 5).
    pub max_tool_calls: usize,
    /// Turns one user may start per minute (`USER_TURNS_PER_MINUTE`, default 20; 0: off).
    pub turns_per_minute: Option<u32>,
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
    /// Longest user message accepted, in characters (`MAX_MESSAGE_CHARS`, default 8000);
    /// longer ones are refused with 413 before anything is stored.
    pub max_message_chars: usize,
    /// Callers in this group (`cognito:groups`) get `debug` events when they ask
    /// (`DEBUG_ADMIN_GROUP`; unset: nobody by group).
    pub debug_admin_group: Option<String>,
    /// Every caller gets `debug` events when they ask (`DEBUG_FOR_EVERYONE`, default false):
    /// for the local stack and test stages, never production.
    pub debug_for_everyone: bool,
}

impl Config {
    pub fn from_env(env: &Env) -> Result<Self> {
        let tools = ToolsConfig::from_env(env)?;
        let mut r = env.reader();
        let config = Self {
            tools,
            max_tool_steps: r.parse_or("MAX_TOOL_STEPS", 4usize).clamp(1, 10),
            max_parallel_tools: r.parse_or("MAX_PARALLEL_TOOLS", 5usize).clamp(1, 20),
            max_tool_calls: r
                .parse_or("MAX_TOOL_CALLS_PER_MESSAGE", 5usize)
                .clamp(1, 50),
            turns_per_minute: Some(r.parse_or("USER_TURNS_PER_MINUTE", 20u32)).filter(|n| *n > 0),
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
            max_message_chars: r.parse_or("MAX_MESSAGE_CHARS", 8000usize).clamp(1, 100_000),
            debug_admin_group: r
                .optional("DEBUG_ADMIN_GROUP")
                .map(|g| g.trim().to_owned())
                .filter(|g| !g.is_empty()),
            debug_for_everyone: r.parse_or("DEBUG_FOR_EVERYONE", false),
        };
        r.finish(config)
    }
}

impl Config {
    /// Whether `user`'s request for debug events is honoured: they show the model's tool
    /// arguments and the pipeline's internals, so they are a privilege.
    pub fn may_debug(&self, user: &AuthenticatedUser) -> bool {
        self.debug_for_everyone
            || self
                .debug_admin_group
                .as_ref()
                .is_some_and(|group| user.groups.contains(group))
    }

    /// How the agent runtime runs this function's turns.
    pub fn turn_settings(&self) -> TurnSettings {
        TurnSettings {
            max_tool_steps: self.max_tool_steps,
            max_tool_calls: self.max_tool_calls,
            default_max_tokens: self.tools.llm.max_tokens,
            turns_per_minute: self.turns_per_minute,
            daily_budget_usd: self.tools.llm.daily_budget_usd,
            tool_budget: self.tool_budget,
            history_max_messages: self.history_max_messages,
            history_token_budget: self.history_token_budget,
            tool_result_max_chars: self.tool_result_max_chars,
            models: self.tools.llm.model_defaults(),
            stack_notice: self.stack_notice.clone(),
            answer_link_hosts: self.tools.link_hosts.clone(),
        }
    }
}
