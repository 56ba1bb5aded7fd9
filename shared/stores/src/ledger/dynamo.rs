//! [`ToolCallLedger`] on DynamoDB.
//!
//! Item: `pk = CHAT#<chat>`, `sk = CALL#<call id>`; `recent` (LSI `by_recent`) orders a chat's
//! calls by their latest attempt. Top-level attributes describe the current attempt;
//! `attempts` is the list of every attempt (index + 1 = attempt number). Every status change
//! is one `UpdateItem` whose condition encodes the allowed source state, so no transition
//! depends on an earlier read.

use lambda_kit::dynamo::{Cursor, page};
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::{Duration, OffsetDateTime};

use super::{
    ApprovalChoice, Claim, ClaimMode, ClaimRequest, ClaimedCall, Decided, DedupeKey, Outcome, Page,
    ToolCallLedger,
};
use crate::{Error, Result};
use domain::clock::{Clock, SystemClock};
use domain::tool_call::{
    ApprovalRecord, AttemptRecord, RefusedCall, ToolCallRecord, ToolCallStatus, ToolName,
};
use lambda_kit::companion::{self, Companion};
use lambda_kit::config::LedgerConfig;
use lambda_kit::dynamo::{
    ConditionFailure, Item, Transaction, epoch_millis, from_item, invalid_action, n, rfc3339, s,
    sdk_error, sortable_time, to_av, to_item, transact,
};

const RECENT_INDEX: &str = "by_recent";
/// DynamoDB items stop at 400 KB; a larger response is replaced by a marker (and logged)
/// rather than failing the finishing write and losing the status.
const MAX_STORED_RESPONSE_BYTES: usize = 300 * 1024;

/// [`ToolCallLedger`] on the tool-calls table.
#[derive(Clone)]
pub struct DynamoLedger {
    client: Client,
    table: String,
    config: LedgerConfig,
    clock: Arc<dyn Clock>,
}

impl DynamoLedger {
    /// A ledger on `table` (the tool-calls table), with the system clock.
    pub fn new(client: Client, table: impl Into<String>, config: LedgerConfig) -> Self {
        Self::with_clock(client, table, config, Arc::new(SystemClock))
    }

