//! The fake Seats.aero's data: the recorded availabilities fitted to a search, and a trip of
//! its own for each of them.
//!
//! A search answers what the real one would: the recorded availabilities moved to the asked
//! route and window, only those with seats in the asked cabin, on airlines their programme
//! books that fly the route, at prices by distance and cabin (`plausible`), and only those
//! of the asked programmes (`sources`; recorded rows are relabelled when too few are of
//! them, so asking for Miles & More gives `lufthansa` rows flown by LH). Every availability gets an id of
//! its own per route and date, so the trip lookups that follow cannot mix two searches.
//!
//! `/trips/{id}` then answers that availability's trips, one per cabin it has seats in:
//! its own departure time and flight numbers (by its place in the recording), its cabin's
//! mileage cost, taxes and seats, non-stop or via the carrier's hub as its `…Direct` field
//! says, and booking links for the asked route and date.

mod plausible;

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Map, Value, json};
use shared::domain::loyalty::PROGRAMMES;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, Duration, OffsetDateTime, PrimitiveDateTime, Time};

use crate::reshape::{Route, days_between, first_date, shift_dates};
use test_support::airports;

/// Seats.aero's cabin letters, their API names and award fare classes.
const CABINS: &[(&str, &str, &str)] = &[
    ("Y", "economy", "X"),
    ("W", "premium", "W"),
    ("J", "business", "I"),
    ("F", "first", "O"),
];

/// Local departure times; an availability's place in the recording picks one. The rows of
/// one day are neighbours there (at most 7 of them), so they leave at different times.
const DEPARTURES: &[(u8, u8)] = &[
    (10, 15),
    (13, 40),
    (7, 5),
    (17, 25),
    (11, 55),
    (20, 10),
    (8, 45),
    (15, 30),
    (22, 5),
    (6, 20),
];

/// Time between a connection's two flights.
const LAYOVER_MINUTES: i64 = 110;

/// When a search names fewer of the asked programmes than this, other rows are relabelled.
const MIN_ROWS: usize = 4;

/// The airline of each programme, for relabelled rows.
const HOME_CARRIERS: &[(&str, &str)] = &[
    ("aeroplan", "AC"),
    ("aeromexico", "AM"),
    ("alaska", "AS"),
    ("american", "AA"),
    ("azul", "AD"),
    ("connectmiles", "CM"),
    ("delta", "DL"),
    ("emirates", "EK"),
    ("ethiopian", "ET"),
    ("etihad", "EY"),
    ("eurobonus", "SK"),
    ("finnair", "AY"),
    ("flyingblue", "AF"),
    ("jetblue", "B6"),
    ("lifemiles", "AV"),
    ("lufthansa", "LH"),
    ("qantas", "QF"),
    ("qatar", "QR"),
    ("saudia", "SV"),
    ("singapore", "SQ"),
    ("smiles", "G3"),
    ("turkish", "TK"),
    ("united", "UA"),
    ("velocity", "VA"),
    ("virginatlantic", "VS"),
];

/// Programmes that pass the airlines' fuel surcharges on to award tickets.
const SURCHARGING: &[&str] = &[
    "lufthansa",
    "virginatlantic",
    "flyingblue",
    "qatar",
    "emirates",
    "eurobonus",
];

/// A `GET /search` as the fake reads it.
#[derive(Debug, Clone)]
pub struct AwardQuery {
    /// Route and first day of the window.
    pub route: Route,
    /// Last day of the window; `None`: no end.
    pub end: Option<Date>,
    /// Seats.aero's cabin name (`business`); `None`: any.
    pub cabin: Option<String>,
    /// Seats.aero source ids, lower case; empty: all.
    pub sources: Vec<String>,
}

