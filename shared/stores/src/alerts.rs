//! Where fare alerts live: items in the chats table, no TTL (an alert stays until its owner
//! deletes it).
//!
//! | item | pk | sk |
//! | --- | --- | --- |
//! | an alert | `USER#<owner>` | `ALERT#<id>` |
//! | a match it found | `USER#<owner>` | `ALERT#<id>#M#<match key>` |
//! | the owner's alert count | `USER#<owner>` | `ALERTS` |
//! | its next check | `ALERT_SCHEDULE` | `<next check, sortable UTC>#<id>` |
//!
//! The schedule is one partition sorted by the next check time, so the worker reads the
//! due alerts with one `Query` (no table scan). Creating, deleting and moving an alert on
//! change its items in one transaction. A match is written with a condition that its key
//! is new, so a repeated or concurrent check never writes it twice.
//!
//! Scale: one partition takes about 1,000 writes per second, and every check writes it
//! once; the worker checks at most a fixed number of alerts per run (see tool-worker), so
//! with many more alerts than that per schedule interval, checks fall behind. Beyond that,
//! spread the schedule over several partitions (`ALERT_SCHEDULE#<n>`) read in turn.

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::{Error, Result};
use domain::alert::{AlertMatch, CreateFareAlertArgs, FareAlert};
use domain::clock::{Clock, SystemClock};
use lambda_kit::dynamo::{
    Item, Transaction, from_item, invalid_action, n, s, sdk_error, sortable_time, to_av, to_item,
    transact,
};

/// Alerts one user may keep.
pub const MAX_ALERTS_PER_USER: u32 = 20;
/// Matches kept per alert; later ones are not recorded (the user has plenty to look at).
pub const MAX_MATCHES_PER_ALERT: u32 = 50;
/// Partition key of the schedule index.
const SCHEDULE_PK: &str = "ALERT_SCHEDULE";
/// Rounds a delete retries when a check moved the alert meanwhile.
const MAX_ROUNDS: u32 = 8;

/// Users' fare alerts, their matches and the schedule of their checks.
#[async_trait]
pub trait AlertStore: Send + Sync {
    /// Keeps a new alert for `owner`, due for its first check at once. `Error::Invalid`
    /// when the owner already keeps [`MAX_ALERTS_PER_USER`].
    async fn create(&self, owner: &str, args: &CreateFareAlertArgs) -> Result<FareAlert>;

    /// The owner's alerts with their matches, oldest first.
    async fn list(&self, owner: &str) -> Result<Vec<FareAlert>>;

    /// Deletes the owner's alert and its matches; `Error::NotFound` when there is no such
    /// alert of theirs.
    async fn delete(&self, owner: &str, id: &str) -> Result<()>;

    /// Up to `limit` alerts whose next check is due, across all users, longest due first.
    async fn due(&self, limit: usize) -> Result<Vec<DueAlert>>;

    /// Writes the `matches` whose key the alert has not recorded yet and returns how many
    /// were new; then moves its next check to `next_check` (`None`: no more checks). A
    /// second call with the same matches writes none, concurrent ones never the same twice.
    async fn record_matches(
        &self,
        due: &DueAlert,
        matches: &[AlertMatch],
        next_check: Option<OffsetDateTime>,
    ) -> Result<usize>;
}

/// An alert the schedule says is due.
#[derive(Debug, Clone)]
pub struct DueAlert {
    /// The user who keeps the alert.
    pub owner: String,
    /// The alert, without its matches.
    pub alert: FareAlert,
    /// The schedule item's sort key, which the next move replaces.
    schedule: String,
}

/// The alert item: the alert without its matches, its owner, where its schedule item is
/// and how many matches it has.
#[derive(Serialize, Deserialize)]
struct AlertItem {
    pk: String,
    sk: String,
    kind: String,
    owner: String,
    alert: FareAlert,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schedule: Option<String>,
    #[serde(default)]
    match_count: u32,
}

#[derive(Serialize, Deserialize)]
struct MatchItem {
    pk: String,
    sk: String,
    kind: String,
    #[serde(rename = "match")]
    found: AlertMatch,
}

