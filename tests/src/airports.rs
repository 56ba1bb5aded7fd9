//! Just enough geography for the generated fares of the local fakes: where the airports the
//! stand-in knows (and the carriers' hubs) are and their UTC offset, so flight times are
//! plausible (a flight from Frankfurt to New York takes about eight hours and lands in New
//! York's afternoon) and connections go through the carrier's own hub. Offsets are standard
//! time; summer time is left out, as it does not matter for a demo.

use time::{Duration, PrimitiveDateTime};

/// An airport: IATA code, city, latitude, longitude, UTC offset in minutes.
struct Airport(&'static str, &'static str, f64, f64, i64);

const AIRPORTS: &[Airport] = &[
    Airport("FRA", "Frankfurt", 50.033, 8.570, 60),
    Airport("MUC", "Munich", 48.354, 11.786, 60),
    Airport("BER", "Berlin", 52.366, 13.503, 60),
    Airport("HAM", "Hamburg", 53.630, 9.988, 60),
    Airport("DUS", "Düsseldorf", 51.289, 6.767, 60),
    Airport("VIE", "Vienna", 48.110, 16.570, 60),
    Airport("ZRH", "Zurich", 47.465, 8.549, 60),
    Airport("LHR", "London", 51.470, -0.454, 0),
    Airport("CDG", "Paris", 49.010, 2.548, 60),
    Airport("AMS", "Amsterdam", 52.310, 4.768, 60),
    Airport("MAD", "Madrid", 40.472, -3.561, 60),
    Airport("FCO", "Rome", 41.800, 12.239, 60),
    Airport("IST", "Istanbul", 41.262, 28.742, 180),
    Airport("JFK", "New York", 40.641, -73.778, -300),
    Airport("EWR", "Newark", 40.690, -74.174, -300),
    Airport("BOS", "Boston", 42.366, -71.010, -300),
    Airport("ORD", "Chicago", 41.974, -87.907, -360),
    Airport("DFW", "Dallas", 32.900, -97.040, -360),
    Airport("ATL", "Atlanta", 33.640, -84.427, -300),
    Airport("PHL", "Philadelphia", 39.872, -75.241, -300),
    Airport("CLT", "Charlotte", 35.214, -80.943, -300),
    Airport("IAD", "Washington", 38.944, -77.456, -300),
    Airport("SFO", "San Francisco", 37.619, -122.375, -480),
    Airport("LAX", "Los Angeles", 33.942, -118.408, -480),
    Airport("SEA", "Seattle", 47.450, -122.309, -480),
    Airport("MIA", "Miami", 25.793, -80.290, -300),
    Airport("YYZ", "Toronto", 43.677, -79.625, -300),
    Airport("YUL", "Montreal", 45.470, -73.741, -300),
    Airport("HND", "Tokyo", 35.549, 139.780, 540),
    Airport("SIN", "Singapore", 1.364, 103.991, 480),
    Airport("BKK", "Bangkok", 13.690, 100.750, 420),
    Airport("DXB", "Dubai", 25.253, 55.366, 240),
    Airport("DOH", "Doha", 25.273, 51.608, 180),
    Airport("SYD", "Sydney", -33.940, 151.175, 600),
    Airport("HKG", "Hong Kong", 22.308, 113.918, 480),
];

/// Hubs of the carriers the fakes fly, best first.
const HUBS: &[(&str, &[&str])] = &[
    ("LH", &["FRA", "MUC"]),
    ("UA", &["EWR", "IAD", "ORD", "SFO"]),
    ("AA", &["PHL", "CLT", "DFW", "ORD"]),
    ("DL", &["ATL", "JFK"]),
    ("AS", &["SEA"]),
    ("B6", &["BOS", "JFK"]),
    ("BA", &["LHR"]),
    ("VS", &["LHR"]),
    ("AF", &["CDG"]),
    ("KL", &["AMS"]),
    ("AC", &["YYZ", "YUL"]),
    ("TK", &["IST"]),
    ("QR", &["DOH"]),
    ("EK", &["DXB"]),
    ("SQ", &["SIN"]),
    ("LX", &["ZRH"]),
    ("OS", &["VIE"]),
];

/// Where a carrier without a hub on the way connects.
const ANY_HUBS: &[&str] = &[
    "AMS", "CDG", "IST", "DOH", "LHR", "FRA", "DXB", "SIN", "ORD",
];

/// How much longer than the direct way a connection may be, as a factor.
const MAX_DETOUR: f64 = 1.3;

/// Minutes of a flight between two airports the table does not both know.
const UNKNOWN_FLIGHT_MINUTES: i64 = 420;

fn airport(code: &str) -> Option<&'static Airport> {
    AIRPORTS.iter().find(|a| a.0.eq_ignore_ascii_case(code))
}

/// The airport's city, when the table knows it.
pub fn city(code: &str) -> Option<&'static str> {
    airport(code).map(|a| a.1)
}

