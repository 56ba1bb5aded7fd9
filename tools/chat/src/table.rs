//! Flight results of `final.tool_result`, and the flights a `flight_options` UI element
//! offers, as aligned text tables.

use serde_json::Value;
use shared::domain::flight::{FlightResult, Locale};
use shared::domain::flight_notes;
use time::OffsetDateTime;

use crate::printable::printable;

/// Rows shown per source; the LLM's answer covers the rest.
const MAX_ROWS: usize = 10;

const HEADER: [&str; 11] = [
    "source",
    "programme",
    "airline",
    "cabin",
    "depart",
    "arrive",
    "duration",
    "stops",
    "price",
    "per person",
    "notes",
];

/// The table, or `None` when the result holds no flights. `tool_result` is one flight
/// search result (`{seatsResult, cashResult}`) or, when several tools ran, a list of
/// `{tool, raw, ...}` entries. The notes are in `locale`, the turn's language.
pub fn flights(tool_result: &Value, locale: Locale) -> Option<String> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for result in flight_results(tool_result) {
        // `amadeusResult`: what chats stored before the cash search had two providers.
        for (source, keys) in [
            ("award", ["seatsResult", "seatsResult"]),
            ("cash", ["cashResult", "amadeusResult"]),
        ] {
            let list = keys.iter().map(|k| &result[k]).find(|v| !v.is_null());
            let flights = list.and_then(|v| v["results"]["flights"].as_array());
            for flight in flights.into_iter().flatten().take(MAX_ROWS) {
                rows.push(numbered(&flight["option"], source, flight, locale));
            }
        }
    }
    layout(&header(), &rows)
}

/// The columns, after the number a row is offered under (`option`, which `select_flight`
/// takes and the assistant's answer refers to); a table of rows without numbers leaves it
/// out.
fn header() -> Vec<&'static str> {
    let mut header = vec!["#"];
    header.extend(HEADER);
    header
}

fn numbered(option: &Value, source: &str, flight: &Value, locale: Locale) -> Vec<String> {
    let mut cells = vec![text(option)];
    cells.extend(row(source, flight, locale));
    cells
}

/// The flights a `ui` event of kind `flight_options` offers (`payload: {flights: [{option,
/// flight}]}`), numbered as the assistant refers to them; `None` when it offers none.
pub fn options(payload: &Value, locale: Locale) -> Option<String> {
    let offered = payload["flights"].as_array();
    let rows: Vec<Vec<String>> = offered
        .into_iter()
        .flatten()
        .take(MAX_ROWS)
        .map(|entry| {
            let flight = &entry["flight"];
            let source = match flight["provider"].as_str() {
                Some("seatsaero") => "award".to_owned(),
                Some("amadeus" | "duffel") => "cash".to_owned(),
                _ => text(&flight["provider"]),
            };
            numbered(&entry["option"], &source, flight, locale)
        })
        .collect();
    layout(&header(), &rows)
}

/// `rows` under `header`, columns aligned, a column empty in every row left out; `None`
/// without rows.
fn layout(header: &[&str], rows: &[Vec<String>]) -> Option<String> {
    if rows.is_empty() {
        return None;
    }
    let used: Vec<usize> = (0..header.len())
        .filter(|&i| {
            rows.iter()
                .any(|row| row.get(i).is_some_and(|c| !c.is_empty()))
        })
        .collect();
    let header: Vec<&str> = used.iter().map(|&i| header[i]).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            used.iter()
                .map(|&i| row.get(i).cloned().unwrap_or_default())
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    // `{:<w$}` pads by chars, which matches the widths for the text seen here (no wide CJK).
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| format!("{cell:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned()
    };
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    let mut out = vec![line(&header), rule.join("  ")];
    out.extend(rows.iter().map(|row| line(row)));
    Some(out.join("\n"))
}

fn flight_results(tool_result: &Value) -> Vec<&Value> {
    match tool_result {
        Value::Array(calls) => calls.iter().map(|call| &call["raw"]).collect(),
        one => vec![one],
    }
}

fn row(source: &str, flight: &Value, locale: Locale) -> [String; 11] {
    let leg = &flight["outbound"];
    let endpoint = |end: &Value| {
        format!("{} {}", text(&end["airport"]), short_time(&end["time"]))
            .trim()
            .to_owned()
    };
    let stops = match text(&leg["stops"]) {
        stops if stops.is_empty() => text(&flight["totalStops"]),
        stops => stops,
    };
    [
        source.to_owned(),
        text(&flight["program"]),
        text(&flight["airline"]),
        text(&flight["cabin"]),
        endpoint(&leg["departure"]),
        endpoint(&leg["arrival"]),
        text(&leg["duration"]),
        stops,
        text(&flight["price"]),
        per_person(flight),
        notes(flight, locale),
    ]
}

/// The price per person, when it differs from the total (more than one traveller).
fn per_person(flight: &Value) -> String {
    match text(&flight["pricePerPerson"]) {
        each if each == text(&flight["price"]) => String::new(),
        each => each,
    }
}

/// The same notes as the chat message (`shared::domain::flight_notes`); none for a row
/// that is not a flight result.
fn notes(flight: &Value, locale: Locale) -> String {
    let Ok(flight) = serde_json::from_value::<FlightResult>(flight.clone()) else {
        return String::new();
    };
    let mut notes = flight_notes::notes(&flight, locale, OffsetDateTime::now_utc());
    notes.extend(flight_notes::also_via(&flight, locale));
    printable(&notes.join(", "))
}

