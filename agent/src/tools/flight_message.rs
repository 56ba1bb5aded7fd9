//! The chat message of a flight search: one line per row that says what the row is (the
//! programme that prices an award seat, seats or "seats unknown", how fresh the
//! availability is, the other programmes that price the same flight; for a cash fare one-way
//! or round trip, the price for everyone and per person, the fare's terms), and an honest
//! word when the requested cabin had nothing.

use std::fmt::Write as _;

use shared::domain::flight::{
    CabinFrom, FlightLeg, FlightResult, FlightSearchInput, FlightSearchResult, Locale,
};
use shared::domain::flight_notes;
use shared::domain::session::OfferedFlight;
use time::OffsetDateTime;

/// Offers listed per provider in the chat message; the full lists stay in `raw`.
pub(super) const LISTED_PER_PROVIDER: usize = 5;

/// What every row of one message shares.
struct Context<'a> {
    input: &'a FlightSearchInput,
    locale: Locale,
    de: bool,
    /// Adults and children: who has a seat, and so a price.
    seated: u32,
    now: OffsetDateTime,
}

/// The chat message and the flights it lists, numbered across both lists in the order
/// shown, so "number 7" names one flight (`select_flight`).
pub(super) fn format_message(
    input: &FlightSearchInput,
    award: Option<&FlightSearchResult>,
    cash: Option<&FlightSearchResult>,
    locale: Locale,
    now: OffsetDateTime,
) -> (String, Vec<OfferedFlight>) {
    let de = locale == Locale::De;
    let ctx = Context {
        input,
        locale,
        de,
        seated: u32::from(input.pax.unwrap_or(1)) + u32::from(input.children.unwrap_or(0)),
        now,
    };
    let route = format!(
        "{} → {}, {}, {}",
        input.origin,
        input.destination,
        input.depart_date,
        input.cabin.display_name()
    );
    fn found(r: Option<&FlightSearchResult>) -> Option<&FlightSearchResult> {
        r.filter(|r| r.results.count > 0)
    }
    let award_titled = found(award).map(|r| {
        let title = if de {
            "Award-Flüge (Meilen)"
        } else {
            "Award flights (miles)"
        };
        (title, r)
    });
    let cash_titled = found(cash).map(|r| (if de { "Cash-Tarife" } else { "Cash fares" }, r));
    let ordered: Vec<(&str, &FlightSearchResult)> = if input.award_only.unwrap_or(true) {
        [award_titled, cash_titled]
    } else {
        [cash_titled, award_titled]
    }
    .into_iter()
    .flatten()
    .collect();
    let empty = empty_cabin_notes(&ctx, award, cash);
    if ordered.is_empty() {
        return (nothing_found(&route, empty, de), Vec::new());
    }
    let mut offered = Vec::new();
    let sections: Vec<String> = ordered
        .into_iter()
        .map(|(title, result)| section(&ctx, title, result, &mut offered))
        .collect();
    let mut out = if de {
        format!("Ich habe folgende Flüge für {route} gefunden:\n\n")
    } else {
        format!("Here are the flights I found for {route}:\n\n")
    };
    out.push_str(&sections.join("\n\n"));
    for note in empty {
        out.push_str("\n\n");
        out.push_str(&note.text);
    }
    if award.is_none() || cash.is_none() {
        out.push_str(if de {
            "\n\n(Eine der beiden Suchen war gerade nicht erreichbar; die Liste ist daher unvollständig.)"
        } else {
            "\n\n(One of the two searches was unavailable just now, so this list may be incomplete.)"
        });
    }
    (out, offered)
}

/// Neither search found a flight: say so, with what the other cabins have.
fn nothing_found(route: &str, empty: Vec<EmptyNote>, de: bool) -> String {
    let mut message = if de {
        format!("Ich habe für {route} leider keine passenden Flüge gefunden.")
    } else {
        format!("I found no matching flights for {route}.")
    };
    for note in empty.into_iter().filter(|n| n.offers_other_cabins) {
        message.push(' ');
        message.push_str(&note.text);
    }
    message.push_str(if de {
        " Soll ich andere Daten oder eine andere Klasse prüfen?"
    } else {
        " Shall I try other dates or another cabin?"
    });
    message
}

/// A search that answered but found nothing in the requested cabin.
struct EmptyNote {
    text: String,
    /// It names other cabins that have seats.
    offers_other_cabins: bool,
}

fn empty_cabin_notes(
    ctx: &Context<'_>,
    award: Option<&FlightSearchResult>,
    cash: Option<&FlightSearchResult>,
) -> Vec<EmptyNote> {
    let cabin = ctx.input.cabin.display_name();
    let mut notes = Vec::new();
    if let Some(award) = award.filter(|r| r.results.count == 0) {
        let others = award
            .stats
            .as_ref()
            .map(|s| s.other_cabins.as_slice())
            .unwrap_or_default();
        let mut text = if ctx.de {
            format!("Keine Award-Plätze in {cabin} gefunden")
        } else {
            format!("No {cabin} award seats found")
        };
        if !others.is_empty() {
            let list: Vec<String> = others.iter().map(|c| cabin_from(c, ctx.de)).collect();
            let _ = write!(text, "; {}", list.join(", "));
        }
        text.push('.');
        notes.push(EmptyNote {
            text,
            offers_other_cabins: !others.is_empty(),
        });
    }
    if cash.is_some_and(|r| r.results.count == 0) {
        notes.push(EmptyNote {
            text: if ctx.de {
                format!("Keine Cash-Tarife in {cabin} gefunden.")
            } else {
                format!("No {cabin} cash fares found.")
            },
            offers_other_cabins: false,
        });
    }
    notes
}

