//! Where a user's [`UserMemory`] lives: one item per user in the chats table
//! (`pk = USER#<user>`, `sk = MEMORY`), changed with optimistic concurrency so two chats
//! remembering at once both keep their part.
//!
//! It carries no TTL: what a user asked to be remembered stays until they delete it
//! (`DELETE /memory`) or the operator does.

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use serde::{Deserialize, Serialize};

use crate::{Error, Result};
use domain::clock::{Clock, SystemClock};
use domain::memory::{MemoryChange, UserMemory};
use lambda_kit::dynamo::{
    ConditionFailure, Item, MAX_TRANSIENT_ROUNDS, backoff, from_item, is_transient, n, rfc3339, s,
    sdk_error, to_av,
};

/// Enough for a user's chats all remembering at once.
const MAX_ROUNDS: u32 = 32;

/// What each user asked to be remembered, across their chats.
#[async_trait]
pub trait MemoryStore: Send + Sync {
    /// What is remembered about `user_id`; empty when nothing is.
    async fn get(&self, user_id: &str) -> Result<UserMemory>;

    /// Applies `change` and returns the memory as written. `Error::NotFound` when a
    /// [`MemoryChange::Forget`] names nothing that is remembered.
    async fn change(&self, user_id: &str, change: &MemoryChange) -> Result<UserMemory>;

    /// Forgets everything about `user_id` (nothing remembered is not an error).
    async fn clear(&self, user_id: &str) -> Result<()>;
}

#[derive(Serialize, Deserialize)]
struct MemoryItem {
    #[serde(default)]
    memory: UserMemory,
    #[serde(default)]
    version: u64,
}

/// [`MemoryStore`] on the chats table.
#[derive(Clone)]
pub struct DynamoMemoryStore {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
}

impl DynamoMemoryStore {
    /// `table` is the chats table.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            clock: Arc::new(SystemClock),
        }
    }

    fn key(user_id: &str) -> Item {
        Item::from([
            ("pk".to_owned(), s(format!("USER#{user_id}"))),
            ("sk".to_owned(), s("MEMORY")),
        ])
    }

    async fn read(&self, user_id: &str) -> Result<MemoryItem> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(user_id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        Ok(match out.item {
            Some(item) => from_item(item)?,
            None => MemoryItem {
                memory: UserMemory::default(),
                version: 0,
            },
        })
    }
}

#[async_trait]
impl MemoryStore for DynamoMemoryStore {
    async fn get(&self, user_id: &str) -> Result<UserMemory> {
        Ok(self.read(user_id).await?.memory)
    }

    async fn change(&self, user_id: &str, change: &MemoryChange) -> Result<UserMemory> {
        let mut current = self.read(user_id).await?;
        let mut transient = 0;
        for round in 0..MAX_ROUNDS {
            let mut memory = current.memory.clone();
            if !memory.apply(change) {
                return match change {
                    MemoryChange::Forget(_) => Err(Error::NotFound),
                    MemoryChange::Remember { .. } => Ok(memory),
                };
            }
            // Version 0 is "no item yet": the first write must not overwrite a racing one.
            let condition = if current.version == 0 {
                "attribute_not_exists(pk)"
            } else {
                "version = :version"
            };
            let mut update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(Self::key(user_id)))
                .update_expression("SET memory = :memory, version = :next, updated_at = :now")
                .condition_expression(condition)
                .expression_attribute_values(":memory", to_av(&memory)?)
                .expression_attribute_values(":next", n(current.version + 1))
                .expression_attribute_values(":now", rfc3339(self.clock.now()))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            if current.version > 0 {
                update = update.expression_attribute_values(":version", n(current.version));
            }
            match update.send().await {
                Ok(_) => return Ok(memory),
                Err(err) => match err.condition_failed_item() {
                    // Another chat wrote first: apply the change to what it wrote.
                    Some(returned) => {
                        current = match returned {
                            Some(item) => from_item(item)?,
                            None => self.read(user_id).await?,
                        };
                        backoff(round).await;
                    }
                    None if is_transient(&err) && transient < MAX_TRANSIENT_ROUNDS => {
                        transient += 1;
                        backoff(transient).await;
                    }
                    None => return Err(sdk_error("UpdateItem", err)),
                },
            }
        }
        Err(Error::Contention(format!("the memory of user {user_id}")))
    }

    async fn clear(&self, user_id: &str) -> Result<()> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(Self::key(user_id)))
            .send()
            .await
            .map_err(|e| sdk_error("DeleteItem", e))?;
        Ok(())
    }
}
