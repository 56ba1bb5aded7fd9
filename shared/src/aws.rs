//! AWS SDK configuration, loaded once per container.
//!
//! The SDK's own environment handling applies: region and credentials from the Lambda
//! environment, and `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_DYNAMODB` / `_SQS` /
//! `_SECRETS_MANAGER` redirect clients to the local emulators.

use aws_config::{BehaviorVersion, SdkConfig};

pub async fn sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

pub fn dynamodb(config: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(config)
}

pub fn secrets_manager(config: &SdkConfig) -> aws_sdk_secretsmanager::Client {
    aws_sdk_secretsmanager::Client::new(config)
}
