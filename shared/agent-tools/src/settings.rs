//! A tool's operating settings (`config/agents.toml`'s `[tools.<name>]`, a profile's
//! overrides, an MCP server's entry): timeout, rate limit, retries, cache, approval.

use std::time::Duration;

use serde::Deserialize;
use shared::limits::RateLimit;

use agent_core::call_status::CallStatus;
use shared::Error;
use shared::Result;
use shared::config::Env;

/// Whether a tool's calls wait for the user's approval before they run (`approval`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Runs when the model calls it.
    #[default]
    Never,
    /// Recorded as `awaiting_approval`; runs once the user approves it.
    Always,
}

/// Operating limits of one tool, from `config/agents.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSettings {
    /// How long one call may take, retries inside it included (`timeout_secs`).
    pub timeout: Duration,
    /// Calls per user per window (`rate_limit`); `None`: unlimited.
    pub rate_limit: Option<RateLimit>,
    /// This tool's retries through the tool queue; `None`: the deployment's
    /// (`TOOL_MAX_ATTEMPTS`, `TOOL_RETRY_BASE_SECS`).
    pub retry: Option<RetrySchedule>,
    /// Which passing failures are retried (`retry.on`); both by default.
    pub retry_on: RetryOn,
    /// How long a result may serve identical calls of any user (`cache_secs`); `None`:
    /// never cached.
    pub cache_ttl: Option<Duration>,
    /// Whether calls wait for the user's approval; a profile may override it.
    pub approval: Approval,
}

/// The passing failures a tool retries through the tool queue (seed 003's
/// `retryConfig.retryOn`): an upstream error (5xx, 429, unreachable) and a timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryOn {
    /// Retry after an upstream error.
    pub upstream: bool,
    /// Retry after a timeout.
    pub timeout: bool,
}

impl Default for RetryOn {
    fn default() -> Self {
        Self {
            upstream: true,
            timeout: true,
        }
    }
}

impl RetryOn {
    /// Whether a retryable failure that ended as `status` is retried.
    pub fn covers(self, status: CallStatus) -> bool {
        match status {
            CallStatus::Timeout => self.timeout,
            _ => self.upstream,
        }
    }
}

impl Default for ToolSettings {
    /// Seed 001's recommendation: 5 s per tool.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            rate_limit: None,
            retry: None,
            retry_on: RetryOn::default(),
            cache_ttl: None,
            approval: Approval::Never,
        }
    }
}

/// A rate limit as the configuration writes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitEntry {
    max: u32,
    window_secs: u32,
}

impl RateLimitEntry {
    /// The limit, if both numbers are above 0 (`what` and `source` go into the error).
    pub fn checked(self, what: &str, source: &str) -> Result<RateLimit> {
        if self.max == 0 || self.window_secs == 0 {
            return Err(Error::Config(format!(
                "{source}: {what}.rate_limit needs max and window_secs above 0"
            )));
        }
        Ok(RateLimit {
            max: self.max,
            window: time::Duration::seconds(i64::from(self.window_secs)),
        })
    }
}

/// How often and how soon failed tool calls are tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySchedule {
    /// Attempts in all, the first (in the chat turn) included (`TOOL_MAX_ATTEMPTS`, default 3).
    pub max_attempts: u32,
    /// Delay before the first retry; doubled for each further one (`TOOL_RETRY_BASE_SECS`,
    /// default 5).
    pub base_delay: Duration,
}

/// Default `TOOL_RETRY_BASE_SECS`, and of a tool's `retry.base_secs`.
pub const DEFAULT_RETRY_BASE_SECS: u64 = 5;

/// SQS delays messages by at most 15 minutes.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

impl RetrySchedule {
    /// The deployment's schedule (`TOOL_MAX_ATTEMPTS`, `TOOL_RETRY_BASE_SECS`).
    pub fn from_env(env: &Env) -> Result<Self> {
        let mut r = env.reader();
        let schedule = Self {
            max_attempts: r.parse_or("TOOL_MAX_ATTEMPTS", 3u32).clamp(1, 10),
            base_delay: Duration::from_secs(
                r.parse_or("TOOL_RETRY_BASE_SECS", DEFAULT_RETRY_BASE_SECS)
                    .min(900),
            ),
        };
        r.finish(schedule)
    }

    /// Whether `failed_attempt` may be followed by another one.
    pub fn allows_retry_after(&self, failed_attempt: u32) -> bool {
        failed_attempt < self.max_attempts
    }

    /// The delay before the attempt after `failed_attempt`: base · 2^(n−1), capped at SQS's
    /// 15 minutes. No jitter: each call has its own message, so retries do not align.
    pub fn delay_after(&self, failed_attempt: u32) -> Duration {
        let doublings = failed_attempt.saturating_sub(1).min(16);
        self.base_delay
            .saturating_mul(1u32 << doublings)
            .min(MAX_DELAY)
    }
}
