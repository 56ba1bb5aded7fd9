//! The local stack's upstream fakes answer with the recorded data moved to the question's
//! route and date.

use dev_stack::fakes::{self, Ports};
use serde_json::Value;

#[tokio::test]
async fn recorded_answers_fit_the_requested_route_and_date() {
    let running = fakes::start(Ports {
        llm: None,
        seatsaero: Some(0),
        amadeus: Some(0),
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let http = reqwest::Client::new();
    let get = |url: String| {
        let http = http.clone();
        async move {
            http.get(url)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .json::<Value>()
                .await
                .unwrap_or_default()
        }
    };
    let seats = running
        .seatsaero
        .as_ref()
        .map(|s| s.uri())
        .unwrap_or_default();
    // Days to come, as the real upstreams refuse past ones.
    let day = test_support::future_date();
    let search = get(format!(
        "{seats}/search?origin_airport=FRA&destination_airport=JFK&start_date={day}&end_date={day}"
    ))
    .await;
    let first = &search["data"][0];
    assert_eq!(first["Route"]["OriginAirport"], "FRA");
    assert_eq!(first["Route"]["DestinationAirport"], "JFK");
    assert_eq!(first["Date"], day.as_str());
    let trips = get(format!("{seats}/trips/any")).await;
    let segments = trips["data"][0]["AvailabilitySegments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(segments[0]["OriginAirport"], "FRA");
    assert_eq!(segments[segments.len() - 1]["DestinationAirport"], "JFK");
    assert!(
        segments[0]["DepartsAt"]
            .as_str()
            .is_some_and(|t| t.starts_with(&day))
    );

    let amadeus = running
        .amadeus
        .as_ref()
        .map(|s| s.uri())
        .unwrap_or_default();
    let other_day = test_support::clock::date_in(107).to_string();
    let offers = get(format!(
        "{amadeus}/v2/shopping/flight-offers?originLocationCode=MUC&destinationLocationCode=SIN&departureDate={other_day}&adults=1"
    ))
    .await;
    let leg = &offers["data"][0]["itineraries"][0]["segments"];
    assert_eq!(leg[0]["departure"]["iataCode"], "MUC");
    assert!(
        leg[0]["departure"]["at"]
            .as_str()
            .is_some_and(|t| t.starts_with(&other_day))
    );
}

/// Told to, the fake Seats.aero answers its next searches slowly, then quickly again.
#[tokio::test]
async fn the_award_fake_can_be_told_to_be_slow() {
    let running = fakes::start(Ports {
        llm: None,
        seatsaero: Some(0),
        amadeus: None,
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let seats = running
        .seatsaero
        .as_ref()
        .map(|s| s.uri())
        .unwrap_or_default();
    let http = reqwest::Client::new();
    let told = http
        .post(format!("{seats}{}", fakes::LATENCY_PATH))
        .body(r#"{"delay_ms": 600, "searches": 1}"#)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(told.status(), 204);
    let day = test_support::future_date();
    let search = || async {
        let started = std::time::Instant::now();
        let answer = http
            .get(format!(
                "{seats}/search?origin_airport=FRA&destination_airport=JFK&start_date={day}"
            ))
            .send()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer.status(), 200);
        started.elapsed()
    };
    let slow = search().await;
    let quick = search().await;
    assert!(slow >= std::time::Duration::from_millis(600), "{slow:?}");
    assert!(quick < std::time::Duration::from_millis(500), "{quick:?}");
}
