//! How upstream trouble reaches the client: retries, 502/504, 4xx, and never a body or a
//! secret of ours or the upstream's.

use crate::common;

use std::time::{Duration, Instant};

use crate::common::{Fake, ids, search_body};
use lambda_kit::upstream::RetryPolicy;
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, ResponseTemplate};

const UPSTREAM_SECRET_TEXT: &str = "internal trace id 0xdeadbeef";

#[tokio::test]
async fn partner_authorization_carries_the_secret() {
    let fake = Fake::start().await;
    // Only a request with the right key gets an answer; anything else is a 404.
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(header("Partner-Authorization", fake.key.as_str()))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(test_support::fixture_json(common::SEARCH_FIXTURE)),
        )
        .mount(&fake.server)
        .await;
    Mock::given(method("GET"))
        .and(header("Partner-Authorization", fake.key.as_str()))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(test_support::fixture_json(common::TRIPS_FIXTURE)),
        )
        .mount(&fake.server)
        .await;

    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], json!(5));
    let requests = fake.server.received_requests().await.unwrap_or_default();
    assert_eq!(requests.len(), 6, "one search and five trip lookups");
    for request in &requests {
        let sent = request
            .headers
            .get("Partner-Authorization")
            .and_then(|v| v.to_str().ok());
        assert_eq!(sent, Some(fake.key.as_str()), "{}", request.url);
    }
    assert!(!body.to_string().contains(&fake.key));
}

#[tokio::test]
async fn rate_limited_then_success() {
    let fake = Fake::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(429))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&fake.server)
        .await;
    fake.mount_fixtures().await;

    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], json!(5));
    assert_eq!(fake.requests_to("/search").await.len(), 2);
}

#[tokio::test]
async fn server_errors_that_persist_become_502() {
    let fake = Fake::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(
            ResponseTemplate::new(500)
                .set_body_string(format!("{UPSTREAM_SECRET_TEXT}: database down")),
        )
        .mount(&fake.server)
        .await;

    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"));
    assert_eq!(
        fake.requests_to("/search").await.len(),
        4,
        "every attempt of the retry policy"
    );
    let text = body.to_string();
    assert!(
        !text.contains(UPSTREAM_SECRET_TEXT) && !text.contains(&fake.key),
        "{text}"
    );
}

#[tokio::test]
async fn connection_refused_becomes_502() {
    let fake = Fake::with_config(|c| {
        // Nothing listens on port 9 (discard) here.
        c.base_url =
            reqwest::Url::parse("http://127.0.0.1:9/partnerapi").unwrap_or_else(|e| panic!("{e}"));
    })
    .await;
    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"));
}

#[tokio::test]
async fn slow_upstream_becomes_504_within_the_deadline() {
    let fake = Fake::with_config(|c| {
        c.deadline_fallback = Duration::from_millis(600);
        c.retry = RetryPolicy {
            attempt_timeout: Duration::from_millis(250),
            ..common::fast_retries()
        };
    })
    .await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(test_support::fixture_json(common::SEARCH_FIXTURE))
                .set_delay(Duration::from_secs(3)),
        )
        .mount(&fake.server)
        .await;
    fake.warm_secret().await;

    let started = Instant::now();
    let (status, body) = fake.call(&search_body()).await;
    let elapsed = started.elapsed();
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_timeout"));
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
    assert!(
        fake.requests_to("/search").await.len() >= 2,
        "timeouts are retried"
    );
}

#[tokio::test]
async fn invalid_json_from_upstream_becomes_502() {
    for payload in ["<html>Bad gateway</html>", r#"{"data": "not a list"}"#, ""] {
        let fake = Fake::start().await;
        Mock::given(method("GET"))
            .and(path("/search"))
            .respond_with(ResponseTemplate::new(200).set_body_string(payload))
            .mount(&fake.server)
            .await;
        let (status, body) = fake.call(&search_body()).await;
        assert_eq!(status, 502, "{payload}: {body}");
        assert_eq!(body["error"]["code"], json!("upstream_error"));
        assert!(!body.to_string().contains("html"));
    }
}

#[tokio::test]
async fn an_upstream_client_error_is_said_in_our_words_not_the_upstreams() {
    let fake = Fake::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(json!({"message": "start_date must not be in the past"})),
        )
        .mount(&fake.server)
        .await;
    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        "Seats.aero rejected the search (HTTP 400); check the airports, dates, cabin and travellers"
    );
    assert!(!body.to_string().contains("start_date"), "{body}");
    assert_eq!(
        fake.requests_to("/search").await.len(),
        1,
        "4xx is not retried"
    );
}

#[tokio::test]
async fn rejected_key_is_our_fault_not_the_callers() {
    let fake = Fake::start().await;
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(401).set_body_string(UPSTREAM_SECRET_TEXT))
        .mount(&fake.server)
        .await;
    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 502, "{body}");
    assert!(!body.to_string().contains(UPSTREAM_SECRET_TEXT));
}

#[tokio::test]
async fn missing_secret_is_an_internal_error_without_details() {
    let fake =
        Fake::with_config(|c| c.api_key_secret = test_support::unique("missing/secret")).await;
    fake.mount_fixtures().await;
    let (status, body) = fake.call(&search_body()).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(
        body["error"],
        json!({"code": "internal", "message": "internal error"})
    );
    assert!(fake.requests_to("/search").await.is_empty());
    assert!(ids(&body).is_empty());
}
