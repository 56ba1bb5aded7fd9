//! Chats, their session state and their messages, always accessed on behalf of an owner.
//!
//! A chat that belongs to someone else is reported as [`crate::Error::NotFound`], exactly like
//! a missing one, so ids of other users' chats cannot be probed.

mod dynamo;

use async_trait::async_trait;

pub use dynamo::DynamoChatStore;

use crate::Result;
use domain::chat::{Chat, ChatSummary, Message, NewMessage};
use domain::session::SessionStatePatch;
use lambda_kit::companion::Companion;
use lambda_kit::dynamo::Page;

/// A running turn's hold on its chat: one turn at a time per chat. It ends when the turn
/// releases it or, if its host ended the turn, at `until` (the turn's deadline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnLease {
    /// The turn that holds the chat.
    pub turn_id: String,
    /// When the hold ends at the latest: the turn's deadline.
    pub until: time::OffsetDateTime,
}

/// Chats with their session state and messages; another user's chat reads as missing.
#[async_trait]
pub trait ChatStore: Send + Sync {
    /// A new, empty chat owned by `owner_id`.
    async fn create(&self, owner_id: &str) -> Result<Chat>;

    /// The chat; `Error::NotFound` for a missing or foreign one.
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
    ) -> Result<Chat> {
        self.record_step_with(chat, messages, patch, None, &[])
            .await
    }

    /// [`ChatStore::record_step`], or with `release` [`ChatStore::record_last_step`], with
    /// the companions `with` in the same transaction (the last one, when the messages need
    /// several): they are written with the step or not at all. A few at most: a
    /// transaction holds 100 writes.
    async fn record_step_with(
        &self,
        chat: &Chat,
        messages: Vec<NewMessage>,
        patch: &SessionStatePatch,
        release: Option<&str>,
        with: &[Companion],
    ) -> Result<Chat>;

    /// The chat and its last `limit` messages (oldest first), read together: what a turn
    /// starts from.
    async fn open(&self, owner_id: &str, chat_id: &str, limit: u32)
    -> Result<(Chat, Vec<Message>)>;

    /// A new chat with the id `chat_id`, held by `lease` from the start; `Error::Contention`
    /// if that id is taken.
    async fn create_held(&self, owner_id: &str, chat_id: &str, lease: &TurnLease) -> Result<Chat> {
        self.create_held_with(owner_id, chat_id, lease, &[]).await
    }

    /// [`ChatStore::create_held`] in one transaction with the companions `with` (a turn's
    /// record, its turn limiter): all are written or none; a companion's failed condition
    /// is its own error.
    async fn create_held_with(
        &self,
        owner_id: &str,
        chat_id: &str,
        lease: &TurnLease,
        with: &[Companion],
    ) -> Result<Chat>;

    /// As [`ChatStore::open`], taking the chat for a turn in the same request that reads it:
    /// `Error::TurnInProgress` while another turn's lease holds it, `Error::NotFound` for a
    /// missing or foreign chat.
    async fn open_held(
        &self,
        owner_id: &str,
        chat_id: &str,
        lease: &TurnLease,
        limit: u32,
    ) -> Result<(Chat, Vec<Message>)>;

    /// As [`ChatStore::record_step`] for a turn's last write: it also lets go of the chat,
    /// in the same request, if `turn_id` still holds it (otherwise the step is written
    /// alone and the other turn's lease is left alone).
    async fn record_last_step(
        &self,
        chat: &Chat,
        messages: Vec<NewMessage>,
        patch: &SessionStatePatch,
        turn_id: &str,
    ) -> Result<Chat> {
        self.record_step_with(chat, messages, patch, Some(turn_id), &[])
            .await
    }

    /// Lets go of the chat if `turn_id` still holds it (a lease taken over is left alone).
    async fn release(&self, chat_id: &str, turn_id: &str) -> Result<()>;

    /// Gives the chat the title its owner chose; it is never replaced by the automatic
    /// one. `Error::NotFound` for a missing or foreign chat.
    async fn rename(&self, owner_id: &str, chat_id: &str, title: &str) -> Result<()>;

    /// Deletes the chat with its messages and session state. `Error::NotFound` for a missing
    /// or foreign chat, `Error::TurnInProgress` while a turn holds it.
    async fn delete(&self, owner_id: &str, chat_id: &str) -> Result<()>;

    /// The owner's chats, the most recently active first (`GET /chats`). Chats from before
    /// the chat list appear once a turn writes to them again.
    async fn list(
        &self,
        owner_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<ChatSummary>>;

    /// A page of the owner's chat's messages, newest first (`GET /chats/{id}/messages`).
    /// `Error::NotFound` for a missing or foreign chat.
    async fn messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<Message>>;

    /// The last `limit` messages, oldest first.
    async fn recent_messages(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
    ) -> Result<Vec<Message>>;
}
