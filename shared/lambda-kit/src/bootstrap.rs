//! A tool function's cold start and serving loop, the same in each: the SDK configuration,
//! the HTTP client, the secrets cache, the access gate and the metrics ([`Basics`]), then
//! its handler served until the runtime ends ([`serve`]). A function's `main` builds its own
//! dependencies from the basics and hands its layered handler (`crate::layers`) to `serve`.
//! The streaming functions (chat-router, mcp-server) hand theirs to [`serve_streaming`].

use std::convert::Infallible;
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use lambda_http::{Request, Response, run_with_streaming_response, service_fn};

use crate::config::Env;
use crate::http::route_access::{AccessConfig, RouteAccess};
use crate::layers::Handler;
use crate::metrics::Metrics;
use crate::secrets::{AwsSecretSource, SecretsCache};
use domain::Result;

/// What every tool function builds at cold start, the same way.
pub struct Basics {
    /// The AWS SDK's configuration (the Lambda environment's region and credentials).
    pub sdk: aws_config::SdkConfig,
    /// The HTTP client of upstream calls (compiled-in TLS roots).
    pub http: reqwest::Client,
    /// Secrets Manager behind the container's TTL cache (`SECRETS_CACHE_TTL_SECS`).
    pub secrets: SecretsCache,
    /// Who may call (`PUBLIC_ROUTE_*`); its rate limiter's DynamoDB client is built only
    /// when the public route is on. Counts refusals in `metrics`.
    pub access: RouteAccess,
    /// EMF on stdout, under the function's name.
    pub metrics: Metrics,
}

impl Basics {
    /// The basics of the function `name`, from `env` and the SDK's configuration.
    pub async fn from_env(env: &Env, name: &'static str) -> Result<Self> {
        let sdk = crate::aws::sdk_config().await;
        let metrics = Metrics::stdout(name, env);
        let access = RouteAccess::new(&AccessConfig::from_env(env)?, || crate::aws::dynamodb(&sdk))
            .with_metrics(metrics.clone());
        let secrets = SecretsCache::new(
            Arc::new(AwsSecretSource::new(crate::aws::secrets_manager(&sdk))),
            crate::config::secrets_cache_ttl(env)?,
        );
        let http = crate::upstream::http_client()?;
        // Traces, when a collector is configured (`OTEL_EXPORTER_OTLP_ENDPOINT`).
        crate::telemetry::configure(env, &http, &secrets).await;
        Ok(Self {
            http,
            sdk,
            secrets,
            access,
            metrics,
        })
    }
}

/// Serves `handler` on the Lambda Runtime API until the runtime ends, polling again after a
/// failed request to it (`crate::runtime_loop`): every tool function's `main` ends here.
pub async fn serve(handler: Handler) -> std::result::Result<(), lambda_http::Error> {
    crate::runtime_loop::keep_running(|| lambda_http::run(handler.clone())).await
}

/// Serves `handle` as a streaming function (a Function URL in `RESPONSE_STREAM` mode) until
/// the runtime ends, polling again after a failed request to the Runtime API, with Nagle's
/// algorithm off on the runtime's connection (`crate::runtime_socket`) so that each chunk
/// goes out when it is written. For `current_thread` runtimes (the socket is looked up on
/// the runtime's own thread).
pub async fn serve_streaming<F, Fut, B>(handle: F) -> std::result::Result<(), lambda_http::Error>
where
    F: Fn(Request) -> Fut,
    Fut: Future<Output = Response<B>> + Send,
    B: http_body::Body + Unpin + Send + 'static,
    B::Data: Into<Bytes> + Send,
    B::Error: Into<lambda_http::Error> + Send + Debug,
{
    crate::runtime_loop::keep_running(|| {
        run_with_streaming_response(service_fn(|req: Request| {
            crate::runtime_socket::no_delay();
            let response = handle(req);
            async move { Ok::<_, Infallible>(response.await) }
        }))
    })
    .await
}
