//! [`TurnStore`] on DynamoDB, in the chats table: `pk = TURN#<turn>`, `sk = META` for the
//! record and `sk = EV#<generation>#<last seq>` for each chunk of events. The generation
//! (the record's creation time) keeps the chunks of a key's expired turn, which TTL may not
//! have deleted yet, out of the turn that reuses its id. A chunk is named by its last
//! event, so the chunks holding events after `n` are the ones whose key sorts after `n`'s.

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeValue, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update,
};
use serde::{Deserialize, Serialize};

use super::{Begun, RETENTION, StoredEvent, TurnRecord, TurnStatus, TurnStore};
use crate::{Error, Result};
use domain::clock::{Clock, SystemClock};
use lambda_kit::companion::Companion;
use lambda_kit::dynamo::{
    ConditionFailure, Item, Transaction, from_item, invalid_action, n, rfc3339, s, sdk_error,
    sortable_time, to_av, to_item, transact,
};

/// [`TurnStore`] on the chats table.
#[derive(Clone)]
pub struct DynamoTurnStore {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
}

/// The record as stored: the record's fields, its deadline as sortable text (so a condition
/// can compare it with now) and its expiry.
#[derive(Debug, Serialize, Deserialize)]
struct RecordItem {
    pk: String,
    sk: String,
    #[serde(flatten)]
    record: TurnRecord,
    until: String,
    ttl: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct ChunkItem {
    pk: String,
    sk: String,
    events: Vec<StoredEvent>,
    ttl: i64,
}

impl DynamoTurnStore {
    /// A store on `table` (the chats table), with the system clock.
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

    fn pk(turn_id: &str) -> String {
        format!("TURN#{turn_id}")
    }

    fn meta_key(turn_id: &str) -> Item {
        Item::from([
            ("pk".to_owned(), s(Self::pk(turn_id))),
            ("sk".to_owned(), s("META")),
        ])
    }

    /// Chunk keys of `turn` begin with this.
    fn chunk_prefix(turn: &TurnRecord) -> String {
        format!("EV#{}#", sortable_time(turn.created_at))
    }

    fn chunk_key(turn: &TurnRecord, last_seq: u64) -> String {
        format!("{}{last_seq:012}", Self::chunk_prefix(turn))
    }

    fn expiry(&self) -> i64 {
        (self.clock.now() + RETENTION).unix_timestamp()
    }

    async fn read(&self, turn_id: &str) -> Result<Option<TurnRecord>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(turn_id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        out.item
            .map(|item| from_item::<RecordItem>(item).map(|i| i.record))
            .transpose()
    }

    /// A `Put` of `events` as one chunk (None for no events), new only.
    fn chunk_put(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<Option<Put>> {
        let Some(last) = events.last() else {
            return Ok(None);
        };
        let item = ChunkItem {
            pk: Self::pk(&turn.turn_id),
            sk: Self::chunk_key(turn, last.seq),
            events: events.to_vec(),
            ttl: self.expiry(),
        };
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(&item)?))
            .condition_expression("attribute_not_exists(sk)")
            .build()
            .map(Some)
            .map_err(invalid_action)
    }

    /// Writes `events` as one chunk on its own.
    async fn put_chunk(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<()> {
        let Some(put) = self.chunk_put(turn, events)? else {
            return Ok(());
        };
        let result = self
            .client
            .put_item()
            .table_name(put.table_name())
            .set_item(Some(put.item().clone()))
            .condition_expression("attribute_not_exists(sk)")
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Written before by a retried request: the same events, nothing to do.
            Err(err) if err.condition_failed_item().is_some() => Ok(()),
            Err(err) => Err(sdk_error("PutItem", err)),
        }
    }

