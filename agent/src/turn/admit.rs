//! Step 0: may this user start a turn now? The per-minute turn limit and the daily budget
//! are checked before anything is stored or any model is called; a used-up one is
//! `Error::Limited` (429 with `reset_at`). Both fail closed: a limit that cannot be checked
//! refuses the turn rather than let it run unchecked.

use shared::limits::{Decision, LimitScope, RateLimit};
use shared::{Error, Result};
use time::{Duration, OffsetDateTime, Time};

use super::Agent;

impl Agent {
    pub(super) async fn admit_turn(&self, user_id: &str) -> Result<()> {
        if let Some(max) = self.settings.turns_per_minute {
            let limit = RateLimit {
                max,
                window: Duration::MINUTE,
            };
            let decision = self
                .pipeline
                .limiter
                .check_scope(user_id, LimitScope::ChatTurns, limit)
                .await?;
            if let Decision::Limited { reset_at } = decision {
                tracing::info!(max, "turn refused: the user's turns per minute are used up");
                return Err(Error::Limited {
                    what: "chat_turns".into(),
                    reset_at,
                });
            }
        }
        if let Some(budget) = self.settings.daily_budget_usd {
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
        }
        Ok(())
    }
}
