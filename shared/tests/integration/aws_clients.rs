//! The functions' own SDK configuration (`shared::aws::sdk_config`: one HTTP client with
//! the compiled-in roots, connectors built on first use) against the emulators: every
//! service client it builds reaches its service.

#[tokio::test]
async fn clients_of_the_functions_sdk_config_reach_their_services() {
    test_support::require_env("AWS_ENDPOINT_URL_DYNAMODB");
    let sdk = shared::aws::sdk_config().await;
    let tables = shared::aws::dynamodb(&sdk)
        .list_tables()
        .limit(1)
        .send()
        .await;
    assert!(tables.is_ok(), "DynamoDB: {tables:?}");
    let secrets = shared::aws::secrets_manager(&sdk)
        .list_secrets()
        .max_results(1)
        .send()
        .await;
    assert!(secrets.is_ok(), "Secrets Manager: {secrets:?}");
}
