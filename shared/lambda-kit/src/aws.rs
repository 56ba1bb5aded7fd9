//! AWS SDK configuration, loaded once per container.
//!
//! The SDK's own environment handling applies: region and credentials from the Lambda
//! environment, and `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_DYNAMODB` / `_SQS` /
//! `_SECRETS_MANAGER` redirect clients to the local emulators.

use std::time::Duration;

use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::interceptors::InterceptorContext;
use aws_sdk_dynamodb::config::retry::{ClassifyRetry, RetryAction, RetryConfig};
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

/// Attempts per DynamoDB request (the SDK's standard mode has 3): throttling and write
/// conflicts on a busy chat clear within a few of its jittered, growing pauses.
const DYNAMODB_MAX_ATTEMPTS: u32 = 6;
/// The first pause; later ones double, with jitter, up to [`DYNAMODB_MAX_BACKOFF`]. The
/// SDK's 1 s default suits services slower than DynamoDB, whose conflicts clear in
/// milliseconds; five retries wait at most 0.8 s in all.
const DYNAMODB_FIRST_BACKOFF: Duration = Duration::from_millis(25);
const DYNAMODB_MAX_BACKOFF: Duration = Duration::from_secs(2);
/// The SDK sets no limit on waiting for an answer: a connection that goes silent would hold
/// a request (and the turn or invocation behind it) until the function's own timeout. An
/// attempt that takes this long is given up and retried like a network error; DynamoDB
/// answers in milliseconds, so only a dead connection reaches it.
pub const DYNAMODB_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// All attempts of one request together, pauses included.
pub const DYNAMODB_OPERATION_TIMEOUT: Duration = Duration::from_secs(30);
/// The SDK's default for opening a connection, kept when the timeouts above are set.
const DYNAMODB_CONNECT_TIMEOUT: Duration = Duration::from_millis(3100);

/// The SDK configuration every client of a container is built from. One HTTP client with
/// the compiled-in TLS roots ([`crate::tls`]) serves every service: one connection pool, and
/// the roots are read once rather than by each client.
pub async fn sdk_config() -> SdkConfig {
    let loader = aws_config::defaults(BehaviorVersion::latest());
    match crate::tls::aws_http_client() {
        Ok(http) => loader.http_client(http),
        Err(e) => {
            // Never happens with the SDK version in the lock file; the SDK's own client
            // (system roots) still verifies certificates.
            tracing::warn!(error = %e, "AWS SDK HTTP client with compiled-in roots not built; using the SDK's default");
            loader
        }
    }
    .load()
    .await
}

/// The DynamoDB client every store uses: the SDK's retries (throttling, timeouts) plus
/// [`TransactionConflictRetry`], each attempt and each request bounded in time.
pub fn dynamodb(config: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(dynamodb_config(config).build())
}

/// The configuration behind [`dynamodb`], for callers that add to it (tests add
/// interceptors).
pub fn dynamodb_config(config: &SdkConfig) -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Builder::from(config)
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(DYNAMODB_MAX_ATTEMPTS)
                .with_initial_backoff(DYNAMODB_FIRST_BACKOFF)
                .with_max_backoff(DYNAMODB_MAX_BACKOFF),
        )
        .retry_classifier(TransactionConflictRetry)
        .interceptor(crate::sdk_spans::SdkSpans)
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(DYNAMODB_CONNECT_TIMEOUT)
                .operation_attempt_timeout(DYNAMODB_ATTEMPT_TIMEOUT)
                .operation_timeout(DYNAMODB_OPERATION_TIMEOUT)
                .build(),
        )
}

/// A Secrets Manager client on `config`, with the SDK's own retries.
pub fn secrets_manager(config: &SdkConfig) -> aws_sdk_secretsmanager::Client {
    aws_sdk_secretsmanager::Client::from_conf(
        aws_sdk_secretsmanager::config::Builder::from(config)
            .interceptor(crate::sdk_spans::SdkSpans)
            .build(),
    )
}

/// Retries a single-item write that met a transaction on its item
/// (`TransactionConflictException`), which the SDK treats as final. The write was not
/// applied, so sending it again is safe; it goes through the SDK's backoff like throttling.
/// (A transaction's own conflicts arrive as cancellation reasons; `dynamo::transact`
/// retries those.)
#[derive(Debug, Clone, Copy)]
pub struct TransactionConflictRetry;

impl ClassifyRetry for TransactionConflictRetry {
    fn classify_retry(&self, ctx: &InterceptorContext) -> RetryAction {
        let Some(Err(error)) = ctx.output_or_error() else {
            return RetryAction::NoActionIndicated;
        };
        let Some(error) = error.as_operation_error() else {
            return RetryAction::NoActionIndicated;
        };
        let conflict = error
            .downcast_ref::<UpdateItemError>()
            .is_some_and(UpdateItemError::is_transaction_conflict_exception)
            || error
                .downcast_ref::<PutItemError>()
                .is_some_and(PutItemError::is_transaction_conflict_exception)
            || error
                .downcast_ref::<DeleteItemError>()
                .is_some_and(DeleteItemError::is_transaction_conflict_exception);
        if conflict {
            RetryAction::transient_error()
        } else {
            RetryAction::NoActionIndicated
        }
    }

    fn name(&self) -> &'static str {
        "TransactionConflictRetry"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dynamodb_request_is_bounded_in_time() {
        let sdk = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .build();
        let config = dynamodb_config(&sdk).build();
        let Some(timeouts) = config.timeout_config() else {
            panic!("the DynamoDB client has no timeouts");
        };
        assert_eq!(
            timeouts.operation_attempt_timeout(),
            Some(DYNAMODB_ATTEMPT_TIMEOUT)
        );
        assert_eq!(
            timeouts.operation_timeout(),
            Some(DYNAMODB_OPERATION_TIMEOUT)
        );
        assert_eq!(timeouts.connect_timeout(), Some(DYNAMODB_CONNECT_TIMEOUT));
    }
}