/// "Business from 55,000 miles" / "Business ab 55.000 Meilen".
fn cabin_from(c: &CabinFrom, de: bool) -> String {
    let miles = flight_notes::grouped(c.miles_from, if de { '.' } else { ',' });
    let cabin = c.cabin.display_name();
    if de {
        format!("{cabin} ab {miles} Meilen")
    } else {
        format!("{cabin} from {miles} miles")
    }
}

/// One provider's list; each flight listed is numbered on from `offered` and added to it.
fn section(
    ctx: &Context<'_>,
    title: &str,
    result: &FlightSearchResult,
    offered: &mut Vec<OfferedFlight>,
) -> String {
    let mut out = format!("**{title}**");
    let flights = &result.results.flights;
    let cabin = ctx.input.cabin.display_name();
    if !flights.iter().any(|f| f.cabin == cabin) {
        let _ = if ctx.de {
            write!(out, "\nKeine Tarife in {cabin}; das Nächstbeste:")
        } else {
            write!(out, "\nNo {cabin} fares; the nearest cabins:")
        };
    }
    for f in flights.iter().take(LISTED_PER_PROVIDER) {
        let option = u8::try_from(offered.len() + 1).unwrap_or(u8::MAX);
        let _ = write!(out, "\n{option}. {}", row(ctx, f));
        offered.push(OfferedFlight {
            option,
            flight: f.clone(),
        });
    }
    let more = result.results.count.saturating_sub(LISTED_PER_PROVIDER);
    if more > 0 {
        let _ = if ctx.de {
            write!(out, "\n… und {more} weitere")
        } else {
            write!(out, "\n… and {more} more")
        };
    }
    out
}

/// One row: who sells it and for how much, when and how it flies, and what else the
/// traveller needs to know about it (`flight_notes`).
fn row(ctx: &Context<'_>, f: &FlightResult) -> String {
    let seller = match &f.program {
        Some(program) => format!("{program} ({})", f.airline),
        None => f.airline.clone(),
    };
    let mut notes = flight_notes::notes(f, ctx.locale, ctx.now);
    // A cash fare's kind goes right after its price; the cabin is said when it is another.
    let kind = f.provider.is_cash().then(|| notes.remove(0));
    let mut out = format!("{seller}: {}", price(ctx, f));
    if let Some(kind) = kind {
        let _ = write!(out, ", {kind}");
    }
    let _ = write!(out, " — {}", leg(&f.outbound));
    if let Some(inbound) = &f.inbound {
        let back = if ctx.de { "zurück" } else { "return" };
        let _ = write!(out, "; {back} {}", leg(inbound));
    }
    if f.cabin != ctx.input.cabin.display_name() {
        notes.insert(0, f.cabin.clone());
    }
    if !notes.is_empty() {
        let _ = write!(out, " · {}", notes.join(" · "));
    }
    if let Some(also) = flight_notes::also_via(f, ctx.locale) {
        let _ = write!(out, "\n   {also}");
    }
    out
}

/// The total, and per person when more than one traveller has a seat.
fn price(ctx: &Context<'_>, f: &FlightResult) -> String {
    if ctx.seated <= 1 {
        return f.price.clone();
    }
    let n = ctx.seated;
    if ctx.de {
        format!("{} für {n} ({} pro Person)", f.price, f.price_per_person)
    } else {
        format!("{} for {n} ({} per person)", f.price, f.price_per_person)
    }
}

