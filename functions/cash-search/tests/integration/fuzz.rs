//! Fuzzing of the Amadeus reply parsing, as property tests that the ordinary `cargo test`
//! runs: flight-offers bodies (arbitrary JSON, structured offers with odd values, mutated
//! real fixtures) go through `OffersReply` and `normalise::flights`, price texts through
//! the shared `money` formatter and duration texts through `format`. Every body must give
//! flights or a clean error, never a panic. Pure: no emulators, no network.
//!
//! Fixed case counts from a fixed seed (repeatable in CI); the seeds in `tests/fuzz-seeds/`
//! run first. Fuzz longer with `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test -p
//! cash-search --test integration fuzz::`.

use std::path::Path;

use cash_search::format::duration_text;
use cash_search::normalise;
use cash_search::offers::OffersReply;
use domain::flight::{Cabin, FlightSearchParams, Locale, Provider};
use domain::money::{Amount, price_text};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value, json};
use test_support::fuzz::{JsonFuzz, fuzz, mutate, pointers, seeds};

const SEED: u64 = 0x05ee_da3a_de05;
/// The seed inputs: `offers-*` bodies and `amounts*` texts.
const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fuzz-seeds");
const OFFERS_FIXTURE: &str = "amadeus/flight_offers_search_response.amadeus-java.json";

/// What the search makes of a body: flights that keep its promises, or a parse error
/// (which the search reports as an upstream error).
fn check(params: &FlightSearchParams, body: &[u8]) -> Result<(), TestCaseError> {
    let Ok(reply) = serde_json::from_slice::<OffersReply>(body) else {
        return Ok(());
    };
    let flights = normalise::flights(reply.into_offers(), params);
    prop_assert!(flights.len() <= usize::from(params.max_results));
    for flight in &flights {
        prop_assert_eq!(flight.provider, Provider::Amadeus);
        prop_assert!(flight.id.starts_with("amadeus-") && flight.id.len() > "amadeus-".len());
        prop_assert!(!flight.price.is_empty() && !flight.price_per_person.is_empty());
        prop_assert!(!flight.cabin.is_empty());
        prop_assert_eq!(flight.miles, None);
        prop_assert!(
            flight
                .taxes
                .amount
                .is_none_or(|a| a.is_finite() && a >= 0.0)
        );
        serde_json::to_string(flight).map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
    Ok(())
}

/// What `format` and `money` promise for any text.
fn check_texts(text: &str, people: u32) -> Result<(), TestCaseError> {
    let _ = duration_text(text);
    let Some(amount) = Amount::parse(text) else {
        return Ok(());
    };
    prop_assert!(amount.to_f64().is_finite() && amount.to_f64() >= 0.0);
    for locale in [Locale::En, Locale::De] {
        for currency in ["EUR", "USD", "CHF", ""] {
            prop_assert!(!price_text(amount, currency, locale).is_empty());
        }
    }
    if let Some(share) = amount.divided_by(people) {
        prop_assert!(share.to_f64() <= amount.to_f64() + 1e-9 * amount.to_f64().max(1.0));
        let _ = price_text(share, "EUR", Locale::De);
    }
    if let Some(rest) = amount.minus(amount) {
        prop_assert_eq!(rest.to_f64(), 0.0);
    }
    Ok(())
}

fn params(cabin: Cabin, adults: u8, children: u8, max: u8, de: bool) -> FlightSearchParams {
    serde_json::from_value(json!({
        "origin": "GIG", "destination": "MAD", "departureDate": "2027-08-01",
        "travelClass": cabin.as_str(), "adults": adults, "children": children,
        "maxResults": max, "locale": if de { "de" } else { "en" },
    }))
    .unwrap_or_else(|e| panic!("params: {e}"))
}

fn params_strategy() -> impl Strategy<Value = FlightSearchParams> {
    (
        select(&Cabin::ALL[..]),
        1u8..=9,
        0u8..=8,
        1u8..=20,
        any::<bool>(),
    )
        .prop_map(|(cabin, adults, children, max, de)| {
            params(cabin, adults, children.min(9 - adults), max, de)
        })
}

/// Prices as Amadeus writes them, and what it might write instead.
fn amount_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{1,40}(\\.[0-9]{0,8})?",
        "[ ]?[0-9]{0,3}[.,]?[0-9]{0,3}[ ]?",
        select(
            &[
                "340282366920938463463374607431768211455",
                "340282366920938463463374607431768211455.999999",
                "999999999999999999999999999999999999999.999999",
                "0.000001",
            ][..]
        )
        .prop_map(String::from),
        "P([0-9]{0,22}D)?(T([0-9]{0,22}H)?([0-9]{0,22}M)?([0-9]{0,3}S)?)?",
        "\\PC{0,12}",
    ]
}

/// Odd scalars: blanks, signs, exponents, long numbers, non-ASCII digits, wrong types.
fn odd_scalar() -> BoxedStrategy<Value> {
    prop_oneof![
        amount_text().prop_map(Value::from),
        select(
            &[
                "",
                " ",
                "-1",
                "1e3",
                "NaN",
                "ü",
                "\u{0}",
                "BUSINESS",
                "PREMIUM_ECONOMY",
                "first",
                "EUR",
                "eur",
                "2027-08-01T21:50:00",
                "2027",
                "GIG",
                "LH",
            ][..]
        )
        .prop_map(Value::from),
        select(&[0u64, 1, 4_294_967_295, 4_294_967_296, u64::MAX][..]).prop_map(Value::from),
        select(&[-1i64, i64::MIN][..]).prop_map(Value::from),
        select(&[0.5f64, -1.5, 1e19, 1e308][..]).prop_map(Value::from),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        Just(Value::String("9".repeat(5_000))),
    ]
    .boxed()
}