/// The recorded search reply fitted to `query`, and the place of each of its availabilities
/// in the recording: their trips' departure times and flight numbers follow it, so an
/// availability keeps its flight whichever search (with or without a cabin) answered it.
pub fn fit_search(fixture: &Value, query: &AwardQuery, now: OffsetDateTime) -> (Value, Vec<usize>) {
    let mut body = fixture.clone();
    let route = &query.route;
    if let Some(first) = first_date(&body, "Date") {
        shift_dates(&mut body, days_between(first, route.date));
    }
    let items = body["data"].as_array().cloned().unwrap_or_default();
    let mut items: Vec<(usize, Value)> = items
        .into_iter()
        .enumerate()
        .filter(|(_, item)| in_window(item, route.date, query.end))
        .collect();
    choose_sources(&mut items, &query.sources);
    // Only airlines the programme books that fly the route, at its chart's prices.
    items.retain_mut(|(_, item)| plausible::fit(item, &route.origin, &route.destination));
    items.retain(|(_, item)| query.cabin.as_deref().is_none_or(|c| has_cabin(item, c)));
    let compact = route.date.to_string().replace('-', "");
    // Microseconds, as Seats.aero writes them.
    let now = now
        .replace_nanosecond(now.microsecond() * 1_000)
        .unwrap_or(now);
    for (row, (_, item)) in items.iter_mut().enumerate() {
        item["Route"]["OriginAirport"] = json!(route.origin);
        item["Route"]["DestinationAirport"] = json!(route.destination);
        let id = item["ID"].as_str().unwrap_or("availability");
        item["ID"] = json!(format!(
            "{id}{}{}{compact}",
            route.origin, route.destination
        ));
        // Seats.aero's cache is minutes to hours old, never in the future.
        let seen = now - Duration::minutes(7 + 23 * row as i64);
        item["UpdatedAt"] = json!(seen.format(&Rfc3339).unwrap_or_default());
        let created = seen - Duration::days(3);
        item["CreatedAt"] = json!(created.format(&Rfc3339).unwrap_or_default());
    }
    let (places, items): (Vec<usize>, Vec<Value>) = items.into_iter().unzip();
    body["count"] = json!(items.len());
    body["hasMore"] = json!(false);
    body["data"] = Value::Array(items);
    (body, places)
}

fn in_window(item: &Value, start: Date, end: Option<Date>) -> bool {
    match item["Date"]
        .as_str()
        .and_then(|d| Date::parse(d, format_description!("[year]-[month]-[day]")).ok())
    {
        Some(date) => date >= start && end.is_none_or(|end| date <= end),
        None => false,
    }
}

fn has_cabin(item: &Value, cabin: &str) -> bool {
    CABINS
        .iter()
        .find(|(_, name, _)| name.eq_ignore_ascii_case(cabin))
        .is_none_or(|(letter, _, _)| miles(item, letter).is_some())
}

/// The cabin's mileage cost when it has seats.
fn miles(item: &Value, letter: &str) -> Option<u64> {
    let available = item[format!("{letter}Available")].as_bool() == Some(true)
        || item[format!("{letter}RemainingSeats")]
            .as_u64()
            .is_some_and(|s| s > 0);
    let cost = &item[format!("{letter}MileageCost")];
    let cost = cost
        .as_u64()
        .or_else(|| cost.as_str().and_then(|c| c.trim().parse().ok()))?;
    (available && cost > 0).then_some(cost)
}

/// Keeps the rows of the asked programmes; relabels others to them while there are fewer
/// than [`MIN_ROWS`].
fn choose_sources(items: &mut Vec<(usize, Value)>, sources: &[String]) {
    if sources.is_empty() {
        return;
    }
    let of_theirs = |item: &Value| {
        item["Source"]
            .as_str()
            .is_some_and(|s| sources.iter().any(|w| w.eq_ignore_ascii_case(s)))
    };
    let mut wanted = items.iter().filter(|(_, i)| of_theirs(i)).count();
    let mut next = 0;
    items.retain_mut(|(_, item)| {
        if of_theirs(item) {
            return true;
        }
        if wanted >= MIN_ROWS {
            return false;
        }
        relabel(item, &sources[next % sources.len()]);
        next += 1;
        wanted += 1;
        true
    });
}