fn leg(l: &FlightLeg) -> String {
    format!(
        "{} {} → {} {} ({}, {})",
        l.departure.airport,
        l.departure.time,
        l.arrival.airport,
        l.arrival.time,
        l.duration,
        l.stops
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use shared::domain::flight::{Cabin, SearchStats};
    use time::format_description::well_known::Rfc3339;

    fn input(cabin: &str, pax: u8) -> FlightSearchInput {
        serde_json::from_value(json!({
            "origin": "FRA", "destination": "JFK", "depart_date": "2027-03-01",
            "cabin": cabin, "pax": pax
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn flight(extra: Value) -> FlightResult {
        let mut base = json!({
            "id": "a", "provider": "seatsaero", "price": "120,000 miles + $83.48",
            "pricePerPerson": "60,000 miles + $41.74", "airline": "LH", "cabin": "Business",
            "totalStops": 0, "miles": 60000, "taxes": {"amount": 41.74, "currency": "USD"},
            "seatsLeft": null, "program": "Miles & More", "seenAt": "2027-02-01T09:00:00Z",
            "outbound": {"departure": {"airport": "FRA", "time": "2027-03-01T10:00"},
                         "arrival": {"airport": "JFK", "time": "2027-03-01T12:45"},
                         "duration": "8h 45m", "stops": "Nonstop", "flightNumbers": "LH400"}
        });
        if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
            base.extend(extra);
        }
        serde_json::from_value(base).unwrap_or_else(|e| panic!("{e}"))
    }

    fn result(flights: Vec<FlightResult>, other_cabins: Vec<CabinFrom>) -> FlightSearchResult {
        FlightSearchResult::new(
            flights,
            Some(SearchStats {
                total_available: 1,
                has_more: false,
                start_date: "2027-03-01".into(),
                end_date: "2027-03-01".into(),
                cabin: "Business".into(),
                other_cabins,
            }),
        )
    }

    fn now() -> OffsetDateTime {
        OffsetDateTime::parse("2027-02-01T12:10:00Z", &Rfc3339).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn an_award_row_names_its_programme_seats_freshness_and_other_programmes() {
        let mut f = flight(json!({}));
        f.other_programs.push(shared::domain::flight::ProgramPrice::of(&flight(
            json!({"program": "Air Canada Aeroplan", "pricePerPerson": "70,000 miles + CAD 50"}),
        )));
        let award = result(vec![f], Vec::new());
        let (text, offered) =
            format_message(&input("BUSINESS", 2), Some(&award), None, Locale::En, now());
        assert!(
            text.contains("1. Miles & More (LH): 120,000 miles + $83.48 for 2 (60,000 miles + $41.74 per person)"),
            "{text}"
        );
        assert!(text.contains("· seats unknown · seen 3 h ago"), "{text}");
        assert!(
            text.contains("Also via: Air Canada Aeroplan 70,000 miles + CAD 50"),
            "{text}"
        );
        assert_eq!(offered.len(), 1);
        let (de, _) = format_message(&input("BUSINESS", 1), Some(&award), None, Locale::De, now());
        assert!(de.contains("Plätze unbekannt · vor 3 h gesehen"), "{de}");
        assert!(de.contains("Auch über: Air Canada Aeroplan"), "{de}");
    }

    #[test]
    fn a_cash_row_says_one_way_or_round_trip_and_its_terms() {
        let one_way = flight(json!({"provider": "duffel", "program": null,
            "price": "€1,800.00", "pricePerPerson": "€900.00",
            "tags": ["nonstop", "fare: Light", "changes: not allowed"]}));
        let back = json!({"departure": {"airport": "JFK", "time": "2027-03-08T18:00"},
            "arrival": {"airport": "FRA", "time": "2027-03-09T08:00"},
            "duration": "8h", "stops": "Nonstop", "flightNumbers": "LH401"});
        let round = flight(json!({"provider": "duffel", "program": null, "inbound": back}));
        let cash = result(vec![one_way, round], Vec::new());
        let (text, _) = format_message(&input("BUSINESS", 2), None, Some(&cash), Locale::En, now());
        assert!(
            text.contains("LH: €1,800.00 for 2 (€900.00 per person), one-way — FRA"),
            "{text}"
        );
        assert!(
            text.contains("· fare: Light · changes: not allowed"),
            "{text}"
        );
        assert!(text.contains(", round trip — FRA"), "{text}");
        assert!(
            text.contains("; return JFK 2027-03-08T18:00 → FRA"),
            "{text}"
        );
        assert!(!text.contains("seats unknown"), "{text}");
    }

    #[test]
    fn an_empty_cabin_is_said_with_what_exists_in_english_and_german() {
        let others = vec![
            CabinFrom {
                cabin: Cabin::Economy,
                miles_from: 25_000,
            },
            CabinFrom {
                cabin: Cabin::Business,
                miles_from: 55_000,
            },
        ];
        let award = result(Vec::new(), others);
        let cash = result(Vec::new(), Vec::new());
        let (en, _) = format_message(
            &input("FIRST", 1),
            Some(&award),
            Some(&cash),
            Locale::En,
            now(),
        );
        assert!(
            en.contains(
                "No First award seats found; Economy from 25,000 miles, Business from 55,000 miles."
            ),
            "{en}"
        );
        let (de, _) = format_message(
            &input("FIRST", 1),
            Some(&award),
            Some(&cash),
            Locale::De,
            now(),
        );
        assert!(
            de.contains("Keine Award-Plätze in First gefunden; Economy ab 25.000 Meilen, Business ab 55.000 Meilen."),
            "{de}"
        );
        // Cash rows of another cabin are marked as such.
        let cash = result(
            vec![flight(json!({"provider": "duffel", "program": null}))],
            Vec::new(),
        );
        let (en, _) = format_message(
            &input("FIRST", 1),
            Some(&award),
            Some(&cash),
            Locale::En,
            now(),
        );
        assert!(en.contains("No First fares; the nearest cabins:"), "{en}");
        assert!(en.contains("· Business"), "{en}");
        assert!(
            en.contains("No First award seats found; Economy from"),
            "{en}"
        );
    }
}
