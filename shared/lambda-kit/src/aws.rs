//! AWS SDK configuration, loaded once per container.
//!
//! The SDK's own environment handling applies: region and credentials from the Lambda
//! environment, and `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_DYNAMODB` / `_SQS` /
//! `_SECRETS_MANAGER` redirect clients to the local emulators.

use std::time::Duration;

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, Region, SdkConfig};
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
    let mut loader = aws_config::defaults(BehaviorVersion::latest());
    let from_env = EnvShortcuts::read(|name| std::env::var(name).ok());
    if from_env.credentials {
        loader = loader.credentials_provider(EnvironmentVariableCredentialsProvider::new());
    }
    if let Some(region) = from_env.region {
        loader = loader.region(Region::new(region));
    }
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

/// What the Lambda environment sets that the SDK's default chains would find first anyway:
/// keys in `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (the credentials chain's first
/// provider) and `AWS_REGION` (the region chain's). Handing them to the loader directly
/// gives the same configuration without building the chains' other providers (an STS
/// client for web identity, IMDS clients), a fifth of a millisecond of every cold start.
/// Without them, the default chains run as before.
#[derive(Debug, PartialEq, Eq)]
struct EnvShortcuts {
    /// Both keys are set, so the environment provider answers.
    credentials: bool,
    region: Option<String>,
}

impl EnvShortcuts {
    fn read(var: impl Fn(&str) -> Option<String>) -> Self {
        let set = |name: &str| var(name).filter(|v| !v.is_empty());
        Self {
            credentials: set("AWS_ACCESS_KEY_ID").is_some()
                && set("AWS_SECRET_ACCESS_KEY").is_some(),
            region: set("AWS_REGION"),
        }
    }
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

    fn shortcuts(vars: &[(&str, &str)]) -> EnvShortcuts {
        EnvShortcuts::read(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_environment_shortcuts_only_what_the_default_chains_would_take_from_it() {
        let lambda = shortcuts(&[
            ("AWS_ACCESS_KEY_ID", "id"),
            ("AWS_SECRET_ACCESS_KEY", "key"),
            ("AWS_REGION", "eu-west-1"),
        ]);
        assert_eq!(
            lambda,
            EnvShortcuts {
                credentials: true,
                region: Some("eu-west-1".to_owned())
            }
        );
        // One key alone (or an empty one) fails the environment provider: the chain must
        // go on to the next provider, so no shortcut.
        for partial in [
            shortcuts(&[("AWS_ACCESS_KEY_ID", "id")]),
            shortcuts(&[("AWS_ACCESS_KEY_ID", "id"), ("AWS_SECRET_ACCESS_KEY", "")]),
            shortcuts(&[("AWS_SECRET_ACCESS_KEY", "key"), ("AWS_REGION", "")]),
        ] {
            assert_eq!(
                partial,
                EnvShortcuts {
                    credentials: false,
                    region: None
                }
            );
        }
    }

    /// The test environment sets the keys and the region as Lambda does
    /// (`infra/local/common.sh`): the configuration carries them.
    #[tokio::test]
    async fn the_configuration_carries_the_environments_region_and_keys() {
        use aws_credential_types::provider::ProvideCredentials;
        let sdk = sdk_config().await;
        let region = std::env::var("AWS_REGION").unwrap_or_default();
        assert_eq!(sdk.region().map(|r| r.as_ref().to_owned()), Some(region));
        let Some(provider) = sdk.credentials_provider() else {
            panic!("no credentials provider");
        };
        let credentials = provider
            .provide_credentials()
            .await
            .unwrap_or_else(|e| panic!("credentials: {e}"));
        let id = std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_default();
        assert_eq!(credentials.access_key_id(), id);
    }

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