/// Makes a recorded row one of `source`'s, flown by its airline.
fn relabel(item: &mut Value, source: &str) {
    item["Source"] = json!(source);
    item["Route"]["Source"] = json!(source);
    let Some(carrier) = home_carrier(source) else {
        return;
    };
    for (letter, _, _) in CABINS {
        let key = format!("{letter}Airlines");
        if item[&key].as_str().is_some_and(|a| !a.trim().is_empty()) {
            item[&key] = json!(carrier);
        }
    }
}

fn home_carrier(source: &str) -> Option<&'static str> {
    HOME_CARRIERS
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(source))
        .map(|(_, c)| *c)
}

/// The trips reply for `availability` (as [`fit_search`] answered it, with its `place`).
/// `template` is the recorded trips reply.
pub fn trips_reply(template: &Value, availability: &Value, place: usize, route: &Route) -> Value {
    let trips: Vec<Value> = CABINS
        .iter()
        .filter_map(|cabin| trip(template, availability, place, route, *cabin))
        .collect();
    let point = |code: &str| {
        airports::coordinates(code)
            .map_or(Value::Null, |(lat, lon)| json!({"Lat": lat, "Lon": lon}))
    };
    let source = availability["Source"].as_str().unwrap_or_default();
    json!({
        "data": trips,
        "origin_coordinates": point(&route.origin),
        "destination_coordinates": point(&route.destination),
        "booking_links": booking_links(template, route, source),
    })
}