/// Latitude and longitude, when the table knows the airport.
pub fn coordinates(code: &str) -> Option<(f64, f64)> {
    airport(code).map(|a| (a.2, a.3))
}

/// Great-circle distance in km, when both airports are known.
pub fn distance_km(from: &str, to: &str) -> Option<f64> {
    let (a, b) = (airport(from)?, airport(to)?);
    let (lat1, lat2) = (a.2.to_radians(), b.2.to_radians());
    let (dlat, dlon) = ((b.2 - a.2).to_radians(), (b.3 - a.3).to_radians());
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlon / 2.0).sin().powi(2);
    Some(2.0 * 6371.0 * h.sqrt().asin())
}

/// Flying time in minutes, rounded to 5: cruise at about 820 km/h plus taxi and climb.
pub fn flight_minutes(from: &str, to: &str) -> i64 {
    match distance_km(from, to) {
        // Whole minutes of a few hours: the cast cannot overflow.
        Some(km) => ((km / 820.0 * 60.0 + 40.0) / 5.0).round() as i64 * 5,
        None => UNKNOWN_FLIGHT_MINUTES,
    }
}

/// The local arrival time of a flight leaving `from` at local `departs` after `minutes`.
pub fn local_arrival(
    from: &str,
    to: &str,
    departs: PrimitiveDateTime,
    minutes: i64,
) -> PrimitiveDateTime {
    let offset = |code: &str| airport(code).map_or(0, |a| a.4);
    departs + Duration::minutes(minutes - offset(from) + offset(to))
}

/// The hub of `carrier` the trip can connect at: neither end of it, and the shortest way
/// round when both ends are known (`None` when the carrier has no hub on the way, so it
/// flies non-stop).
pub fn carrier_hub(carrier: &str, origin: &str, destination: &str) -> Option<&'static str> {
    let hubs = HUBS
        .iter()
        .find(|(code, _)| code.eq_ignore_ascii_case(carrier))
        .map_or(&[][..], |(_, hubs)| *hubs);
    best_hub(hubs, origin, destination)
}

/// Whether `airport` is one of `carrier`'s hubs: a carrier flies non-stop only from or to
/// one of them.
pub fn is_hub(carrier: &str, airport: &str) -> bool {
    HUBS.iter()
        .find(|(code, _)| code.eq_ignore_ascii_case(carrier))
        .is_some_and(|(_, hubs)| hubs.iter().any(|h| h.eq_ignore_ascii_case(airport)))
}

/// A connection point for a trip that must stop: the carrier's hub on the way, else a big
/// one on the way.
pub fn any_hub(carrier: &str, origin: &str, destination: &str) -> &'static str {
    carrier_hub(carrier, origin, destination)
        .or_else(|| best_hub(ANY_HUBS, origin, destination))
        .unwrap_or("AMS")
}

/// Of `hubs`, the one with the shortest way from `origin` to `destination`, if that is at
/// most [`MAX_DETOUR`] times the direct way; the first one that is neither end when the
/// distances are unknown.
fn best_hub(hubs: &[&'static str], origin: &str, destination: &str) -> Option<&'static str> {
    let mut candidates = hubs
        .iter()
        .copied()
        .filter(|h| !h.eq_ignore_ascii_case(origin) && !h.eq_ignore_ascii_case(destination));
    let Some(direct) = distance_km(origin, destination) else {
        return candidates.next();
    };
    candidates
        .filter_map(|h| {
            let way = distance_km(origin, h)? + distance_km(h, destination)?;
            (way <= direct * MAX_DETOUR).then_some((way, h))
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, h)| h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn a_transatlantic_flight_takes_hours_and_lands_in_local_time() {
        let minutes = flight_minutes("FRA", "JFK");
        assert!((450..=540).contains(&minutes), "{minutes}");
        let lands = local_arrival("FRA", "JFK", datetime!(2027-03-15 10:00), minutes);
        assert_eq!(
            lands,
            datetime!(2027-03-15 10:00) + Duration::minutes(minutes - 360)
        );
        assert_eq!(flight_minutes("XXX", "JFK"), UNKNOWN_FLIGHT_MINUTES);
    }

    #[test]
    fn connections_avoid_the_trips_ends() {
        assert_eq!(carrier_hub("LH", "FRA", "JFK"), Some("MUC"));
        assert_eq!(carrier_hub("BA", "LHR", "JFK"), None);
        // The shortest way round, not a hub behind the destination.
        assert_eq!(carrier_hub("AA", "FRA", "JFK"), Some("PHL"));
        assert_eq!(
            carrier_hub("BA", "JFK", "SFO"),
            None,
            "too far out of the way"
        );
        let hub = any_hub("AS", "FRA", "JFK");
        assert!(["AMS", "CDG", "LHR"].contains(&hub), "{hub}");
        assert_eq!(any_hub("XX", "QQQ", "JFK"), "AMS");
    }
}
