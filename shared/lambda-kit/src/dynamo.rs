//! Small helpers shared by the DynamoDB stores: error mapping, item (de)serialisation and
//! reading the item DynamoDB hands back when a condition fails.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;

use domain::{Error, Result};

/// A DynamoDB item: attribute names and their values.
pub type Item = HashMap<String, AttributeValue>;

/// Service error codes that say "try again": a transaction holds the item, or the table or
/// account is throttled, or DynamoDB failed internally. The SDK retries throttling itself a
/// few times, but never a transaction conflict.
const TRANSIENT_CODES: [&str; 5] = [
    "TransactionConflictException",
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
];

/// Whether `err` is worth retrying after a pause (see [`TRANSIENT_CODES`]).
pub fn is_transient<E, R>(err: &SdkError<E, R>) -> bool
where
    E: ProvideErrorMetadata,
{
    err.as_service_error()
        .and_then(|e| e.code())
        .is_some_and(|code| TRANSIENT_CODES.contains(&code))
}

/// Maps any SDK error to [`Error::Dynamo`], keeping the service's code and message for logs.
pub fn sdk_error<E, R>(op: &'static str, err: SdkError<E, R>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let message = match err.as_service_error() {
        Some(service) => format!(
            "{}: {}",
            service.code().unwrap_or("unknown"),
            service.message().unwrap_or("")
        ),
        None => format!("{}", aws_sdk_dynamodb::error::DisplayErrorContext(&err)),
    };
    Error::Dynamo { op, message }
}

/// How a transaction ended, short of an error: written, or canceled with one reason per
/// action (code `"None"` for actions that were fine, `"ConditionalCheckFailed"`, …).
pub enum Transaction {
    /// Every action was applied.
    Written,
    /// Nothing was applied; one reason per action, in the actions' order.
    Canceled(Vec<CancelReason>),
}

/// Why one action of a canceled transaction failed, with the item as it was when the
/// action asked for it (`ReturnValuesOnConditionCheckFailure`).
pub struct CancelReason {
    /// DynamoDB's reason code (`"None"`, `"ConditionalCheckFailed"`, …).
    pub code: String,
    /// The item as it was, when the action asked for it and had one.
    pub item: Option<Item>,
}

impl Transaction {
    /// Whether action `index`'s condition failed.
    pub fn failed_at(&self, index: usize) -> bool {
        matches!(self, Self::Canceled(reasons)
            if reasons.get(index).is_some_and(|r| r.code == "ConditionalCheckFailed"))
    }

