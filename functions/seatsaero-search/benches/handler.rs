//! Handler time per award search against a local fake Seats.aero serving the fixture
//! payloads (one `/search`, five `/trips/{id}`), key from moto's Secrets Manager.
//!
//!     make emulators-up && source .local/run/env
//!     cargo bench -p seatsaero-search --bench handler
//!
//! Measures our overhead (parsing, filtering, JSON, five local HTTP round trips), not
//! Seats.aero's latency. `cargo test --benches` (so `make test`) runs a 5-request smoke pass.

// Tests and benches fail loudly: unwrap, expect and panic are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use lambda_http::http::Method;
use lambda_http::{Body, Request};
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use seatsaero_search::{Config, Deps, handle};
use serde_json::json;
use test_support::figures::{Percentiles, full_run};
use wiremock::MockServer;

fn request(body: &str) -> Request {
    let mut req = Request::new(Body::Text(body.to_owned()));
    *req.method_mut() = Method::POST;
    // As the `/internal` route's IAM authorizer hands it on.
    test_support::gateway::iam_authorized(req)
}

#[tokio::main]
async fn main() {
    let requests = if full_run() { 500 } else { 5 };

    let server = MockServer::start().await;
    test_support::upstreams::mount_seatsaero(&server).await;

    let secret = test_support::create_secret("bench/seatsaero-key", "sk-bench").await;
    let config = match Config::new(&server.uri(), secret) {
        Ok(config) => config,
        Err(e) => panic!("config: {e}"),
    };
    let secrets = SecretsCache::new(
        Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
        Duration::from_secs(300),
    );
    let http = match lambda_kit::upstream::http_client() {
        Ok(http) => http,
        Err(e) => panic!("client: {e}"),
    };
    let deps = Deps::new(http, secrets, config);
    let body = json!({
        "origin": "SFO", "destination": "JFK", "departureDate": "2023-08-14",
        "travelClass": "BUSINESS", "flexibility": 3, "maxResults": 5
    })
    .to_string();

    // Warm up: secret cache, connection pool.
    for _ in 0..requests.min(20) {
        let status = handle(&deps, request(&body)).await.status();
        assert_eq!(status, 200, "warm-up request failed");
    }

    let mut samples = Vec::with_capacity(requests);
    for _ in 0..requests {
        let started = Instant::now();
        let response = handle(&deps, request(&body)).await;
        samples.push(started.elapsed());
        assert_eq!(response.status(), 200);
    }
    println!(
        "{}",
        Percentiles::of(samples).row("award search (1 search + 5 trips, local fake)")
    );
    // The whole bench process: handler, wiremock fake and AWS clients together.
    if let Some(kib) = test_support::figures::peak_rss_kib() {
        println!(
            "peak RSS of the bench process: {:.1} MiB",
            kib as f64 / 1024.0
        );
    }
}
