//! Requests refused before any upstream call: validation (400), size (413), method (405).

use crate::common::*;
use lambda_http::http::Method;
use serde_json::json;

/// A fake that fails the test if anything reaches Amadeus.
async fn untouched_fake() -> Fake {
    let fake = fake().await;
    token_endpoint().expect(0).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .respond_with(offers_reply())
        .expect(0)
        .mount(&fake.server)
        .await;
    fake
}

#[tokio::test]
async fn every_invalid_body_is_a_400_naming_the_problem() {
    let fake = untouched_fake().await;
    let deps = deps(&fake).await;
    let base = json!({"origin": "FRA", "destination": "JFK", "departureDate": "2027-03-15",
        "travelClass": "ECONOMY"});
    let with = |field: &str, value: serde_json::Value| {
        let mut body = base.clone();
        body[field] = value;
        body.to_string()
    };
    let without = |field: &str| {
        let mut body = base.clone();
        if let Some(map) = body.as_object_mut() {
            map.remove(field);
        }
        body.to_string()
    };
    let cases: Vec<(String, &str, &str)> = vec![
        (with("origin", json!("FR")), "validation_failed", "IATA"),
        (
            with("destination", json!("J1K")),
            "validation_failed",
            "IATA",
        ),
        (
            with("destination", json!("fra")),
            "validation_failed",
            "origin and destination",
        ),
        (without("origin"), "validation_failed", "origin"),
        (
            without("departureDate"),
            "validation_failed",
            "departureDate",
        ),
        (without("travelClass"), "validation_failed", "travelClass"),
        (
            with("departureDate", json!("15.03.2027")),
            "validation_failed",
            "",
        ),
        (
            with("returnDate", json!("2027-03-14")),
            "validation_failed",
            "returnDate",
        ),
        (
            with("travelClass", json!("CARGO")),
            "validation_failed",
            "cabin",
        ),
        (with("adults", json!(0)), "validation_failed", "adults"),
        (with("adults", json!(10)), "validation_failed", "adults"),
        (with("adults", json!(-1)), "validation_failed", ""),
        (with("children", json!(9)), "validation_failed", "children"),
        (with("infants", json!(2)), "validation_failed", "infants"),
        (with("maxResults", json!("five")), "validation_failed", ""),
        ("".to_owned(), "invalid_json", "empty"),
        ("{\"origin\":".to_owned(), "invalid_json", "JSON"),
        ("[1,2]".to_owned(), "invalid_json", "JSON object"),
    ];
    for (body, code, fragment) in cases {
        let (status, reply, _) = call(&deps, post(&body)).await;
        assert_eq!(status, 400, "{body}: {reply}");
        assert_eq!(reply["error"]["code"], json!(code), "{body}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(fragment), "{body}: {message}");
    }
}

#[tokio::test]
async fn lower_case_codes_are_accepted() {
    let fake = fake().await;
    token_endpoint().expect(1).mount(&fake.server).await;
    offers_for(FIXTURE_TOKEN)
        .and(wiremock::matchers::query_param("originLocationCode", "FRA"))
        .and(wiremock::matchers::query_param(
            "destinationLocationCode",
            "JFK",
        ))
        .respond_with(offers_reply())
        .expect(1)
        .mount(&fake.server)
        .await;
    let body = r#"{"origin":"fra","destination":"jfk","departureDate":"2027-03-15","travelClass":"economy"}"#;
    let (status, reply, _) = call(&deps(&fake).await, post(body)).await;
    assert_eq!(status, 200, "{reply}");
}

#[tokio::test]
async fn oversized_body_is_a_413() {
    let fake = untouched_fake().await;
    let body = json!({"origin": "FRA", "destination": "JFK", "departureDate": "2027-03-15",
        "travelClass": "ECONOMY", "padding": "x".repeat(300 * 1024)});
    let (status, reply, _) = call(&deps(&fake).await, post(&body.to_string())).await;
    assert_eq!(status, 413, "{reply}");
    assert_eq!(reply["error"]["code"], json!("payload_too_large"));
}

#[tokio::test]
async fn only_post_is_allowed() {
    let fake = untouched_fake().await;
    let deps = deps(&fake).await;
    for method in [Method::GET, Method::PUT, Method::DELETE] {
        let mut req = post(SEARCH);
        *req.method_mut() = method.clone();
        let response = cash_search::handle(&deps, req).await;
        assert_eq!(response.status(), 405, "{method}");
        assert_eq!(
            response.headers().get("allow").map(|v| v.as_bytes()),
            Some(&b"POST"[..])
        );
        let body: serde_json::Value =
            serde_json::from_str(&body_text(&response)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(body["error"]["code"], json!("method_not_allowed"));
    }
}
