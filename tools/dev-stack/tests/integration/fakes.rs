//! The local stack's upstream fakes answer with the recorded data moved to the question's
//! route and date, and Duffel with offers generated for it.

use std::collections::HashSet;

use dev_stack::fakes::{self, Ports};
use serde_json::{Value, json};

#[tokio::test]
async fn recorded_answers_fit_the_requested_route_and_date() {
    let running = fakes::start(Ports {
        llm: None,
        seatsaero: Some(0),
        amadeus: Some(0),
        duffel: None,
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
        duffel: None,
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

/// Each availability of a search has a trip of its own (the demo's award rows differ), and
/// a search for a programme answers that programme's rows.
#[tokio::test]
async fn every_award_row_has_its_own_trip_and_programmes_are_honoured() {
    let running = fakes::start(Ports {
        seatsaero: Some(0),
        ..Ports::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let seats = running
        .seatsaero
        .as_ref()
        .map(|s| s.uri())
        .unwrap_or_default();
    let http = reqwest::Client::new();
    let get = |url: String| {
        let http = http.clone();
        async move {
            let answer = http.get(url).send().await.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(answer.status(), 200);
            answer.json::<Value>().await.unwrap_or_default()
        }
    };
    let day = test_support::future_date();
    let search = get(format!(
        "{seats}/search?origin_airport=MUC&destination_airport=SIN&cabin=business\
         &start_date={day}&end_date={day}&sources=lufthansa,aeroplan"
    ))
    .await;
    let rows = search["data"].as_array().cloned().unwrap_or_default();
    assert!(rows.len() >= 4, "{search}");
    let mut departures = HashSet::new();
    for row in &rows {
        assert_eq!(row["Date"], day.as_str());
        let source = row["Source"].as_str().unwrap_or_default();
        assert!(["lufthansa", "aeroplan"].contains(&source), "{source}");
        let id = row["ID"].as_str().unwrap_or_default();
        let trips = get(format!("{seats}/trips/{id}")).await;
        let trip = trips["data"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["Cabin"] == "business"))
            .cloned()
            .unwrap_or_else(|| panic!("no business trip for {id}: {trips}"));
        assert_eq!(trip["AvailabilityID"], id);
        assert_eq!(trip["Source"], source);
        // An airline the programme books that flies MUC–SIN: Lufthansa from its hub; for
        // Aeroplan, whose own airline does not, a Star Alliance partner that does.
        let carrier = trip["Carriers"].as_str().unwrap_or_default();
        let flies = if source == "lufthansa" {
            &["LH"][..]
        } else {
            &["LH", "SQ"][..]
        };
        assert!(flies.contains(&carrier), "{source}: {carrier}");
        let departs = trip["DepartsAt"].as_str().unwrap_or_default().to_owned();
        assert!(departs.starts_with(&day), "{departs}");
        assert!(departures.insert(departs), "two rows share a departure");
        let segments = trip["AvailabilitySegments"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(segments[0]["OriginAirport"], "MUC");
        assert_eq!(segments[segments.len() - 1]["DestinationAirport"], "SIN");
        for link in trips["booking_links"].as_array().into_iter().flatten() {
            let link = link["link"].as_str().unwrap_or_default();
            assert!(!link.contains("CUN") && !link.contains("IST"), "{link}");
        }
    }
}

/// The fake Duffel answers the function's request for any route and date, and refuses one
/// without a token.
#[tokio::test]
async fn the_duffel_fake_prices_any_route_and_wants_a_token() {
    let running = fakes::start(Ports {
        duffel: Some(0),
        ..Ports::default()
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let duffel = running.duffel.as_ref().map(|s| s.uri()).unwrap_or_default();
    let url = format!("{duffel}/air/offer_requests?return_offers=true&supplier_timeout=10000");
    let day = test_support::clock::date_in(45).to_string();
    let back = test_support::clock::date_in(52).to_string();
    let body = json!({"data": {
        "slices": [{"origin": "MUC", "destination": "SIN", "departure_date": day},
                   {"origin": "SIN", "destination": "MUC", "departure_date": back}],
        "passengers": [{"type": "adult"}, {"type": "child"}],
        "cabin_class": "premium_economy",
    }});
    let http = reqwest::Client::new();
    let answer = http
        .post(&url)
        .bearer_auth("duffel_test_local")
        .header("Duffel-Version", "v2")
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(answer.status(), 201);
    let reply: Value = answer.json().await.unwrap_or_default();
    let offers = reply["data"]["offers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(offers.len(), 5);
    for offer in &offers {
        assert_eq!(offer["slices"].as_array().map(Vec::len), Some(2));
        let out = &offer["slices"][0]["segments"][0];
        assert_eq!(out["origin"]["iata_code"], "MUC");
        assert!(
            out["departing_at"]
                .as_str()
                .is_some_and(|t| t.starts_with(&day))
        );
        assert_eq!(out["passengers"][0]["cabin_class"], "premium_economy");
    }
    let refused = http
        .post(&url)
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(refused.status(), 401);
    let refused: Value = refused.json().await.unwrap_or_default();
    assert!(refused["errors"][0]["message"].is_string());
}
