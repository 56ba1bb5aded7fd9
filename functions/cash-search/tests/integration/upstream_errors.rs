//! Flight-offers failures: retried when transient, 502/504 when Amadeus stays down or
//! slow, 4xx with Amadeus' own explanation when it rejects the search. No upstream body
//! reaches the client.

use std::time::Duration;

use crate::common::*;
use serde_json::json;
use wiremock::ResponseTemplate;

#[tokio::test]
async fn rate_limited_then_success() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(ResponseTemplate::new(429).set_body_string("slow down"))
        .up_to_n_times(1)
        .expect(1)
        .mount(&fake.server)
        .await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(1)
        .mount(&fake.server)
        .await;
    let (status, body, _) = search(&deps(&fake).await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], json!(2));
}

#[tokio::test]
async fn server_errors_forever_are_a_502() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(
            ResponseTemplate::new(500).set_body_string("internal stack trace at amadeus.core"),
        )
        .expect(3) // every attempt of the retry policy
        .mount(&fake.server)
        .await;
    let (status, body, text) = search(&deps(&fake).await).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"));
    assert!(!text.contains("stack trace"), "{text}");
}

#[tokio::test]
async fn slow_upstream_is_a_504() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply().set_delay(Duration::from_secs(5)))
        .mount(&fake.server)
        .await;
    let mut config = config(&fake);
    config.retry.attempt_timeout = Duration::from_millis(300);
    config.fallback_budget = Duration::from_secs(1);
    let deps = cash_search::Deps::new(
        lambda_kit::upstream::http_client().unwrap_or_else(|e| panic!("{e}")),
        secrets().await,
        config,
    );
    let started = std::time::Instant::now();
    let (status, body, _) = search(&deps).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_timeout"));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn invalid_json_is_a_502() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("<html>maintenance</html>", "text/html"),
        )
        .expect(1)
        .mount(&fake.server)
        .await;
    let (status, body, text) = search(&deps(&fake).await).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], json!("upstream_error"));
    assert!(!text.contains("maintenance"), "{text}");
}

#[tokio::test]
async fn amadeus_rejection_is_a_400_in_our_words() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    let rejection = json!({"errors": [{
        "status": 400, "code": 425, "title": "INVALID DATE",
        "detail": "Date/Time is in the past",
        "source": {"parameter": "departureDate", "pointer": "/originDestinations[0]/departureDateTimeRange/date"},
    }]});
    offers_for(FIXTURE_TOKEN)
        .respond_with(ResponseTemplate::new(400).set_body_json(rejection))
        .expect(1) // a rejected search is not retried
        .mount(&fake.server)
        .await;
    let (status, body, text) = search(&deps(&fake).await).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], json!("validation_failed"));
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("rejected the search (HTTP 400)"),
        "{message}"
    );
    for raw in ["INVALID DATE", "pointer", "425", "errors", "Date/Time"] {
        assert!(!text.contains(raw), "{text}");
    }
}
