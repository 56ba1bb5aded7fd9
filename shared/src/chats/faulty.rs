//! A [`ChatStore`] for tests that fails chosen writes as a DynamoDB outage would, and passes
//! everything else to the real store (feature `test-util`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use super::{ChatStore, TurnLease};
use crate::domain::chat::{Chat, Message, NewMessage};
use crate::domain::session::SessionStatePatch;
use crate::{Error, Result};

pub struct FaultyChats {
    inner: Arc<dyn ChatStore>,
    /// How many of the next `patch_state` calls fail.
    pub patch_failures: AtomicUsize,
    /// How many of the next `record_last_step` calls (a turn's answer) fail.
    pub last_step_failures: AtomicUsize,
}

impl FaultyChats {
    pub fn new(inner: Arc<dyn ChatStore>) -> Self {
        Self {
            inner,
            patch_failures: AtomicUsize::new(0),
            last_step_failures: AtomicUsize::new(0),
        }
    }

    /// Fails if `counter` still has failures to give (and counts one down).
    fn inject(counter: &AtomicUsize, op: &'static str) -> Result<()> {
        let failing = counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(Error::Dynamo {
                op,
                message: "InternalServerError: injected by the test".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl ChatStore for FaultyChats {
    async fn create(&self, owner_id: &str) -> Result<Chat> {
        self.inner.create(owner_id).await
    }
    async fn get(&self, owner_id: &str, chat_id: &str) -> Result<Chat> {
        self.inner.get(owner_id, chat_id).await
    }
    async fn patch_state(
        &self,
        owner_id: &str,
        chat_id: &str,
        patch: &SessionStatePatch,
    ) -> Result<Chat> {
        Self::inject(&self.patch_failures, "UpdateItem")?;
        self.inner.patch_state(owner_id, chat_id, patch).await
    }
    async fn append_messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<Message>> {
        self.inner
            .append_messages(owner_id, chat_id, messages)
            .await
    }
    async fn record_step(
        &self,
        chat: &Chat,
        messages: Vec<NewMessage>,
        patch: &SessionStatePatch,
    ) -> Result<Chat> {
        self.inner.record_step(chat, messages, patch).await
    }
    async fn open(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
    ) -> Result<(Chat, Vec<Message>)> {
        self.inner.open(owner_id, chat_id, limit).await
    }
    async fn create_held(&self, owner_id: &str, chat_id: &str, lease: &TurnLease) -> Result<Chat> {
        self.inner.create_held(owner_id, chat_id, lease).await
    }
    async fn open_held(
        &self,
        owner_id: &str,
        chat_id: &str,
        lease: &TurnLease,
        limit: u32,
    ) -> Result<(Chat, Vec<Message>)> {
        self.inner.open_held(owner_id, chat_id, lease, limit).await
    }
    async fn record_last_step(
        &self,
        chat: &Chat,
        messages: Vec<NewMessage>,
        patch: &SessionStatePatch,
        turn_id: &str,
    ) -> Result<Chat> {
        Self::inject(&self.last_step_failures, "TransactWriteItems")?;
        self.inner
            .record_last_step(chat, messages, patch, turn_id)
            .await
    }
    async fn release(&self, chat_id: &str, turn_id: &str) -> Result<()> {
        self.inner.release(chat_id, turn_id).await
    }
    async fn recent_messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
    ) -> Result<Vec<Message>> {
        self.inner.recent_messages(owner_id, chat_id, limit).await
    }
}