#[derive(Serialize, Deserialize)]
struct ScheduleItem {
    pk: String,
    sk: String,
    owner: String,
    alert_id: String,
}

/// [`AlertStore`] on the chats table.
#[derive(Clone)]
pub struct DynamoAlertStore {
    client: Client,
    table: String,
    clock: Arc<dyn Clock>,
}

fn user_pk(owner: &str) -> String {
    format!("USER#{owner}")
}

fn alert_sk(id: &str) -> String {
    format!("ALERT#{id}")
}

fn match_sk(id: &str, key: &str) -> String {
    format!("ALERT#{id}#M#{key}")
}

fn schedule_sk(at: OffsetDateTime, id: &str) -> String {
    format!("{}#{id}", sortable_time(at))
}

fn key(pk: String, sk: String) -> Item {
    Item::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl DynamoAlertStore {
    /// `table` is the chats table.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            clock: Arc::new(SystemClock),
        }
    }

    /// The same store reading the time from `clock` (tests move it instead of waiting).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    async fn read(&self, owner: &str, id: &str) -> Result<Option<AlertItem>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(user_pk(owner), alert_sk(id))))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        out.item.map(from_item).transpose()
    }

    fn put(&self, item: Item, condition: &str) -> Result<TransactWriteItem> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .build()
            .map_err(invalid_action)?;
        Ok(TransactWriteItem::builder().put(put).build())
    }

    fn delete_action(
        &self,
        pk: String,
        sk: String,
        condition: Option<&str>,
    ) -> Result<TransactWriteItem> {
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .set_condition_expression(condition.map(str::to_owned))
            .build()
            .map_err(invalid_action)?;
        Ok(TransactWriteItem::builder().delete(delete).build())
    }

    fn schedule_put(&self, owner: &str, id: &str, sk: &str) -> Result<TransactWriteItem> {
        let item = to_item(&ScheduleItem {
            pk: SCHEDULE_PK.to_owned(),
            sk: sk.to_owned(),
            owner: owner.to_owned(),
            alert_id: id.to_owned(),
        })?;
        self.put(item, "attribute_not_exists(pk)")
    }

    /// Deletes the owner's match items of alert `id` (after the alert itself is gone, so
    /// no check adds one meanwhile).
    async fn delete_matches(&self, owner: &str, id: &str) -> Result<()> {
        let prefix = format!("ALERT#{id}#M#");
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .expression_attribute_values(":pk", s(user_pk(owner)))
                .expression_attribute_values(":prefix", s(&prefix))
                .projection_expression("pk, sk")
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| sdk_error("Query", e))?;
            for item in page.items.unwrap_or_default() {
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(item))
                    .send()
                    .await
                    .map_err(|e| sdk_error("DeleteItem", e))?;
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(()),
            }
        }
    }
}