    /// The same, reading the time from `clock` (tests move it).
    pub fn with_clock(
        client: Client,
        table: impl Into<String>,
        config: LedgerConfig,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            client,
            table: table.into(),
            config,
            clock,
        }
    }

    fn key(chat_id: &str, call_id: &str) -> [(&'static str, AttributeValue); 2] {
        [
            ("pk", s(format!("CHAT#{chat_id}"))),
            ("sk", s(format!("CALL#{call_id}"))),
        ]
    }

    fn update(&self, chat_id: &str, call_id: &str) -> UpdateItemFluentBuilder {
        let [(pk, pkv), (sk, skv)] = Self::key(chat_id, call_id);
        self.client
            .update_item()
            .table_name(&self.table)
            .key(pk, pkv)
            .key(sk, skv)
            .expression_attribute_names("#status", "status")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    fn ttl(&self, now: OffsetDateTime) -> AttributeValue {
        n((now + self.config.retention).unix_timestamp())
    }

    async fn read(&self, chat_id: &str, call_id: &str) -> Result<Option<CallItem>> {
        let [(pk, pkv), (sk, skv)] = Self::key(chat_id, call_id);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(pk, pkv)
            .key(sk, skv)
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error("GetItem", e))?;
        out.item.map(from_item).transpose()
    }

    /// Explains a failed condition from the item DynamoDB returned with it (or a fresh read
    /// when the emulator did not return one).
    async fn old_item(
        &self,
        chat_id: &str,
        call_id: &str,
        returned: Option<Item>,
    ) -> Result<Option<CallItem>> {
        match returned {
            Some(item) => from_item(item).map(Some),
            None => self.read(chat_id, call_id).await,
        }
    }

    /// Marks the attempt replaced by a takeover (its lease or queue deadline passed) as
    /// timed out. Best effort: fenced on the new
    /// attempt so it never touches a newer state, and a failure only leaves the old attempt
    /// shown as `running` in the audit log.
    async fn close_superseded_attempt(&self, call: &ClaimedCall, now: OffsetDateTime) {
        let old = call.attempt.saturating_sub(2);
        let result = self
            .update(&call.chat_id, &call.id)
            .update_expression(format!(
                "SET attempts[{old}].#status = :timeout, attempts[{old}].finished_at = :now, attempts[{old}].#error = :err"
            ))
            .condition_expression("attempt = :attempt")
            .expression_attribute_names("#error", "error")
            .expression_attribute_values(":timeout", s(ToolCallStatus::Timeout.as_str()))
            .expression_attribute_values(":now", rfc3339(now))
            .expression_attribute_values(
                ":err",
                s(format!(
                    "lease expired (or no worker picked it up in time); taken over by attempt {}",
                    call.attempt
                )),
            )
            .expression_attribute_values(":attempt", n(call.attempt))
            .send()
            .await;
        if let Err(e) = result {
            tracing::warn!(call_id = %call.id, error = %sdk_error("UpdateItem", e), "could not close superseded attempt");
        }
    }

    /// Sends a guarded transition of one attempt; a failed condition becomes `Fenced`,
    /// `IllegalTransition` or `NotFound`, explained by the item that made it fail.
    /// The status a claim in `mode` starts, how long it holds the call (running: the
    /// executor's lease; queued: the deadline for a worker to pick it up; either way, once
    /// it has passed, the next identical call takes the call over), and its attempt entry.
    fn claim_start(
        &self,
        mode: &ClaimMode,
        now: OffsetDateTime,
    ) -> (ToolCallStatus, Duration, AttemptEntry) {
        match mode {
            ClaimMode::Run { lease } => (
                ToolCallStatus::Running,
                *lease,
                AttemptEntry {
                    status: Some(ToolCallStatus::Running),
                    started_at: Some(now),
                    ..AttemptEntry::default()
                },
            ),
            ClaimMode::Enqueue => (
                ToolCallStatus::Queued,
                self.config.queue_deadline,
                AttemptEntry {
                    status: Some(ToolCallStatus::Queued),
                    queued_at: Some(now),
                    ..AttemptEntry::default()
                },
            ),
            // Held until the approval window ends; past it an identical call starts anew.
            ClaimMode::AwaitApproval { approval } => (
                ToolCallStatus::AwaitingApproval,
                (approval.expires_at - now).max(Duration::ZERO),
                AttemptEntry {
                    status: Some(ToolCallStatus::AwaitingApproval),
                    queued_at: Some(now),
                    ..AttemptEntry::default()
                },
            ),
        }
    }

    /// The one conditional update of a claim: it creates the call, or opens a new attempt of
    /// one that has ended (succeeded only past its dedupe window) or whose lease or queue
    /// deadline has passed; anything else fails the condition and is a duplicate.
    fn claim_update(
        &self,
        req: &ClaimRequest,
        key: &DedupeKey,
        call_id: &str,
        now: OffsetDateTime,
    ) -> Result<(ToolCallStatus, UpdateItemFluentBuilder)> {
        let (status, hold, entry) = self.claim_start(&req.mode, now);
        let (mut set, remove, approval) = attempt_clauses(status, &req.mode)?;
        set.extend([
            "chat_id = :chat",
            "owner_id = :owner",
            "call_id = :id",
            "tool = :tool",
            "dedupe_key = :dk",
            "#request = :req",
            "#status = :status",
            "attempt = if_not_exists(attempt, :zero) + :one",
            "attempts = list_append(if_not_exists(attempts, :empty), :entry)",
            "created_at = if_not_exists(created_at, :now)",
            "updated_at = :now",
            "recent = :recent",
            "dedupe_until = :window",
            "#ttl = :ttl",
        ]);
        let update = self
            .update(&req.chat_id, call_id)
            .update_expression(format!("SET {} {remove}", set.join(", ")))
            .condition_expression(
                "attribute_not_exists(pk) OR (owner_id = :owner AND (\
                   #status IN (:failed, :timeout, :canceled, :expired) \
                   OR (#status = :succeeded AND dedupe_until < :now_ms) \
                   OR (#status IN (:running, :queued, :awaiting) AND lease_until < :now_ms)))",
            )
            .expression_attribute_names("#error", "error")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_names("#request", "request")
            .expression_attribute_names("#response", "response")
            .expression_attribute_values(":chat", s(&req.chat_id))
            .expression_attribute_values(":owner", s(&req.owner_id))
            .expression_attribute_values(":id", s(call_id))
            .expression_attribute_values(":tool", s(req.tool.as_str()))
            .expression_attribute_values(":dk", s(key.as_str()))
            .expression_attribute_values(":req", to_av(&req.request)?)
            .expression_attribute_values(":status", status_av(status))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":empty", AttributeValue::L(vec![]))
            .expression_attribute_values(":entry", AttributeValue::L(vec![to_av(&entry)?]))
            .expression_attribute_values(":now", rfc3339(now))
            .expression_attribute_values(":now_ms", n(epoch_millis(now)))
            .expression_attribute_values(":recent", s(format!("{}#{call_id}", sortable_time(now))))
            .expression_attribute_values(":lease", n(epoch_millis(now + hold)))
            .expression_attribute_values(
                ":window",
                n(epoch_millis(now + self.config.dedupe_window)),
            )
            .expression_attribute_values(":ttl", self.ttl(now))
            .return_values(ReturnValue::AllOld);
        let update = CLAIM_CONDITION_STATUSES
            .iter()
            .fold(update, |update, (name, status)| {
                update.expression_attribute_values(*name, status_av(*status))
            });
        let update = match approval {
            Some(approval) => update.expression_attribute_values(":approval", approval),
            None => update,
        };
        Ok((status, update))
    }

    /// queued → `to` (canceled or failed) for attempt `attempt`, with `reason` as the error.
    async fn end_queued(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        to: ToolCallStatus,
        reason: &str,
    ) -> Result<()> {
        let now = self.clock.now();
        let i = attempt.saturating_sub(1);
        self.transition(
            self.update(chat_id, call_id)
                .update_expression(format!(
                    "SET #status = :to, finished_at = :now, updated_at = :now, #error = :reason, \
                     attempts[{i}].#status = :to, attempts[{i}].finished_at = :now, \
                     attempts[{i}].#error = :reason"
                ))
                .condition_expression(
                    "attribute_exists(pk) AND #status = :queued AND attempt = :attempt",
                )
                .expression_attribute_names("#error", "error")
                .expression_attribute_values(":to", status_av(to))
                .expression_attribute_values(":queued", status_av(ToolCallStatus::Queued))
                .expression_attribute_values(":now", rfc3339(now))
                .expression_attribute_values(":reason", s(reason))
                .expression_attribute_values(":attempt", n(attempt)),
            chat_id,
            call_id,
            attempt,
            to,
        )
        .await
        .map(drop)
    }

    /// The write that ends `call`'s attempt with `outcome`, fenced on the attempt.
    fn finish_update(
        &self,
        call: &ClaimedCall,
        outcome: &Outcome,
    ) -> Result<UpdateItemFluentBuilder> {
        let update = self.finish_expression(call, outcome);
        Ok(match stored_response(call, outcome)? {
            Some(response) => update.expression_attribute_values(RESPONSE, response),
            None => update,
        })
    }

    /// [`Self::finish_update`] without the response's value ([`RESPONSE`]): a transaction
    /// adds it to each attempt's action instead of copying it from here.
    fn finish_expression(&self, call: &ClaimedCall, outcome: &Outcome) -> UpdateItemFluentBuilder {
        let now = self.clock.now();
        let to = outcome.status();
        let i = call.attempt.saturating_sub(1);
        let mut set = vec![
            "#status = :to".to_owned(),
            "updated_at = :now".to_owned(),
            "finished_at = :now".to_owned(),
            "#ttl = :ttl".to_owned(),
            format!("attempts[{i}].#status = :to"),
            format!("attempts[{i}].finished_at = :now"),
        ];
        let mut update = self
            .update(&call.chat_id, &call.id)
            .condition_expression(
                "attribute_exists(pk) AND #status = :running AND attempt = :attempt",
            )
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":to", status_av(to))
            .expression_attribute_values(":now", rfc3339(now))
            .expression_attribute_values(":ttl", self.ttl(now))
            .expression_attribute_values(":running", status_av(ToolCallStatus::Running))
            .expression_attribute_values(":attempt", n(call.attempt));
        match outcome {
            Outcome::Succeeded(_) => {
                set.push(format!("#response = {RESPONSE}"));
                update = update.expression_attribute_names("#response", "response");
            }
            Outcome::Failed(error) | Outcome::Timeout(error) | Outcome::Canceled(error) => {
                set.push("#error = :error".to_owned());
                set.push(format!("attempts[{i}].#error = :error"));
                update = update
                    .expression_attribute_names("#error", "error")
                    .expression_attribute_values(":error", s(error));
            }
        }
        update.update_expression(format!("SET {} REMOVE lease_until", set.join(", ")))
    }

    async fn transition(
        &self,
        update: UpdateItemFluentBuilder,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        to: ToolCallStatus,
    ) -> Result<Option<Item>> {
        match update.send().await {
            Ok(out) => Ok(out.attributes),
            Err(err) => match err.condition_failed_item() {
                Some(returned) => {
                    let old = self.old_item(chat_id, call_id, returned).await?;
                    Err(Self::rejected(call_id, old, attempt, to))
                }
                None => Err(sdk_error("UpdateItem", err)),
            },
        }
    }

    /// awaiting_approval → expired, for a call past its approval window.
    async fn expire(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        now: OffsetDateTime,
    ) -> Result<()> {
        let expired = self
            .approval_update(chat_id, call_id, attempt, now, ToolCallStatus::Expired)
            .update_expression(format!(
                "SET #status = :to, finished_at = :now, updated_at = :now, #error = :error, \
                 attempts[{i}].#status = :to, attempts[{i}].finished_at = :now \
                 REMOVE lease_until",
                i = attempt.saturating_sub(1)
            ))
            .expression_attribute_names("#error", "error")
            .expression_attribute_values(":error", s("not approved within its approval window"));
        self.transition(expired, chat_id, call_id, attempt, ToolCallStatus::Expired)
            .await
            .map(drop)
    }

    /// The write of the user's decision: approved → running (held by the caller under
    /// `lease`), denied → canceled with the reason.
    fn decision_update(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        now: OffsetDateTime,
        choice: &ApprovalChoice,
    ) -> UpdateItemFluentBuilder {
        let i = attempt.saturating_sub(1);
        match choice {
            ApprovalChoice::Approve { lease } => self
                .approval_update(chat_id, call_id, attempt, now, ToolCallStatus::Running)
                .update_expression(format!(
                    "SET #status = :to, started_at = :now, updated_at = :now, lease_until = :lease, \
                     recent = :recent, approval.decision = :decision, approval.decided_at = :now, \
                     attempts[{i}].#status = :to, attempts[{i}].started_at = :now"
                ))
                .expression_attribute_values(":lease", n(epoch_millis(now + *lease)))
                .expression_attribute_values(
                    ":recent",
                    s(format!("{}#{call_id}", sortable_time(now))),
                )
                .expression_attribute_values(":decision", s("approved")),
            ApprovalChoice::Deny { reason } => {
                let error = match reason {
                    Some(reason) => format!("denied by the user: {reason}"),
                    None => "denied by the user".to_owned(),
                };
                let update = self
                    .approval_update(chat_id, call_id, attempt, now, ToolCallStatus::Canceled)
                    .update_expression(format!(
                        "SET #status = :to, finished_at = :now, updated_at = :now, #error = :error, \
                         approval.decision = :decision, approval.decided_at = :now, \
                         {}attempts[{i}].#status = :to, attempts[{i}].finished_at = :now, \
                         attempts[{i}].#error = :error REMOVE lease_until",
                        if reason.is_some() { "approval.reason = :reason, " } else { "" }
                    ))
                    .expression_attribute_names("#error", "error")
                    .expression_attribute_values(":error", s(error))
                    .expression_attribute_values(":decision", s("denied"));
                match reason {
                    Some(reason) => update.expression_attribute_values(":reason", s(reason)),
                    None => update,
                }
            }
        }
    }

    /// A conditional update of a call awaiting approval (attempt `attempt`) to `to`; the
    /// caller adds the update expression and its own values.
    fn approval_update(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        now: OffsetDateTime,
        to: ToolCallStatus,
    ) -> UpdateItemFluentBuilder {
        self.update(chat_id, call_id)
            .condition_expression(
                "attribute_exists(pk) AND #status = :awaiting AND attempt = :attempt",
            )
            .expression_attribute_values(":awaiting", status_av(ToolCallStatus::AwaitingApproval))
            .expression_attribute_values(":attempt", n(attempt))
            .expression_attribute_values(":to", status_av(to))
            .expression_attribute_values(":now", rfc3339(now))
    }

    /// The record as the audit shows it: a call left awaiting approval past its window
    /// reads as `expired` before any write has made it so.
    fn presented(&self, item: CallItem) -> ToolCallRecord {
        let mut record = item.into_record();
        if record.approval_expired(self.clock.now()) {
            record.status = ToolCallStatus::Expired;
        }
        record
    }

    /// Classifies a failed transition of `call_id` from the item that made it fail.
    fn rejected(call_id: &str, old: Option<CallItem>, attempt: u32, to: ToolCallStatus) -> Error {
        match old {
            None => Error::NotFound,
            Some(old) if old.attempt != attempt => Error::Fenced {
                id: call_id.to_owned(),
                attempt,
                current: old.attempt,
            },
            Some(old) => Error::IllegalTransition {
                id: call_id.to_owned(),
                from: old.status,
                to,
            },
        }
    }
}

