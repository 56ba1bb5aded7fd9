//! Flight rows a traveller can trust, through the router with the real award function over
//! its upstream fake: the programme on every award row, one row per itinerary with a priced
//! option per programme, booking links only for the row's own trip, and an empty cabin
//! said in the answer with what the other cabins have (English and German).

use crate::common;

use crate::common::Rig;
use serde_json::{Value, json};
use shared::domain::tool_output::FlightSearchOutput;
use test_support::fake_llm::Reply;
use wiremock::matchers::{method, path, path_regex, query_param};
use wiremock::{Mock, ResponseTemplate};

fn availability(id: &str, source: &str, date: &str) -> Value {
    json!({"ID": id, "Source": source, "Date": date, "JAvailable": true,
           "JMileageCost": "60000", "JRemainingSeats": 0,
           "UpdatedAt": "2026-01-01T00:00:00Z",
           "Route": {"OriginAirport": "FRA", "DestinationAirport": "JFK"}})
}

/// The same LH400 flight as each programme's trip, at its own price.
fn trip(source: &str, miles: u64, date: &str, links: Value) -> Value {
    json!({"data": [{
        "Cabin": "business", "MileageCost": miles, "TotalTaxes": 4174, "TaxesCurrency": "EUR",
        "Source": source, "DepartsAt": format!("{date}T10:00:00Z"),
        "ArrivesAt": format!("{date}T12:45:00Z"), "FlightNumbers": "LH400", "Stops": 0,
        "TotalDuration": 525, "Carriers": "LH",
        "AvailabilitySegments": [{"FlightNumber": "LH400", "OriginAirport": "FRA",
            "DestinationAirport": "JFK", "DepartsAt": format!("{date}T10:00:00Z"),
            "ArrivesAt": format!("{date}T12:45:00Z"), "Order": 0}]
    }], "booking_links": links})
}

async fn mount(rig: &Rig, route: &str, reply: Value) {
    let mock = if route == "/search" {
        Mock::given(method("GET")).and(path("/search"))
    } else {
        Mock::given(method("GET")).and(path(route))
    };
    mock.respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .with_priority(1)
        .mount(&rig.functions.seats_upstream)
        .await;
}

#[tokio::test]
async fn one_flight_from_two_programmes_is_one_row_with_two_options() {
    let rig = Rig::start().await;
    let args = common::flight_args();
    let date = args["depart_date"].as_str().unwrap_or_default().to_owned();
    mount(
        &rig,
        "/search",
        json!({"data": [availability("av-ac", "aeroplan", &date),
                        availability("av-ua", "united", &date)], "count": 2}),
    )
    .await;
    let own = format!(
        "https://www.aircanada.com/aeroplan/redeem?org0=FRA&dest0=JFK&departureDate0={date}"
    );
    let links = json!([
        {"label": "Book via Air Canada Aeroplan", "link": own},
        {"label": "Book via United", "link": "https://www.united.com/x?f=CUN&t=IST&d=2024-05-01"}
    ]);
    mount(&rig, "/trips/av-ac", trip("aeroplan", 60_000, &date, links)).await;
    mount(
        &rig,
        "/trips/av-ua",
        trip("united", 70_000, &date, json!([])),
    )
    .await;
    let user = test_support::unique("rows");
    let token = rig.token(&user);
    rig.llm.push(Reply::tool_call("search_flights", args));
    let turn = rig
        .chat(Some(&token), json!({"message": "FRA to JFK in business"}))
        .await;

    let data = &turn.first("tool_result")["result"];
    test_support::assert_fits_schema::<FlightSearchOutput>(data);
    let result = &data["seatsResult"]["results"];
    assert_eq!(result["count"], json!(1), "{result}");
    let row = &result["flights"][0];
    assert_eq!(row["program"], json!("Air Canada Aeroplan"), "{row}");
    assert_eq!(
        row["otherPrograms"][0]["program"],
        json!("United MileagePlus")
    );
    assert_eq!(row["otherPrograms"][0]["miles"], json!(70_000));
    // Its own programme's page, for this trip; Seats.aero's list (another route's United
    // link among it) is not passed on. The other programme carries its own link.
    let links: Vec<&String> = row["bookingLinks"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(links, ["Book with Air Canada Aeroplan"], "{row}");
    let url = row["bookingLinks"]["Book with Air Canada Aeroplan"].to_string();
    assert!(url.contains(&format!("departureDate0={date}")), "{url}");
    assert!(url.contains("org0=FRA&dest0=JFK"), "{url}");
    assert!(!row.to_string().contains("CUN"), "{row}");
    let other: Vec<&String> = row["otherPrograms"][0]["bookingLinks"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(other, ["Book with United MileagePlus"], "{row}");
    assert_eq!(row["option"], json!(1), "the row carries its number: {row}");
    let text = rig.tool_message(&user, &turn).await;
    assert!(
        text.contains("1. Air Canada Aeroplan (LH): 60,000 miles"),
        "{text}"
    );
    assert!(text.contains("seats unknown"), "{text}");
    assert!(
        text.contains("Also via: United MileagePlus 70,000 miles"),
        "{text}"
    );
    assert!(
        !text.contains("\n2. Air Canada") && !text.contains("\n2. United"),
        "{text}"
    );
}

#[tokio::test]
async fn an_empty_cabin_is_said_with_what_exists_in_english_and_german() {
    let rig = Rig::start().await;
    let mut args = common::flight_args();
    args["cabin"] = json!("FIRST");
    let date = args["depart_date"].as_str().unwrap_or_default().to_owned();
    Mock::given(method("GET"))
        .and(path("/search"))
        .and(query_param("cabin", "first"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [], "count": 0})))
        .with_priority(1)
        .mount(&rig.functions.seats_upstream)
        .await;
    mount(
        &rig,
        "/search",
        json!({"data": [availability("av-j", "aeroplan", &date)], "count": 1}),
    )
    .await;
    // No trip of the other cabins is looked up: the search's summary says enough.
    Mock::given(method("GET"))
        .and(path_regex("^/trips/"))
        .respond_with(ResponseTemplate::new(500))
        .with_priority(1)
        .expect(0)
        .mount(&rig.functions.seats_upstream)
        .await;
    for (message, expected) in [
        (
            "First class FRA to JFK",
            "No First award seats found; Business from 60,000 miles.",
        ),
        (
            "Und in der First Class von Frankfurt nach New York?",
            "Keine Prämienplätze in First gefunden; Business ab 60.000 Meilen.",
        ),
    ] {
        let token = rig.token(&test_support::unique("empty"));
        rig.llm
            .push(Reply::tool_call("search_flights", args.clone()));
        let turn = rig.chat(Some(&token), json!({"message": message})).await;
        let text = turn.text();
        assert!(text.contains(expected), "{message}: {text}");
    }
}