    /// The reason codes, for an error message.
    pub fn codes(&self) -> String {
        match self {
            Self::Written => String::new(),
            Self::Canceled(reasons) => reasons
                .iter()
                .map(|r| r.code.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// The item action `index` returned with its failed condition.
    pub fn take_item(&mut self, index: usize) -> Option<Item> {
        match self {
            Self::Written => None,
            Self::Canceled(reasons) => reasons.get_mut(index).and_then(|r| r.item.take()),
        }
    }

    /// The error a transaction canceled for another reason than a checked condition is.
    pub fn unexpected(&self) -> Error {
        Error::Dynamo {
            op: "TransactWriteItems",
            message: format!("canceled: {}", self.codes()),
        }
    }
}

/// Rounds a transaction retries a conflict or throttling before it reports it; with the
/// growing pauses of [`backoff`], about a second.
pub const MAX_TRANSIENT_ROUNDS: u32 = 12;

/// Runs a transaction, retrying transaction conflicts and throttling (bounded, jittered);
/// a failed condition comes back as [`Transaction::Canceled`], for the caller to read.
///
/// `actions` builds the actions, once for each attempt: the SDK takes them by value, and
/// building them again only when a round is retried costs less than copying them for every
/// round (a tool call's finishing write carries its whole response).
pub async fn transact(
    client: &aws_sdk_dynamodb::Client,
    actions: impl Fn() -> Result<Vec<aws_sdk_dynamodb::types::TransactWriteItem>>,
) -> Result<Transaction> {
    use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
    let mut round = 0;
    loop {
        let result = client
            .transact_write_items()
            .set_transact_items(Some(actions()?))
            .send()
            .await;
        let Err(err) = result else {
            return Ok(Transaction::Written);
        };
        let reasons: Vec<CancelReason> = match err.as_service_error() {
            Some(TransactWriteItemsError::TransactionCanceledException(e)) => e
                .cancellation_reasons()
                .iter()
                .map(|r| CancelReason {
                    code: r.code().unwrap_or("None").to_owned(),
                    item: r.item().cloned(),
                })
                .collect(),
            _ if is_transient(&err) && round < MAX_TRANSIENT_ROUNDS => {
                round += 1;
                backoff(round).await;
                continue;
            }
            _ => return Err(sdk_error("TransactWriteItems", err)),
        };
        let conflicted = reasons
            .iter()
            .any(|r| r.code == "TransactionConflict" || r.code == "ThrottlingError");
        let condition_failed = reasons.iter().any(|r| r.code == "ConditionalCheckFailed");
        if conflicted && !condition_failed && round < MAX_TRANSIENT_ROUNDS {
            round += 1;
            backoff(round).await;
            continue;
        }
        let canceled = Transaction::Canceled(reasons);
        if condition_failed {
            return Ok(canceled);
        }
        return Err(canceled.unexpected());
    }
}

/// Deletes every item under partition key `pk` (keys read a page at a time, deleted 25 per
/// `BatchWriteItem`, unprocessed ones sent again), the items for which `last` holds only
/// after all others. Returns how many were deleted.
pub async fn delete_partition(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    pk: &str,
    last: impl Fn(&Item) -> bool,
) -> Result<usize> {
    use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
    let mut keys: Vec<Item> = Vec::new();
    let mut start: Option<Item> = None;
    loop {
        let page = client
            .query()
            .table_name(table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .projection_expression("pk, sk")
            .consistent_read(true)
            .set_exclusive_start_key(start.take())
            .send()
            .await
            .map_err(|e| sdk_error("Query", e))?;
        keys.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(key) if !key.is_empty() => start = Some(key),
            _ => break,
        }
    }
    let (last_keys, mut keys): (Vec<Item>, Vec<Item>) = keys.into_iter().partition(|k| last(k));
    let count = keys.len() + last_keys.len();
    for group in [std::mem::take(&mut keys), last_keys] {
        for chunk in group.chunks(25) {
            let mut requests = chunk
                .iter()
                .map(|key| {
                    DeleteRequest::builder()
                        .set_key(Some(key.clone()))
                        .build()
                        .map(|d| WriteRequest::builder().delete_request(d).build())
                        .map_err(invalid_action)
                })
                .collect::<Result<Vec<_>>>()?;
            let mut round = 0;
            while !requests.is_empty() {
                let out = client
                    .batch_write_item()
                    .request_items(table, requests)
                    .send()
                    .await
                    .map_err(|e| sdk_error("BatchWriteItem", e))?;
                requests = out
                    .unprocessed_items
                    .and_then(|mut items| items.remove(table))
                    .unwrap_or_default();
                if !requests.is_empty() {
                    round += 1;
                    if round > MAX_TRANSIENT_ROUNDS {
                        return Err(Error::Dynamo {
                            op: "BatchWriteItem",
                            message: format!("{} deletes left unprocessed", requests.len()),
                        });
                    }
                    backoff(round).await;
                }
            }
        }
    }
    Ok(count)
}

/// Random pause before retrying a lost round, growing with the round so many writers
/// spread out instead of colliding again in lockstep.
pub async fn backoff(round: u32) {
    let cap_ms = 2u64.saturating_pow(round.min(7)).min(100);
    tokio::time::sleep(std::time::Duration::from_millis(fastrand::u64(
        1..=cap_ms.max(2),
    )))
    .await;
}

/// A transaction action the SDK refused to build (a missing required field: our bug).
pub fn invalid_action(e: aws_sdk_dynamodb::error::BuildError) -> Error {
    Error::Dynamo {
        op: "TransactWriteItems",
        message: e.to_string(),
    }
}

/// `value` as an attribute value; an encoding failure is `Error::Corrupt`.
pub fn to_av<T: Serialize + ?Sized>(value: &T) -> Result<AttributeValue> {
    serde_dynamo::to_attribute_value(value).map_err(|e| Error::Corrupt(format!("encode: {e}")))
}

/// A stored item as `T`; an item of another shape is `Error::Corrupt`.
pub fn from_item<T: DeserializeOwned>(item: Item) -> Result<T> {
    serde_dynamo::from_item(item).map_err(|e| Error::Corrupt(e.to_string()))
}

/// `value` as an item (it must serialise to a map); a failure is `Error::Corrupt`.
pub fn to_item<T: Serialize>(value: &T) -> Result<Item> {
    serde_dynamo::to_item(value).map_err(|e| Error::Corrupt(format!("encode: {e}")))
}

/// A string attribute.
pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// A number attribute.
pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// A timestamp as an RFC 3339 string attribute.
pub fn rfc3339(t: OffsetDateTime) -> AttributeValue {
    // Formatting a valid OffsetDateTime as RFC 3339 only fails for years outside 0..=9999.
    AttributeValue::S(
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    )
}

/// Milliseconds since the Unix epoch: how leases and windows are compared in conditions.
pub fn epoch_millis(t: OffsetDateTime) -> i128 {
    t.unix_timestamp_nanos() / 1_000_000
}

/// Sortable UTC timestamp with fixed millisecond width, for sort keys.
pub fn sortable_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// The item returned with a `ConditionalCheckFailedException` when the request asked for
/// `ReturnValuesOnConditionCheckFailure=ALL_OLD`; `None` when the condition failed for a
/// different reason or the item did not exist.
pub trait ConditionFailure {
    /// `Some(old item or None)` if this error is a failed condition, else `None`.
    fn condition_failed_item(&self) -> Option<Option<Item>>;
}

macro_rules! impl_condition_failure {
    ($($err:ty),* $(,)?) => {$(
        impl<R> ConditionFailure for SdkError<$err, R> {
            fn condition_failed_item(&self) -> Option<Option<Item>> {
                type E = $err;
                match self.as_service_error() {
                    Some(E::ConditionalCheckFailedException(e)) => Some(e.item().cloned()),
                    _ => None,
                }
            }
        }
    )*};
}

impl_condition_failure!(
    aws_sdk_dynamodb::operation::update_item::UpdateItemError,
    aws_sdk_dynamodb::operation::put_item::PutItemError,
    aws_sdk_dynamodb::operation::delete_item::DeleteItemError,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sortable_time_sorts_lexicographically() {
        let a = OffsetDateTime::from_unix_timestamp(1_700_000_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH);
        let b = a + time::Duration::milliseconds(5);
        assert!(sortable_time(a) < sortable_time(b));
        assert_eq!(sortable_time(a).len(), 24);
    }

    #[test]
    fn transaction_conflicts_throttling_and_internal_errors_are_transient() {
        use aws_sdk_dynamodb::error::ErrorMetadata;
        use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
        let error = |code: &str| {
            let source = UpdateItemError::generic(ErrorMetadata::builder().code(code).build());
            SdkError::<UpdateItemError, ()>::service_error(source, ())
        };
        for code in TRANSIENT_CODES {
            assert!(is_transient(&error(code)), "{code}");
        }
        for code in [
            "ConditionalCheckFailedException",
            "ValidationException",
            "ResourceNotFoundException",
        ] {
            assert!(!is_transient(&error(code)), "{code}");
        }
    }
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[schemars(rename = "{T}Page")]
pub struct Page<T> {
    /// The page's items, in the listing's order.
    pub items: Vec<T>,
    /// Pass back to get the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Opaque pagination cursor: a query's last evaluated key (its string attributes: the
/// table's key and the index's), hex-encoded JSON. Decoded cursors come from clients:
/// listings check that it points into their own partition before using it.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Cursor(std::collections::BTreeMap<String, String>);

impl Cursor {
    fn from_key(key: &Item) -> Self {
        Self(
            key.iter()
                .filter_map(|(k, v)| v.as_s().ok().map(|v| (k.clone(), v.clone())))
                .collect(),
        )
    }

    fn encode(&self) -> Result<String> {
        Ok(hex::encode(serde_json::to_vec(self)?))
    }

    /// Reads a cursor a client sent back; anything that is not one is `Error::Invalid`.
    pub fn decode(text: &str) -> Result<Self> {
        let bytes = hex::decode(text).map_err(|_| Error::Invalid("malformed cursor".into()))?;
        serde_json::from_slice(&bytes).map_err(|_| Error::Invalid("malformed cursor".into()))
    }

    /// The value of the key attribute `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The cursor as the exclusive start key of the next query.
    pub fn into_key(self) -> Item {
        self.0.into_iter().map(|(k, v)| (k, s(v))).collect()
    }
}

/// A query's items as `T`, and the cursor of the next page.
pub fn page<T>(
    out: aws_sdk_dynamodb::operation::query::QueryOutput,
    decode: impl Fn(Item) -> Result<T>,
) -> Result<Page<T>> {
    let items = out
        .items
        .unwrap_or_default()
        .into_iter()
        .map(decode)
        .collect::<Result<Vec<_>>>()?;
    let next_cursor = out
        .last_evaluated_key
        .map(|k| Cursor::from_key(&k).encode())
        .transpose()?;
    Ok(Page { items, next_cursor })
}
