//! Step 0: may this user start a turn now? The per-minute turn limit and the daily budget
//! are checked before anything else is stored or any model is called; a used-up one is
//! `Error::Limited` (429 with `reset_at`). Both fail closed: a limit that cannot be checked
//! refuses the turn rather than let it run unchecked. In a new chat the turn is counted in
//! the chat's creating write.

use shared::companion::Companion;
use shared::limits::{Decision, LimitScope, RateLimit};
use shared::{Error, Result};
use time::{Duration, OffsetDateTime, Time};

use super::Agent;

impl Agent {
    /// Counts the turn against the user's turns per minute and checks the daily budget.
    pub(super) async fn admit_turn(&self, user_id: &str) -> Result<()> {
        if let Some(limit) = self.turn_limit() {
            let decision = self
                .pipeline
                .limiter
                .check_scope(user_id, LimitScope::ChatTurns, limit)
                .await?;
            if let Decision::Limited { reset_at } = decision {
                return Err(turns_used_up(limit, reset_at));
            }
        }
        self.check_budget(user_id).await
    }

    /// As [`Agent::admit_turn`] for a turn that creates its chat: the budget is checked now,
    /// and the turn is counted by the returned write, which goes into the chat's creation
    /// (see `open`), so a turn refused for its limit creates nothing.
    pub(super) async fn admit_new_chat_turn(&self, user_id: &str) -> Result<Option<Companion>> {
        self.check_budget(user_id).await?;
        let Some(limit) = self.turn_limit() else {
            return Ok(None);
        };
        self.pipeline
            .limiter
            .count_companion(user_id, LimitScope::ChatTurns, limit)
            .map(Some)
            .map_err(|e| match e {
                Error::Limited { reset_at, .. } => turns_used_up(limit, reset_at),
                other => other,
            })
    }

    fn turn_limit(&self) -> Option<RateLimit> {
        self.settings.turns_per_minute.map(|max| RateLimit {
            max,
            window: Duration::MINUTE,
        })
    }

    async fn check_budget(&self, user_id: &str) -> Result<()> {
        let Some(budget) = self.settings.daily_budget_usd else {
            return Ok(());
        };
        let now = OffsetDateTime::now_utc();
        let midnight = now.replace_time(Time::MIDNIGHT);
        let spent = self.usage.spent_since(user_id, midnight).await?;
        if spent >= budget {
            tracing::info!(
                spent,
                budget,
                "turn refused: the user's daily budget is used up"
            );
            return Err(Error::Limited {
                what: "daily_budget".into(),
                reset_at: midnight + Duration::DAY,
            });
        }
        Ok(())
    }
}

/// The refusal of a turn beyond the user's turns per minute.
pub(super) fn turns_used_up(limit: RateLimit, reset_at: OffsetDateTime) -> Error {
    tracing::info!(
        max = limit.max,
        "turn refused: the user's turns per minute are used up"
    );
    Error::Limited {
        what: LimitScope::ChatTurns.name().into(),
        reset_at,
    }
}