/// A cell's text: strings as they are, numbers and booleans printed, nothing for the rest.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => printable(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// `2027-03-15T10:05:00` → `2027-03-15 10:05`.
fn short_time(value: &Value) -> String {
    let text = text(value);
    match text.split_once('T') {
        Some((date, time)) => format!("{date} {}", time.get(..5).unwrap_or(time)),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A FlightResult as the flight functions send it.
    fn flight(id: &str, provider: &str, airline: &str, price: &str) -> Value {
        json!({
            "id": id,
            "provider": provider,
            "price": price,
            "pricePerPerson": price,
            "airline": airline,
            "cabin": "Business",
            "tags": ["Star Alliance"],
            "totalStops": 0,
            "miles": if provider == "seatsaero" { json!(70000) } else { Value::Null },
            "taxes": {"amount": 41.2, "currency": "USD"},
            "seatsLeft": 4,
            "outbound": {
                "departure": {"airport": "FRA", "time": "2027-03-15T10:05:00"},
                "arrival": {"airport": "JFK", "time": "2027-03-15T12:55:00"},
                "duration": "8h 50m",
                "stops": "Nonstop",
                "flightNumbers": "LH400"
            }
        })
    }

    fn search(flights: Vec<Value>) -> Value {
        json!({"success": true, "results": {"count": flights.len(), "flights": flights},
               "stats": {"totalAvailable": 12, "hasMore": true}})
    }

    #[test]
    fn the_notes_are_in_the_turns_language() {
        let result = json!({
            "seatsResult": search(vec![flight("s1", "seatsaero", "LH", "70.000 Meilen")]),
            "cashResult": search(vec![flight("a1", "duffel", "United", "2.310,00 €")]),
        });
        let table = flights(&result, Locale::De).unwrap_or_default();
        assert!(table.contains("4 Plätze"), "\n{table}");
        assert!(table.contains("nur Hinflug"), "\n{table}");
        assert!(
            !table.contains("seats") && !table.contains("one-way"),
            "\n{table}"
        );
    }

    #[test]
    fn a_table_of_award_and_cash_offers() {
        let mut award = flight("s1", "seatsaero", "Lufthansa", "140,000 miles + $82");
        award["program"] = json!("Miles & More");
        award["pricePerPerson"] = json!("70,000 miles + $41");
        let result = json!({
            "seatsResult": search(vec![award]),
            "cashResult": search(vec![flight("a1", "duffel", "United", "€2,310.00")]),
        });
        let table = flights(&result, Locale::En).unwrap_or_default();
        let expected = "\
source  programme     airline    cabin     depart                arrive                duration  stops    price                per person          notes
------  ------------  ---------  --------  --------------------  --------------------  --------  -------  -------------------  ------------------  -------
award   Miles & More  Lufthansa  Business  FRA 2027-03-15 10:05  JFK 2027-03-15 12:55  8h 50m    Nonstop  140,000 miles + $82  70,000 miles + $41  4 seats
cash                  United     Business  FRA 2027-03-15 10:05  JFK 2027-03-15 12:55  8h 50m    Nonstop  €2,310.00                                one-way";
        assert_eq!(table, expected, "\n{table}");
        let lines: Vec<&str> = table.lines().collect();
        // Columns line up: every row has "duration" at the header's char offset.
        let at = lines[0].find("duration").unwrap_or_default();
        for line in &lines[2..] {
            assert_eq!(
                line.chars().skip(at).take(6).collect::<String>(),
                "8h 50m",
                "{table}"
            );
        }
    }

    #[test]
    fn rows_offered_under_a_number_show_it_first() {
        let mut award = flight("s1", "seatsaero", "Lufthansa", "70,000 miles");
        award["option"] = json!(2);
        let mut cash = flight("a1", "duffel", "United", "€2,310.00");
        cash["option"] = json!(1);
        let result = json!({"seatsResult": search(vec![award]), "cashResult": search(vec![cash])});
        let table = flights(&result, Locale::En).unwrap_or_default();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("#  source  airline"), "\n{table}");
        assert!(lines[2].starts_with("2  award   Lufthansa"), "\n{table}");
        assert!(lines[3].starts_with("1  cash    United"), "\n{table}");
    }

    #[test]
    fn at_most_ten_rows_per_source_and_none_without_flights() {
        let many = (0..15)
            .map(|i| flight(&format!("s{i}"), "seatsaero", "LH", "1 mile"))
            .collect();
        let result = json!({"seatsResult": search(many), "cashResult": null});
        let table = flights(&result, Locale::En).unwrap_or_default();
        assert_eq!(table.lines().count(), 2 + MAX_ROWS, "{table}");

        // Several tools ran: the list form with `raw`.
        let list = json!([{"tool": "kb", "raw": {"answer": "x"}},
                          {"tool": "search_flights", "raw": {"seatsResult": null,
                           "cashResult": search(vec![flight("a", "amadeus", "UA", "$9")])}}]);
        assert_eq!(
            flights(&list, Locale::En)
                .unwrap_or_default()
                .lines()
                .count(),
            3
        );

        assert!(flights(&json!(null), Locale::En).is_none());
        assert!(
            flights(
                &json!({"seatsResult": search(vec![]), "cashResult": null}),
                Locale::En
            )
            .is_none()
        );
        // A chat stored before the rename still shows its cash fares.
        let old = json!({"seatsResult": null,
                         "amadeusResult": search(vec![flight("a", "amadeus", "UA", "$9")])});
        assert_eq!(
            flights(&old, Locale::En)
                .unwrap_or_default()
                .lines()
                .count(),
            3
        );
    }
}
