//! Requests refused before any upstream call: 400 naming the field, 413, 405.

use crate::common::{Fake, post_text, reply, search_body, with};
use lambda_http::http::Method;
use lambda_http::{Body, Request};
use serde_json::{Value, json};

#[tokio::test]
async fn every_validation_error_names_the_field() {
    let fake = Fake::start().await.with_fixtures().await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({"origin": "FR"}), "origin"),
        (json!({"origin": "F1X"}), "origin"),
        (json!({"origin": null}), "origin"),
        (json!({"destination": 123}), "destination"),
        (json!({"destination": "JFKX"}), "destination"),
        (json!({"destination": "sfo"}), "origin and destination"),
        (json!({"departureDate": "2023-02-30"}), "departureDate"),
        (json!({"departureDate": "14.08.2023"}), "departureDate"),
        (json!({"departureDate": null}), "departureDate"),
        (json!({"returnDate": "2023-13-01"}), "returnDate"),
        (json!({"returnDate": "2023-08-13"}), "returnDate"),
        (json!({"travelClass": "COACH"}), "travelClass"),
        (json!({"travelClass": null}), "travelClass"),
        (json!({"adults": 0}), "adults"),
        (json!({"adults": 10}), "adults"),
        (json!({"adults": -1}), "adults"),
        (json!({"adults": "two"}), "adults"),
        (json!({"children": 10}), "children"),
        (json!({"children": 300}), "children"),
        (json!({"adults": 5, "children": 5}), "children"),
        (json!({"infants": 2}), "infants"),
        (json!({"adults": 9, "infants": 10}), "infants"),
        (json!({"nonStop": "yes"}), "nonStop"),
        (json!({"flexibility": "3"}), "flexibility"),
        (json!({"maxResults": 2.5}), "maxResults"),
        (
            json!({"includeReturnAwards": "true"}),
            "includeReturnAwards",
        ),
        (json!({"locale": "fr"}), "locale"),
    ];
    for (extra, field) in cases {
        let (status, body) = fake.call(&with(search_body(), extra.clone())).await;
        assert_eq!(status, 400, "{extra}: {body}");
        assert_eq!(
            body["error"]["code"],
            json!("validation_failed"),
            "{extra}: {body}"
        );
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(field),
            "{extra}: {message:?} does not name {field}"
        );
    }
    assert!(
        fake.server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "invalid requests must not reach the upstream"
    );
}

#[tokio::test]
async fn malformed_bodies() {
    let fake = Fake::start().await.with_fixtures().await;
    for (text, code) in [
        ("", "invalid_json"),
        ("{", "invalid_json"),
        ("[1, 2]", "invalid_json"),
        ("\"SFO\"", "invalid_json"),
    ] {
        let (status, body) =
            reply(seatsaero_search::handle(&fake.deps, post_text(text.into())).await);
        assert_eq!(status, 400, "{text:?}: {body}");
        assert_eq!(body["error"]["code"], json!(code), "{text:?}");
    }
}

#[tokio::test]
async fn oversized_body_is_413() {
    let fake = Fake::start().await.with_fixtures().await;
    let body = with(search_body(), json!({"padding": "x".repeat(300 * 1024)}));
    let (status, reply) = fake.call(&body).await;
    assert_eq!(status, 413, "{reply}");
    assert_eq!(reply["error"]["code"], json!("payload_too_large"));
    assert!(
        fake.server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn only_post_is_allowed() {
    let fake = Fake::start().await.with_fixtures().await;
    for verb in [Method::GET, Method::PUT, Method::DELETE] {
        let mut req = Request::new(Body::Text(search_body().to_string()));
        *req.method_mut() = verb.clone();
        let response = seatsaero_search::handle(&fake.deps, req).await;
        assert_eq!(
            response
                .headers()
                .get("allow")
                .and_then(|v| v.to_str().ok()),
            Some("POST")
        );
        let (status, body) = reply(response);
        assert_eq!(status, 405, "{verb}");
        assert_eq!(body["error"]["code"], json!("method_not_allowed"));
    }
    assert!(
        fake.server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn minimal_body_gets_defaults() {
    let fake = Fake::start().await.with_fixtures().await;
    let body = json!({"origin": "sfo", "destination": "jfk", "departureDate": "2023-08-14",
                      "travelClass": "business", "unknownField": [1]});
    let (status, reply) = fake.call(&body).await;
    assert_eq!(status, 200, "{reply}");
    // maxResults 5 and no flexibility by default.
    assert_eq!(reply["results"]["count"], json!(5), "{reply}");
    assert_eq!(reply["stats"]["startDate"], json!("2023-08-14"));
    assert_eq!(reply["stats"]["endDate"], json!("2023-08-14"));
}