    /// The record's creating write: new, or replacing a refused or expired record with
    /// its id; the record as it was comes back when the condition fails.
    fn begin_put(&self, record: &TurnRecord) -> Result<Put> {
        let item = RecordItem {
            pk: Self::pk(&record.turn_id),
            sk: "META".into(),
            record: record.clone(),
            until: sortable_time(until(record)),
            ttl: self.expiry(),
        };
        Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(&item)?))
            .condition_expression("attribute_not_exists(pk) OR #status = :refused OR #ttl < :now")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":refused", to_av(&TurnStatus::Refused)?)
            .expression_attribute_values(":now", n(self.clock.now().unix_timestamp()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(invalid_action)
    }

    /// An update of the record whose condition says it is still running: overdue (a
    /// follower ends it), or (its host ends it) still run by `turn`'s host.
    fn status_update(
        &self,
        turn: &TurnRecord,
        to: TurnStatus,
        overdue_only: bool,
    ) -> Result<Update> {
        let condition = if overdue_only {
            "#status = :running AND #until < :now".to_owned()
        } else {
            format!("#status = :running AND {}", host_condition(turn))
        };
        let builder = Update::builder()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(&turn.turn_id)))
            .update_expression("SET #status = :to")
            .condition_expression(condition)
            .set_expression_attribute_values(host_value(turn, overdue_only))
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":to", to_av(&to)?)
            .expression_attribute_values(":running", to_av(&TurnStatus::Running)?);
        let builder = if overdue_only {
            builder
                .expression_attribute_names("#until", "until")
                .expression_attribute_values(":now", s(sortable_time(self.clock.now())))
        } else {
            builder
        };
        builder.build().map_err(invalid_action)
    }
}

impl DynamoTurnStore {
    /// The turn's liveness written now: until when it is alive, and when it is overdue.
    fn liveness(&self, turn: &TurnRecord) -> (time::OffsetDateTime, String) {
        let alive = turn.alive_after(self.clock.now());
        let until = until(&TurnRecord {
            alive_until: Some(alive),
            ..turn.clone()
        });
        (alive, sortable_time(until))
    }

    /// Renews a running turn's liveness alone; whether it must stop (a cancel was asked
    /// for, or it no longer runs).
    async fn renew(&self, turn: &TurnRecord) -> Result<bool> {
        let (alive, until) = self.liveness(turn);
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(&turn.turn_id)))
            .update_expression("SET alive_until = :alive, #until = :until")
            .condition_expression(format!(
                "#status = :running AND created_at = :created AND {}",
                host_condition(turn)
            ))
            .set_expression_attribute_values(host_value(turn, false))
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#until", "until")
            .expression_attribute_values(":alive", rfc3339(alive))
            .expression_attribute_values(":until", s(until))
            .expression_attribute_values(":running", to_av(&TurnStatus::Running)?)
            .expression_attribute_values(":created", rfc3339(turn.created_at))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match result {
            Ok(out) => Ok(out
                .attributes
                .map(from_item::<RecordItem>)
                .transpose()?
                .is_some_and(|item| item.record.cancel_requested)),
            Err(err) if err.condition_failed_item().is_some() => Ok(true),
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }

    /// Ends a running turn as `to` and appends its last `events`, in one transaction; false
    /// if it was not running (or, with `overdue_only`, not yet past its deadline).
    async fn end(
        &self,
        turn: &TurnRecord,
        to: TurnStatus,
        overdue_only: bool,
        events: &[StoredEvent],
    ) -> Result<bool> {
        let actions = || {
            let mut actions = vec![
                TransactWriteItem::builder()
                    .update(self.status_update(turn, to, overdue_only)?)
                    .build(),
            ];
            if let Some(put) = self.chunk_put(turn, events)? {
                actions.push(TransactWriteItem::builder().put(put).build());
            }
            Ok(actions)
        };
        Ok(matches!(
            transact(&self.client, actions).await?,
            Transaction::Written
        ))
    }
}

/// When a running turn is overdue: at its deadline, or when its host stops saying it is
/// alive. Stored as sortable text, so that a condition can compare it with now.
fn until(record: &TurnRecord) -> time::OffsetDateTime {
    record
        .alive_until
        .map_or(record.deadline, |alive| alive.min(record.deadline))
}

/// The condition that `turn`'s host still runs it (`:host`, see [`host_value`]).
fn host_condition(turn: &TurnRecord) -> &'static str {
    if turn.host == 0 {
        "attribute_not_exists(host)"
    } else {
        "host = :host"
    }
}

