//! Fuzzing of the Seats.aero reply parsing, as property tests that the ordinary `cargo test`
//! runs: `/search` and `/trips/{id}` bodies, arbitrary JSON, structured replies with odd
//! values and mutated real fixtures, go through the search's own parsing, filtering and
//! formatting ([`seatsaero_search::flights_from_replies`]). Every body must give flights or
//! a clean upstream error, never a panic. Pure: no emulators, no network.
//!
//! Fixed case counts from a fixed seed (repeatable in CI); the seeds in `tests/fuzz-seeds/`
//! run first. Fuzz longer with `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test -p
//! seatsaero-search --test integration fuzz::`.

use std::path::Path;

use domain::Error;
use domain::flight::{Cabin, FlightResult, FlightSearchParams, Provider};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::TestCaseError;
use serde_json::{Value, json};
use test_support::fuzz::{JsonFuzz, fuzz, mutate, pointers, seeds};

const SEED: u64 = 0x5eed_5ea7_5ae0;
/// The seed inputs: `search-*` and `trips-*` bodies.
const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz-seeds");
const SEARCH_FIXTURE: &str = "seatsaero/cached_search_response.docs-example.json";
const TRIPS_FIXTURE: &str = "seatsaero/get_trips_response.docs-example.json";

/// What a search must make of any pair of bodies: flights that keep the search's promises,
/// or an upstream error.
fn check(params: &FlightSearchParams, search: &[u8], trips: &[u8]) -> Result<(), TestCaseError> {
    let flights = match seatsaero_search::flights_from_replies(params, search, trips) {
        Ok(flights) => flights,
        Err(Error::Upstream { .. }) => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("not an upstream error: {e:?}"))),
    };
    prop_assert!(flights.len() <= usize::from(params.max_results));
    prop_assert!(
        flights.windows(2).all(|w| w[0].miles <= w[1].miles),
        "not cheapest first"
    );
    for flight in &flights {
        check_flight(params, flight)?;
    }
    Ok(())
}

fn check_flight(params: &FlightSearchParams, flight: &FlightResult) -> Result<(), TestCaseError> {
    prop_assert_eq!(flight.provider, Provider::Seatsaero);
    prop_assert!(!flight.id.is_empty());
    prop_assert!(flight.miles.is_some_and(|m| m > 0), "{:?}", flight.miles);
    prop_assert!(!flight.price.is_empty() && !flight.price_per_person.is_empty());
    prop_assert_eq!(&flight.cabin, params.travel_class.display_name());
    prop_assert!(!flight.outbound.departure.airport.is_empty());
    prop_assert!(!flight.outbound.departure.time.is_empty());
    prop_assert!(
        flight
            .taxes
            .amount
            .is_none_or(|a| a.is_finite() && a >= 0.0)
    );
    prop_assert_eq!(
        flight.taxes.amount.is_some(),
        flight.taxes.currency.is_some()
    );
    if params.non_stop {
        prop_assert_eq!(flight.total_stops, 0);
    }
    serde_json::to_string(flight).map_err(|e| TestCaseError::fail(e.to_string()))?;
    Ok(())
}

fn params(
    cabin: Cabin,
    adults: u8,
    children: u8,
    non_stop: bool,
    max: u8,
    de: bool,
) -> FlightSearchParams {
    serde_json::from_value(json!({
        "origin": "SFO", "destination": "JFK", "departureDate": "2023-08-14",
        "travelClass": cabin.as_str(), "adults": adults, "children": children,
        "nonStop": non_stop, "maxResults": max, "locale": if de { "de" } else { "en" },
    }))
    .unwrap_or_else(|e| panic!("params: {e}"))
}

fn params_strategy() -> impl Strategy<Value = FlightSearchParams> {
    (
        select(&Cabin::ALL[..]),
        1u8..=9,
        0u8..=8,
        any::<bool>(),
        1u8..=20,
        any::<bool>(),
    )
        .prop_map(|(cabin, adults, children, non_stop, max, de)| {
            params(cabin, adults, children.min(9 - adults), non_stop, max, de)
        })
}

