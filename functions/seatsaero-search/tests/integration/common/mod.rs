//! Test helpers: a fake Seats.aero (wiremock, fed from the fixtures), the key in moto's
//! Secrets Manager, requests and replies.
#![allow(dead_code)] // each test binary uses a different part

use std::sync::Arc;
use std::time::Duration;

use lambda_http::http::Method;
use lambda_http::{Body, Request, Response};
use lambda_kit::secrets::{AwsSecretSource, SecretsCache};
use lambda_kit::upstream::RetryPolicy;
use seatsaero_search::{Config, Deps};
use serde_json::{Value, json};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub const SEARCH_FIXTURE: &str = "seatsaero/cached_search_response.docs-example.json";
pub const TRIPS_FIXTURE: &str = "seatsaero/get_trips_response.docs-example.json";

/// Retries quick enough for tests.
pub fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        attempt_timeout: Duration::from_secs(5),
    }
}

/// A fake upstream, a secret holding the partner key and the handler's dependencies.
pub struct Fake {
    pub server: MockServer,
    pub key: String,
    pub deps: Deps,
}

impl Fake {
    pub async fn start() -> Self {
        Self::with_config(|_| {}).await
    }

    pub async fn with_config(tweak: impl FnOnce(&mut Config)) -> Self {
        let server = MockServer::start().await;
        let key = test_support::unique("sk-seatsaero");
        let secret_name = test_support::create_secret("test/seatsaero-key", &key).await;
        let mut config =
            Config::new(&server.uri(), secret_name).unwrap_or_else(|e| panic!("config: {e}"));
        config.retry = fast_retries();
        config.deadline_fallback = Duration::from_secs(10);
        tweak(&mut config);
        let secrets = SecretsCache::new(
            Arc::new(AwsSecretSource::new(test_support::secrets_manager().await)),
            Duration::from_secs(60),
        );
        let http = lambda_kit::upstream::http_client().unwrap_or_else(|e| panic!("client: {e}"));
        Self {
            server,
            key,
            deps: Deps::new(http, secrets, config),
        }
    }

    /// `GET /search` answers with `payload`.
    pub async fn search_replies(&self, payload: Value) {
        Mock::given(method("GET"))
            .and(path("/search"))
            .respond_with(ResponseTemplate::new(200).set_body_json(payload))
            .mount(&self.server)
            .await;
    }

    /// Every `GET /trips/{id}` answers with `payload` after `delay`.
    pub async fn trips_reply(&self, payload: Value, delay: Duration) {
        Mock::given(method("GET"))
            .and(path_regex(r"^/trips/[^/]+$"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(payload)
                    .set_delay(delay),
            )
            .mount(&self.server)
            .await;
    }

    /// Both endpoints answer with the fixture payloads.
    pub async fn mount_fixtures(&self) {
        self.search_replies(test_support::fixture_json(SEARCH_FIXTURE))
            .await;
        self.trips_reply(test_support::fixture_json(TRIPS_FIXTURE), Duration::ZERO)
            .await;
    }

    pub async fn with_fixtures(self) -> Self {
        self.mount_fixtures().await;
        self
    }

    /// Reads the secret once, so timings measure the search only.
    pub async fn warm_secret(&self) {
        self.deps
            .secrets
            .get(&self.deps.config.api_key_secret)
            .await
            .unwrap_or_else(|e| panic!("secret: {e}"));
    }

    pub async fn call(&self, body: &Value) -> (u16, Value) {
        reply(seatsaero_search::handle(&self.deps, post(body)).await)
    }

    pub async fn requests_to(&self, prefix: &str) -> Vec<wiremock::Request> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.url.path().starts_with(prefix))
            .collect()
    }
}

/// The query parameter `name` of a received request.
pub fn query(request: &wiremock::Request, name: &str) -> Option<String> {
    request
        .url
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

pub fn post(body: &Value) -> Request {
    post_text(body.to_string())
}

/// A `POST` as the `/internal` route's IAM authorizer hands it on.
pub fn post_text(text: String) -> Request {
    let mut req = Request::new(Body::Text(text));
    *req.method_mut() = Method::POST;
    test_support::gateway::iam_authorized(req)
}

/// Status and JSON body of a response.
pub fn reply(response: Response<Body>) -> (u16, Value) {
    let status = response.status().as_u16();
    let body = match response.body() {
        Body::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        Body::Binary(bytes) => serde_json::from_slice(bytes).unwrap_or(Value::Null),
        _ => Value::Null,
    };
    (status, body)
}

/// SFO → JFK in business around 2023-08-14, the dates of the search fixture.
pub fn search_body() -> Value {
    json!({
        "origin": "SFO",
        "destination": "JFK",
        "departureDate": "2023-08-14",
        "travelClass": "BUSINESS",
        "flexibility": 3
    })
}

/// `base` with the fields of `extra` set (null removes a field).
pub fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Some(e)) = (base.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            if v.is_null() {
                b.remove(k);
            } else {
                b.insert(k.clone(), v.clone());
            }
        }
    }
    base
}

/// An availability row with business-cabin fields.
pub fn availability(id: &str, available: Value, miles: Value, seats: Value) -> Value {
    json!({
        "ID": id,
        "Route": {"OriginAirport": "SFO", "DestinationAirport": "JFK", "Source": "united"},
        "Date": "2023-08-14",
        "JAvailable": available,
        "JMileageCost": miles,
        "JRemainingSeats": seats,
        "JAirlines": "UA",
        "JDirect": true,
        "Source": "united"
    })
}

/// A trips reply with one business trip that leaves miles to the availability.
pub fn plain_trip() -> Value {
    json!({
        "data": [{
            "AvailabilitySegments": [{
                "FlightNumber": "UA100", "OriginAirport": "SFO", "DestinationAirport": "JFK",
                "DepartsAt": "2023-08-14T08:00:00Z", "ArrivesAt": "2023-08-14T16:35:00Z",
                "Order": 0
            }],
            "TotalDuration": 335, "Stops": 0, "Carriers": "UA", "Cabin": "business",
            "TotalTaxes": 560, "TaxesCurrency": "USD", "Source": "united"
        }],
        "booking_links": [{"label": "United", "link": "https://www.united.com/", "primary": true}]
    })
}

pub fn ids(body: &Value) -> Vec<String> {
    body["results"]["flights"]
        .as_array()
        .map(|flights| {
            flights
                .iter()
                .filter_map(|f| f["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
