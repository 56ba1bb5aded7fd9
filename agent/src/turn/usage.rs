//! The usage records of a turn's model steps, written with the turn's next chat write (the
//! step's messages, or the answer) instead of one request per call. What no chat write
//! took (it failed, or the turn ended without one) is written on its own before `done`, so
//! no record is lost; a daily budget sees a turn's cost when its step is written, a few
//! seconds later than a write per call would show it.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use shared::Result;
use shared::companion::Companion;
use shared::usage::{Hold, Reservation, TokenUsage, UsageRecord, UsageStore};
use time::OffsetDateTime;

/// A [`UsageStore`] for one turn: `save` keeps the record for the next chat write.
pub(super) struct TurnUsage {
    store: Arc<dyn UsageStore>,
    pending: Mutex<Vec<UsageRecord>>,
}

impl TurnUsage {
    pub(super) fn new(store: Arc<dyn UsageStore>) -> Self {
        Self {
            store,
            pending: Mutex::new(Vec::new()),
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<UsageRecord>> {
        // A panic while holding the lock leaves a whole Vec: still usable.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The records not written yet, as writes for the next chat write; `None` when there
    /// are none. Taken out: give them back with [`TurnUsage::restore`] if that write fails.
    pub(super) fn take(&self) -> Option<(Vec<UsageRecord>, Vec<Companion>)> {
        let records = std::mem::take(&mut *self.pending());
        if records.is_empty() {
            return None;
        }
        let companions: Result<Vec<Companion>> = records
            .iter()
            .map(|r| self.store.save_companion(r))
            .collect();
        match companions {
            Ok(companions) => Some((records, companions)),
            // Cannot happen for records we priced ourselves; they are written alone later.
            Err(e) => {
                tracing::error!(error = %e, "usage records cannot go with the chat write");
                self.restore(records);
                None
            }
        }
    }

    /// Gives back records whose chat write failed.
    pub(super) fn restore(&self, records: Vec<UsageRecord>) {
        let mut pending = self.pending();
        let later = std::mem::replace(&mut *pending, records);
        pending.extend(later);
    }

    /// Writes what no chat write took, each on its own.
    pub(super) async fn flush(&self) {
        let records = std::mem::take(&mut *self.pending());
        for record in records {
            if let Err(e) = self.store.save(&record).await {
                tracing::error!(operation = %record.operation, error = %e, "recording LLM usage failed");
            }
        }
    }
}

#[async_trait]
impl UsageStore for TurnUsage {
    fn priced(
        &self,
        user_id: &str,
        chat_id: Option<&str>,
        model: &str,
        operation: &str,
        usage: TokenUsage,
    ) -> UsageRecord {
        self.store.priced(user_id, chat_id, model, operation, usage)
    }

    /// Kept for the turn's next chat write (see the module).
    async fn save(&self, record: &UsageRecord) -> Result<()> {
        self.pending().push(record.clone());
        Ok(())
    }

    fn save_companion(&self, record: &UsageRecord) -> Result<Companion> {
        self.store.save_companion(record)
    }

    /// Holds go to the store at once: they are what keeps concurrent turns in the budget.
    async fn reserve(&self, user_id: &str, amount_usd: f64) -> Result<Hold> {
        self.store.reserve(user_id, amount_usd).await
    }

    async fn settle(&self, reservation: &Reservation, actual_usd: f64) -> Result<()> {
        self.store.settle(reservation, actual_usd).await
    }

    async fn list_for_user(
        &self,
        user_id: &str,
        since: OffsetDateTime,
    ) -> Result<Vec<UsageRecord>> {
        self.store.list_for_user(user_id, since).await
    }
}