/// The recorded links, their route and date moved to `route`'s, primary the one of the
/// availability's programme.
fn booking_links(template: &Value, route: &Route, source: &str) -> Value {
    let segments = &template["data"][0]["AvailabilitySegments"];
    let recorded = (
        segments[0]["OriginAirport"].as_str().unwrap_or_default(),
        segments
            .as_array()
            .and_then(|s| s.last())
            .and_then(|s| s["DestinationAirport"].as_str())
            .unwrap_or_default(),
        first_date(template, "DepartsAt").map(|d| d.to_string()),
    );
    let names: &[&str] = PROGRAMMES
        .iter()
        .find(|p| p.source.eq_ignore_ascii_case(source))
        .map_or(&[], |p| p.names);
    let links = template["booking_links"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let links: Vec<Value> = links
        .into_iter()
        .filter_map(|mut link| {
            let moved = move_link(link["link"].as_str()?, &recorded, route)?;
            let label = link["label"].as_str().unwrap_or_default();
            let primary = names.iter().any(|n| label.contains(n));
            link["link"] = json!(moved);
            link["primary"] = json!(primary);
            Some(link)
        })
        .collect();
    Value::Array(links)
}

/// `link` with the query values that were the recorded route and date replaced by the
/// asked ones; `None` when it cannot be read (the link is left out rather than wrong).
fn move_link(link: &str, recorded: &(&str, &str, Option<String>), route: &Route) -> Option<String> {
    let mut url = reqwest::Url::parse(link).ok()?;
    let (from, to, date) = recorded;
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| {
            let v = match v.as_ref() {
                v if v == *from => route.origin.clone(),
                v if v == *to => route.destination.clone(),
                v if Some(v) == date.as_deref() => route.date.to_string(),
                v => v.to_owned(),
            };
            (k.into_owned(), v)
        })
        .collect();
    if !pairs.is_empty() {
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
    Some(url.to_string())
}

/// One cabin's trip of the availability, when the cabin has seats.
fn trip(
    template: &Value,
    availability: &Value,
    place: usize,
    route: &Route,
    (letter, cabin, fare_class): (&str, &str, &str),
) -> Option<Value> {
    let cost = miles(availability, letter)?;
    let source = availability["Source"].as_str().unwrap_or_default();
    let id = availability["ID"].as_str().unwrap_or_default();
    let seed = seed(id);
    let carrier = availability[format!("{letter}Airlines")]
        .as_str()
        .and_then(|a| a.split(',').map(str::trim).find(|c| !c.is_empty()))
        .or_else(|| home_carrier(source))
        .unwrap_or("LH");
    let flights = Flights {
        template: &template["data"][1]["AvailabilitySegments"][0],
        availability,
        trip_id: format!("{id}{letter}"),
        carrier,
        // Numbers in a band of their own per place: no two rows of a search share one.
        number: 100 + place as u64 * 23 + seed % 20,
        fare_class,
    };
    let direct = availability[format!("{letter}Direct")].as_bool() != Some(false);
    let (segments, elapsed) = flights.segments(route, place, direct);
    let numbers: Vec<&str> = segments
        .iter()
        .filter_map(|s| s["FlightNumber"].as_str())
        .collect();
    let seats = availability[format!("{letter}RemainingSeats")]
        .as_u64()
        .filter(|s| *s > 0)
        .unwrap_or(2 + seed % 7);
    let updated = &availability["UpdatedAt"];
    let fields = json!({
        "ID": flights.trip_id,
        "RouteID": availability["RouteID"],
        "AvailabilityID": id,
        "TotalDuration": elapsed,
        "Stops": segments.len().saturating_sub(1),
        "Carriers": carrier,
        "RemainingSeats": seats,
        "MileageCost": cost,
        "TotalTaxes": taxes(availability, letter, source, seed),
        "TaxesCurrency": "USD",
        "TaxesCurrencySymbol": "$",
        "AllianceCost": cost,
        "FlightNumbers": numbers.join(", "),
        "DepartsAt": segments.first().map_or(Value::Null, |s| s["DepartsAt"].clone()),
        "ArrivesAt": segments.last().map_or(Value::Null, |s| s["ArrivesAt"].clone()),
        "Cabin": cabin,
        "CreatedAt": updated,
        "UpdatedAt": updated,
        "Source": source,
        "AvailabilitySegments": segments,
    });
    Some(merged(&template["data"][0], fields))
}

/// The flights of one trip.
struct Flights<'a> {
    /// A recorded segment, the shape of the generated ones.
    template: &'a Value,
    availability: &'a Value,
    trip_id: String,
    carrier: &'a str,
    /// The first flight's number; a connection's second is 1000 more.
    number: u64,
    fare_class: &'a str,
}

impl Flights<'_> {
    /// The segments on `route`'s day, leaving at the `place`-th time, non-stop or via the
    /// carrier's hub; and the minutes from departure to arrival.
    fn segments(&self, route: &Route, place: usize, direct: bool) -> (Vec<Value>, i64) {
        let (o, d) = (route.origin.as_str(), route.destination.as_str());
        let legs: Vec<(&str, &str)> = if direct {
            vec![(o, d)]
        } else {
            let hub = airports::any_hub(self.carrier, o, d);
            vec![(o, hub), (hub, d)]
        };
        let (hour, minute) = DEPARTURES[place % DEPARTURES.len()];
        let mut departs = PrimitiveDateTime::new(
            route.date,
            Time::from_hms(hour, minute, 0).unwrap_or(Time::MIDNIGHT),
        );
        let updated = &self.availability["UpdatedAt"];
        let mut segments = Vec::new();
        let mut elapsed = 0;
        for (k, (from, to)) in legs.iter().enumerate() {
            if k > 0 {
                departs += Duration::minutes(LAYOVER_MINUTES);
                elapsed += LAYOVER_MINUTES;
            }
            let minutes = airports::flight_minutes(from, to);
            let arrives = airports::local_arrival(from, to, departs, minutes);
            let fields = json!({
                "ID": format!("{}{k}", self.trip_id),
                "RouteID": self.availability["RouteID"],
                "AvailabilityID": self.availability["ID"],
                "AvailabilityTripID": self.trip_id,
                "FlightNumber": format!("{}{}", self.carrier, self.number + k as u64 * 1_000),
                "Distance": airports::distance_km(from, to).map(|km| (km * 0.621) as u64),
                "FareClass": self.fare_class,
                "AircraftCode": aircraft(from, to),
                "AircraftName": aircraft(from, to),
                "OriginAirport": from,
                "DestinationAirport": to,
                "DepartsAt": seats_time(departs),
                "ArrivesAt": seats_time(arrives),
                "CreatedAt": updated,
                "UpdatedAt": updated,
                "Source": self.availability["Source"],
                "Order": k,
            });
            segments.push(merged(self.template, fields));
            departs = arrives;
            elapsed += minutes;
        }
        (segments, elapsed)
    }
}