fn fixture_bytes(name: &str) -> Vec<u8> {
    test_support::fixture(name).into_bytes()
}

/// Odd scalars: blanks, signs, exponents, NaN, numbers past `u64`, non-ASCII digits.
fn odd_scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        select(
            &[
                "",
                " ",
                "0",
                "-1",
                "-0",
                "1.5",
                "1e400",
                "NaN",
                "inf",
                "true",
                "null",
                "18446744073709551616",
                "99999999999999999999999999",
                "１２３",
                "٣",
                "ü",
                "\u{0}",
                "2023-08-14T08:00:00Z",
                "2023-08-14",
                "business",
                "ECONOMY",
                "USD",
            ][..]
        )
        .prop_map(Value::from),
        select(&[0u64, 1, 4_294_967_295, 4_294_967_296, u64::MAX][..]).prop_map(Value::from),
        select(&[-1i64, i64::MIN][..]).prop_map(Value::from),
        select(&[0.5f64, -1.5, 1e19, 1.8e19, 1e308, f64::MIN_POSITIVE][..]).prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        "\\PC{0,12}".prop_map(Value::from),
        Just(Value::String("x".repeat(10_000))),
    ]
    .boxed()
}

const KEYS: &[&str] = &[
    "data",
    "count",
    "hasMore",
    "ID",
    "Route",
    "OriginAirport",
    "DestinationAirport",
    "Source",
    "TaxesCurrency",
    "JAvailable",
    "JMileageCost",
    "JRemainingSeats",
    "JAirlines",
    "JDirect",
    "JTotalTaxes",
    "YAvailable",
    "YMileageCost",
    "WMileageCost",
    "FMileageCost",
    "AvailabilitySegments",
    "TotalDuration",
    "Stops",
    "Carriers",
    "RemainingSeats",
    "MileageCost",
    "TotalTaxes",
    "FlightNumbers",
    "DepartsAt",
    "ArrivesAt",
    "Cabin",
    "FlightNumber",
    "Order",
    "booking_links",
    "label",
    "link",
];

/// Arbitrary and shaped JSON for the Seats.aero parsers.
const JSON: JsonFuzz = JsonFuzz {
    keys: KEYS,
    scalar: odd_scalar,
    depth: 4,
    size: 48,
    // Objects never get all their fields (a booking link is a label or a link): as it was,
    // so the inputs from SEED stay the same.
    every_key: false,
};

/// `/search` and `/trips` bodies in the right shape with odd values, so that entries get
/// past the first checks and into the filtering and formatting.
fn shaped_replies() -> impl Strategy<Value = (Value, Value)> {
    const AVAILABILITY: &[&str] = &[
        "Source",
        "TaxesCurrency",
        "JAvailable",
        "JMileageCost",
        "JRemainingSeats",
        "JAirlines",
        "JDirect",
        "JTotalTaxes",
        "YAvailable",
        "YMileageCost",
        "YRemainingSeats",
        "WAvailable",
        "WMileageCost",
        "FAvailable",
        "FMileageCost",
        "FDirect",
    ];
    const TRIP: &[&str] = &[
        "TotalDuration",
        "Stops",
        "Carriers",
        "RemainingSeats",
        "MileageCost",
        "TotalTaxes",
        "TaxesCurrency",
        "FlightNumbers",
        "OriginAirport",
        "DestinationAirport",
        "DepartsAt",
        "ArrivesAt",
        "Cabin",
        "Source",
    ];
    const SEGMENT: &[&str] = &[
        "FlightNumber",
        "OriginAirport",
        "DestinationAirport",
        "DepartsAt",
        "ArrivesAt",
        "Order",
    ];
    let availability = (
        JSON.object(AVAILABILITY),
        "[A-Za-z0-9]{1,8}",
        any::<Index>(),
    )
        .prop_map(|(mut fields, id, cabin)| {
            fields.insert("ID".into(), id.into());
            // Most entries bookable in the cabin searched, or they are all filtered out.
            let key = ["Y", "W", "J", "F"][cabin.index(4)];
            fields
                .entry(format!("{key}Available"))
                .or_insert(json!(true));
            fields
                .entry(format!("{key}MileageCost"))
                .or_insert(json!("30000"));
            Value::Object(fields)
        });
    let trip = (
        JSON.object(TRIP),
        vec(JSON.object(SEGMENT).prop_map(Value::Object), 0..4),
    )
        .prop_map(|(mut fields, segments)| {
            fields.insert("AvailabilitySegments".into(), Value::Array(segments));
            fields
                .entry("DepartsAt")
                .or_insert(json!("2023-08-14T08:00:00Z"));
            Value::Object(fields)
        });
    let link = JSON.object(&["label", "link"]).prop_map(Value::Object);
    (
        vec(availability, 0..8),
        option::of(odd_scalar()),
        vec(trip, 0..4),
        vec(link, 0..3),
    )
        .prop_map(|(data, count, trips, links)| {
            (
                json!({"data": data, "count": count, "hasMore": true}),
                json!({"data": trips, "booking_links": links}),
            )
        })
}

