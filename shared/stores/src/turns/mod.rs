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
pub use domain::turn::{
    Begun, LIVENESS, RETENTION, StoredEvent, TurnRecord, TurnRequest, TurnStatus, turn_id_for_key,
};
pub use dynamo::DynamoTurnStore;

use lambda_kit::companion::Companion;

use crate::Result;

/// Turns' records and event logs: what lets a client resume, resend or cancel a turn.
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

    /// Appends `events` (in order, after every event appended before) and renews the turn's
    /// liveness ([`TurnRecord::alive_until`]); with no events, only renews it. Returns
    /// whether the turn must stop: a cancel was requested, or the turn no longer runs (it
    /// was declared dead and ended by a follower).
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

    /// Makes the caller the host of an overdue turn (its host died), to run it on until
    /// `deadline`: the record as the new host holds it, or `None` if the turn was not
    /// overdue any more (alive after all, ended, or taken over first). The old host's
    /// writes to the record fail from then on ([`TurnRecord::host`]).
    async fn take_over(
        &self,
        turn: &TurnRecord,
        deadline: time::OffsetDateTime,
    ) -> Result<Option<TurnRecord>>;
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
