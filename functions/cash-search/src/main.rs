//! Lambda entry point: builds clients and configuration once per container, then serves.

use std::convert::Infallible;
use std::sync::Arc;

use cash_search::{Config, Deps, handle};
use lambda_http::{Request, service_fn};
use shared::config::{Env, secrets_cache_ttl};
use shared::http::route_access::{AccessConfig, RouteAccess};
use shared::metrics::Metrics;
use shared::secrets::{AwsSecretSource, SecretsCache};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    shared::observability::init_tracing();
    let env = Env::from_process();
    let config = Config::from_env(&env)?;
    let http = shared::upstream::http_client()?;
    let aws = shared::aws::sdk_config().await;
    let access = RouteAccess::new(&AccessConfig::from_env(&env)?, || {
        shared::aws::dynamodb(&aws)
    });
    let secrets = SecretsCache::new(
        Arc::new(AwsSecretSource::new(shared::aws::secrets_manager(&aws))),
        secrets_cache_ttl(&env)?,
    );
    let deps = Deps::new(http, secrets, config)
        .with_access(access)
        .with_metrics(Metrics::stdout("cash-search", &env));
    // A failed Runtime API request polls again (shared::runtime_loop).
    shared::runtime_loop::keep_running(|| {
        lambda_http::run(service_fn(|req: Request| {
            let deps = deps.clone();
            async move { Ok::<_, Infallible>(handle(&deps, req).await) }
        }))
    })
    .await
}
