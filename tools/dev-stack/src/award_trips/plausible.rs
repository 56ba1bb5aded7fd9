//! What makes the fake's award seats believable to a traveller: a programme's seats are on
//! airlines it books (its own and its alliance's), non-stop only where that airline has a
//! hub at one end and else through a hub on the way; miles by distance and cabin, rising
//! with the cabin, each programme's chart a little different.

use serde_json::{Value, json};
use test_support::airports;

use super::{CABINS, home_carrier, miles, seed};

const STAR: &[&str] = &["LH", "UA", "AC", "TK", "SQ", "LX", "OS"];
const ONEWORLD: &[&str] = &["AA", "BA", "QR", "AS"];
const SKYTEAM: &[&str] = &["DL", "AF", "KL", "VS"];

/// The airlines each programme books besides its own.
const PARTNERS: &[(&str, &[&str])] = &[
    ("aeroplan", STAR),
    ("united", STAR),
    ("lifemiles", STAR),
    ("lufthansa", STAR),
    ("turkish", STAR),
    ("singapore", STAR),
    ("eurobonus", STAR),
    ("connectmiles", STAR),
    ("ethiopian", STAR),
    ("alaska", ONEWORLD),
    ("american", ONEWORLD),
    ("qantas", ONEWORLD),
    ("qatar", ONEWORLD),
    ("finnair", ONEWORLD),
    ("delta", SKYTEAM),
    ("flyingblue", SKYTEAM),
    ("virginatlantic", SKYTEAM),
    ("aeromexico", SKYTEAM),
    ("saudia", SKYTEAM),
    ("smiles", SKYTEAM),
    ("emirates", &["QF"]),
    ("velocity", &["SQ"]),
    ("azul", &["UA"]),
];

/// Economy miles one way by great-circle distance (up to so many km).
const ECONOMY_BY_DISTANCE: &[(f64, u64)] = &[
    (1_500.0, 10_000),
    (3_500.0, 17_500),
    (6_000.0, 27_500),
    (9_000.0, 35_000),
    (f64::MAX, 45_000),
];

/// Each cabin's miles as a multiple of economy, in tenths.
const CABIN_TENTHS: &[(&str, u64)] = &[("Y", 10), ("W", 16), ("J", 22), ("F", 32)];

/// Makes `item` (an availability moved to `origin`–`destination`) believable: each cabin
/// with seats gets an airline its programme books that flies the route (non-stop from or to
/// its hub, else through one on the way) and a price from the programme's chart; a cabin
/// no such airline flies has no seats. `false` when no cabin is left.
pub(super) fn fit(item: &mut Value, origin: &str, destination: &str) -> bool {
    let source = item["Source"].as_str().unwrap_or_default().to_owned();
    let own = home_carrier(&source);
    let partners = PARTNERS
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(&source))
        .map_or(&[][..], |(_, p)| *p);
    let bookable: Vec<&str> = own.into_iter().chain(partners.iter().copied()).collect();
    let non_stop = bookable
        .iter()
        .find(|c| airports::is_hub(c, origin) || airports::is_hub(c, destination))
        .copied();
    let connecting = bookable
        .iter()
        .find(|c| airports::carrier_hub(c, origin, destination).is_some())
        .copied();
    let mut left = false;
    for (letter, _, _) in CABINS {
        if miles(item, letter).is_none() {
            continue;
        }
        // The recorded non-stop flag picks which way the seat goes, where both exist.
        let wants_direct = item[format!("{letter}Direct")].as_bool() != Some(false);
        let choice = match (non_stop, connecting) {
            (Some(c), _) if wants_direct => Some((c, true)),
            (_, Some(c)) => Some((c, false)),
            (Some(c), None) => Some((c, true)),
            (None, None) => None,
        };
        let Some((carrier, direct)) = choice else {
            item[format!("{letter}Available")] = json!(false);
            item[format!("{letter}RemainingSeats")] = json!(0);
            item[format!("{letter}MileageCost")] = json!("0");
            continue;
        };
        item[format!("{letter}Airlines")] = json!(carrier);
        item[format!("{letter}Direct")] = json!(direct);
        // Seats.aero writes availability costs as strings.
        item[format!("{letter}MileageCost")] =
            json!(chart(&source, letter, origin, destination).to_string());
        left = true;
    }
    left
}

/// The programme's price for the cabin on the route: economy by distance, times the
/// cabin's factor, times the programme's own 0.90–1.20, to the nearest 500.
pub(super) fn chart(source: &str, letter: &str, origin: &str, destination: &str) -> u64 {
    let km = airports::distance_km(origin, destination).unwrap_or(6_000.0);
    let economy = ECONOMY_BY_DISTANCE
        .iter()
        .find(|(up_to, _)| km <= *up_to)
        .map_or(45_000, |(_, miles)| *miles);
    let tenths = CABIN_TENTHS
        .iter()
        .find(|(l, _)| *l == letter)
        .map_or(10, |(_, t)| *t);
    let programme = 90 + seed(source) % 31;
    let miles = economy * tenths * programme / 1_000;
    (miles + 250) / 500 * 500
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(source: &str, carrier: &str) -> Value {
        let mut item = json!({"Source": source});
        for letter in ["Y", "W", "J", "F"] {
            item[format!("{letter}Available")] = json!(true);
            item[format!("{letter}MileageCost")] = json!(12_500);
            item[format!("{letter}Airlines")] = json!(carrier);
            item[format!("{letter}Direct")] = json!(true);
        }
        item
    }

    #[test]
    fn seats_are_on_airlines_the_programme_books_that_fly_the_route() {
        // Alaska's own airline has no hub at FRA or JFK: a oneworld partner through its hub.
        let mut alaska = item("alaska", "AS");
        assert!(fit(&mut alaska, "FRA", "JFK"));
        let carrier = alaska["JAirlines"].as_str().unwrap_or_default();
        assert!(["AA", "BA"].contains(&carrier), "{alaska}");
        assert_eq!(alaska["JDirect"], json!(false), "{alaska}");
        // Virgin's partner Delta has its hub at JFK: non-stop.
        let mut virgin = item("virginatlantic", "VS");
        assert!(fit(&mut virgin, "FRA", "JFK"));
        assert_eq!(
            (virgin["JAirlines"].as_str(), virgin["JDirect"].as_bool()),
            (Some("DL"), Some(true))
        );
        // Miles & More: Lufthansa from its hub.
        let mut lufthansa = item("lufthansa", "LH");
        assert!(fit(&mut lufthansa, "FRA", "JFK"));
        assert_eq!(lufthansa["YAirlines"], json!("LH"));
    }

    #[test]
    fn miles_rise_with_the_cabin_and_fit_the_distance() {
        for source in ["lufthansa", "alaska", "aeroplan", "virginatlantic"] {
            let mut row = item(source, "LH");
            assert!(fit(&mut row, "FRA", "JFK"));
            let cost = |l: &str| miles(&row, l).unwrap_or(0);
            let (y, w, j, f) = (cost("Y"), cost("W"), cost("J"), cost("F"));
            assert!(y < w && w < j && j < f, "{source}: {y} {w} {j} {f}");
            // A transatlantic economy seat: 25,000 to 45,000 miles, never 12,500.
            assert!((25_000..=45_000).contains(&y), "{source}: {y}");
            assert!((50_000..=95_000).contains(&j), "{source}: {j}");
            assert_eq!(y % 500, 0);
        }
        // A short hop costs less than a long haul in the same cabin.
        assert!(chart("lufthansa", "Y", "FRA", "MUC") < chart("lufthansa", "Y", "FRA", "SIN"));
    }
}