/// The `:host` value [`host_condition`] names, if it names one (never with `skip`).
fn host_value(
    turn: &TurnRecord,
    skip: bool,
) -> Option<std::collections::HashMap<String, AttributeValue>> {
    (turn.host != 0 && !skip).then(|| [(":host".to_owned(), n(i64::from(turn.host)))].into())
}

/// What a failed condition of the record's creation means: the turn exists (`old`).
fn already_begun(old: Option<Item>) -> Error {
    match old.map(from_item::<RecordItem>) {
        Some(Ok(old)) => Error::TurnBegun(Box::new(old.record)),
        Some(Err(e)) => e,
        // Deleted between the condition and the read: as good as absent, but a resend will
        // simply try again.
        None => Error::Contention("a turn record that was just deleted".into()),
    }
}

#[async_trait]
impl TurnStore for DynamoTurnStore {
    async fn begin(&self, record: &TurnRecord) -> Result<Begun> {
        let put = self.begin_put(record)?;
        let result = self
            .client
            .put_item()
            .table_name(put.table_name())
            .set_item(Some(put.item().clone()))
            .set_condition_expression(put.condition_expression().map(str::to_owned))
            .set_expression_attribute_names(put.expression_attribute_names().cloned())
            .set_expression_attribute_values(put.expression_attribute_values().cloned())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(Begun::New),
            Err(err) => match err.condition_failed_item() {
                Some(old) => match already_begun(old) {
                    Error::TurnBegun(turn) => Ok(Begun::Existing(*turn)),
                    other => Err(other),
                },
                None => Err(sdk_error("PutItem", err)),
            },
        }
    }

    fn begin_companion(&self, record: &TurnRecord) -> Result<Companion> {
        let put = self.begin_put(record)?;
        let action = TransactWriteItem::builder().put(put).build();
        Ok(Companion::new("turn record", action, already_begun))
    }

    async fn get(&self, owner_id: &str, chat_id: &str, turn_id: &str) -> Result<TurnRecord> {
        match self.read(turn_id).await? {
            Some(r) if r.owner_id == owner_id && r.chat_id == chat_id => Ok(r),
            _ => Err(Error::NotFound),
        }
    }

    async fn refuse(&self, turn: &TurnRecord, error: serde_json::Value) -> Result<()> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(&turn.turn_id)))
            .update_expression("SET #status = :refused, refusal = :error")
            .condition_expression("#status = :running AND created_at = :created")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":refused", to_av(&TurnStatus::Refused)?)
            .expression_attribute_values(":running", to_av(&TurnStatus::Running)?)
            .expression_attribute_values(":error", to_av(&error)?)
            // A later turn under the same key is not this one's to refuse.
            .expression_attribute_values(":created", rfc3339(turn.created_at))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(err) if err.condition_failed_item().is_some() => Ok(()),
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }

    async fn append(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<bool> {
        let Some(put) = self.chunk_put(turn, events)? else {
            return self.renew(turn).await;
        };
        let (alive, until) = self.liveness(turn);
        let heartbeat = Update::builder()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(&turn.turn_id)))
            .update_expression("SET alive_until = :alive, #until = :until")
            .condition_expression(format!(
                "#status = :running AND cancel_requested = :no AND created_at = :created AND {}",
                host_condition(turn)
            ))
            .set_expression_attribute_values(host_value(turn, false))
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#until", "until")
            .expression_attribute_values(":alive", rfc3339(alive))
            .expression_attribute_values(":until", s(until))
            .expression_attribute_values(":running", to_av(&TurnStatus::Running)?)
            .expression_attribute_values(":no", AttributeValue::Bool(false))
            .expression_attribute_values(":created", rfc3339(turn.created_at))
            .build()
            .map_err(invalid_action)?;
        let actions = vec![
            TransactWriteItem::builder().put(put).build(),
            TransactWriteItem::builder().update(heartbeat).build(),
        ];
        match transact(&self.client, || Ok(actions.clone())).await? {
            Transaction::Written => Ok(false),
            // Asked to stop, ended or taken over elsewhere: the turn learns of it. A
            // cancel's events still go in; a turn that was ended elsewhere has its log
            // closed already, and one taken over is another host's log now.
            canceled if canceled.failed_at(1) && !canceled.failed_at(0) => {
                if self
                    .read(&turn.turn_id)
                    .await?
                    .is_some_and(|r| r.status == TurnStatus::Running && r.host == turn.host)
                {
                    self.put_chunk(turn, events).await?;
                }
                Ok(true)
            }
            // The chunk exists: a retry of a write that went through.
            _ => self.renew(turn).await,
        }
    }

    async fn finish(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<bool> {
        self.end(turn, TurnStatus::Finished, false, events).await
    }

    async fn cancel_requested(&self, turn: &TurnRecord) -> Result<bool> {
        Ok(self
            .read(&turn.turn_id)
            .await?
            .is_some_and(|r| r.cancel_requested))
    }

    async fn events_from(&self, turn: &TurnRecord, first: u64) -> Result<Vec<StoredEvent>> {
        let pk = Self::pk(&turn.turn_id);
        let from = Self::chunk_key(turn, first);
        let to = format!("{}~", Self::chunk_prefix(turn));
        let mut events = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(&pk))
                .expression_attribute_values(":from", s(&from))
                .expression_attribute_values(":to", s(&to))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| sdk_error("Query", e))?;
            for item in page.items.unwrap_or_default() {
                let chunk: ChunkItem = from_item(item)?;
                events.extend(chunk.events.into_iter().filter(|e| e.seq >= first));
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        Ok(events)
    }

    async fn request_cancel(
        &self,
        owner_id: &str,
        chat_id: &str,
        turn_id: &str,
    ) -> Result<TurnRecord> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(turn_id)))
            .update_expression("SET cancel_requested = :yes")
            .condition_expression("owner_id = :owner AND chat_id = :chat AND #status = :running")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .expression_attribute_values(":owner", s(owner_id))
            .expression_attribute_values(":chat", s(chat_id))
            .expression_attribute_values(":running", to_av(&TurnStatus::Running)?)
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => Ok(from_item::<RecordItem>(out.attributes.unwrap_or_default())?.record),
            Err(err) => match err.condition_failed_item() {
                Some(Some(old)) => {
                    let record = from_item::<RecordItem>(old)?.record;
                    if record.owner_id != owner_id || record.chat_id != chat_id {
                        return Err(Error::NotFound);
                    }
                    // Already over: nothing to stop.
                    Ok(record)
                }
                Some(None) => Err(Error::NotFound),
                None => Err(sdk_error("UpdateItem", err)),
            },
        }
    }

    async fn interrupt(&self, turn: &TurnRecord, events: &[StoredEvent]) -> Result<bool> {
        self.end(turn, TurnStatus::Interrupted, true, events).await
    }

    async fn take_over(
        &self,
        turn: &TurnRecord,
        deadline: time::OffsetDateTime,
    ) -> Result<Option<TurnRecord>> {
        let taken = TurnRecord {
            host: turn.host + 1,
            deadline,
            ..turn.clone()
        };
        let (alive, until) = self.liveness(&taken);
        let taken = TurnRecord {
            alive_until: Some(alive),
            ..taken
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::meta_key(&turn.turn_id)))
            .update_expression(
                "SET host = :next, deadline = :deadline, alive_until = :alive, #until = :until",
            )
            .condition_expression(format!(
                "#status = :running AND created_at = :created AND #until < :now AND {}",
                host_condition(turn)
            ))
            .set_expression_attribute_values(host_value(turn, false))
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#until", "until")
            .expression_attribute_values(":next", n(i64::from(taken.host)))
            .expression_attribute_values(":deadline", rfc3339(deadline))
            .expression_attribute_values(":alive", rfc3339(alive))
            .expression_attribute_values(":until", s(until))
            .expression_attribute_values(":running", to_av(&TurnStatus::Running)?)
            .expression_attribute_values(":created", rfc3339(turn.created_at))
            .expression_attribute_values(":now", s(sortable_time(self.clock.now())))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Some(taken)),
            // Alive after all, ended, or taken over by another request first.
            Err(err) if err.condition_failed_item().is_some() => Ok(None),
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }
}
