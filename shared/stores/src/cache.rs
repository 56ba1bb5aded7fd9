//! The tool result cache (seed 001: tool result caching with TTLs): identical upstream
//! searches from different chats and users within a tool's `cache_secs` are answered from
//! one stored result. Dedupe stops the same call twice in one chat; this serves the same
//! search across chats.
//!
//! Items live in the tool-calls table (`pk = CACHE#<key>`, `sk = RESULT`), each under its
//! own partition key so no item collection grows, with the table's `ttl` for deletion. TTL
//! deletes late, so a read also checks `expires_at` itself.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use serde_json::Value;

use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use domain::clock::{Clock, SystemClock};
use domain::tool_call::ToolName;
use domain::tool_result::ToolExecutionResult;

use crate::ledger::hash_call;
use crate::{Error, Result};
use lambda_kit::companion::Companion;
use lambda_kit::dynamo::{Item, invalid_action, n, s, sdk_error};

/// Results larger than this are not cached: DynamoDB items end at 400 KB.
pub const MAX_CACHED_BYTES: usize = 350 * 1024;

/// What identifies one cacheable search: the tool, the variant of its answer (the
/// language its message is written in) and its canonical request. Never the user or chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `tool`'s `canonical_request`, answered in `variant` (e.g. the language).
    pub fn new(tool: ToolName, variant: &str, canonical_request: &Value) -> Self {
        Self(hash_call(
            b"tool-result/v1",
            variant,
            tool,
            canonical_request,
        ))
    }

    /// The key as hex (SHA-256).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Tool results shared across chats and users for a while.
#[async_trait]
pub trait ResultCache: Send + Sync {
    /// The stored result, if one is there and not expired.
    async fn get(&self, key: &CacheKey) -> Result<Option<ToolExecutionResult>>;

    /// Stores `result` for `ttl`. Too large a result is skipped (`Ok(false)`).
    async fn put(
        &self,
        key: &CacheKey,
        result: &ToolExecutionResult,
        ttl: Duration,
    ) -> Result<bool>;

    /// [`ResultCache::put`] as a write in another store's transaction (the call's finishing
    /// write); `None` for a result too large to cache.
    fn put_companion(
        &self,
        key: &CacheKey,
        result: &ToolExecutionResult,
        ttl: Duration,
    ) -> Result<Option<Companion>>;
}

/// [`ResultCache`] on the tool-calls table.
#[derive(Clone)]
pub struct DynamoResultCache {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
}

impl DynamoResultCache {
    /// `table` is the tool-calls table.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self::with_clock(client, table, Arc::new(SystemClock))
    }

    /// The same, reading the time from `clock` (tests move it).
    pub fn with_clock(client: Client, table: impl Into<String>, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            table: table.into(),
            clock,
        }
    }

    /// The stored entry for `result`, kept for `ttl`; `None` when it is too large.
    fn item(
        &self,
        key: &CacheKey,
        result: &ToolExecutionResult,
        ttl: Duration,
    ) -> Result<Option<Item>> {
        let text = serde_json::to_string(result)?;
        if text.len() > MAX_CACHED_BYTES {
            return Ok(None);
        }
        let expires_at = self.clock.now().unix_timestamp()
            + i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2);
        let mut item = Self::key(key);
        item.insert("result".to_owned(), s(text));
        item.insert("expires_at".to_owned(), n(expires_at));
        item.insert("ttl".to_owned(), n(expires_at));
        Ok(Some(item))
    }

    fn key(key: &CacheKey) -> Item {
        Item::from([
            ("pk".to_owned(), s(format!("CACHE#{}", key.as_str()))),
            ("sk".to_owned(), s("RESULT")),
        ])
    }
}

#[async_trait]
impl ResultCache for DynamoResultCache {
    async fn get(&self, key: &CacheKey) -> Result<Option<ToolExecutionResult>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(key)))
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        let Some(item) = out.item else {
            return Ok(None);
        };
        let expires_at = item
            .get("expires_at")
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0);
        if expires_at <= self.clock.now().unix_timestamp() {
            return Ok(None);
        }
        let text = item
            .get("result")
            .and_then(|v| v.as_s().ok())
            .ok_or_else(|| Error::Corrupt("cached result without its result".into()))?;
        serde_json::from_str(text)
            .map(Some)
            .map_err(|e| Error::Corrupt(format!("cached result: {e}")))
    }

    async fn put(
        &self,
        key: &CacheKey,
        result: &ToolExecutionResult,
        ttl: Duration,
    ) -> Result<bool> {
        let Some(item) = self.item(key, result, ttl)? else {
            return Ok(false);
        };
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(true)
    }

    fn put_companion(
        &self,
        key: &CacheKey,
        result: &ToolExecutionResult,
        ttl: Duration,
    ) -> Result<Option<Companion>> {
        let Some(item) = self.item(key, result, ttl)? else {
            return Ok(None);
        };
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .build()
            .map_err(invalid_action)?;
        let action = TransactWriteItem::builder().put(put).build();
        Ok(Some(Companion::unconditional("cached result", action)))
    }
}