/// Taxes in cents: the availability's when it says, else what the programme typically asks
/// (with fuel surcharges, or just the airport taxes).
fn taxes(availability: &Value, letter: &str, source: &str, seed: u64) -> u64 {
    if let Some(taxes) = availability[format!("{letter}TotalTaxes")]
        .as_u64()
        .filter(|t| *t > 0)
    {
        return taxes;
    }
    if SURCHARGING.iter().any(|s| s.eq_ignore_ascii_case(source)) {
        let by_cabin = match letter {
            "Y" => 18_000,
            "W" => 25_000,
            "J" => 42_000,
            _ => 52_000,
        };
        by_cabin + seed % 40 * 100
    } else {
        560 + seed % 25 * 100
    }
}

/// Seats.aero's aircraft code: a narrow-body on short legs, else the recorded wide-body.
fn aircraft(from: &str, to: &str) -> &'static str {
    match airports::distance_km(from, to) {
        Some(km) if km < 3_000.0 => "32N",
        _ => "77W",
    }
}

/// Seats.aero writes local times with a `Z`.
fn seats_time(at: PrimitiveDateTime) -> String {
    at.format(format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second]Z"
    ))
    .unwrap_or_default()
}

/// A number that stays the same for the same id.
pub(crate) fn seed(id: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    id.hash(&mut hasher);
    hasher.finish()
}

