//! Lambda entry point: builds the clients once per container, then serves requests.

use std::convert::Infallible;
use std::sync::Arc;

use lambda_http::{Request, service_fn};
use lambda_kit::config::Env;
use lambda_kit::http::route_access::{AccessConfig, RouteAccess};
use lambda_kit::metrics::Metrics;
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use seatsaero_search::{Config, Deps, handle};

// One thread: Lambda sends one invocation at a time, and its work is waiting on Seats.aero.
// A multi-thread runtime would hand every HTTP exchange between the invocation and the
// connection tasks on its workers, paying thread wake-ups for nothing: 0.8 → 0.45 ms of CPU
// per warm award search in the cold-start bench (docs/measurements.md).
#[tokio::main(flavor = "current_thread")]
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
    let deps = Deps::new(lambda_kit::upstream::http_client()?, secrets, config)
        .with_access(access)
        .with_metrics(Metrics::stdout("seatsaero-search", &env));
    // A failed Runtime API request polls again (lambda_kit::runtime_loop).
    lambda_kit::runtime_loop::keep_running(|| {
        lambda_http::run(service_fn(|req: Request| {
            let deps = deps.clone();
            async move { Ok::<_, Infallible>(handle(&deps, req).await) }
        }))
    })
    .await
}