#[async_trait]
impl AlertStore for DynamoAlertStore {
    async fn create(&self, owner: &str, args: &CreateFareAlertArgs) -> Result<FareAlert> {
        let now = self.clock.now();
        let id = domain::ids::new_id();
        let mut alert = FareAlert::new(id.clone(), args, rfc3339(now));
        alert.next_check_at = Some(rfc3339(now));
        let schedule = schedule_sk(now, &id);
        let item = to_item(&AlertItem {
            pk: user_pk(owner),
            sk: alert_sk(&id),
            kind: "alert".into(),
            owner: owner.to_owned(),
            alert: alert.clone(),
            schedule: Some(schedule.clone()),
            match_count: 0,
        })?;
        let count = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(user_pk(owner), "ALERTS".into())))
            .update_expression("ADD alert_count :one")
            .condition_expression("attribute_not_exists(alert_count) OR alert_count < :max")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(MAX_ALERTS_PER_USER))
            .build()
            .map_err(invalid_action)?;
        let actions = vec![
            TransactWriteItem::builder().update(count).build(),
            self.put(item, "attribute_not_exists(pk)")?,
            self.schedule_put(owner, &id, &schedule)?,
        ];
        match transact(&self.client, || Ok(actions.clone())).await? {
            Transaction::Written => Ok(alert),
            full if full.failed_at(0) => Err(Error::Invalid(format!(
                "at most {MAX_ALERTS_PER_USER} fare alerts per user: delete one first"
            ))),
            // A fresh ULID already taken: not something a caller can fix.
            canceled => Err(Error::Dynamo {
                op: "TransactWriteItems",
                message: format!("creating a fare alert: {}", canceled.codes()),
            }),
        }
    }

    async fn list(&self, owner: &str) -> Result<Vec<FareAlert>> {
        let mut alerts: Vec<FareAlert> = Vec::new();
        let mut matches: Vec<(String, AlertMatch)> = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
                .expression_attribute_values(":pk", s(user_pk(owner)))
                .expression_attribute_values(":prefix", s("ALERT#"))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| sdk_error("Query", e))?;
            for item in page.items.unwrap_or_default() {
                match item
                    .get("kind")
                    .and_then(|k| k.as_s().ok())
                    .map(String::as_str)
                {
                    Some("alert") => alerts.push(from_item::<AlertItem>(item)?.alert),
                    Some("match") => {
                        let m: MatchItem = from_item(item)?;
                        let id =
                            m.sk.strip_prefix("ALERT#")
                                .and_then(|rest| rest.split_once("#M#"))
                                .map(|(id, _)| id.to_owned())
                                .unwrap_or_default();
                        matches.push((id, m.found));
                    }
                    _ => {}
                }
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        for (id, found) in matches {
            if let Some(alert) = alerts.iter_mut().find(|a| a.id == id) {
                alert.matches.push(found);
            }
        }
        for alert in &mut alerts {
            alert
                .matches
                .sort_by(|a, b| b.found_at.cmp(&a.found_at).then(a.key.cmp(&b.key)));
        }
        Ok(alerts)
    }

    async fn delete(&self, owner: &str, id: &str) -> Result<()> {
        for _ in 0..MAX_ROUNDS {
            let Some(item) = self.read(owner, id).await? else {
                return Err(Error::NotFound);
            };
            // The schedule item named by the alert is the one to delete; a check that
            // moves it meanwhile fails this condition and the delete reads again.
            let (condition, schedule_delete) = match &item.schedule {
                Some(schedule) => (
                    "attribute_exists(pk) AND schedule = :schedule",
                    Some(self.delete_action(SCHEDULE_PK.into(), schedule.clone(), None)?),
                ),
                None => (
                    "attribute_exists(pk) AND attribute_not_exists(schedule)",
                    None,
                ),
            };
            let mut delete = Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key(user_pk(owner), alert_sk(id))))
                .condition_expression(condition);
            if let Some(schedule) = &item.schedule {
                delete = delete.expression_attribute_values(":schedule", s(schedule));
            }
            let count = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(user_pk(owner), "ALERTS".into())))
                .update_expression("ADD alert_count :minus")
                .expression_attribute_values(":minus", n(-1))
                .build()
                .map_err(invalid_action)?;
            let mut actions = vec![
                TransactWriteItem::builder()
                    .delete(delete.build().map_err(invalid_action)?)
                    .build(),
                TransactWriteItem::builder().update(count).build(),
            ];
            actions.extend(schedule_delete);
            match transact(&self.client, || Ok(actions.clone())).await? {
                Transaction::Written => return self.delete_matches(owner, id).await,
                Transaction::Canceled(_) => continue,
            }
        }
        Err(Error::Contention(format!("fare alert {id}")))
    }

    async fn due(&self, limit: usize) -> Result<Vec<DueAlert>> {
        let now = self.clock.now();
        // `~` sorts after every id character: everything scheduled up to now is due.
        let until = format!("{}#~", sortable_time(now));
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk <= :until")
            .expression_attribute_values(":pk", s(SCHEDULE_PK))
            .expression_attribute_values(":until", s(until))
            .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("Query", e))?;
        let mut due = Vec::new();
        for item in out.items.unwrap_or_default() {
            let entry: ScheduleItem = from_item(item)?;
            match self.read(&entry.owner, &entry.alert_id).await? {
                Some(alert) if alert.schedule.as_deref() == Some(entry.sk.as_str()) => {
                    due.push(DueAlert {
                        owner: alert.owner,
                        alert: alert.alert,
                        schedule: entry.sk,
                    });
                }
                // The alert is gone, or a check moved it meanwhile: a stale entry.
                _ => {
                    self.client
                        .delete_item()
                        .table_name(&self.table)
                        .set_key(Some(key(entry.pk, entry.sk)))
                        .send()
                        .await
                        .map_err(|e| sdk_error("DeleteItem", e))?;
                }
            }
        }
        Ok(due)
    }

    async fn record_matches(
        &self,
        due: &DueAlert,
        matches: &[AlertMatch],
        next_check: Option<OffsetDateTime>,
    ) -> Result<usize> {
        let (owner, id) = (due.owner.as_str(), due.alert.id.as_str());
        let mut written = 0;
        let mut seen = std::collections::BTreeSet::new();
        for found in matches.iter().filter(|m| seen.insert(m.key.clone())) {
            let item = to_item(&MatchItem {
                pk: user_pk(owner),
                sk: match_sk(id, &found.key),
                kind: "match".into(),
                found: found.clone(),
            })?;
            // The alert must still exist and have room: a deleted alert gets no matches.
            let count = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(user_pk(owner), alert_sk(id))))
                .update_expression("ADD match_count :one")
                .condition_expression(
                    "attribute_exists(pk) AND (attribute_not_exists(match_count) OR match_count < :max)",
                )
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":max", n(MAX_MATCHES_PER_ALERT))
                .build()
                .map_err(invalid_action)?;
            let actions = vec![
                self.put(item, "attribute_not_exists(pk)")?,
                TransactWriteItem::builder().update(count).build(),
            ];
            match transact(&self.client, || Ok(actions.clone())).await? {
                Transaction::Written => written += 1,
                // Recorded before, by this check's predecessor or a concurrent one.
                outcome @ Transaction::Canceled(_) if outcome.failed_at(0) => {}
                // The alert is gone or full: nothing more to record.
                Transaction::Canceled(_) => break,
            }
        }
        self.move_on(due, next_check).await?;
        Ok(written)
    }
}

