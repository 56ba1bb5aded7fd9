//! Writes that ride along in another store's transaction, against DynamoDB Local: each is
//! written with its host write or not at all, and a companion's failed condition is the
//! caller's error.

use crate::common;

use std::time::Duration as StdDuration;

use serde_json::json;
use shared::Error;
use shared::cache::{CacheKey, DynamoResultCache, ResultCache};
use shared::chats::{ChatStore, DynamoChatStore, TurnLease};
use shared::domain::chat::NewMessage;
use shared::domain::session::SessionStatePatch;
use shared::domain::tool_call::{ToolCallStatus, ToolName};
use shared::domain::tool_result::ToolExecutionResult;
use shared::ledger::{Claim, ClaimMode, ClaimRequest, DynamoLedger, Outcome, ToolCallLedger};
use shared::limits::{Decision, DynamoRateLimiter, LimitScope, RateLimit, RateLimiter};
use shared::turns::{DynamoTurnStore, TurnRecord, TurnStatus, TurnStore};
use shared::usage::{DynamoUsageStore, PriceTable, TokenUsage, UsageStore};
use time::{Duration, OffsetDateTime};

const ONE_PER_HOUR: RateLimit = RateLimit {
    max: 1,
    window: Duration::hours(1),
};

struct Stores {
    chats: DynamoChatStore,
    turns: DynamoTurnStore,
    limiter: DynamoRateLimiter,
    ledger: DynamoLedger,
    cache: DynamoResultCache,
    usage: DynamoUsageStore,
}

async fn stores() -> Stores {
    let client = common::dynamodb().await;
    let storage = common::storage();
    Stores {
        chats: DynamoChatStore::new(client.clone(), &storage.chats_table),
        turns: DynamoTurnStore::new(client.clone(), &storage.chats_table),
        limiter: DynamoRateLimiter::new(client.clone(), &storage.rate_limits_table),
        ledger: DynamoLedger::new(
            client.clone(),
            &storage.tool_calls_table,
            shared::config::LedgerConfig::default(),
        ),
        cache: DynamoResultCache::new(client.clone(), &storage.tool_calls_table),
        usage: DynamoUsageStore::new(client, &storage.usage_table, PriceTable::default()),
    }
}

fn record(owner: &str, chat_id: &str) -> TurnRecord {
    let now = OffsetDateTime::now_utc();
    TurnRecord {
        turn_id: shared::ids::new_id(),
        owner_id: owner.to_owned(),
        chat_id: chat_id.to_owned(),
        created: true,
        fingerprint: "f".into(),
        status: TurnStatus::Running,
        cancel_requested: false,
        deadline: now + Duration::minutes(1),
        created_at: now,
        refusal: None,
        alive_until: None,
        host: 0,
        request: None,
    }
}

fn lease(turn: &TurnRecord) -> TurnLease {
    TurnLease {
        turn_id: turn.turn_id.clone(),
        until: turn.deadline,
    }
}

fn claim_request(owner: &str, chat: &str, query: &str) -> ClaimRequest {
    ClaimRequest {
        owner_id: owner.to_owned(),
        chat_id: chat.to_owned(),
        tool: ToolName::SEARCH_KNOWLEDGE_BASE,
        request: json!({"query": query}),
        mode: ClaimMode::Run {
            lease: Duration::seconds(30),
        },
    }
}

