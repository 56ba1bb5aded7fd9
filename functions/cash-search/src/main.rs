//! Lambda entry point: builds clients and configuration once per container, then serves.

use std::convert::Infallible;
use std::sync::Arc;

use cash_search::{Config, Deps, handle};
use lambda_http::{Request, service_fn};
use lambda_kit::config::{Env, secrets_cache_ttl};
use lambda_kit::http::route_access::{AccessConfig, RouteAccess};
use lambda_kit::metrics::Metrics;
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_kit::observability::init_tracing();
    let env = Env::from_process();
    let config = Config::from_env(&env)?;
    let http = lambda_kit::upstream::http_client()?;
    let aws = lambda_kit::aws::sdk_config().await;
    let access = RouteAccess::new(&AccessConfig::from_env(&env)?, || {
        lambda_kit::aws::dynamodb(&aws)
    });
    let secrets = SecretsCache::new(
        Arc::new(AwsSecretSource::new(lambda_kit::aws::secrets_manager(&aws))),
        secrets_cache_ttl(&env)?,
    );
    let deps = Deps::new(http, secrets, config)
        .with_access(access)
        .with_metrics(Metrics::stdout("cash-search", &env));
    // A failed Runtime API request polls again (lambda_kit::runtime_loop).
    lambda_kit::runtime_loop::keep_running(|| {
        lambda_http::run(service_fn(|req: Request| {
            let deps = deps.clone();
            async move { Ok::<_, Infallible>(handle(&deps, req).await) }
        }))
    })
    .await
}
