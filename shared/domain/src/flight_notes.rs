//! What a flight row says besides its price and times, in the user's language: for an award
//! seat the seats left (or "seats unknown": several programmes report none) and how long
//! ago the upstream saw it; for a cash fare one-way or round trip; the fare's terms. The
//! chat message and the terminal client show the same notes (the web client has its own
//! copy of these rules in TypeScript).

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::flight::{FlightResult, Locale};
use super::money;

/// The row's notes, in display order.
pub fn notes(flight: &FlightResult, locale: Locale, now: OffsetDateTime) -> Vec<String> {
    let de = locale == Locale::De;
    let mut notes = Vec::new();
    if flight.provider.is_cash() {
        notes.push(trip_kind(flight.inbound.is_some(), de).to_owned());
    } else {
        notes.push(seats(flight.seats_left, de));
        notes.extend(seen(flight.seen_at.as_deref(), now, de));
    }
    // The fare's terms ("fare: Light", "changes: free"); bare flags repeat the stops.
    notes.extend(flight.tags.iter().filter(|t| t.contains(':')).cloned());
    notes
}

/// "Also via: Air Canada Aeroplan 70,000 miles; …": the other programmes that price the
/// same flight, per person.
pub fn also_via(flight: &FlightResult, locale: Locale) -> Option<String> {
    if flight.other_programs.is_empty() {
        return None;
    }
    let options: Vec<String> = flight
        .other_programs
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o.program.as_deref().unwrap_or("?"),
                o.price_per_person
            )
        })
        .collect();
    let lead = match locale {
        Locale::De => "Auch über:",
        Locale::En => "Also via:",
    };
    Some(format!("{lead} {}", options.join("; ")))
}

/// `80000` as `80,000` (or `80.000` with `sep = '.'`): the prices' grouping
/// ([`money::grouped`]).
pub fn grouped(n: u64, sep: char) -> String {
    money::grouped(u128::from(n), sep)
}

fn trip_kind(round_trip: bool, de: bool) -> &'static str {
    match (round_trip, de) {
        (true, true) => "Hin und zurück",
        (true, false) => "round trip",
        (false, true) => "nur Hinflug",
        (false, false) => "one-way",
    }
}

/// Seats left, or that the programme does not say.
fn seats(left: Option<u32>, de: bool) -> String {
    match (left, de) {
        (Some(n), true) => format!("{n} Plätze"),
        (Some(n), false) => format!("{n} seats"),
        (None, true) => "Plätze unbekannt".into(),
        (None, false) => "seats unknown".into(),
    }
}

/// "seen 3 h ago": when the upstream last saw the seat; nothing for a time to come or one
/// that cannot be read.
fn seen(at: Option<&str>, now: OffsetDateTime, de: bool) -> Option<String> {
    let at = OffsetDateTime::parse(at?.trim(), &Rfc3339).ok()?;
    let minutes = (now - at).whole_minutes();
    let ago = match minutes {
        ..0 => return None,
        0..60 => format!("{} min", minutes.max(1)),
        60..2880 => format!("{} h", minutes / 60),
        _ => format!("{} {}", minutes / 1440, if de { "Tagen" } else { "days" }),
    };
    Some(if de {
        format!("vor {ago} gesehen")
    } else {
        format!("seen {ago} ago")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use time::Duration;

    fn flight(provider: &str, seen_at: Option<OffsetDateTime>) -> FlightResult {
        let seen_at = seen_at.and_then(|t| t.format(&Rfc3339).ok());
        serde_json::from_value(json!({
            "id": "a", "provider": provider, "price": "1", "pricePerPerson": "1",
            "airline": "LH", "cabin": "Business", "totalStops": 0, "miles": null,
            "taxes": {"amount": null, "currency": null}, "seatsLeft": null,
            "tags": ["nonstop", "changes: free"], "seenAt": seen_at,
            "outbound": {"departure": {"airport": "FRA", "time": "t"},
                         "arrival": {"airport": "JFK", "time": "t"},
                         "duration": "8h", "stops": "Nonstop", "flightNumbers": "LH400"}
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn award_and_cash_notes_in_both_languages() {
        let now = OffsetDateTime::now_utc();
        let award = flight("seatsaero", Some(now - Duration::minutes(190)));
        assert_eq!(
            notes(&award, Locale::En, now),
            ["seats unknown", "seen 3 h ago", "changes: free"]
        );
        assert_eq!(
            notes(&award, Locale::De, now),
            ["Plätze unbekannt", "vor 3 h gesehen", "changes: free"]
        );
        let old = flight("seatsaero", Some(now - Duration::days(4)));
        assert_eq!(notes(&old, Locale::En, now)[1], "seen 4 days ago");
        let future = flight("seatsaero", Some(now + Duration::hours(1)));
        assert_eq!(
            notes(&future, Locale::En, now),
            ["seats unknown", "changes: free"]
        );
        let cash = flight("duffel", None);
        assert_eq!(notes(&cash, Locale::En, now), ["one-way", "changes: free"]);
        assert_eq!(also_via(&cash, Locale::En), None);
    }
}
