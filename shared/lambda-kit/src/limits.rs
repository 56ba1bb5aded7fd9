//! Per-user rate limits, per tool and for chat turns (seed 004): fixed windows counted by one conditional atomic
//! update per check. The counter only moves while it is below the limit, so N concurrent
//! checks against a limit of L allow exactly min(N, L).

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{ReturnValue, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

use crate::companion::Companion;
use crate::dynamo::{ConditionFailure, invalid_action, n, s, sdk_error};
use domain::clock::{Clock, SystemClock};
use domain::tool_call::ToolName;
use domain::{Error, Result};

/// At most `max` calls per `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Calls allowed per window; 0 allows none.
    pub max: u32,
    /// The window's length; windows are aligned to the Unix epoch.
    pub window: Duration,
}

/// What a limit check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// The use was counted.
    Allowed {
        /// Uses left in this window.
        remaining: u32,
        /// When the window ends.
        #[serde(with = "time::serde::rfc3339")]
        reset_at: OffsetDateTime,
    },
    /// The window is full; nothing was counted.
    Limited {
        /// When the window ends and the limit frees up.
        #[serde(with = "time::serde::rfc3339")]
        reset_at: OffsetDateTime,
    },
}

impl Decision {
    /// Whether the use was counted.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Self::Allowed { .. })
    }
}

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitScope {
    /// Calls of one tool.
    Tool(ToolName),
    /// Chat turns (messages sent to the chat-router).
    ChatTurns,
    /// Users' own calls to a public tool route (e.g. `/flights/award`), counted apart
    /// from the chat's tool calls.
    Route(&'static str),
    /// Calls of one external MCP tool, by its offered name (`<server>__<tool>`, from the
    /// configuration, so it lives as long as the process).
    External(&'static str),
}

impl LimitScope {
    /// The limit's name in a 429's `details.limit`.
    pub fn name(self) -> &'static str {
        match self {
            Self::ChatTurns => "chat_turns",
            other => other.key(),
        }
    }

    fn key(self) -> &'static str {
        match self {
            Self::Tool(tool) => tool.as_str(),
            // Cannot collide with a tool: tool names are snake_case words without `#`.
            Self::ChatTurns => "#turns",
            // Routes start with `/`, which tool names never contain.
            Self::Route(route) => route,
            // Offered names hold `__`, which no tool name does.
            Self::External(tool) => tool,
        }
    }
}

/// Counts uses against per-user limits.
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Counts one use of `scope` by `user_id` if the window has room.
    async fn check_scope(
        &self,
        user_id: &str,
        scope: LimitScope,
        limit: RateLimit,
    ) -> Result<Decision>;

    /// [`RateLimiter::check_scope`] as a write in another store's transaction: it counts
    /// only if that write happens, and its failed condition (the window is full) is
    /// `Error::Limited`. A limit of 0 is `Error::Limited` at once.
    fn count_companion(
        &self,
        user_id: &str,
        scope: LimitScope,
        limit: RateLimit,
    ) -> Result<Companion>;

    /// Counts one call of `tool` by `user_id` if the window has room.
    async fn check(&self, user_id: &str, tool: ToolName, limit: RateLimit) -> Result<Decision> {
        self.check_scope(user_id, LimitScope::Tool(tool), limit)
            .await
    }
}

/// [`RateLimiter`] on DynamoDB: one counter item per user, scope and window, removed by TTL
/// after its window.
#[derive(Clone)]
pub struct DynamoRateLimiter {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
}

impl DynamoRateLimiter {
    /// A limiter on `table`, with the system clock.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self::with_clock(client, table, Arc::new(SystemClock))
    }

    /// A limiter on `table` that reads the time from `clock` (tests move it).
    pub fn with_clock(client: Client, table: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            table: table.into(),
            clock,
        }
    }
}

/// Start and end of the fixed window containing `now` (windows are aligned to the epoch).
fn window_bounds(now: OffsetDateTime, window: Duration) -> (i64, OffsetDateTime) {
    let len = window.whole_seconds().max(1);
    let start = now.unix_timestamp().div_euclid(len) * len;
    let reset_at = OffsetDateTime::from_unix_timestamp(start + len).unwrap_or(now + window);
    (start, reset_at)
}

impl DynamoRateLimiter {
    /// The counter's conditional increment for the window containing now, and when that
    /// window ends.
    fn counter_update(
        &self,
        user_id: &str,
        scope: LimitScope,
        limit: RateLimit,
    ) -> Result<(Update, OffsetDateTime)> {
        let (start, reset_at) = window_bounds(self.clock.now(), limit.window);
        if limit.max == 0 {
            return Err(Error::Limited {
                what: scope.name().to_owned(),
                reset_at,
            });
        }
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(format!("RL#{user_id}#{}#{start}", scope.key())))
            .update_expression("ADD calls :one SET #ttl = :ttl")
            .condition_expression("attribute_not_exists(calls) OR calls < :max")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(limit.max))
            // Keep the counter a little past its window, then let TTL remove it.
            .expression_attribute_values(":ttl", n(reset_at.unix_timestamp() + 3600))
            .build()
            .map_err(invalid_action)?;
        Ok((update, reset_at))
    }
}

#[async_trait]
impl RateLimiter for DynamoRateLimiter {
    async fn check_scope(
        &self,
        user_id: &str,
        scope: LimitScope,
        limit: RateLimit,
    ) -> Result<Decision> {
        let (update, reset_at) = match self.counter_update(user_id, scope, limit) {
            Ok(update) => update,
            Err(Error::Limited { reset_at, .. }) => return Ok(Decision::Limited { reset_at }),
            Err(e) => return Err(e),
        };
        let result = self
            .client
            .update_item()
            .table_name(update.table_name())
            .set_key(Some(update.key().clone()))
            .update_expression(update.update_expression())
            .set_condition_expression(update.condition_expression().map(str::to_owned))
            .set_expression_attribute_names(update.expression_attribute_names().cloned())
            .set_expression_attribute_values(update.expression_attribute_values().cloned())
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        match result {
            Ok(out) => {
                let used = out
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get("calls"))
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse::<u32>().ok())
                    .ok_or_else(|| Error::Corrupt("rate-limit counter without calls".into()))?;
                Ok(Decision::Allowed {
                    remaining: limit.max.saturating_sub(used),
                    reset_at,
                })
            }
            Err(err) if err.condition_failed_item().is_some() => Ok(Decision::Limited { reset_at }),
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }

    fn count_companion(
        &self,
        user_id: &str,
        scope: LimitScope,
        limit: RateLimit,
    ) -> Result<Companion> {
        let (update, reset_at) = self.counter_update(user_id, scope, limit)?;
        let what = scope.name();
        let action = TransactWriteItem::builder().update(update).build();
        Ok(Companion::new("rate-limit counter", action, move |_| {
            Error::Limited {
                what: what.to_owned(),
                reset_at,
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_aligned() {
        let now = OffsetDateTime::from_unix_timestamp(3_725).unwrap_or(OffsetDateTime::UNIX_EPOCH);
        let (start, reset) = window_bounds(now, Duration::hours(1));
        assert_eq!(start, 3_600);
        assert_eq!(reset.unix_timestamp(), 7_200);
    }
}
