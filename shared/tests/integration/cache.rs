//! The tool result cache against DynamoDB Local: a stored result is served until it
//! expires (checked on read, since TTL deletes late), and keys separate tools, languages
//! and requests.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use shared::cache::{CacheKey, DynamoResultCache, MAX_CACHED_BYTES, ResultCache};
use shared::clock::ManualClock;
use shared::domain::tool_call::ToolName;
use shared::domain::tool_result::ToolExecutionResult;

#[tokio::test]
async fn a_result_is_served_until_it_expires() {
    let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
    let cache = DynamoResultCache::with_clock(
        common::dynamodb().await,
        common::storage().tool_calls_table,
        clock.clone(),
    );
    let request = json!({"origin": "FRA", "destination": common::unique("x")});
    let key = CacheKey::new(ToolName::SEARCH_FLIGHTS, "en", &request);
    assert_eq!(
        cache.get(&key).await.unwrap_or_else(|e| panic!("{e}")),
        None
    );

    let result = ToolExecutionResult::succeeded("3 flights").with_raw(json!({"n": 3}));
    let stored = cache
        .put(&key, &result, Duration::from_secs(600))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(stored);
    assert_eq!(
        cache.get(&key).await.unwrap_or_else(|e| panic!("{e}")),
        Some(result.clone())
    );
    for other in [
        CacheKey::new(ToolName::SEARCH_FLIGHTS, "de", &request),
        CacheKey::new(ToolName::SEARCH_KNOWLEDGE_BASE, "en", &request),
        CacheKey::new(ToolName::SEARCH_FLIGHTS, "en", &json!({"origin": "MUC"})),
    ] {
        assert_ne!(other, key);
        assert_eq!(
            cache.get(&other).await.unwrap_or_else(|e| panic!("{e}")),
            None
        );
    }

    clock.advance(time::Duration::seconds(601));
    assert_eq!(
        cache.get(&key).await.unwrap_or_else(|e| panic!("{e}")),
        None,
        "expired, though TTL has not deleted it"
    );

    let huge = ToolExecutionResult::succeeded("x".repeat(MAX_CACHED_BYTES + 1));
    let stored = cache
        .put(&key, &huge, Duration::from_secs(600))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!stored, "too large for one item: skipped");
}
