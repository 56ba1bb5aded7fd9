//! Rate limiter and usage records against DynamoDB Local.

use crate::common;

use std::sync::Arc;

use shared::clock::ManualClock;
use shared::domain::tool_call::ToolName;
use shared::limits::{Decision, DynamoRateLimiter, RateLimit, RateLimiter};
use shared::usage::{DynamoUsageStore, PriceTable, TokenUsage, UsageStore};
use time::{Duration, OffsetDateTime};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundred_concurrent_checks_against_ten_allow_exactly_ten() {
    let limiter = DynamoRateLimiter::new(
        common::dynamodb().await,
        common::storage().rate_limits_table,
    );
    let user = common::unique("user");
    let limit = RateLimit {
        max: 10,
        window: Duration::hours(1),
    };
    let decisions = futures::future::join_all((0..100).map(|_| {
        let (limiter, user) = (limiter.clone(), user.clone());
        tokio::spawn(async move { limiter.check(&user, ToolName::SEARCH_FLIGHTS, limit).await })
    }))
    .await;
    let decisions: Vec<Decision> = decisions
        .into_iter()
        .map(|d| {
            d.ok()
                .and_then(Result::ok)
                .unwrap_or_else(|| panic!("a check failed"))
        })
        .collect();
    assert_eq!(decisions.iter().filter(|d| d.is_allowed()).count(), 10);
    let mut remaining: Vec<u32> = decisions
        .iter()
        .filter_map(|d| match d {
            Decision::Allowed { remaining, .. } => Some(*remaining),
            Decision::Limited { .. } => None,
        })
        .collect();
    remaining.sort_unstable();
    assert_eq!(remaining, (0..10).collect::<Vec<_>>());

    // Another tool and another user have their own budgets.
    assert!(
        limiter
            .check(&user, ToolName::ASK_GPT, limit)
            .await
            .is_ok_and(|d| d.is_allowed())
    );
    let other = common::unique("user");
    assert!(
        limiter
            .check(&other, ToolName::SEARCH_FLIGHTS, limit)
            .await
            .is_ok_and(|d| d.is_allowed())
    );
}

#[tokio::test]
async fn a_limited_caller_learns_when_the_window_resets() {
    let start =
        OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let clock = Arc::new(ManualClock::new(start));
    let limiter = DynamoRateLimiter::with_clock(
        common::dynamodb().await,
        common::storage().rate_limits_table,
        clock.clone(),
    );
    let user = common::unique("user");
    let limit = RateLimit {
        max: 2,
        window: Duration::minutes(1),
    };
    for _ in 0..2 {
        assert!(
            limiter
                .check(&user, ToolName::ASK_GPT, limit)
                .await
                .is_ok_and(|d| d.is_allowed())
        );
    }
    let reset_at =
        OffsetDateTime::from_unix_timestamp(1_800_000_000 / 60 * 60 + 60).unwrap_or(start);
    assert_eq!(
        limiter.check(&user, ToolName::ASK_GPT, limit).await.ok(),
        Some(Decision::Limited { reset_at })
    );
    clock.advance(Duration::minutes(1));
    assert!(
        limiter
            .check(&user, ToolName::ASK_GPT, limit)
            .await
            .is_ok_and(|d| d.is_allowed())
    );
    let none = RateLimit {
        max: 0,
        window: Duration::minutes(1),
    };
    assert!(
        limiter
            .check(&user, ToolName::ASK_GPT, none)
            .await
            .is_ok_and(|d| !d.is_allowed())
    );
}

#[tokio::test]
async fn usage_records_carry_tokens_and_cost() {
    let store = DynamoUsageStore::new(
        common::dynamodb().await,
        common::storage().usage_table,
        PriceTable::default(),
    );
    let user = common::unique("user");
    let since = OffsetDateTime::now_utc() - Duration::seconds(5);
    let usage = TokenUsage {
        prompt_tokens: 1200,
        completion_tokens: 300,
        total_tokens: 1500,
        cached_tokens: 0,
        estimated: false,
    };
    let priced = store
        .record(&user, Some("chat-1"), "gpt-4o-mini", "chat", usage)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // 1200 * 0.15 / 1e6 + 300 * 0.60 / 1e6
    assert_eq!(priced.cost_usd, Some(0.00036));
    let unpriced = store
        .record(&user, None, "llama3.1:8b", "ask_gpt", usage)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unpriced.cost_usd, None);

    let listed = store
        .list_for_user(&user, since)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed, vec![priced, unpriced]);
}
