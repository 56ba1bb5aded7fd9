//! `--alerts` for a person: each fare alert as its summary, when it was checked, and what it
//! found (`--json` keeps one JSON object a line, for scripts).

use serde_json::Value;
use shared::domain::alert::FareAlert;
use shared::domain::flight::Locale;

use crate::printable::printable;

/// The alerts of a `GET /alerts` reply, as lines to print. An alert that does not read as
/// one is printed as it came, on one line.
pub fn readable(alerts: &[Value]) -> Vec<String> {
    if alerts.is_empty() {
        return vec!["no fare alerts".to_owned()];
    }
    let mut lines = Vec::new();
    for (n, raw) in (1..).zip(alerts) {
        let Ok(alert) = serde_json::from_value::<FareAlert>(raw.clone()) else {
            lines.push(printable(&raw.to_string()));
            continue;
        };
        lines.push(format!("{n}. {}", alert.args().summary(Locale::En)));
        let checked = match (&alert.last_checked_at, &alert.next_check_at) {
            (None, Some(next)) => format!("not checked yet, first check {next}"),
            (Some(last), Some(next)) => format!("checked {last}, next {next}"),
            (Some(last), None) => format!("checked {last}; its days are over"),
            (None, None) => "its days are over".to_owned(),
        };
        lines.push(format!("   id {} · {}", alert.id, printable(&checked)));
        match alert.matches.first() {
            None => lines.push("   nothing found yet".to_owned()),
            Some(newest) => {
                let f = &newest.flight;
                let count = alert.matches.len();
                let found = if count == 1 {
                    "1 match".to_owned()
                } else {
                    format!("{count} matches, newest")
                };
                lines.push(printable(&format!(
                    "   {found}: {} {}, {} {} → {} {}, {} ({})",
                    f.airline,
                    f.flight_numbers,
                    f.departure.airport,
                    f.departure.time,
                    f.arrival.airport,
                    f.arrival.time,
                    f.price,
                    f.cabin,
                )));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_alert_reads_as_its_summary_its_checks_and_its_newest_match() {
        let alert = json!({"id": "01JD", "origin": "FRA", "destination": "JFK",
            "date_from": "2027-03-01", "date_to": "2027-03-15", "cabin": "BUSINESS",
            "max_miles": 80000, "created_at": "2026-11-23T17:40:02Z",
            "last_checked_at": "2026-11-23T18:00:04Z", "next_check_at": "2026-11-23T18:59:04Z",
            "matches": [{"key": "k", "found_at": "2026-11-23T18:00:03Z",
                "flight": {"provider": "seatsaero", "airline": "TK", "flight_numbers": "TK184",
                    "date": "2027-03-03", "departure": {"airport": "FRA", "time": "2027-03-03T14:00"},
                    "arrival": {"airport": "JFK", "time": "2027-03-04T10:10"}, "stops": 0,
                    "cabin": "Business", "price": "70,000 miles + $41.74", "miles": 70000,
                    "taxes": {"amount": 41.74, "currency": "USD"}}}]});
        let lines = readable(&[alert, json!({"odd": "\u{1b}]0;x\u{7}"})]);
        assert_eq!(
            lines,
            [
                "1. Fare alert FRA → JFK, 1–15 Mar 2027, business, at most 80,000 miles",
                "   id 01JD · checked 2026-11-23T18:00:04Z, next 2026-11-23T18:59:04Z",
                "   1 match: TK TK184, FRA 2027-03-03T14:00 → JFK 2027-03-04T10:10, 70,000 miles + $41.74 (Business)",
                "{\"odd\":\"\\u001b]0;x\\u0007\"}",
            ]
        );
        assert_eq!(readable(&[]), ["no fare alerts"]);
    }
}