impl DynamoAlertStore {
    /// Replaces the alert's schedule entry with one at `next_check` (or none) and stamps
    /// the check. A concurrent check that moved it first, or a delete, wins: then nothing
    /// changes here.
    async fn move_on(&self, due: &DueAlert, next_check: Option<OffsetDateTime>) -> Result<()> {
        let (owner, id) = (due.owner.as_str(), due.alert.id.as_str());
        let now = self.clock.now();
        let next = next_check.map(|at| schedule_sk(at, id));
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key(user_pk(owner), alert_sk(id))))
            .condition_expression("attribute_exists(pk) AND schedule = :old")
            .expression_attribute_names("#a", "alert")
            .expression_attribute_values(":old", s(&due.schedule))
            .expression_attribute_values(":checked", s(rfc3339(now)));
        update = match (&next, next_check) {
            (Some(sk), Some(at)) => update
                .update_expression(
                    "SET #a.last_checked_at = :checked, #a.next_check_at = :next, schedule = :schedule",
                )
                .expression_attribute_values(":next", s(rfc3339(at)))
                .expression_attribute_values(":schedule", s(sk)),
            _ => update
                .update_expression(
                    "SET #a.last_checked_at = :checked, #a.next_check_at = :none REMOVE schedule",
                )
                .expression_attribute_values(":none", to_av(&Option::<String>::None)?),
        };
        let mut actions = vec![
            TransactWriteItem::builder()
                .update(update.build().map_err(invalid_action)?)
                .build(),
            self.delete_action(
                SCHEDULE_PK.into(),
                due.schedule.clone(),
                Some("attribute_exists(pk)"),
            )?,
        ];
        if let Some(sk) = &next {
            actions.push(self.schedule_put(owner, id, sk)?);
        }
        match transact(&self.client, || Ok(actions.clone())).await? {
            Transaction::Written => Ok(()),
            Transaction::Canceled(_) => {
                tracing::info!(
                    alert_id = id,
                    "alert moved or deleted meanwhile; left as it is"
                );
                Ok(())
            }
        }
    }
}