#[tokio::test]
async fn a_new_chat_is_created_with_its_turn_record_and_count_or_not_at_all() {
    let s = stores().await;
    let owner = common::unique("owner");
    let scope = LimitScope::ChatTurns;

    let first = record(&owner, &shared::ids::new_id());
    let with = [
        s.turns.begin_companion(&first).unwrap(),
        s.limiter
            .count_companion(&owner, scope, ONE_PER_HOUR)
            .unwrap(),
    ];
    let chat = s
        .chats
        .create_held_with(&owner, &first.chat_id, &lease(&first), &with)
        .await
        .unwrap_or_else(|e| panic!("create: {e}"));
    assert_eq!(chat.id, first.chat_id);
    let stored = s.turns.get(&owner, &first.chat_id, &first.turn_id).await;
    assert_eq!(stored.ok(), Some(first.clone()));

    // The same turn again (a resend): the existing record comes back, nothing is written.
    let resent = TurnRecord {
        chat_id: shared::ids::new_id(),
        ..first.clone()
    };
    let with = [s.turns.begin_companion(&resent).unwrap()];
    match s
        .chats
        .create_held_with(&owner, &resent.chat_id, &lease(&resent), &with)
        .await
    {
        Err(Error::TurnBegun(turn)) => assert_eq!(*turn, first),
        other => panic!("expected the begun turn, got {other:?}"),
    }
    assert!(matches!(
        s.chats.get(&owner, &resent.chat_id).await,
        Err(Error::NotFound)
    ));

    // Over the limit: neither the chat nor the turn record is written.
    let second = record(&owner, &shared::ids::new_id());
    let with = [
        s.turns.begin_companion(&second).unwrap(),
        s.limiter
            .count_companion(&owner, scope, ONE_PER_HOUR)
            .unwrap(),
    ];
    match s
        .chats
        .create_held_with(&owner, &second.chat_id, &lease(&second), &with)
        .await
    {
        Err(Error::Limited { what, .. }) => assert_eq!(what, "chat_turns"),
        other => panic!("expected the limit, got {other:?}"),
    }
    assert!(matches!(
        s.chats.get(&owner, &second.chat_id).await,
        Err(Error::NotFound)
    ));
    assert!(matches!(
        s.turns.get(&owner, &second.chat_id, &second.turn_id).await,
        Err(Error::NotFound)
    ));
}

#[tokio::test]
async fn a_new_call_is_counted_in_its_claim_and_a_duplicate_is_not_counted() {
    let s = stores().await;
    let owner = common::unique("owner");
    let chat = common::unique("chat");
    let scope = LimitScope::Tool(ToolName::SEARCH_KNOWLEDGE_BASE);
    let limit = RateLimit {
        max: 2,
        window: Duration::hours(1),
    };
    let counter = || [s.limiter.count_companion(&owner, scope, limit).unwrap()];

    let (claim, counted) = s
        .ledger
        .record_and_claim_with(claim_request(&owner, &chat, "a"), &counter())
        .await
        .unwrap_or_else(|e| panic!("claim: {e}"));
    assert!(counted);
    let Claim::Claimed(claimed) = claim else {
        panic!("expected a claim, got {claim:?}");
    };
    assert_eq!((claimed.attempt, claimed.took_over), (1, false));

    // The identical call is served by the ledger: not counted.
    let (claim, counted) = s
        .ledger
        .record_and_claim_with(claim_request(&owner, &chat, "a"), &counter())
        .await
        .unwrap_or_else(|e| panic!("duplicate: {e}"));
    assert!(matches!(claim, Claim::Duplicate(ref r) if r.id == claimed.id));
    assert!(!counted);

    // One of the two uses is left: a second call takes it, a third is refused and not
    // recorded.
    let (_, counted) = s
        .ledger
        .record_and_claim_with(claim_request(&owner, &chat, "b"), &counter())
        .await
        .unwrap_or_else(|e| panic!("second: {e}"));
    assert!(counted);
    let third = claim_request(&owner, &chat, "c");
    let refused = s.ledger.record_and_claim_with(third, &counter()).await;
    assert!(
        matches!(refused, Err(Error::Limited { ref what, .. }) if what == "search_knowledge_base"),
        "{refused:?}"
    );
    let page = s.ledger.list(&owner, &chat, 10, None).await.unwrap();
    assert_eq!(page.items.len(), 2, "the refused call is not recorded");
}

#[tokio::test]
async fn a_call_claimed_again_after_a_failed_attempt_is_claimed_alone() {
    let s = stores().await;
    let owner = common::unique("owner");
    let chat = common::unique("chat");
    let scope = LimitScope::Tool(ToolName::SEARCH_KNOWLEDGE_BASE);
    let counter = || {
        [s.limiter
            .count_companion(&owner, scope, ONE_PER_HOUR)
            .unwrap()]
    };

    let (claim, _) = s
        .ledger
        .record_and_claim_with(claim_request(&owner, &chat, "q"), &counter())
        .await
        .unwrap();
    let Claim::Claimed(first) = claim else {
        panic!("expected a claim");
    };
    s.ledger
        .finish(&first, Outcome::Failed("upstream down".into()))
        .await
        .unwrap();
    let (claim, counted) = s
        .ledger
        .record_and_claim_with(claim_request(&owner, &chat, "q"), &counter())
        .await
        .unwrap_or_else(|e| panic!("again: {e}"));
    assert!(
        matches!(claim, Claim::Claimed(ref c) if c.attempt == 2),
        "{claim:?}"
    );
    // Claimed alone: the caller counts it itself (here the window is already full).
    assert!(!counted);
    let decision = s
        .limiter
        .check_scope(&owner, scope, ONE_PER_HOUR)
        .await
        .unwrap();
    assert!(matches!(decision, Decision::Limited { .. }));
}

