//! Cash fares from Duffel through the function's handler, against a fake Duffel (wiremock)
//! fed from Duffel's own client fixtures; the token lives in Secrets Manager (moto).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use cash_search::Config;
use domain::clock::SystemClock;
use lambda_kit::config::Env;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "duffel_test_never-shown-token";
const ONE_WAY: &str = r#"{"origin":"lhr","destination":"jfk","departureDate":"2027-06-13","travelClass":"ECONOMY","adults":1}"#;

struct Fake {
    server: MockServer,
    token_secret: String,
}

async fn fake() -> Fake {
    Fake {
        server: MockServer::start().await,
        token_secret: test_support::create_secret("duffel-token", TOKEN).await,
    }
}

fn config(fake: &Fake) -> Config {
    let env = Env::from_pairs([
        ("CASH_PROVIDER", "duffel"),
        ("DUFFEL_TOKEN_SECRET", fake.token_secret.as_str()),
        ("DUFFEL_BASE_URL", fake.server.uri().as_str()),
    ]);
    common::quick(Config::from_env(&env).unwrap_or_else(|e| panic!("config: {e}")))
}

async fn search(fake: &Fake, body: &str) -> (u16, Value, String) {
    let deps = common::deps_with(config(fake), Arc::new(SystemClock)).await;
    common::call(&deps, common::post(body)).await
}