/// The statuses a claim's condition names, by placeholder.
const CLAIM_CONDITION_STATUSES: [(&str, ToolCallStatus); 8] = [
    (":failed", ToolCallStatus::Failed),
    (":timeout", ToolCallStatus::Timeout),
    (":canceled", ToolCallStatus::Canceled),
    (":succeeded", ToolCallStatus::Succeeded),
    (":running", ToolCallStatus::Running),
    (":queued", ToolCallStatus::Queued),
    (":expired", ToolCallStatus::Expired),
    (":awaiting", ToolCallStatus::AwaitingApproval),
];

/// How a claim starts its attempt in `status`: the `SET` clauses of its own, the `REMOVE`
/// clause, and the approval it stores (`:approval`), if it waits for one.
fn attempt_clauses(
    status: ToolCallStatus,
    mode: &ClaimMode,
) -> Result<(Vec<&'static str>, String, Option<AttributeValue>)> {
    // A new attempt starts clean: the previous attempt's result lives on in `attempts`.
    let (mut set, mut remove) = if status == ToolCallStatus::Running {
        (
            vec!["started_at = :now", "lease_until = :lease"],
            "REMOVE #response, #error, finished_at".to_owned(),
        )
    } else {
        (
            vec!["lease_until = :lease"],
            "REMOVE #response, #error, finished_at, started_at".to_owned(),
        )
    };
    // Each attempt has its own say: a new one drops an earlier attempt's approval.
    let approval = match mode {
        ClaimMode::AwaitApproval { approval } => {
            set.push("approval = :approval");
            Some(to_av(approval)?)
        }
        _ => {
            remove.push_str(", approval");
            None
        }
    };
    Ok((set, remove, approval))
}