const KEYS: &[&str] = &[
    "data",
    "dictionaries",
    "carriers",
    "id",
    "lastTicketingDate",
    "numberOfBookableSeats",
    "itineraries",
    "duration",
    "segments",
    "departure",
    "arrival",
    "iataCode",
    "at",
    "carrierCode",
    "number",
    "price",
    "currency",
    "total",
    "base",
    "grandTotal",
    "validatingAirlineCodes",
    "travelerPricings",
    "travelerType",
    "fareDetailsBySegment",
    "cabin",
];

/// Arbitrary and shaped JSON for the flight-offers parser.
const JSON: JsonFuzz = JsonFuzz {
    keys: KEYS,
    scalar: odd_scalar,
    depth: 5,
    size: 64,
    every_key: true,
};

/// Offers in the right shape with odd values, so they get past the first checks and into
/// the price, duration and itinerary formatting.
fn shaped_reply() -> impl Strategy<Value = Value> {
    let endpoint = JSON
        .object(&["iataCode", "at"])
        .prop_map(Value::Object)
        .boxed();
    let segment = (
        JSON.object(&["carrierCode", "number"]),
        endpoint.clone(),
        endpoint,
    )
        .prop_map(|(mut fields, departure, arrival)| {
            fields.insert("departure".into(), departure);
            fields.insert("arrival".into(), arrival);
            Value::Object(fields)
        });
    let itinerary =
        (JSON.object(&["duration"]), vec(segment, 0..4)).prop_map(|(mut fields, segments)| {
            fields.insert("segments".into(), Value::Array(segments));
            Value::Object(fields)
        });
    let price = JSON
        .object(&["currency", "total", "base", "grandTotal"])
        .prop_map(Value::Object)
        .boxed();
    let traveller = (
        JSON.object(&["travelerType"]),
        price.clone(),
        vec(JSON.object(&["cabin"]), 0..3),
    )
        .prop_map(|(mut fields, price, fares)| {
            fields.insert("price".into(), price);
            let fares = fares.into_iter().map(Value::Object).collect();
            fields.insert("fareDetailsBySegment".into(), Value::Array(fares));
            Value::Object(fields)
        });
    let offer = (
        JSON.object(&[
            "id",
            "lastTicketingDate",
            "numberOfBookableSeats",
            "validatingAirlineCodes",
        ]),
        vec(itinerary, 0..3),
        price,
        vec(traveller, 0..3),
    )
        .prop_map(|(mut fields, itineraries, price, travellers)| {
            fields.insert("itineraries".into(), Value::Array(itineraries));
            fields.insert("price".into(), price);
            fields.insert("travelerPricings".into(), Value::Array(travellers));
            Value::Object(fields)
        });
    (
        vec(offer, 0..6),
        btree_map("[A-Z0-9]{2}", odd_scalar(), 0..4),
    )
        .prop_map(|(data, carriers)| {
            let carriers: Map<String, Value> = carriers.into_iter().collect();
            json!({"data": data, "dictionaries": {"carriers": carriers}})
        })
}

#[test]
fn seeds_and_fixture() {
    let mut bodies = seeds(Path::new(SEEDS), "offers-");
    bodies.push((
        OFFERS_FIXTURE.into(),
        test_support::fixture(OFFERS_FIXTURE).into_bytes(),
    ));
    for cabin in Cabin::ALL {
        for (adults, children, de) in [(1, 0, false), (2, 7, true), (9, 0, false)] {
            let params = params(cabin, adults, children, 20, de);
            for (name, body) in &bodies {
                if let Err(e) = check(&params, body) {
                    panic!("{name}, {cabin:?}: {e}");
                }
            }
        }
    }
    for (name, bytes) in seeds(Path::new(SEEDS), "amounts") {
        for line in String::from_utf8_lossy(&bytes).lines() {
            for people in [1, 2, 3, 9] {
                if let Err(e) = check_texts(line, people) {
                    panic!("{name}: {line:?}: {e}");
                }
            }
        }
    }
}

#[test]
fn arbitrary_json_and_bytes() {
    let body = prop_oneof![
        4 => JSON.value().prop_map(|v| v.to_string().into_bytes()),
        1 => vec(any::<u8>(), 0..64),
    ];
    fuzz(SEED, 6000, (params_strategy(), body), |(params, body)| {
        check(&params, &body)
    });
}

#[test]
fn shaped_offers_with_odd_values() {
    fuzz(
        SEED,
        1500,
        (params_strategy(), shaped_reply()),
        |(params, reply)| check(&params, reply.to_string().as_bytes()),
    );
}

#[test]
fn mutated_fixture() {
    let fixture = test_support::fixture_json(OFFERS_FIXTURE);
    let paths = pointers(&fixture);
    fuzz(
        SEED,
        3000,
        (
            params_strategy(),
            vec(JSON.mutation(), 0..12),
            any::<Index>(),
        ),
        |(params, mutations, cut)| {
            let mut body = fixture.clone();
            mutate(&mut body, &paths, &mutations);
            let body = body.to_string().into_bytes();
            check(&params, &body)?;
            check(&params, &body[..cut.index(body.len() + 1)])
        },
    );
}

#[test]
fn price_and_duration_texts() {
    fuzz(SEED, 20000, (amount_text(), 0u32..=12), |(text, people)| {
        check_texts(&text, people)
    });
}
