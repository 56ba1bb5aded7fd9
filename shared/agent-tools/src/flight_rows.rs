//! Rows a traveller can tell apart. The same flight bookable through three mileage
//! programmes is one row with three priced options, not three rows that look alike; the
//! same cash fare listed twice is one row; a booking link that names another route or date
//! than its row is not shown.

use std::collections::BTreeMap;

use reqwest::Url;
use shared::domain::flight::{FlightLeg, FlightResult, ProgramPrice};

/// One row per itinerary (award) or per itinerary and fare (cash), in the order given: the
/// first row of an itinerary (the cheapest, as both searches sort) stands for it. Award rows
/// of the same itinerary from other programmes become its `other_programs`; a second row
/// of the same itinerary and programme is dropped.
pub(super) fn merged(flights: Vec<FlightResult>) -> Vec<FlightResult> {
    let mut rows: Vec<FlightResult> = Vec::with_capacity(flights.len());
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for flight in flights {
        let key = row_key(&flight);
        let Some(&at) = index.get(&key) else {
            index.insert(key, rows.len());
            rows.push(flight);
            continue;
        };
        let row = &mut rows[at];
        let known = std::iter::once(&row.program)
            .chain(row.other_programs.iter().map(|o| &o.program))
            .any(|p| *p == flight.program);
        if !flight.provider.is_cash() && !known {
            row.other_programs.push(ProgramPrice::of(&flight));
            row.other_programs.extend(flight.other_programs);
        }
    }
    rows
}

/// What makes two rows the same: the kind of search, the cabin and each leg's airports,
/// times and flights; for cash also the price and the fare's terms (its tags).
fn row_key(flight: &FlightResult) -> String {
    let leg = |l: &FlightLeg| {
        let numbers: Vec<String> = l
            .flight_numbers
            .split(',')
            .map(|n| {
                n.split_whitespace()
                    .collect::<String>()
                    .to_ascii_uppercase()
            })
            .collect();
        format!(
            "{} {} {} {} {}",
            l.departure.airport,
            l.departure.time,
            l.arrival.airport,
            l.arrival.time,
            numbers.join(",")
        )
    };
    let mut key = format!(
        "{} {} | {} | {}",
        flight.provider.is_cash(),
        flight.cabin,
        leg(&flight.outbound),
        flight.inbound.as_ref().map(leg).unwrap_or_default()
    );
    if flight.provider.is_cash() {
        key.push_str(&format!(" | {} | {}", flight.price, flight.tags.join(";")));
    }
    key
}

/// Drops the booking links (of the row and of its other programmes) that name another
/// route or date than the row's. Returns how many went.
pub(super) fn drop_links_of_other_trips(flight: &mut FlightResult) -> usize {
    let leg = &flight.outbound;
    let date = leg.departure.time.get(..10).unwrap_or_default().to_owned();
    let trip = [
        leg.departure.airport.clone(),
        leg.arrival.airport.clone(),
        date,
    ];
    let mut dropped = keep_fitting(&mut flight.booking_links, &trip);
    for option in &mut flight.other_programs {
        dropped += keep_fitting(&mut option.booking_links, &trip);
    }
    dropped
}

fn keep_fitting(links: &mut Option<BTreeMap<String, String>>, trip: &[String; 3]) -> usize {
    let Some(map) = links.as_mut() else {
        return 0;
    };
    let before = map.len();
    map.retain(|_, url| link_fits(url, trip));
    let dropped = before - map.len();
    if map.is_empty() {
        *links = None;
    }
    dropped
}

