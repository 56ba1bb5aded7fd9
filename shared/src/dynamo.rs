//! Small helpers shared by the DynamoDB stores: error mapping, item (de)serialisation and
//! reading the item DynamoDB hands back when a condition fails.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;

use crate::{Error, Result};

pub(crate) type Item = HashMap<String, AttributeValue>;

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
pub(crate) fn is_transient<E, R>(err: &SdkError<E, R>) -> bool
where
    E: ProvideErrorMetadata,
{
    err.as_service_error()
        .and_then(|e| e.code())
        .is_some_and(|code| TRANSIENT_CODES.contains(&code))
}

/// Maps any SDK error to [`Error::Dynamo`], keeping the service's code and message for logs.
pub(crate) fn sdk_error<E, R>(op: &'static str, err: SdkError<E, R>) -> Error
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

pub(crate) fn to_av<T: Serialize + ?Sized>(value: &T) -> Result<AttributeValue> {
    serde_dynamo::to_attribute_value(value).map_err(|e| Error::Corrupt(format!("encode: {e}")))
}

pub(crate) fn from_item<T: DeserializeOwned>(item: Item) -> Result<T> {
    serde_dynamo::from_item(item).map_err(|e| Error::Corrupt(e.to_string()))
}

pub(crate) fn to_item<T: Serialize>(value: &T) -> Result<Item> {
    serde_dynamo::to_item(value).map_err(|e| Error::Corrupt(format!("encode: {e}")))
}

pub(crate) fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

pub(crate) fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(crate) fn rfc3339(t: OffsetDateTime) -> AttributeValue {
    // Formatting a valid OffsetDateTime as RFC 3339 only fails for years outside 0..=9999.
    AttributeValue::S(
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
    )
}

pub(crate) fn epoch_millis(t: OffsetDateTime) -> i128 {
    t.unix_timestamp_nanos() / 1_000_000
}

/// Sortable UTC timestamp with fixed millisecond width, for sort keys.
pub(crate) fn sortable_time(t: OffsetDateTime) -> String {
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
pub(crate) trait ConditionFailure {
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
