//! Test harness: clients for the local emulators, configured from the environment that
//! `infra/local/emulators.sh start` writes to `.local/run/env` (the README's test command
//! sources it). Without a reachable emulator the tests fail and say how to start one.
#![allow(dead_code)]

use std::time::Duration;

use shared::config::{Env, StorageConfig};

const HOW_TO_START: &str = "start the local emulators and load their settings:\n    \
     infra/local/emulators.sh start && source .local/run/env\n\
     or run the whole suite with `make test`";

fn require_env(name: &str) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!("{name} is not set, so there is no emulator to test against; {HOW_TO_START}"),
    }
}

pub async fn sdk_config() -> aws_config::SdkConfig {
    require_env("AWS_ENDPOINT_URL_DYNAMODB");
    shared::aws::sdk_config().await
}

/// A DynamoDB client that has been seen to answer.
pub async fn dynamodb() -> aws_sdk_dynamodb::Client {
    let endpoint = require_env("AWS_ENDPOINT_URL_DYNAMODB");
    let client = shared::aws::dynamodb(&sdk_config().await);
    let probe = tokio::time::timeout(
        Duration::from_secs(10),
        client.list_tables().limit(1).send(),
    )
    .await;
    match probe {
        Ok(Ok(_)) => client,
        Ok(Err(e)) => panic!(
            "DynamoDB Local at {endpoint} did not answer: {}; {HOW_TO_START}",
            aws_sdk_dynamodb::error::DisplayErrorContext(e)
        ),
        Err(_) => panic!("DynamoDB Local at {endpoint} did not answer within 10 s; {HOW_TO_START}"),
    }
}

pub async fn secrets_manager() -> aws_sdk_secretsmanager::Client {
    let endpoint = require_env("AWS_ENDPOINT_URL_SECRETS_MANAGER");
    let client = shared::aws::secrets_manager(&sdk_config().await);
    let probe = tokio::time::timeout(
        Duration::from_secs(10),
        client.list_secrets().max_results(1).send(),
    )
    .await;
    match probe {
        Ok(Ok(_)) => client,
        _ => panic!("Secrets Manager emulator (moto) at {endpoint} did not answer; {HOW_TO_START}"),
    }
}

pub fn storage() -> StorageConfig {
    match StorageConfig::from_env(&Env::from_process()) {
        Ok(config) => config,
        Err(e) => panic!("{e}; {HOW_TO_START}"),
    }
}

/// A fresh id, so tests sharing the emulator's tables never see each other's items.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", ulid::Ulid::generate())
}

/// Counts the HTTP requests a client sends (retries included): DynamoDB round trips.
#[derive(Debug, Default, Clone)]
pub struct RequestCounter(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl RequestCounter {
    pub fn take(&self) -> usize {
        self.0.swap(0, std::sync::atomic::Ordering::SeqCst)
    }
}

impl aws_sdk_dynamodb::config::Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// A DynamoDB client whose requests are counted.
pub async fn counted_dynamodb() -> (aws_sdk_dynamodb::Client, RequestCounter) {
    dynamodb().await; // fail early, with the how-to, when the emulator is down
    let counter = RequestCounter::default();
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
        .interceptor(counter.clone())
        .build();
    (aws_sdk_dynamodb::Client::from_conf(config), counter)
}