#[test]
fn seeds_and_fixtures() {
    let mut searches = seeds(Path::new(SEEDS), "search-");
    searches.push((SEARCH_FIXTURE.into(), fixture_bytes(SEARCH_FIXTURE)));
    let mut trips = seeds(Path::new(SEEDS), "trips-");
    trips.push((TRIPS_FIXTURE.into(), fixture_bytes(TRIPS_FIXTURE)));
    for cabin in Cabin::ALL {
        for (adults, children, non_stop, de) in [
            (1, 0, false, false),
            (2, 7, false, true),
            (9, 0, true, false),
        ] {
            let params = params(cabin, adults, children, non_stop, 20, de);
            for (search_name, search) in &searches {
                for (trips_name, trips) in &trips {
                    if let Err(e) = check(&params, search, trips) {
                        panic!("{search_name} + {trips_name}, {cabin:?}: {e}");
                    }
                }
            }
        }
    }
    // The fixtures themselves give flights.
    let params = params(Cabin::Business, 1, 0, false, 20, false);
    let flights = seatsaero_search::flights_from_replies(
        &params,
        &fixture_bytes(SEARCH_FIXTURE),
        &fixture_bytes(TRIPS_FIXTURE),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!flights.is_empty());
}

#[test]
fn arbitrary_json_and_bytes() {
    let trips = fixture_bytes(TRIPS_FIXTURE);
    let body = prop_oneof![
        3 => JSON.value().prop_map(|v| v.to_string().into_bytes()),
        1 => vec(any::<u8>(), 0..64),
    ];
    fuzz(
        SEED,
        6000,
        (params_strategy(), body.clone(), body),
        |(params, search, other)| {
            check(&params, &search, &trips)?;
            check(&params, &search, &other)
        },
    );
}

#[test]
fn shaped_replies_with_odd_values() {
    fuzz(
        SEED,
        1500,
        (params_strategy(), shaped_replies()),
        |(params, (search, trips))| {
            check(
                &params,
                search.to_string().as_bytes(),
                trips.to_string().as_bytes(),
            )
        },
    );
}

#[test]
fn mutated_fixtures() {
    let search = test_support::fixture_json(SEARCH_FIXTURE);
    let trips = test_support::fixture_json(TRIPS_FIXTURE);
    let (search_paths, trips_paths) = (pointers(&search), pointers(&trips));
    fuzz(
        SEED,
        600,
        (
            params_strategy(),
            vec(JSON.mutation(), 0..12),
            vec(JSON.mutation(), 0..12),
            any::<Index>(),
        ),
        |(params, search_mutations, trips_mutations, cut)| {
            let (mut search, mut trips) = (search.clone(), trips.clone());
            mutate(&mut search, &search_paths, &search_mutations);
            mutate(&mut trips, &trips_paths, &trips_mutations);
            let trips = trips.to_string().into_bytes();
            check(&params, search.to_string().as_bytes(), &trips)?;
            // And a body cut short.
            check(
                &params,
                search.to_string().as_bytes(),
                &trips[..cut.index(trips.len() + 1)],
            )
        },
    );
}