/// A link fits its row unless its query names airports or dates: then it must name the
/// row's origin, destination and departure date. A link that names neither (a programme's
/// search page) fits any row.
fn link_fits(url: &str, [origin, destination, date]: &[String; 3]) -> bool {
    let Ok(url) = Url::parse(url) else {
        return false;
    };
    let values: Vec<String> = url.query_pairs().map(|(_, v)| v.into_owned()).collect();
    let codes: Vec<&str> = values
        .iter()
        .map(String::as_str)
        .filter(|v| v.len() == 3 && v.bytes().all(|b| b.is_ascii_uppercase()))
        .collect();
    let dates: Vec<&str> = values
        .iter()
        .map(String::as_str)
        .filter(|v| is_iso_date(v))
        .collect();
    let route_fits = codes.is_empty()
        || (codes.contains(&origin.as_str()) && codes.contains(&destination.as_str()));
    let date_fits = dates.is_empty() || dates.contains(&date.as_str());
    route_fits && date_fits
}

fn is_iso_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(program: &str, miles: u64, numbers: &str) -> FlightResult {
        serde_json::from_value(json!({
            "id": format!("{program}-{miles}"), "provider": "seatsaero",
            "price": format!("{miles} miles"), "pricePerPerson": format!("{miles} miles"),
            "airline": "LH", "cabin": "Business", "totalStops": 0, "miles": miles,
            "taxes": {"amount": null, "currency": null}, "seatsLeft": null,
            "program": program,
            "outbound": {"departure": {"airport": "FRA", "time": "2027-03-01T10:00"},
                         "arrival": {"airport": "JFK", "time": "2027-03-01T12:45"},
                         "duration": "8h 45m", "stops": "Nonstop", "flightNumbers": numbers}
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn one_itinerary_from_three_programmes_is_one_row_with_options() {
        let rows = merged(vec![
            row("Miles & More", 60_000, "LH400"),
            row("Air Canada Aeroplan", 70_000, "LH 400"),
            row("Miles & More", 65_000, "LH400"),
            row("United MileagePlus", 80_000, "lh400"),
            row("Miles & More", 90_000, "LH402"),
        ]);
        assert_eq!(rows.len(), 2);
        let options: Vec<_> = rows[0]
            .other_programs
            .iter()
            .map(|o| (o.program.as_deref(), o.miles))
            .collect();
        assert_eq!(
            options,
            [
                (Some("Air Canada Aeroplan"), Some(70_000)),
                (Some("United MileagePlus"), Some(80_000))
            ]
        );
        assert_eq!(rows[1].outbound.flight_numbers, "LH402");
    }

    #[test]
    fn the_same_cash_fare_twice_is_one_row_but_two_fares_are_two() {
        let cash = |price: &str, tags: &[&str]| {
            let mut f = row("", 0, "LH400");
            f.provider = shared::domain::flight::Provider::Duffel;
            f.program = None;
            f.price = price.into();
            f.tags = tags.iter().map(|t| (*t).to_owned()).collect();
            f
        };
        let rows = merged(vec![
            cash("€900", &["fare: Light"]),
            cash("€900", &["fare: Light"]),
            cash("€1,200", &["fare: Flex"]),
        ]);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.other_programs.is_empty()));
    }

    #[test]
    fn links_for_another_route_or_date_are_not_shown() {
        let mut f = row("Air Canada Aeroplan", 60_000, "LH400");
        f.booking_links = Some(BTreeMap::from([
            ("own".into(), "https://www.aircanada.com/x?org0=FRA&dest0=JFK&departureDate0=2027-03-01&marketCode=INT".into()),
            ("other route".into(), "https://www.aircanada.com/x?org0=CUN&dest0=IST&departureDate0=2027-03-01".into()),
            ("other date".into(), "https://www.united.com/x?f=FRA&t=JFK&d=2024-05-01".into()),
            ("search page".into(), "https://www.lifemiles.com/fly/find".into()),
        ]));
        f.other_programs.push(ProgramPrice::of(&f));
        assert_eq!(drop_links_of_other_trips(&mut f), 4);
        let kept: Vec<&str> = f
            .booking_links
            .iter()
            .flat_map(|m| m.keys().map(String::as_str))
            .collect();
        assert_eq!(kept, ["own", "search page"]);
    }
}
