//! Data with a lifecycle: every item the stores write for a user carries a `ttl` (epoch
//! seconds) within its retention, so DynamoDB deletes it in time. (DynamoDB Local does not
//! delete expired items; the attribute is what is checked.)

use crate::common;

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;
use shared::chats::{ChatStore, DynamoChatStore};
use shared::config::{LedgerConfig, RetentionConfig};
use shared::domain::chat::NewMessage;
use shared::domain::session::SessionStatePatch;
use shared::domain::tool_call::ToolName;
use shared::ledger::{ClaimMode, ClaimRequest, DynamoLedger, ToolCallLedger};
use shared::usage::{DynamoUsageStore, PriceTable, TokenUsage, UsageStore};
use time::{Duration, OffsetDateTime};

/// Every item under `pk`, with its `ttl` as epoch seconds (`None` when missing).
async fn ttls(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: &str,
) -> Vec<(String, Option<i64>)> {
    let page = client
        .query()
        .table_name(table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S(pk.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    page.items()
        .iter()
        .map(|item| {
            let sk = item
                .get("sk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            let ttl = item
                .get("ttl")
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse::<i64>().ok());
            (sk, ttl)
        })
        .collect()
}

fn assert_within(items: &[(String, Option<i64>)], retention: Duration, what: &str) {
    assert!(!items.is_empty(), "{what}: nothing written");
    let now = OffsetDateTime::now_utc();
    for (sk, ttl) in items {
        let ttl = ttl.unwrap_or_else(|| panic!("{what} {sk}: no ttl"));
        let expected = (now + retention).unix_timestamp();
        assert!(
            (expected - 120..=expected + 120).contains(&ttl),
            "{what} {sk}: ttl {ttl}, expected about {expected}"
        );
    }
}

#[tokio::test]
async fn every_item_written_for_a_user_has_a_ttl_within_its_retention() {
    let client = common::dynamodb().await;
    let storage = common::storage();
    let retention = RetentionConfig {
        chats: Duration::days(30),
        usage: Duration::days(400),
    };
    let owner = common::unique("user");

    let chats = DynamoChatStore::new(client.clone(), storage.chats_table.clone())
        .with_retention(retention.chats);
    let chat = chats.create(&owner).await.unwrap_or_else(|e| panic!("{e}"));
    let mut patch = SessionStatePatch::default();
    patch.preferences.insert("seat".into(), json!("aisle"));
    let chat = chats
        .record_step(
            &chat,
            vec![
                NewMessage::user("hi"),
                NewMessage::assistant("hello", vec![]),
            ],
            &patch,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    chats
        .record_step(
            &chat,
            vec![NewMessage::user("more")],
            &SessionStatePatch::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    chats
        .patch_state(&owner, &chat.id, &patch)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let items = ttls(&client, &storage.chats_table, &format!("CHAT#{}", chat.id)).await;
    assert_eq!(items.len(), 4, "the chat and its 3 messages: {items:?}");
    assert_within(&items, retention.chats, "chats table");

    let usage = DynamoUsageStore::new(
        client.clone(),
        storage.usage_table.clone(),
        PriceTable::default(),
    )
    .with_retention(retention.usage);
    usage
        .record(
            &owner,
            Some(&chat.id),
            "gpt-4o-mini",
            "chat",
            TokenUsage::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let items = ttls(&client, &storage.usage_table, &format!("USER#{owner}")).await;
    assert_within(&items, retention.usage, "usage table");

    let ledger_config = LedgerConfig::default();
    let ledger = DynamoLedger::new(
        client.clone(),
        storage.tool_calls_table.clone(),
        ledger_config,
    );
    ledger
        .record_and_claim(ClaimRequest {
            owner_id: owner.clone(),
            chat_id: chat.id.clone(),
            tool: ToolName::SEARCH_KNOWLEDGE_BASE,
            request: json!({"query": "ttl"}),
            mode: ClaimMode::Enqueue,
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let items = ttls(
        &client,
        &storage.tool_calls_table,
        &format!("CHAT#{}", chat.id),
    )
    .await;
    assert_within(&items, ledger_config.retention, "tool calls table");
}