/// The placeholder of a finishing write's response.
const RESPONSE: &str = ":response";

/// What a finishing write stores of `outcome`'s response, if it succeeded: the response,
/// or a marker when it is above [`MAX_STORED_RESPONSE_BYTES`].
fn stored_response(call: &ClaimedCall, outcome: &Outcome) -> Result<Option<AttributeValue>> {
    let Outcome::Succeeded(response) = outcome else {
        return Ok(None);
    };
    let size = domain::json_len::json_len(response);
    if size <= MAX_STORED_RESPONSE_BYTES {
        return to_av(response).map(Some);
    }
    tracing::warn!(
        call_id = %call.id,
        size,
        "tool response too large to store; storing a marker"
    );
    to_av(&serde_json::json!({ "truncated": true, "size_bytes": size })).map(Some)
}

/// `update` as a transaction's action, under `condition`, with `response` as [`RESPONSE`]
/// when given; the item as it was comes back when the condition fails.
fn transact_update(
    update: &UpdateItemFluentBuilder,
    condition: Option<String>,
    response: Option<AttributeValue>,
) -> Result<TransactWriteItem> {
    let input = update.as_input();
    let mut values = input.get_expression_attribute_values().clone();
    if let Some(response) = response {
        values
            .get_or_insert_with(Default::default)
            .insert(RESPONSE.to_owned(), response);
    }
    let update = Update::builder()
        .set_table_name(input.get_table_name().clone())
        .set_key(input.get_key().clone())
        .set_update_expression(input.get_update_expression().clone())
        .set_condition_expression(condition)
        .set_expression_attribute_names(input.get_expression_attribute_names().clone())
        .set_expression_attribute_values(values)
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(invalid_action)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

/// The stored shape of a tool call (read side; writes are update expressions).
#[derive(Debug, Clone, Deserialize)]
struct CallItem {
    chat_id: String,
    owner_id: String,
    call_id: String,
    tool: ToolName,
    dedupe_key: String,
    request: Value,
    status: ToolCallStatus,
    attempt: u32,
    #[serde(default)]
    response: Option<Value>,
    #[serde(default)]
    error: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    updated_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    started_at: Option<OffsetDateTime>,
    #[serde(default, with = "time::serde::rfc3339::option")]
    finished_at: Option<OffsetDateTime>,
    #[serde(default)]
    attempts: Vec<AttemptEntry>,
    #[serde(default)]
    flags: Vec<String>,
    /// Epoch milliseconds.
    #[serde(default)]
    lease_until: Option<i64>,
    /// Epoch milliseconds: until then, an identical call is served the stored result.
    #[serde(default)]
    dedupe_until: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approval: Option<ApprovalRecord>,
}

/// One element of the stored `attempts` list; its number is its position.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct AttemptEntry {
    status: Option<ToolCallStatus>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    queued_at: Option<OffsetDateTime>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    started_at: Option<OffsetDateTime>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    finished_at: Option<OffsetDateTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl CallItem {
    /// Whether the call, as read `now`, is one a new identical call is a duplicate of: in
    /// flight within its lease, or succeeded within the dedupe window. Anything else (and
    /// an item without the times) may be claimed again.
    fn is_live(&self, now: OffsetDateTime) -> bool {
        let now = epoch_millis(now);
        let until = match self.status {
            ToolCallStatus::Succeeded => self.dedupe_until,
            ToolCallStatus::Running | ToolCallStatus::Queued | ToolCallStatus::AwaitingApproval => {
                self.lease_until
            }
            _ => None,
        };
        until.is_some_and(|until| i128::from(until) >= now)
    }

    fn into_record(self) -> ToolCallRecord {
        let current = self.status;
        let mut attempts: Vec<AttemptRecord> = self
            .attempts
            .into_iter()
            .enumerate()
            .map(|(i, a)| AttemptRecord {
                attempt: u32::try_from(i + 1).unwrap_or(u32::MAX),
                status: a.status.unwrap_or(current),
                queued_at: a.queued_at,
                started_at: a.started_at,
                finished_at: a.finished_at,
                error: a.error,
            })
            .collect();
        attempts.reverse();
        ToolCallRecord {
            id: self.call_id,
            chat_id: self.chat_id,
            tool: self.tool,
            status: self.status,
            attempt: self.attempt,
            request: self.request,
            response: self.response,
            error: self.error,
            dedupe_key: self.dedupe_key,
            created_at: self.created_at,
            updated_at: self.updated_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            attempts,
            flags: self.flags,
            approval: self.approval,
            lease_until: self.lease_until.and_then(|ms| {
                OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
            }),
        }
    }

    fn claimed(&self, took_over: bool) -> ClaimedCall {
        ClaimedCall {
            id: self.call_id.clone(),
            chat_id: self.chat_id.clone(),
            tool: self.tool,
            attempt: self.attempt,
            status: self.status,
            dedupe_key: self.dedupe_key.clone(),
            took_over,
        }
    }
}

fn status_av(status: ToolCallStatus) -> AttributeValue {
    s(status.as_str())
}

#[async_trait]
impl ToolCallLedger for DynamoLedger {
    async fn record_and_claim(&self, req: ClaimRequest) -> Result<Claim> {
        let key = DedupeKey::new(&req.chat_id, req.tool, &req.request);
        let call_id = key.call_id();
        let now = self.clock.now();
        let (status, update) = self.claim_update(&req, &key, &call_id, now)?;
        match update.send().await {
            Ok(out) => {
                let old = out.attributes.map(from_item::<CallItem>).transpose()?;
                let took_over = old.as_ref().is_some_and(|o| {
                    matches!(o.status, ToolCallStatus::Running | ToolCallStatus::Queued)
                });
                let call = ClaimedCall {
                    id: call_id,
                    chat_id: req.chat_id,
                    tool: req.tool,
                    attempt: old.as_ref().map_or(1, |o| o.attempt + 1),
                    status,
                    dedupe_key: key.as_str().to_owned(),
                    took_over,
                };
                if took_over {
                    tracing::warn!(call_id = %call.id, attempt = call.attempt, "took over a tool call whose lease or queue deadline expired");
                    self.close_superseded_attempt(&call, now).await;
                }
                Ok(Claim::Claimed(call))
            }
            Err(err) => match err.condition_failed_item() {
                Some(returned) => match self.old_item(&req.chat_id, &call_id, returned).await? {
                    Some(old) if old.owner_id == req.owner_id => {
                        Ok(Claim::Duplicate(old.into_record()))
                    }
                    // Another user's chat id: answer as if it did not exist.
                    _ => Err(Error::NotFound),
                },
                None => Err(sdk_error("UpdateItem", err)),
            },
        }
    }

    async fn record_and_claim_with(
        &self,
        req: ClaimRequest,
        with: &[Companion],
    ) -> Result<(Claim, bool)> {
        if with.is_empty() {
            return Ok((self.record_and_claim(req).await?, false));
        }
        let key = DedupeKey::new(&req.chat_id, req.tool, &req.request);
        let call_id = key.call_id();
        let now = self.clock.now();
        let (status, update) = self.claim_update(&req, &key, &call_id, now)?;
        // Only a new call: the usual condition stays, so every value it names is used.
        let condition = update
            .as_input()
            .get_condition_expression()
            .as_deref()
            .map(|c| format!("attribute_not_exists(pk) AND ({c})"));
        let actions = || {
            let mut actions = vec![transact_update(&update, condition.clone(), None)?];
            actions.extend(companion::actions(with));
            Ok(actions)
        };
        let mut canceled = match transact(&self.client, actions).await? {
            Transaction::Written => {
                let call = ClaimedCall {
                    id: call_id,
                    chat_id: req.chat_id,
                    tool: req.tool,
                    attempt: 1,
                    status,
                    dedupe_key: key.as_str().to_owned(),
                    took_over: false,
                };
                return Ok((Claim::Claimed(call), true));
            }
            canceled => canceled,
        };
        if canceled.failed_at(0) {
            let old = canceled
                .take_item(0)
                .map(from_item::<CallItem>)
                .transpose()?;
            return match old {
                Some(old) if old.owner_id != req.owner_id => Err(Error::NotFound),
                Some(old) if old.is_live(now) => Ok((Claim::Duplicate(old.into_record()), false)),
                // An earlier attempt that may be followed by another: claimed the usual way.
                _ => Ok((self.record_and_claim(req).await?, false)),
            };
        }
        Err(companion::refusal(&mut canceled, 1, with).unwrap_or_else(|| canceled.unexpected()))
    }

    async fn finish(&self, call: &ClaimedCall, outcome: Outcome) -> Result<()> {
        let update = self.finish_update(call, &outcome)?;
        self.transition(
            update,
            &call.chat_id,
            &call.id,
            call.attempt,
            outcome.status(),
        )
        .await
        .map(drop)
    }

    async fn finish_with(
        &self,
        call: &ClaimedCall,
        outcome: Outcome,
        extras: &[Companion],
    ) -> Result<()> {
        if extras.is_empty() {
            return self.finish(call, outcome).await;
        }
        let update = self.finish_expression(call, &outcome);
        let condition = update.as_input().get_condition_expression().clone();
        let actions = || {
            let response = stored_response(call, &outcome)?;
            let mut actions = vec![transact_update(&update, condition.clone(), response)?];
            actions.extend(companion::actions(extras));
            Ok(actions)
        };
        match transact(&self.client, actions).await {
            Ok(Transaction::Written) => Ok(()),
            Ok(mut canceled) if canceled.failed_at(0) => {
                let old = canceled.take_item(0);
                let old = self.old_item(&call.chat_id, &call.id, old).await?;
                Err(Self::rejected(
                    &call.id,
                    old,
                    call.attempt,
                    outcome.status(),
                ))
            }
            Ok(canceled) => {
                let e = canceled.unexpected();
                tracing::warn!(call_id = %call.id, error = %e, "extras of a finishing write refused; finishing without them");
                self.finish(call, outcome).await
            }
            Err(e) => {
                tracing::warn!(call_id = %call.id, error = %e, "finishing with extras failed; finishing without them");
                self.finish(call, outcome).await
            }
        }
    }

    async fn take_over_expired(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        lease: Duration,
    ) -> Result<ClaimedCall> {
        let now = self.clock.now();
        let entry = AttemptEntry {
            status: Some(ToolCallStatus::Running),
            started_at: Some(now),
            ..AttemptEntry::default()
        };
        let attributes = self
            .transition(
                self.update(chat_id, call_id)
                    .update_expression(
                        "SET attempt = attempt + :one, attempts = list_append(attempts, :entry), \
                         started_at = :now, updated_at = :now, lease_until = :lease, recent = :recent",
                    )
                    .condition_expression(
                        "attribute_exists(pk) AND #status = :running AND attempt = :attempt \
                         AND lease_until < :now_ms",
                    )
                    .expression_attribute_values(":one", n(1))
                    .expression_attribute_values(
                        ":entry",
                        AttributeValue::L(vec![to_av(&entry)?]),
                    )
                    .expression_attribute_values(":running", status_av(ToolCallStatus::Running))
                    .expression_attribute_values(":now", rfc3339(now))
                    .expression_attribute_values(":now_ms", n(epoch_millis(now)))
                    .expression_attribute_values(":lease", n(epoch_millis(now + lease)))
                    .expression_attribute_values(
                        ":recent",
                        s(format!("{}#{call_id}", sortable_time(now))),
                    )
                    .expression_attribute_values(":attempt", n(attempt))
                    .return_values(ReturnValue::AllNew),
                chat_id,
                call_id,
                attempt,
                ToolCallStatus::Running,
            )
            .await?;
        let call = from_item::<CallItem>(attributes.unwrap_or_default())?.claimed(true);
        tracing::warn!(call_id = %call.id, attempt = call.attempt, "redelivered job took over a call whose lease expired");
        self.close_superseded_attempt(&call, now).await;
        Ok(call)
    }

    async fn expire_lease(&self, chat_id: &str, call_id: &str, attempt: u32) -> Result<bool> {
        let now_ms = epoch_millis(self.clock.now());
        let result = self
            .update(chat_id, call_id)
            .update_expression("SET lease_until = :expired")
            .condition_expression(
                "attribute_exists(pk) AND #status = :running AND attempt = :attempt \
                 AND lease_until > :expired",
            )
            .expression_attribute_values(":expired", n(now_ms - 1))
            .expression_attribute_values(":running", status_av(ToolCallStatus::Running))
            .expression_attribute_values(":attempt", n(attempt))
            .send()
            .await;
        match result {
            Ok(_) => {
                tracing::warn!(
                    call_id,
                    attempt,
                    "the lease of a call whose turn lost its host was ended"
                );
                Ok(true)
            }
            Err(err) if err.condition_failed_item().is_some() => Ok(false),
            Err(err) => Err(sdk_error("UpdateItem", err)),
        }
    }

    async fn start_queued(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        lease: Duration,
    ) -> Result<ClaimedCall> {
        let now = self.clock.now();
        let i = attempt.saturating_sub(1);
        let attributes = self
            .transition(
                self
            .update(chat_id, call_id)
            .update_expression(format!(
                "SET #status = :running, started_at = :now, updated_at = :now, lease_until = :lease, \
                 recent = :recent, attempts[{i}].#status = :running, attempts[{i}].started_at = :now"
            ))
            .condition_expression("attribute_exists(pk) AND #status = :queued AND attempt = :attempt")
            .expression_attribute_values(":running", status_av(ToolCallStatus::Running))
            .expression_attribute_values(":queued", status_av(ToolCallStatus::Queued))
            .expression_attribute_values(":now", rfc3339(now))
            .expression_attribute_values(":lease", n(epoch_millis(now + lease)))
            .expression_attribute_values(":recent", s(format!("{}#{call_id}", sortable_time(now))))
            .expression_attribute_values(":attempt", n(attempt))
            .return_values(ReturnValue::AllNew),
                chat_id,
                call_id,
                attempt,
                ToolCallStatus::Running,
            )
            .await?;
        from_item::<CallItem>(attributes.unwrap_or_default()).map(|item| item.claimed(false))
    }

    async fn requeue(
        &self,
        chat_id: &str,
        call_id: &str,
        failed_attempt: u32,
    ) -> Result<ClaimedCall> {
        let now = self.clock.now();
        let entry = AttemptEntry {
            status: Some(ToolCallStatus::Queued),
            queued_at: Some(now),
            ..AttemptEntry::default()
        };
        let attributes = self
            .transition(
                self
            .update(chat_id, call_id)
            .update_expression(
                "SET #status = :queued, attempt = attempt + :one, attempts = list_append(attempts, :entry), \
                 updated_at = :now, recent = :recent, #ttl = :ttl, lease_until = :deadline \
                 REMOVE started_at, finished_at, #error, #response",
            )
            .condition_expression("attribute_exists(pk) AND #status IN (:failed, :timeout) AND attempt = :attempt")
            .expression_attribute_names("#error", "error")
            .expression_attribute_names("#response", "response")
            .expression_attribute_names("#ttl", "ttl")
            .expression_attribute_values(":queued", status_av(ToolCallStatus::Queued))
            .expression_attribute_values(":failed", status_av(ToolCallStatus::Failed))
            .expression_attribute_values(":timeout", status_av(ToolCallStatus::Timeout))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":entry", AttributeValue::L(vec![to_av(&entry)?]))
            .expression_attribute_values(":now", rfc3339(now))
            .expression_attribute_values(":recent", s(format!("{}#{call_id}", sortable_time(now))))
            .expression_attribute_values(":ttl", self.ttl(now))
            .expression_attribute_values(":attempt", n(failed_attempt))
            .expression_attribute_values(
                ":deadline",
                n(epoch_millis(now + self.config.queue_deadline)),
            )
            .return_values(ReturnValue::AllNew),
                chat_id,
                call_id,
                failed_attempt,
                ToolCallStatus::Queued,
            )
            .await?;
        from_item::<CallItem>(attributes.unwrap_or_default()).map(|item| item.claimed(false))
    }

    async fn withdraw(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        reason: &str,
    ) -> Result<()> {
        self.end_queued(chat_id, call_id, attempt, ToolCallStatus::Canceled, reason)
            .await
    }

    async fn abandon(
        &self,
        chat_id: &str,
        call_id: &str,
        attempt: u32,
        reason: &str,
    ) -> Result<()> {
        self.end_queued(chat_id, call_id, attempt, ToolCallStatus::Failed, reason)
            .await
    }

    async fn cancel(&self, owner_id: &str, chat_id: &str, call_id: &str) -> Result<ToolCallRecord> {
        // The attempt index is part of the update expression, so read it first; the condition
        // re-checks status and attempt, and a lost race is retried on the fresh state.
        for _ in 0..5 {
            let current = match self.read(chat_id, call_id).await? {
                Some(item) if item.owner_id == owner_id => item,
                _ => return Err(Error::NotFound),
            };
            if !current.status.can_transition_to(ToolCallStatus::Canceled) {
                return Err(Error::IllegalTransition {
                    id: call_id.to_owned(),
                    from: current.status,
                    to: ToolCallStatus::Canceled,
                });
            }
            let now = self.clock.now();
            let i = current.attempt.saturating_sub(1);
            let result = self
                .update(chat_id, call_id)
                .update_expression(format!(
                    "SET #status = :canceled, finished_at = :now, updated_at = :now, \
                     attempts[{i}].#status = :canceled, attempts[{i}].finished_at = :now \
                     REMOVE lease_until"
                ))
                .condition_expression(
                    "owner_id = :owner AND #status = :from AND attempt = :attempt",
                )
                .expression_attribute_values(":canceled", status_av(ToolCallStatus::Canceled))
                .expression_attribute_values(":now", rfc3339(now))
                .expression_attribute_values(":owner", s(owner_id))
                .expression_attribute_values(":from", status_av(current.status))
                .expression_attribute_values(":attempt", n(current.attempt))
                .return_values(ReturnValue::AllNew)
                .send()
                .await;
            match result {
                Ok(out) => {
                    return from_item::<CallItem>(out.attributes.unwrap_or_default())
                        .map(CallItem::into_record);
                }
                Err(err) if err.condition_failed_item().is_some() => continue,
                Err(err) => return Err(sdk_error("UpdateItem", err)),
            }
        }
        Err(Error::Contention(format!("tool call {call_id}")))
    }

    async fn decide(
        &self,
        owner_id: &str,
        chat_id: &str,
        call_id: &str,
        choice: ApprovalChoice,
    ) -> Result<Decided> {
        let current = match self.read(chat_id, call_id).await? {
            Some(item) if item.owner_id == owner_id => item,
            _ => return Err(Error::NotFound),
        };
        let now = self.clock.now();
        let to = match &choice {
            ApprovalChoice::Approve { .. } => ToolCallStatus::Running,
            ApprovalChoice::Deny { .. } => ToolCallStatus::Canceled,
        };
        let refused = |from| Error::IllegalTransition {
            id: call_id.to_owned(),
            from,
            to,
        };
        if current.status != ToolCallStatus::AwaitingApproval {
            return Err(refused(current.status));
        }
        let attempt = current.attempt;
        if current
            .lease_until
            .is_some_and(|until| i128::from(until) <= epoch_millis(now))
        {
            // Past its window: stored as expired (once), whatever was asked.
            self.expire(chat_id, call_id, attempt, now).await?;
            return Err(refused(ToolCallStatus::Expired));
        }
        let decided = self.decision_update(chat_id, call_id, attempt, now, &choice);
        let item = self
            .transition(
                decided.return_values(ReturnValue::AllNew),
                chat_id,
                call_id,
                attempt,
                to,
            )
            .await?;
        let item = from_item::<CallItem>(item.unwrap_or_default())?;
        Ok(match choice {
            ApprovalChoice::Approve { .. } => Decided::Approved(item.claimed(false)),
            ApprovalChoice::Deny { .. } => Decided::Denied(Box::new(item.into_record())),
        })
    }

    async fn get(&self, owner_id: &str, chat_id: &str, call_id: &str) -> Result<ToolCallRecord> {
        match self.read(chat_id, call_id).await? {
            Some(item) if item.owner_id == owner_id => Ok(self.presented(item)),
            _ => Err(Error::NotFound),
        }
    }

    async fn list(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<ToolCallRecord>> {
        let pk = format!("CHAT#{chat_id}");
        let mut query = self
            .owner_query(&pk, owner_id, limit)
            .index_name(RECENT_INDEX)
            .key_condition_expression("pk = :pk");
        if let Some(cursor) = cursor {
            let start = Cursor::decode(cursor)?;
            if start.get("pk") != Some(pk.as_str()) {
                return Err(Error::Invalid("cursor belongs to another listing".into()));
            }
            query = query.set_exclusive_start_key(Some(start.into_key()));
        }
        let out = query.send().await.map_err(|e| sdk_error("Query", e))?;
        page(out, |item| {
            from_item::<CallItem>(item).map(|c| self.presented(c))
        })
    }

    async fn delete_chat(&self, chat_id: &str) -> Result<usize> {
        lambda_kit::dynamo::delete_partition(
            &self.client,
            &self.table,
            &format!("CHAT#{chat_id}"),
            |_| false,
        )
        .await
    }

    async fn flag(&self, chat_id: &str, call_id: &str, flags: &[&str]) -> Result<()> {
        let flags: Vec<AttributeValue> = flags.iter().map(|f| s(*f)).collect();
        self.update(chat_id, call_id)
            .update_expression("SET flags = list_append(if_not_exists(flags, :empty), :flags)")
            // `update` names `#status`, and DynamoDB refuses unused names.
            .condition_expression("attribute_exists(#status)")
            .expression_attribute_values(":empty", AttributeValue::L(vec![]))
            .expression_attribute_values(":flags", AttributeValue::L(flags))
            .send()
            .await
            .map_err(|e| sdk_error("UpdateItem", e))?;
        Ok(())
    }

    async fn record_refused(&self, owner_id: &str, call: &RefusedCall) -> Result<()> {
        let mut item = to_item(call)?;
        // Not in the `by_recent` index (no `recent`): the calls listing stays calls only.
        item.extend([
            ("pk".to_owned(), s(format!("CHAT#{}", call.chat_id))),
            (
                "sk".to_owned(),
                s(format!(
                    "{REFUSED_PREFIX}{}#{}",
                    sortable_time(call.created_at),
                    call.id
                )),
            ),
            ("owner_id".to_owned(), s(owner_id)),
            ("ttl".to_owned(), self.ttl(call.created_at)),
        ]);
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| sdk_error("PutItem", e))?;
        Ok(())
    }

    async fn list_refused(
        &self,
        owner_id: &str,
        chat_id: &str,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<Page<RefusedCall>> {
        let pk = format!("CHAT#{chat_id}");
        let mut query = self
            .owner_query(&pk, owner_id, limit)
            .key_condition_expression("pk = :pk AND begins_with(sk, :refused)")
            .expression_attribute_values(":refused", s(REFUSED_PREFIX));
        if let Some(cursor) = cursor {
            let start = Cursor::decode(cursor)?;
            if start.get("pk") != Some(pk.as_str())
                || !start
                    .get("sk")
                    .unwrap_or_default()
                    .starts_with(REFUSED_PREFIX)
            {
                return Err(Error::Invalid("cursor belongs to another listing".into()));
            }
            query = query.set_exclusive_start_key(Some(start.into_key()));
        }
        let out = query.send().await.map_err(|e| sdk_error("Query", e))?;
        page(out, from_item::<RefusedCall>)
    }
}

impl DynamoLedger {
    /// A newest-first, strongly consistent query of one chat's items that keeps only the
    /// owner's; the caller adds the key condition.
    fn owner_query(&self, pk: &str, owner_id: &str, limit: u32) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .filter_expression("owner_id = :owner")
            .expression_attribute_values(":pk", s(pk))
            .expression_attribute_values(":owner", s(owner_id))
            .scan_index_forward(false)
            .consistent_read(true)
            .limit(i32::try_from(limit.clamp(1, 100)).unwrap_or(100))
    }
}

/// A query's items decoded, with the cursor of the next page.
/// Sort-key prefix of refused calls, beside the `CALL#` items of the same chat.
const REFUSED_PREFIX: &str = "REFUSED#";
