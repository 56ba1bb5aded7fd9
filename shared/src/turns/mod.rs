//! A chat turn's record and its event log, kept 24 hours: what lets a client resume a
//! dropped stream (`Last-Event-ID`), attach a resent request to the turn it already started
//! (`Idempotency-Key`), and stop a turn running in another container (cancel).
//!
//! The record is written once when the turn is begun, before anything else; its conditional
//! create is what makes a resent request find the first one's turn instead of starting a
//! second. Events are appended in chunks (a few per turn: the running turn flushes about
//! once a second), each event with its sequence number in the turn, `init` being 0.

mod dynamo;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

pub use dynamo::DynamoTurnStore;

use crate::companion::Companion;

use crate::Result;

/// How long a turn's record, events and idempotency key are kept.
pub const RETENTION: time::Duration = time::Duration::DAY;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// Begun; its events may still grow.
    Running,
    /// Ended with `done` (answered, failed with an `error` event, or stopped by a cancel).
    Finished,
    /// Refused before it started (limit, busy chat, missing chat): no events but `init`.
    /// A resend with the same key may try again.
    Refused,
    /// Its host ended it before `done` (the deadline passed): it ends with
    /// `error{code:"interrupted"}`.
    Interrupted,
}

/// One stored event: its place in the turn, its SSE name and its `data` JSON as sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    pub seq: u64,
    pub event: String,
    pub data: String,
}

/// A turn as begun.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub turn_id: String,
    pub owner_id: String,
    pub chat_id: String,
    /// Whether the turn creates its chat (the `init` event's `created`).
    pub created: bool,
    /// A hash of the request that began it: a resend with the same key must match it.
    pub fingerprint: String,
    pub status: TurnStatus,
    /// Set by a cancel; the turn stops at its next safe point.
    pub cancel_requested: bool,
    /// When the turn must be over; past it, a `running` turn was ended by its host.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The error a refused turn was refused with (the HTTP error envelope's `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<serde_json::Value>,
}

impl TurnRecord {
    /// The turn's first event as the record knows it, before the turn ran: without the
    /// turn's language, which the logged `init` has.
    pub fn init_event(&self) -> StoredEvent {
        StoredEvent {
            seq: 0,
            event: "init".into(),
            data: serde_json::json!({
                "chat_id": self.chat_id,
                "created": self.created,
                "turn_id": self.turn_id,
            })
            .to_string(),
        }
    }

    /// Finished or interrupted: its log is complete.
    pub fn ended(&self) -> bool {
        matches!(self.status, TurnStatus::Finished | TurnStatus::Interrupted)
    }

    /// Running past its deadline: its host ended it.
    pub fn overdue(&self, now: OffsetDateTime) -> bool {
        self.status == TurnStatus::Running && self.deadline < now
    }
}

/// How [`TurnStore::begin`] went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Begun {
    /// The record is new: this request runs the turn.
    New,
    /// A turn with this id exists (a resend): follow or replay it.
    Existing(TurnRecord),
}

/// The turn id a user's `Idempotency-Key` stands for: the same key always names the same
/// turn, and keys of different users never meet.
pub fn turn_id_for_key(owner_id: &str, key: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(owner_id.as_bytes());
    hasher.update([0]);
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    ulid::Ulid::from_bytes(bytes).to_string()
}

#[async_trait]
pub trait TurnStore: Send + Sync {
    /// Creates `record` unless a live turn with its id exists (then that one comes back).
    /// A refused or expired record with the id is replaced.
    async fn begin(&self, record: &TurnRecord) -> Result<Begun>;

    /// [`TurnStore::begin`] as a write in another store's transaction (a new chat's
    /// creation): its failed condition is `Error::TurnBegun` with the existing turn.
    fn begin_companion(&self, record: &TurnRecord) -> Result<Companion>;

    /// The turn, if `owner_id` owns it and it belongs to `chat_id`; else `Error::NotFound`.
    async fn get(&self, owner_id: &str, chat_id: &str, turn_id: &str) -> Result<TurnRecord>;

    /// Marks a turn refused before it started, keeping why (`error`, the error envelope's
    /// `error` object).
    async fn refuse(&self, turn: &TurnRecord, error: serde_json::Value) -> Result<()>;

    /// Appends `events` (in order, after every event appended before). Returns whether a
    /// cancel was requested, which the same request reads.
    async fn append(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<bool>;

    /// Appends the turn's last events (ending with `done`) and marks it finished. False if
    /// it had been marked interrupted meanwhile (then nothing is written).
    async fn finish(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<bool>;

    /// Whether a cancel was requested (one read; for a turn waiting on tools).
    async fn cancel_requested(&self, turn: &TurnRecord) -> Result<bool>;

    /// The stored events from sequence `first` on, in order. `init` (0) is logged too; a
    /// turn logged before it was has only the record's ([`TurnRecord::init_event`]).
    async fn events_from(&self, turn: &TurnRecord, first: u64) -> Result<Vec<StoredEvent>>;

    /// The stored events after sequence `after`, in order.
    async fn events_after(&self, turn: &TurnRecord, after: u64) -> Result<Vec<StoredEvent>> {
        self.events_from(turn, after.saturating_add(1)).await
    }

    /// Asks a running turn to stop; the record as it is afterwards. A turn that already
    /// ended is left alone.
    async fn request_cancel(
        &self,
        owner_id: &str,
        chat_id: &str,
        turn_id: &str,
    ) -> Result<TurnRecord>;

    /// Ends an overdue turn with `events` (`error{interrupted}`, `done`). False if it was
    /// not overdue any more (it finished, or another reader ended it first).
    async fn interrupt(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<bool>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_names_one_turn_per_user() {
        let a = turn_id_for_key("alice", "k-1");
        assert_eq!(a, turn_id_for_key("alice", "k-1"));
        assert_ne!(a, turn_id_for_key("bob", "k-1"));
        assert_ne!(a, turn_id_for_key("alice", "k-2"));
        // "ab"+"c" and "a"+"bc" must not collide.
        assert_ne!(turn_id_for_key("ab", "c"), turn_id_for_key("a", "bc"));
        assert_eq!(a.len(), 26);
    }
}
