//! Handler time per cash search against a local fake Amadeus (wiremock, fixture payloads)
//! with the token warm in memory: request parsing, the flight-offers round trip over
//! loopback, normalisation and the response.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p cash-search --bench handler
//!
//! The first request (token fetch and Secrets Manager write against moto) is timed apart.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cash_search::{Config, Deps, handle};
use lambda_http::http::Method;
use lambda_http::{Body, Request};
use lambda_kit::config::Env;
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use test_support::figures::{Percentiles, full_run};
use wiremock::MockServer;

fn request() -> Request {
    let mut req = Request::new(Body::Text(
        r#"{"origin":"gig","destination":"mad","departureDate":"2027-08-01","returnDate":"2027-08-05","travelClass":"BUSINESS","adults":1,"children":1}"#
            .to_owned(),
    ));
    *req.method_mut() = Method::POST;
    // As the `/internal` route's IAM authorizer hands it on.
    test_support::gateway::iam_authorized(req)
}

#[tokio::main]
async fn main() {
    let iterations = if full_run() { 500 } else { 5 };

    let server = MockServer::start().await;
    test_support::upstreams::mount_amadeus(&server).await;

    let credentials = test_support::create_secret(
        "amadeus-bench-credentials",
        r#"{"client_id":"bench-id","client_secret":"bench-secret"}"#,
    )
    .await;
    let token_secret = test_support::create_secret("amadeus-bench-token", "{}").await;
    let env = Env::from_pairs([
        ("AMADEUS_CREDENTIALS_SECRET", credentials.as_str()),
        ("AMADEUS_TOKEN_SECRET", token_secret.as_str()),
        ("AMADEUS_BASE_URL", server.uri().as_str()),
    ]);
    let config = Config::from_env(&env).unwrap_or_else(|e| panic!("config: {e}"));
    let http = lambda_kit::upstream::http_client().unwrap_or_else(|e| panic!("http client: {e}"));
    let secrets = SecretsCache::new(
        Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
        Duration::from_secs(300),
    );
    let deps = Deps::new(http, secrets, config);

    let started = Instant::now();
    let first = handle(&deps, request()).await;
    let cold = started.elapsed();
    assert_eq!(
        first.status(),
        200,
        "first search failed: {:?}",
        first.body()
    );

    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        let response = handle(&deps, request()).await;
        samples.push(started.elapsed());
        assert_eq!(response.status(), 200);
    }
    println!(
        "{:<44} {:>9.3} ms",
        "first search (token fetch + shared write)",
        cold.as_secs_f64() * 1e3
    );
    println!(
        "{}",
        Percentiles::of(samples).row("cash search, warm token (handler time)")
    );
    // The whole bench process: handler, wiremock fake and AWS clients together.
    if let Some(kib) = test_support::figures::peak_rss_kib() {
        println!(
            "peak RSS of the bench process: {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
}