/// `template` (an object, or nothing) with `fields` set on it.
fn merged(template: &Value, fields: Value) -> Value {
    let mut object = template.as_object().cloned().unwrap_or_else(Map::new);
    if let Value::Object(fields) = fields {
        object.extend(fields);
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use time::macros::{date, datetime};

    use super::*;

    const NOW: OffsetDateTime = datetime!(2027-01-10 12:00 UTC);

    fn search() -> Value {
        test_support::fixture_json("seatsaero/cached_search_response.docs-example.json")
    }

    fn trips_template() -> Value {
        test_support::fixture_json("seatsaero/get_trips_response.docs-example.json")
    }

    fn query(sources: &[&str], cabin: Option<&str>) -> AwardQuery {
        let day = date!(2027 - 03 - 15);
        AwardQuery {
            route: Route {
                origin: "FRA".into(),
                destination: "JFK".into(),
                date: day,
            },
            end: Some(day),
            cabin: cabin.map(str::to_owned),
            sources: sources.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn rows(body: &Value) -> Vec<Value> {
        body["data"].as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn a_search_answers_the_window_and_cabin_with_ids_of_its_own() {
        let (body, places) = fit_search(&search(), &query(&[], Some("first")), NOW);
        assert_eq!(places.len(), rows(&body).len());
        let rows = rows(&body);
        assert!(!rows.is_empty());
        assert_eq!(body["count"], json!(rows.len()));
        for row in &rows {
            assert_eq!(row["Date"], "2027-03-15");
            assert_eq!(row["Route"]["OriginAirport"], "FRA");
            assert_eq!(row["FAvailable"], true, "{row}");
            assert!(
                row["ID"]
                    .as_str()
                    .is_some_and(|id| id.ends_with("FRAJFK20270315"))
            );
            let seen = row["UpdatedAt"].as_str().unwrap_or_default();
            let seen = OffsetDateTime::parse(seen, &Rfc3339).unwrap_or_else(|e| panic!("{e}"));
            assert!(seen < NOW);
        }
        let ids: HashSet<&str> = rows.iter().filter_map(|r| r["ID"].as_str()).collect();
        assert_eq!(ids.len(), rows.len());
    }

    #[test]
    fn asked_programmes_get_rows_of_their_own() {
        let (body, _) = fit_search(&search(), &query(&["lufthansa"], None), NOW);
        let rows = rows(&body);
        assert_eq!(rows.len(), MIN_ROWS);
        for row in &rows {
            assert_eq!(row["Source"], "lufthansa");
            assert_eq!(row["JAirlines"], "LH");
        }
        // The recorded alaska rows are enough to answer alaska alone.
        let (body, _) = fit_search(&search(), &query(&["alaska"], None), NOW);
        assert!(rows_of(&body).iter().all(|s| s == "alaska"));
    }

    fn rows_of(body: &Value) -> Vec<String> {
        rows(body)
            .iter()
            .filter_map(|r| r["Source"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn every_availability_has_trips_of_its_own_on_the_asked_route_and_day() {
        let q = query(&[], Some("business"));
        let (body, places) = fit_search(&search(), &q, NOW);
        let template = trips_template();
        let mut departures = HashSet::new();
        let mut numbers = HashSet::new();
        for (row, place) in rows(&body).iter().zip(places) {
            let reply = trips_reply(&template, row, place, &q.route);
            let trips = reply["data"].as_array().cloned().unwrap_or_default();
            let business = trips
                .iter()
                .find(|t| t["Cabin"] == "business")
                .cloned()
                .unwrap_or_else(|| panic!("no business trip: {reply}"));
            let cost: u64 = row["JMileageCost"]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or_default();
            assert_eq!(business["MileageCost"], json!(cost));
            let segments = business["AvailabilitySegments"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(segments[0]["OriginAirport"], "FRA");
            assert_eq!(segments[segments.len() - 1]["DestinationAirport"], "JFK");
            assert_eq!(business["Stops"], json!(segments.len() - 1));
            assert_eq!(row["JDirect"] == true, segments.len() == 1, "{row}");
            let departs = business["DepartsAt"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(departs.starts_with("2027-03-15T"), "{departs}");
            assert!(
                departures.insert(departs),
                "two rows leave at the same time"
            );
            assert!(numbers.insert(business["FlightNumbers"].to_string()));
            let first_carrier = row["JAirlines"].as_str().unwrap_or_default();
            assert!(first_carrier.starts_with(business["Carriers"].as_str().unwrap_or("?")));
            for link in reply["booking_links"].as_array().into_iter().flatten() {
                let link = link["link"].as_str().unwrap_or_default();
                assert!(
                    !link.contains("CUN") && !link.contains("2024-05-01"),
                    "{link}"
                );
            }
        }
        assert!(departures.len() >= 5, "{departures:?}");
    }

    #[test]
    fn booking_links_name_the_asked_route_and_the_programmes_link_comes_first() {
        let q = query(&["aeroplan"], None);
        let links = booking_links(&trips_template(), &q.route, "aeroplan");
        let aeroplan = links
            .as_array()
            .and_then(|l| l.iter().find(|l| l["primary"] == true))
            .cloned()
            .unwrap_or_default();
        assert_eq!(aeroplan["label"], "Book via Air Canada Aeroplan");
        let link = aeroplan["link"].as_str().unwrap_or_default();
        assert!(
            link.contains("org0=FRA")
                && link.contains("dest0=JFK")
                && link.contains("departureDate0=2027-03-15"),
            "{link}"
        );
    }
}
