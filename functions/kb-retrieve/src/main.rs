//! Lambda entry point: builds the clients and loads the knowledge base once per container,
//! then serves requests.

use std::convert::Infallible;
use std::sync::Arc;

use kb_retrieve::live::SnapshotSource;
use kb_retrieve::{Config, Deps, handle};
use knowledge::kb::DynamoKbStore;
use knowledge::kb::snapshots::S3Snapshots;
use lambda_http::{Request, service_fn};
use lambda_kit::config::Env;
use lambda_kit::http::route_access::{AccessConfig, RouteAccess};
use lambda_kit::metrics::Metrics;
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_kit::observability::init_tracing();
    let env = Env::from_process();
    let config = Config::from_env(&env)?;
    let sdk = lambda_kit::aws::sdk_config().await;
    let access = RouteAccess::new(&AccessConfig::from_env(&env)?, || {
        lambda_kit::aws::dynamodb(&sdk)
    });
    let secrets = SecretsCache::new(
        Arc::new(AwsSecretSource::new(lambda_kit::aws::secrets_manager(&sdk))),
        lambda_kit::config::secrets_cache_ttl(&env)?,
    );
    let store = Arc::new(DynamoKbStore::new(
        lambda_kit::aws::dynamodb(&sdk),
        config.kb_table.clone(),
    ));
    let snapshots = config.snapshot_bucket.clone().map(|bucket| SnapshotSource {
        bucket: S3Snapshots::new(
            S3Snapshots::client(&sdk),
            bucket,
            config.snapshot_prefix.clone(),
        ),
        rescore_max_bytes: config.rescore_max_bytes,
    });
    let mut deps = Deps::new(lambda_kit::upstream::http_client()?, secrets, store, config)
        // Unused unless EMBEDDINGS_PROVIDER=bedrock; building it opens no connection.
        .with_bedrock(knowledge::embeddings::bedrock::client(&sdk))
        // Unused unless KB_BACKEND=bedrock.
        .with_bedrock_kb(kb_retrieve::bedrock_kb::client(&sdk))
        .with_access(access)
        .with_metrics(Metrics::stdout("kb-retrieve", &env));
    if let Some(source) = snapshots {
        deps = deps.with_snapshots(source);
    }
    // Load the knowledge base during the init phase (unless Bedrock answers); if that
    // fails, the first request retries.
    if deps.bedrock_kb.is_none()
        && let Err(e) = deps.kb.get().await
    {
        tracing::error!(error = %e, "knowledge base not loaded at cold start");
    }
    // A failed Runtime API request polls again (lambda_kit::runtime_loop).
    lambda_kit::runtime_loop::keep_running(|| {
        lambda_http::run(service_fn(|req: Request| {
            let deps = deps.clone();
            async move { Ok::<_, Infallible>(handle(&deps, req).await) }
        }))
    })
    .await
}
