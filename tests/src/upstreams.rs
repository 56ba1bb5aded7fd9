//! Fakes of the flight upstreams answering from the fixtures, for tests and benches that need
//! a working Seats.aero or Amadeus rather than a particular failure.

use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{fixture, fixture_json};

/// Seats.aero: `GET /search` (cached search) and every `GET /trips/{id}`.
pub async fn mount_seatsaero(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path("/search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture_json(
            "seatsaero/cached_search_response.docs-example.json",
        )))
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"^/trips/[^/]+$"))
        .respond_with(ResponseTemplate::new(200).set_body_json(fixture_json(
            "seatsaero/get_trips_response.docs-example.json",
        )))
        .mount(server)
        .await;
}

/// Amadeus: the OAuth token endpoint and flight-offers search, for any credentials.
pub async fn mount_amadeus(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/v1/security/oauth2/token"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("amadeus/oauth2_token_response.amadeus-java.json"),
            "application/json",
        ))
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v2/shopping/flight-offers"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            fixture("amadeus/flight_offers_search_response.amadeus-java.json"),
            "application/vnd.amadeus+json",
        ))
        .mount(server)
        .await;
}