#[tokio::test]
async fn a_result_is_cached_with_its_calls_end_and_not_when_the_call_was_canceled() {
    let s = stores().await;
    let owner = common::unique("owner");
    let chat = common::unique("chat");
    let ttl = StdDuration::from_secs(60);
    let result = ToolExecutionResult::succeeded("found");

    let key = CacheKey::new(ToolName::SEARCH_KNOWLEDGE_BASE, "en", &json!({"q": &chat}));
    let (claim, _) = s
        .ledger
        .record_and_claim_with(claim_request(&owner, &chat, "kept"), &[])
        .await
        .unwrap();
    let Claim::Claimed(call) = claim else {
        panic!("expected a claim");
    };
    let entry = s.cache.put_companion(&key, &result, ttl).unwrap();
    s.ledger
        .finish_with(
            &call,
            Outcome::Succeeded(json!({"hits": 1})),
            entry.as_slice(),
        )
        .await
        .unwrap_or_else(|e| panic!("finish: {e}"));
    let record = s.ledger.get(&owner, &chat, &call.id).await.unwrap();
    assert_eq!(record.status, ToolCallStatus::Succeeded);
    // The response goes into the transaction's action, not only the plain write's.
    assert_eq!(record.response, Some(json!({"hits": 1})));
    assert!(s.cache.get(&key).await.unwrap().is_some());

    // Canceled while it ran: its end is refused, and so is its cache entry.
    let key = CacheKey::new(ToolName::SEARCH_KNOWLEDGE_BASE, "en", &json!({"q": "gone"}));
    let (claim, _) = s
        .ledger
        .record_and_claim_with(claim_request(&owner, &chat, "canceled"), &[])
        .await
        .unwrap();
    let Claim::Claimed(call) = claim else {
        panic!("expected a claim");
    };
    s.ledger.cancel(&owner, &chat, &call.id).await.unwrap();
    let entry = s.cache.put_companion(&key, &result, ttl).unwrap();
    let finished = s
        .ledger
        .finish_with(
            &call,
            Outcome::Succeeded(json!({"hits": 1})),
            entry.as_slice(),
        )
        .await;
    assert!(
        matches!(finished, Err(Error::IllegalTransition { .. })),
        "{finished:?}"
    );
    assert!(s.cache.get(&key).await.unwrap().is_none());
}

#[tokio::test]
async fn usage_records_are_written_with_the_step() {
    let s = stores().await;
    let owner = common::unique("owner");
    let since = OffsetDateTime::now_utc() - Duration::minutes(1);
    let chat = s.chats.create(&owner).await.unwrap();
    let usage = TokenUsage {
        prompt_tokens: 1000,
        completion_tokens: 100,
        total_tokens: 1100,
        ..TokenUsage::default()
    };
    let records = [
        s.usage
            .priced(&owner, Some(&chat.id), "gpt-4o-mini", "chat", usage),
        s.usage
            .priced(&owner, Some(&chat.id), "gpt-4o-mini", "chat", usage),
    ];
    let with: Vec<_> = records
        .iter()
        .map(|r| s.usage.save_companion(r).unwrap())
        .collect();
    s.chats
        .record_step_with(
            &chat,
            vec![NewMessage::user("hi")],
            &SessionStatePatch::default(),
            None,
            &with,
        )
        .await
        .unwrap_or_else(|e| panic!("step: {e}"));
    // Both records may fall in one millisecond, where the order is the ids': compare as sets.
    let mut stored = s.usage.list_for_user(&owner, since).await.unwrap();
    stored.sort_by(|a, b| a.id.cmp(&b.id));
    let mut records = records.to_vec();
    records.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(stored, records);
    let messages = s.chats.recent_messages(&owner, &chat.id, 10).await.unwrap();
    assert_eq!(messages.len(), 1);
}
