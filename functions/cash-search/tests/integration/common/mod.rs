//! Test harness: a fake Amadeus (wiremock) fed from the fixtures, the credentials and token
//! secrets in moto, and a `Deps` per simulated container.
#![allow(dead_code)] // each test binary uses a different part

use std::sync::Arc;
use std::time::Duration;

use cash_search::{Config, Deps, handle};
use domain::clock::Clock;
use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use lambda_kit::config::Env;
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use lambda_kit::upstream::RetryPolicy;
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, header, method, path};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

pub const CLIENT_ID: &str = "test-client-id";
pub const CLIENT_SECRET: &str = "test-client-secret-never-shown";
/// `access_token` of `amadeus/oauth2_token_response.amadeus-java.json`.
pub const FIXTURE_TOKEN: &str = "z626ZO2ezDzu4Isr5SN9T2LB1rXa";
pub const TOKEN_PATH: &str = "/v1/security/oauth2/token";
pub const OFFERS_PATH: &str = "/v2/shopping/flight-offers";

/// The fixture's route (GIG-MAD-GIG), one adult and one child, business class.
pub const SEARCH: &str = r#"{"origin":"gig","destination":"mad","departureDate":"2027-08-01","returnDate":"2027-08-05","travelClass":"BUSINESS","adults":1,"children":1}"#;

pub struct Fake {
    pub server: MockServer,
    pub credentials_secret: String,
    pub token_secret: String,
}

/// A fresh fake Amadeus with no mocks, and fresh secrets (the token secret as the stack
/// creates it: `{}`).
pub async fn fake() -> Fake {
    fake_with_token("{}").await
}

pub async fn fake_with_token(stored_token: &str) -> Fake {
    let credentials = json!({"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET}).to_string();
    Fake {
        server: MockServer::start().await,
        credentials_secret: test_support::create_secret("amadeus-credentials", &credentials).await,
        token_secret: test_support::create_secret("amadeus-token", stored_token).await,
    }
}

/// Short retry delays and budgets so failure tests finish quickly.
pub fn config(fake: &Fake) -> Config {
    let env = Env::from_pairs([
        (
            "AMADEUS_CREDENTIALS_SECRET",
            fake.credentials_secret.as_str(),
        ),
        ("AMADEUS_TOKEN_SECRET", fake.token_secret.as_str()),
        ("AMADEUS_BASE_URL", fake.server.uri().as_str()),
    ]);
    quick(Config::from_env(&env).unwrap_or_else(|e| panic!("config: {e}")))
}

/// `config` with short retry delays and budgets, so failure tests finish quickly.
pub fn quick(mut config: Config) -> Config {
    config.retry = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        attempt_timeout: Duration::from_secs(3),
    };
    config.fallback_budget = Duration::from_secs(8);
    config
}

/// A new SecretsCache: what a fresh container starts with.
pub async fn secrets() -> SecretsCache {
    SecretsCache::new(
        Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
        Duration::from_secs(300),
    )
}

fn http() -> reqwest::Client {
    lambda_kit::upstream::http_client().unwrap_or_else(|e| panic!("http client: {e}"))
}

/// One simulated container.
pub async fn deps(fake: &Fake) -> Deps {
    Deps::new(http(), secrets().await, config(fake))
}

pub async fn deps_with(config: Config, clock: Arc<dyn Clock>) -> Deps {
    Deps::with_clock(http(), secrets().await, config, clock)
}

pub fn token_reply(token: &str) -> ResponseTemplate {
    let mut body = test_support::fixture_json("amadeus/oauth2_token_response.amadeus-java.json");
    body["access_token"] = json!(token);
    ResponseTemplate::new(200).set_body_json(body)
}

/// The token endpoint, answering with the fixture token; only a well-formed
/// client-credentials request carrying the secret's credentials matches.
pub fn token_endpoint() -> Mock {
    token_endpoint_answering(ResponseTemplate::new(200).set_body_raw(
        test_support::fixture("amadeus/oauth2_token_response.amadeus-java.json"),
        "application/json",
    ))
}

pub fn token_endpoint_answering(reply: ResponseTemplate) -> Mock {
    Mock::given(method("POST"))
        .and(path(TOKEN_PATH))
        .and(header("content-type", "application/x-www-form-urlencoded"))
        .and(body_string_contains("grant_type=client_credentials"))
        .and(body_string_contains(format!("client_id={CLIENT_ID}")))
        .and(body_string_contains(format!(
            "client_secret={CLIENT_SECRET}"
        )))
        .respond_with(reply)
}

pub fn offers_fixture() -> String {
    test_support::fixture("amadeus/flight_offers_search_response.amadeus-java.json")
}

pub fn offers_reply() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(offers_fixture(), "application/vnd.amadeus+json")
}

/// Flight offers for requests carrying `token`.
pub fn offers_for(token: &str) -> MockBuilder {
    Mock::given(method("GET"))
        .and(path(OFFERS_PATH))
        .and(header("authorization", format!("Bearer {token}")))
        .and(header("accept", "application/vnd.amadeus+json"))
}

/// A `POST` as the `/internal` route's IAM authorizer hands it on.
pub fn post(body: &str) -> Request {
    let mut req = Request::new(Body::Text(body.to_owned()));
    *req.method_mut() = Method::POST;
    test_support::gateway::iam_authorized(req)
}

pub fn body_text(response: &Response<Body>) -> String {
    match response.body() {
        Body::Text(text) => text.clone(),
        Body::Binary(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        _ => String::new(),
    }
}

/// Status and parsed JSON body, plus the raw text for leak checks.
pub async fn call(deps: &Deps, req: Request) -> (u16, Value, String) {
    let response = handle(deps, req).await;
    let text = body_text(&response);
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("response is not JSON ({e}): {text}"));
    (response.status().as_u16(), value, text)
}

pub async fn search(deps: &Deps) -> (u16, Value, String) {
    call(deps, post(SEARCH)).await
}

/// The shared token secret as Secrets Manager holds it now (bypassing every cache).
pub async fn stored_token(fake: &Fake) -> Value {
    let out = test_support::secrets_manager()
        .await
        .get_secret_value()
        .secret_id(&fake.token_secret)
        .send()
        .await
        .unwrap_or_else(|e| panic!("reading the token secret: {e:?}"));
    serde_json::from_str(out.secret_string().unwrap_or_default())
        .unwrap_or_else(|e| panic!("token secret is not JSON: {e}"))
}

pub async fn put_stored_token(fake: &Fake, value: &Value) {
    test_support::secrets_manager()
        .await
        .put_secret_value()
        .secret_id(&fake.token_secret)
        .secret_string(value.to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("writing the token secret: {e:?}"));
}

pub fn now_unix() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}
