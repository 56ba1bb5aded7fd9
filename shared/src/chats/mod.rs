//! Chats, their session state and their messages, always accessed on behalf of an owner.
//!
//! A chat that belongs to someone else is reported as [`crate::Error::NotFound`], exactly like
//! a missing one, so ids of other users' chats cannot be probed.

mod dynamo;

use async_trait::async_trait;

pub use dynamo::DynamoChatStore;

use crate::Result;
use crate::domain::chat::{Chat, Message, NewMessage};
use crate::domain::session::SessionStatePatch;

#[async_trait]
pub trait ChatStore: Send + Sync {
    /// A new, empty chat owned by `owner_id`.
    async fn create(&self, owner_id: &str) -> Result<Chat>;

    async fn get(&self, owner_id: &str, chat_id: &str) -> Result<Chat>;

    /// Merges `patch` into the session state with optimistic concurrency: concurrent
    /// patches are applied one after another, none is lost. Returns the chat as written.
    async fn patch_state(
        &self,
        owner_id: &str,
        chat_id: &str,
        patch: &SessionStatePatch,
    ) -> Result<Chat>;

    /// Appends messages in the given order, atomically with the owner check.
    async fn append_messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<Message>>;

    /// Appends the messages of a turn's step and merges its state `patch` in one write
    /// (atomic, owner-checked, optimistic on the chat's version: a concurrent patch makes
    /// it re-read the chat and apply `patch` again, so none is lost). `chat` is the caller's
    /// last view of the chat; the chat as written comes back (unchanged without a patch).
    async fn record_step(
        &self,
        chat: &Chat,
        messages: Vec<NewMessage>,
        patch: &SessionStatePatch,
    ) -> Result<Chat>;

    /// The chat and its last `limit` messages (oldest first), read together: what a turn
    /// starts from.
    async fn open(&self, owner_id: &str, chat_id: &str, limit: u32)
    -> Result<(Chat, Vec<Message>)>;

    /// The last `limit` messages, oldest first.
    async fn recent_messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
    ) -> Result<Vec<Message>>;
}