/// An expiry an hour from now, as Duffel writes it.
fn in_an_hour() -> String {
    let at = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The offers of Duffel's `create-offer-request` fixture, still bookable.
fn fixture_offers() -> Vec<Value> {
    let mut reply =
        test_support::fixture_json("duffel/create_offer_request.duffel-api-python.json");
    let mut offers = reply["data"]["offers"]
        .as_array_mut()
        .cloned()
        .unwrap_or_default();
    for offer in &mut offers {
        offer["expires_at"] = json!(in_an_hour());
    }
    offers
}

fn reply_with(offers: Vec<Value>) -> ResponseTemplate {
    ResponseTemplate::new(201).set_body_json(json!({"data": {"offers": offers}}))
}

fn offer_requests() -> wiremock::MockBuilder {
    Mock::given(method("POST"))
        .and(path("/air/offer_requests"))
        .and(query_param("return_offers", "true"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .and(header("duffel-version", "v2"))
}

#[tokio::test]
async fn an_offer_becomes_a_row_with_its_price_conditions_and_legs() {
    let fake = fake().await;
    offer_requests()
        .respond_with(reply_with(fixture_offers()))
        .expect(1)
        .mount(&fake.server)
        .await;

    let (status, body, text) = search(&fake, ONE_WAY).await;
    assert_eq!(status, 200, "{body}");
    let flights = body["results"]["flights"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(flights.len(), 1, "{body}");
    let flight = &flights[0];
    assert_eq!(flight["provider"], "duffel");
    assert_eq!(flight["id"], "duffel-off_00009htYpSCXrwaB9DnUm0");
    assert_eq!(flight["price"], "£45.00");
    assert_eq!(flight["pricePerPerson"], "£45.00");
    assert_eq!(flight["airline"], "British Airways");
    assert_eq!(flight["cabin"], "Economy");
    assert_eq!(flight["taxes"], json!({"amount": 40.8, "currency": "GBP"}));
    assert_eq!(
        flight["tags"],
        json!([
            "nonstop",
            "fare: Basic",
            "changes: fee £100.00",
            "refund: fee £100.00"
        ])
    );
    assert_eq!(
        flight["outbound"]["departure"],
        json!({"airport": "LHR", "time": "2020-06-13T16:38"})
    );
    assert_eq!(flight["outbound"]["flightNumbers"], "BA1234");
    assert_eq!(flight["outbound"]["duration"], "2h 26m");
    assert!(flight.get("inbound").is_none(), "{flight}");
    assert!(!text.contains(TOKEN));

    let requests = fake.server.received_requests().await.unwrap_or_default();
    let sent: Value = serde_json::from_slice(&requests[0].body).unwrap_or(Value::Null);
    assert_eq!(
        sent,
        json!({"data": {"slices": [{"origin": "LHR", "destination": "JFK", "departure_date": "2027-06-13"}],
                        "passengers": [{"type": "adult"}], "cabin_class": "economy"}})
    );
}

#[tokio::test]
async fn a_german_search_gets_german_prices_and_fare_terms() {
    let fake = fake().await;
    let mut offer = fixture_offers().remove(0);
    offer["conditions"]["refund_before_departure"] = json!({"allowed": false});
    offer_requests()
        .respond_with(reply_with(vec![offer]))
        .expect(1)
        .mount(&fake.server)
        .await;

    let german = ONE_WAY.replace(r#""adults":1"#, r#""adults":1,"locale":"de""#);
    let (status, body, _) = search(&fake, &german).await;
    assert_eq!(status, 200, "{body}");
    let flight = &body["results"]["flights"][0];
    assert_eq!(flight["price"], "45,00 £");
    assert_eq!(
        flight["tags"],
        json!([
            "nonstop",
            "Tarif: Basic",
            "Umbuchung: Gebühr 100,00 £",
            "Erstattung: nicht erlaubt"
        ])
    );
    assert_eq!(flight["outbound"]["stops"], "Nonstop");
}

#[tokio::test]
async fn expired_and_round_trip_offers_never_answer_a_one_way_search() {
    let fake = fake().await;
    let mut expired = fixture_offers().remove(0);
    expired["id"] = json!("off_expired");
    expired["expires_at"] = json!("2020-01-17T10:42:14.545Z");
    let mut round_trip =
        test_support::fixture_json("duffel/get_offers.duffel-api-python.json")["data"][0].clone();
    round_trip["expires_at"] = json!(in_an_hour());
    let bookable = fixture_offers().remove(0);
    offer_requests()
        .respond_with(reply_with(vec![expired, round_trip, bookable]))
        .mount(&fake.server)
        .await;

    let (status, body, _) = search(&fake, ONE_WAY).await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["results"]["flights"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(ids, ["duffel-off_00009htYpSCXrwaB9DnUm0"]);
}

#[tokio::test]
async fn every_traveller_is_asked_for_and_the_price_is_shared_by_the_seated_ones() {
    let fake = fake().await;
    let mut offer = fixture_offers().remove(0);
    offer["total_amount"] = json!("300.00");
    let mut dearer = offer.clone();
    dearer["id"] = json!("off_dearer");
    dearer["total_amount"] = json!(450);
    dearer["conditions"] = Value::Null;
    dearer["owner"] = json!({"iata_code": "VS"});
    offer_requests()
        .respond_with(reply_with(vec![dearer, offer]))
        .mount(&fake.server)
        .await;

    let family = r#"{"origin":"lhr","destination":"jfk","departureDate":"2027-06-13","travelClass":"ECONOMY","adults":2,"children":1,"infants":1}"#;
    let (status, body, _) = search(&fake, family).await;
    assert_eq!(status, 200, "{body}");
    let flights = body["results"]["flights"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(flights.len(), 2, "{body}");
    assert_eq!(
        (
            flights[0]["price"].as_str(),
            flights[0]["pricePerPerson"].as_str()
        ),
        (Some("£300.00"), Some("£100.00"))
    );
    // Sorted cheapest first; the odd one (a number for a price, no conditions, an owner
    // without a name) is still shown.
    assert_eq!(
        (flights[1]["price"].as_str(), flights[1]["airline"].as_str()),
        (Some("£450"), Some("VS"))
    );
    assert_eq!(flights[1]["tags"], json!(["nonstop", "fare: Basic"]));
    // The owner's own site books the fare.
    assert_eq!(
        flights[1]["bookingLinks"],
        json!({"Book with Virgin Atlantic": "https://www.virginatlantic.com/"})
    );

    let requests = fake.server.received_requests().await.unwrap_or_default();
    let sent: Value = serde_json::from_slice(&requests[0].body).unwrap_or(Value::Null);
    assert_eq!(
        sent["data"]["passengers"],
        json!([{"type": "adult"}, {"type": "adult"}, {"type": "child"}, {"type": "infant_without_seat"}])
    );
}

#[tokio::test]
async fn a_rejected_search_is_said_in_our_words_and_a_refused_token_is_our_fault_not_the_callers() {
    let fake = fake().await;
    let error = |code: &str, message: &str| {
        json!({"errors": [{"code": code, "title": "Invalid", "message": message, "type": "validation_error"}],
               "meta": {"request_id": "FZW0H3HdJwKk5HMAAKxB", "status": 422}})
    };
    offer_requests()
        .respond_with(
            ResponseTemplate::new(422)
                .set_body_json(error("invalid_field", "departure_date must be after today")),
        )
        .up_to_n_times(1)
        .mount(&fake.server)
        .await;
    let (status, body, _) = search(&fake, ONE_WAY).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "validation_failed");
    assert_eq!(
        body["error"]["message"],
        "Duffel rejected the search (HTTP 422); check the airports, dates, cabin and travellers"
    );
    assert!(!body.to_string().contains("departure_date"), "{body}");

    offer_requests()
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(error("invalid_token", "The token is invalid")),
        )
        .mount(&fake.server)
        .await;
    let (status, body, text) = search(&fake, ONE_WAY).await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "upstream_error");
    assert!(
        !text.contains("The token is invalid") && !text.contains(TOKEN),
        "{text}"
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_and_garbage_is_an_upstream_error() {
    let duffel = fake().await;
    let reset = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(2));
    offer_requests()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("ratelimit-limit", "60")
                .insert_header("ratelimit-remaining", "0")
                .insert_header("ratelimit-reset", reset.as_str())
                .set_body_json(
                    json!({"errors": [{"code": "rate_limit_exceeded", "message": "slow down"}]}),
                ),
        )
        .up_to_n_times(1)
        .mount(&duffel.server)
        .await;
    offer_requests()
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&duffel.server)
        .await;
    offer_requests()
        .respond_with(reply_with(fixture_offers()))
        .mount(&duffel.server)
        .await;
    let started = std::time::Instant::now();
    let (status, body, _) = search(&duffel, ONE_WAY).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"]["count"], 1);
    assert_eq!(
        duffel
            .server
            .received_requests()
            .await
            .unwrap_or_default()
            .len(),
        3
    );
    // The 429 said when the window resets: the retry waited for it (the HTTP date has
    // whole seconds: one to two seconds from now), not for the 10 ms backoff.
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );

    let garbage = fake().await;
    offer_requests()
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("<html>maintenance</html>", "text/html"),
        )
        .mount(&garbage.server)
        .await;
    let (status, body, text) = search(&garbage, ONE_WAY).await;
    assert_eq!(status, 502, "{body}");
    assert!(!text.contains("maintenance"), "{text}");
}
