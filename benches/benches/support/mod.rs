//! What the benches that run the functions' binaries share: the award function's handler
//! served over a Seats.aero fake, the emulators' secrets, the repository's event files.

use std::sync::Arc;
use std::time::Duration;

use lambda_http::Request;
use serde_json::Value;
use shared::secrets::{AwsSecretSource, SecretsCache};
use test_support::serve::{LocalServer, serve_lambda};
use wiremock::MockServer;

/// seatsaero-search's handler over the Seats.aero fake, as its function URL.
pub async fn serve_award(upstream: &MockServer, key_secret: &str) -> LocalServer {
    let config = seatsaero_search::Config::new(&upstream.uri(), key_secret.to_owned())
        .unwrap_or_else(|e| panic!("seatsaero config: {e}"));
    let deps = seatsaero_search::Deps::new(http_client(), secrets().await, config);
    serve_lambda(move |req: Request| {
        let deps = deps.clone();
        async move { seatsaero_search::handle(&deps, req).await }
    })
    .await
}

pub fn http_client() -> reqwest::Client {
    shared::upstream::http_client().unwrap_or_else(|e| panic!("http client: {e}"))
}

pub async fn secrets() -> SecretsCache {
    SecretsCache::new(
        Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
        Duration::from_secs(300),
    )
}

/// An event file of the repository (`events/`), with its body replaced.
pub fn event(path: &str, body: &Value) -> Value {
    let file = test_support::event_path(path);
    let text =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("event {}: {e}", file.display()));
    let mut event: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("event {path}: {e}"));
    event["body"] = Value::String(body.to_string());
    event
}

pub fn pairs<const N: usize>(items: [(&str, String); N]) -> Vec<(String, String)> {
    items.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// cash-search's handler over the Amadeus fake, as its function URL.
pub async fn serve_cash(upstream: &MockServer, credentials: &str, token: &str) -> LocalServer {
    let env = shared::config::Env::from_pairs(pairs([
        ("AMADEUS_CREDENTIALS_SECRET", credentials.to_owned()),
        ("AMADEUS_TOKEN_SECRET", token.to_owned()),
        ("AMADEUS_BASE_URL", upstream.uri()),
    ]));
    let config =
        cash_search::Config::from_env(&env).unwrap_or_else(|e| panic!("amadeus config: {e}"));
    let deps = cash_search::Deps::new(http_client(), secrets().await, config);
    serve_lambda(move |req: Request| {
        let deps = deps.clone();
        async move { cash_search::handle(&deps, req).await }
    })
    .await
}
