//! Fuzzing of the Amadeus reply parsing, as property tests that the ordinary `cargo test`
//! runs: flight-offers bodies (arbitrary JSON, structured offers with odd values, mutated
//! real fixtures) go through `OffersReply` and `normalise::flights`, and price and
//! duration texts through `format`. Every body must give flights or a clean error, never a
//! panic. Pure: no emulators, no network.
//!
//! Fixed case counts from a fixed seed (repeatable in CI); the seeds in `tests/fuzz-seeds/`
//! run first. Fuzz longer with `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test -p
//! amadeus-search --test fuzz`.

use std::path::Path;

use amadeus_search::format::{Amount, duration_text, price_text};
use amadeus_search::normalise;
use amadeus_search::offers::OffersReply;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use shared::domain::flight::{Cabin, FlightSearchParams, Locale, Provider};

const SEED: u64 = 0x05ee_da3a_de05;
const OFFERS_FIXTURE: &str = "amadeus/flight_offers_search_response.amadeus-java.json";

/// Runs `test` on `cases` inputs (or `PROPTEST_CASES`) from a fixed seed (or
/// `PROPTEST_RNG_SEED`); a failing input is shrunk and reported.
fn fuzz<S: Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let defaults = Config::default();
    let config = Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            defaults.cases
        } else {
            cases
        },
        rng_seed: if std::env::var_os("PROPTEST_RNG_SEED").is_some() {
            defaults.rng_seed
        } else {
            RngSeed::Fixed(SEED)
        },
        failure_persistence: None,
        ..defaults
    };
    if let Err(e) = TestRunner::new(config).run(&strategy, test) {
        panic!("{e}");
    }
}

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

/// What `format` promises for any text.
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

/// The seeds in `tests/fuzz-seeds/` whose names start with `prefix`.
fn seeds(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-seeds");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.display().to_string();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, bytes)
        })
        .collect()
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

/// Arbitrary JSON, objects keyed mostly by the field names the parser reads.
fn json_value() -> BoxedStrategy<Value> {
    let key =
        prop_oneof![3 => select(KEYS).prop_map(String::from).boxed(), 1 => "\\PC{0,6}".boxed()];
    odd_scalar()
        .prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                vec(inner.clone(), 0..5).prop_map(Value::Array),
                btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
}

/// An object with some of `keys`, each an odd scalar or arbitrary JSON.
fn object(keys: &'static [&'static str]) -> impl Strategy<Value = Map<String, Value>> {
    vec(
        (
            select(keys),
            prop_oneof![4 => odd_scalar(), 1 => json_value()],
        ),
        0..keys.len() + 1,
    )
    .prop_map(|fields| fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// Offers in the right shape with odd values, so they get past the first checks and into
/// the price, duration and itinerary formatting.
fn shaped_reply() -> impl Strategy<Value = Value> {
    let endpoint = object(&["iataCode", "at"]).prop_map(Value::Object).boxed();
    let segment = (
        object(&["carrierCode", "number"]),
        endpoint.clone(),
        endpoint,
    )
        .prop_map(|(mut fields, departure, arrival)| {
            fields.insert("departure".into(), departure);
            fields.insert("arrival".into(), arrival);
            Value::Object(fields)
        });
    let itinerary =
        (object(&["duration"]), vec(segment, 0..4)).prop_map(|(mut fields, segments)| {
            fields.insert("segments".into(), Value::Array(segments));
            Value::Object(fields)
        });
    let price = object(&["currency", "total", "base", "grandTotal"])
        .prop_map(Value::Object)
        .boxed();
    let traveller = (
        object(&["travelerType"]),
        price.clone(),
        vec(object(&["cabin"]), 0..3),
    )
        .prop_map(|(mut fields, price, fares)| {
            fields.insert("price".into(), price);
            let fares = fares.into_iter().map(Value::Object).collect();
            fields.insert("fareDetailsBySegment".into(), Value::Array(fares));
            Value::Object(fields)
        });
    let offer = (
        object(&[
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

/// Every JSON pointer into `value`.
fn pointers(value: &Value, at: &str, out: &mut Vec<String>) {
    out.push(at.to_owned());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(v, &format!("{at}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A change to one place of a fixture.
#[derive(Debug, Clone)]
enum Mutation {
    Remove(Index),
    Replace(Index, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => any::<Index>().prop_map(Mutation::Remove),
        3 => (any::<Index>(), odd_scalar()).prop_map(|(at, v)| Mutation::Replace(at, v)),
        1 => (any::<Index>(), json_value()).prop_map(|(at, v)| Mutation::Replace(at, v)),
    ]
}

fn mutate(value: &mut Value, paths: &[String], mutations: &[Mutation]) {
    for m in mutations {
        let (Mutation::Remove(at) | Mutation::Replace(at, _)) = m;
        let path = &paths[at.index(paths.len())];
        let Some((parent, last)) = path.rsplit_once('/') else {
            continue;
        };
        match m {
            Mutation::Remove(_) => match value.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.remove(&last.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(items)) => {
                    if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                        items.remove(i);
                    }
                }
                _ => {}
            },
            Mutation::Replace(_, new) => {
                if let Some(slot) = value.pointer_mut(path) {
                    *slot = new.clone();
                }
            }
        }
    }
}

#[test]
fn seeds_and_fixture() {
    let mut bodies = seeds("offers-");
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
    for (name, bytes) in seeds("amounts") {
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
        4 => json_value().prop_map(|v| v.to_string().into_bytes()),
        1 => vec(any::<u8>(), 0..64),
    ];
    fuzz(6000, (params_strategy(), body), |(params, body)| {
        check(&params, &body)
    });
}

#[test]
fn shaped_offers_with_odd_values() {
    fuzz(
        1500,
        (params_strategy(), shaped_reply()),
        |(params, reply)| check(&params, reply.to_string().as_bytes()),
    );
}

#[test]
fn mutated_fixture() {
    let fixture = test_support::fixture_json(OFFERS_FIXTURE);
    let mut paths = Vec::new();
    pointers(&fixture, "", &mut paths);
    fuzz(
        3000,
        (params_strategy(), vec(mutation(), 0..12), any::<Index>()),
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
    fuzz(20000, (amount_text(), 0u32..=12), |(text, people)| {
        check_texts(&text, people)
    });
}
