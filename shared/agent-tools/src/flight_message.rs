//! The chat message of a flight search: one line per row that says what the row is (the
//! programme that prices an award seat, seats or "seats unknown", how fresh the
//! availability is, the other programmes that price the same flight; for a cash fare one-way
//! or round trip, the price for everyone and per person, the fare's terms), and an honest
//! word when the requested cabin had nothing.

use std::fmt::Write as _;

use shared::domain::alert;
use shared::domain::flight::{
    CabinFrom, FlightLeg, FlightResult, FlightSearchInput, FlightSearchResult, Locale,
};
use shared::domain::flight_notes;
use shared::domain::session::OfferedFlight;
use time::OffsetDateTime;

/// Offers listed per provider in the chat message; the full lists stay in `raw`.
const LISTED_PER_PROVIDER: usize = 5;

/// What every row of one message shares.
struct Context<'a> {
    input: &'a FlightSearchInput,
    locale: Locale,
    de: bool,
    /// Adults and children: who has a seat, and so a price.
    seated: u32,
    now: OffsetDateTime,
}

impl<'a> Context<'a> {
    fn new(input: &'a FlightSearchInput, locale: Locale, now: OffsetDateTime) -> Self {
        Self {
            input,
            locale,
            de: locale == Locale::De,
            seated: u32::from(input.pax.unwrap_or(1)) + u32::from(input.children.unwrap_or(0)),
            now,
        }
    }
}

/// What a search says: the whole numbered list, which the model reads (and any client that
/// shows no tables), and the short answer the user reads beside the tables, which shows
/// the rows themselves under the same numbers (`FlightResult::option`).
#[derive(Debug)]
pub(super) struct FlightMessage {
    pub message: String,
    pub answer: String,
}

/// The two lists of a search, in the order the message lists them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum List {
    Award,
    Cash,
}

impl List {
    fn title(self, de: bool) -> &'static str {
        match (self, de) {
            (Self::Award, false) => "Award flights (miles)",
            (Self::Award, true) => "Prämienflüge (Meilen)",
            (Self::Cash, false) => "Cash fares",
            (Self::Cash, true) => "Tarife",
        }
    }

    /// "3 award flights", "1 Tarif".
    fn counted(self, n: usize, de: bool) -> String {
        let word = match (self, de, n == 1) {
            (Self::Award, false, true) => "award flight",
            (Self::Award, false, false) => "award flights",
            (Self::Award, true, true) => "Prämienflug",
            (Self::Award, true, false) => "Prämienflüge",
            (Self::Cash, false, true) => "cash fare",
            (Self::Cash, false, false) => "cash fares",
            (Self::Cash, true, true) => "Tarif",
            (Self::Cash, true, false) => "Tarife",
        };
        format!("{n} {word}")
    }
}

/// Award first unless the traveller asked for cash fares too (`award_only: false`).
fn in_order<T>(input: &FlightSearchInput, award: T, cash: T) -> [(List, T); 2] {
    if input.award_only.unwrap_or(true) {
        [(List::Award, award), (List::Cash, cash)]
    } else {
        [(List::Cash, cash), (List::Award, award)]
    }
}

/// Numbers the flights the message lists (at most [`LISTED_PER_PROVIDER`] of each list),
/// across both lists in the order shown, so "number 7" names one flight (`select_flight`):
/// sets each one's `option` and returns them as the chat offers them.
fn number_offers(
    input: &FlightSearchInput,
    award: Option<&mut FlightSearchResult>,
    cash: Option<&mut FlightSearchResult>,
) -> Vec<OfferedFlight> {
    let mut offered = Vec::new();
    for (_, result) in in_order(input, award, cash) {
        let flights = result.into_iter().flat_map(|r| &mut r.results.flights);
        for flight in flights.take(LISTED_PER_PROVIDER) {
            let option = u8::try_from(offered.len() + 1).unwrap_or(u8::MAX);
            flight.option = Some(option);
            offered.push(OfferedFlight {
                option,
                flight: flight.clone(),
            });
        }
    }
    offered
}

/// Numbers the flights to list (in `award` and `cash` themselves, so the tables show the
/// numbers the text uses), then says what the search found; with the flights offered.
pub(super) fn format_message(
    input: &FlightSearchInput,
    mut award: Option<&mut FlightSearchResult>,
    mut cash: Option<&mut FlightSearchResult>,
    locale: Locale,
    now: OffsetDateTime,
) -> (FlightMessage, Vec<OfferedFlight>) {
    let offered = number_offers(input, award.as_deref_mut(), cash.as_deref_mut());
    let (award, cash) = (award.as_deref(), cash.as_deref());
    let de = locale == Locale::De;
    let ctx = Context::new(input, locale, now);
    let route = format!(
        "{} → {}, {}, {}",
        input.origin,
        input.destination,
        input.depart_date,
        input.cabin.display_name()
    );
    let ordered: Vec<(List, &FlightSearchResult)> = in_order(input, award, cash)
        .into_iter()
        .filter_map(|(list, r)| r.filter(|r| r.results.count > 0).map(|r| (list, r)))
        .collect();
    let empty = empty_cabin_notes(&ctx, award, cash);
    if ordered.is_empty() {
        let message = nothing_found(&route, empty, de);
        let answer = message.clone();
        return (FlightMessage { message, answer }, offered);
    }
    let sections: Vec<String> = ordered
        .iter()
        .map(|&(list, result)| section(&ctx, list.title(de), result))
        .collect();
    let mut message = if de {
        format!("Ich habe folgende Flüge für {route} gefunden:\n\n")
    } else {
        format!("Here are the flights I found for {route}:\n\n")
    };
    message.push_str(&sections.join("\n\n"));
    let mut answer = summary(&ctx, &route, &ordered);
    let mut notes: Vec<String> = empty.into_iter().map(|note| note.text).collect();
    notes.extend(narrowed_window(input, cash, de));
    if input.children.unwrap_or(0) > 0 && award.is_some_and(|a| a.results.count > 0) {
        // Seats.aero prices one traveller; a child's seat is counted at that price.
        notes.push(
            if de {
                "(Kinder sind in den Prämienflügen zum Erwachsenenpreis gerechnet; manche Programme geben Kindern Rabatt.)"
            } else {
                "(Award prices count each child at the adult price; some programmes discount children.)"
            }
            .to_owned(),
        );
    }
    if award.is_none() || cash.is_none() {
        notes.push(
            if de {
                "(Eine der beiden Suchen war gerade nicht erreichbar; die Liste ist daher unvollständig.)"
            } else {
                "(One of the two searches was unavailable just now, so this list may be incomplete.)"
            }
            .to_owned(),
        );
    }
    for note in notes {
        for text in [&mut message, &mut answer] {
            text.push_str("\n\n");
            text.push_str(&note);
        }
    }
    (FlightMessage { message, answer }, offered)
}

/// What `select_flight` answers: the picked row as the list showed it (with what it costs
/// everyone who has a seat), and where to book it.
pub(super) fn picked(
    input: &FlightSearchInput,
    chosen: &OfferedFlight,
    locale: Locale,
    now: OffsetDateTime,
) -> String {
    let ctx = Context::new(input, locale, now);
    let de = ctx.de;
    let f = &chosen.flight;
    let mut out = if de {
        format!("Du hast Option {} gewählt: {}", chosen.option, row(&ctx, f))
    } else {
        format!("You picked option {}: {}", chosen.option, row(&ctx, f))
    };
    match f.booking_links.as_ref().filter(|links| !links.is_empty()) {
        Some(links) => {
            out.push_str(if de { "\n\nBuchen:" } else { "\n\nBook it:" });
            for (name, url) in links {
                // The link tables label in English ("Book with Miles & More").
                let name = match name.strip_prefix("Book with ") {
                    Some(site) if de => format!("Buchen bei {site}"),
                    _ => name.clone(),
                };
                let _ = write!(out, "\n- [{name}]({url})");
            }
        }
        None => out.push_str(if de {
            "\n\nFür diesen Flug habe ich keinen Buchungslink; buche ihn direkt bei der Airline."
        } else {
            "\n\nI have no booking link for this flight; book it on the airline's own site."
        }),
    }
    out
}

/// A note when the cash search covered fewer days than the window asked for (it searches
/// the days nearest the asked one; the award search covers the whole window).
fn narrowed_window(
    input: &FlightSearchInput,
    cash: Option<&FlightSearchResult>,
    de: bool,
) -> Option<String> {
    let flexibility = i64::from(input.flexibility.unwrap_or(0));
    let stats = cash?.stats.as_ref()?;
    let (start, end) = (stats.start_date.as_str(), stats.end_date.as_str());
    let searched =
        |d: &str| time::Date::parse(d, &time::format_description::well_known::Iso8601::DATE).ok();
    let days = (searched(end)? - searched(start)?).whole_days() + 1;
    if flexibility == 0 || days > 2 * flexibility {
        return None;
    }
    let asked = input.depart_date;
    Some(if de {
        format!(
            "(Tarife habe ich nur vom {start} bis {end} gesucht, an den Tagen um den {asked}; \
             Prämienflüge für die ganzen ±{flexibility} Tage.)"
        )
    } else {
        format!(
            "(Cash fares were searched from {start} to {end} only, the days nearest {asked}; \
             award flights for the whole ±{flexibility} days.)"
        )
    })
}

/// The answer beside the tables: how many of each kind, the best of each by its number,
/// and how to pick one. The rows themselves are the tables' to show.
fn summary(ctx: &Context<'_>, route: &str, ordered: &[(List, &FlightSearchResult)]) -> String {
    let de = ctx.de;
    let counts: Vec<String> = ordered
        .iter()
        .map(|&(list, r)| list.counted(r.results.count, de))
        .collect();
    let and = if de { " und " } else { " and " };
    let mut out = if de {
        format!("Für {route} habe ich {} gefunden.", counts.join(and))
    } else {
        format!("I found {} for {route}.", counts.join(and))
    };
    let cabin = ctx.input.cabin.display_name();
    for &(list, result) in ordered {
        let numbered = || result.results.flights.iter().filter(|f| f.option.is_some());
        // Award rows: the fewest miles; cash rows come cheapest first (cash-search sorts).
        let best = match list {
            List::Award => numbered()
                .filter(|f| f.miles.is_some())
                .min_by_key(|f| f.miles),
            List::Cash => numbered().next(),
        };
        if let (Some(best), Some(option)) = (best, best.and_then(|f| f.option)) {
            let label = match (list, de) {
                (List::Award, false) => "Fewest miles",
                (List::Award, true) => "Die wenigsten Meilen",
                (List::Cash, false) => "Cheapest fare",
                (List::Cash, true) => "Günstigster Tarif",
            };
            let number = if de {
                format!("Nr. {option}")
            } else {
                format!("#{option}")
            };
            let seller = match &best.program {
                Some(program) => format!("{program} ({})", best.airline),
                None => best.airline.clone(),
            };
            let _ = write!(out, " {label}: {number}, {seller}, {}", price(ctx, best));
            if best.cabin != cabin {
                let _ = write!(out, ", {}", best.cabin);
            }
            out.push('.');
        }
        if !result.results.flights.iter().any(|f| f.cabin == cabin) {
            let _ = match (list, de) {
                (List::Award, false) => write!(
                    out,
                    " No {cabin} award seats; the table shows the nearest cabins."
                ),
                (List::Award, true) => write!(
                    out,
                    " Keine Prämienplätze in {cabin}; die Tabelle zeigt die nächsten Klassen."
                ),
                (List::Cash, false) => write!(
                    out,
                    " No {cabin} fares; the table shows the nearest cabins."
                ),
                (List::Cash, true) => write!(
                    out,
                    " Keine Tarife in {cabin}; die Tabelle zeigt die nächsten Klassen."
                ),
            };
        }
    }
    out.push_str(if de {
        " Nenne mir eine Nummer, um einen Flug auszuwählen."
    } else {
        " Tell me a number to pick a flight."
    });
    out
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
            format!("Keine Prämienplätze in {cabin} gefunden")
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
                format!("Keine Tarife in {cabin} gefunden.")
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

/// One provider's list: the flights numbered by [`number_offers`], under their numbers.
fn section(ctx: &Context<'_>, title: &str, result: &FlightSearchResult) -> String {
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
    let mut listed = 0;
    for f in flights {
        if let Some(option) = f.option {
            listed += 1;
            let _ = write!(out, "\n{option}. {}", row(ctx, f));
        }
    }
    let more = result.results.count.saturating_sub(listed);
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
    let _ = write!(out, " — {}", leg(ctx, &f.outbound));
    if let Some(inbound) = &f.inbound {
        let back = if ctx.de { "zurück" } else { "return" };
        let _ = write!(out, "; {back} {}", leg(ctx, inbound));
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

/// "FRA 13:40 → JFK 16:30, 18 Jul 2027 (8h 50m, nonstop)"; an arrival on a later day
/// has "+1" ("+2"); a time the upstream wrote otherwise is shown as it came.
fn leg(ctx: &Context<'_>, l: &FlightLeg) -> String {
    let (departs, arrives) = (local_time(&l.departure.time), local_time(&l.arrival.time));
    let (times, day) = match (departs, arrives) {
        (Some((day, dep)), Some((arrival_day, arr))) => {
            let later = (arrival_day - day).whole_days();
            let plus = if later > 0 {
                format!(" +{later}")
            } else {
                String::new()
            };
            (
                format!(
                    "{} {dep} → {} {arr}{plus}",
                    l.departure.airport, l.arrival.airport
                ),
                format!(", {}", alert::day_text(day, ctx.locale)),
            )
        }
        _ => (
            format!(
                "{} {} → {} {}",
                l.departure.airport, l.departure.time, l.arrival.airport, l.arrival.time
            ),
            String::new(),
        ),
    };
    format!("{times}{day} ({}, {})", l.duration, l.stops)
}

/// "2027-07-18T13:40" (an airport's local time): its day and "13:40".
fn local_time(text: &str) -> Option<(time::Date, &str)> {
    let (day, clock) = text.split_once('T')?;
    let day = time::Date::parse(day, &time::format_description::well_known::Iso8601::DATE).ok()?;
    Some((day, clock.get(..5)?))
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
        let mut award = result(vec![f], Vec::new());
        let (text, offered) = format_message(
            &input("BUSINESS", 2),
            Some(&mut award),
            None,
            Locale::En,
            now(),
        );
        let text = text.message;
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
        let (de, _) = format_message(
            &input("BUSINESS", 1),
            Some(&mut award),
            None,
            Locale::De,
            now(),
        );
        let de = de.message;
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
        let mut cash = result(vec![one_way, round], Vec::new());
        let (text, _) = format_message(
            &input("BUSINESS", 2),
            None,
            Some(&mut cash),
            Locale::En,
            now(),
        );
        let text = text.message;
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
            text.contains("; return JFK 18:00 → FRA 08:00 +1, 8 Mar 2027 (8h, Nonstop)"),
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
        let mut award = result(Vec::new(), others);
        let mut cash = result(Vec::new(), Vec::new());
        let (en, _) = format_message(
            &input("FIRST", 1),
            Some(&mut award),
            Some(&mut cash),
            Locale::En,
            now(),
        );
        let en = en.message;
        assert!(
            en.contains(
                "No First award seats found; Economy from 25,000 miles, Business from 55,000 miles."
            ),
            "{en}"
        );
        let (de, _) = format_message(
            &input("FIRST", 1),
            Some(&mut award),
            Some(&mut cash),
            Locale::De,
            now(),
        );
        let de = de.message;
        assert!(
            de.contains("Keine Prämienplätze in First gefunden; Economy ab 25.000 Meilen, Business ab 55.000 Meilen."),
            "{de}"
        );
        // Cash rows of another cabin are marked as such.
        let mut cash = result(
            vec![flight(json!({"provider": "duffel", "program": null}))],
            Vec::new(),
        );
        let (en, _) = format_message(
            &input("FIRST", 1),
            Some(&mut award),
            Some(&mut cash),
            Locale::En,
            now(),
        );
        let en = en.message;
        assert!(en.contains("No First fares; the nearest cabins:"), "{en}");
        assert!(en.contains("· Business"), "{en}");
        assert!(
            en.contains("No First award seats found; Economy from"),
            "{en}"
        );
    }

    #[test]
    fn flights_are_numbered_in_the_rows_themselves_and_the_answer_leaves_the_rows_to_the_tables() {
        let mut award = result(
            vec![
                flight(json!({"id": "a1", "miles": 70000, "price": "70,000 miles + $83.48"})),
                flight(
                    json!({"id": "a2", "miles": 55000, "price": "55,000 miles + $90.00",
                    "program": "Air Canada Aeroplan", "airline": "UA"}),
                ),
            ],
            Vec::new(),
        );
        let mut cash = result(
            vec![
                flight(
                    json!({"id": "c1", "provider": "duffel", "program": null, "miles": null,
                    "price": "$2,345.10", "pricePerPerson": "$2,345.10"}),
                ),
                flight(
                    json!({"id": "c2", "provider": "duffel", "program": null, "miles": null,
                    "price": "$2,900.00", "pricePerPerson": "$2,900.00"}),
                ),
            ],
            Vec::new(),
        );
        let mut asked = input("BUSINESS", 1);
        asked.award_only = Some(false);
        let (said, offered) =
            format_message(&asked, Some(&mut award), Some(&mut cash), Locale::En, now());
        // Cash first when cash fares were asked for; the numbers are on the rows.
        let options = |r: &FlightSearchResult| -> Vec<Option<u8>> {
            r.results.flights.iter().map(|f| f.option).collect()
        };
        assert_eq!(options(&cash), [Some(1), Some(2)]);
        assert_eq!(options(&award), [Some(3), Some(4)]);
        let ids: Vec<(u8, &str)> = offered
            .iter()
            .map(|o| (o.option, o.flight.id.as_str()))
            .collect();
        assert_eq!(ids, [(1, "c1"), (2, "c2"), (3, "a1"), (4, "a2")]);
        assert!(
            said.message
                .contains("\n3. Miles & More (LH): 70,000 miles"),
            "{}",
            said.message
        );
        assert_eq!(
            said.answer,
            "I found 2 cash fares and 2 award flights for FRA → JFK, 2027-03-01, Business. \
             Cheapest fare: #1, LH, $2,345.10. \
             Fewest miles: #4, Air Canada Aeroplan (UA), 55,000 miles + $90.00. \
             Tell me a number to pick a flight."
        );
        // German, award only, one search down: the answer says so too.
        let mut award = result(vec![flight(json!({}))], Vec::new());
        let (said, _) = format_message(
            &input("FIRST", 1),
            Some(&mut award),
            None,
            Locale::De,
            now(),
        );
        assert!(
            said.answer.starts_with(
                "Für FRA → JFK, 2027-03-01, First habe ich 1 Prämienflug gefunden. \
                 Die wenigsten Meilen: Nr. 1, Miles & More (LH), 120,000 miles + $83.48, Business. \
                 Keine Prämienplätze in First; die Tabelle zeigt die nächsten Klassen. \
                 Nenne mir eine Nummer"
            ),
            "{}",
            said.answer
        );
        assert!(
            said.answer.ends_with("die Liste ist daher unvollständig.)"),
            "{}",
            said.answer
        );
        assert!(
            !said.answer.contains("1. "),
            "no list in the answer: {}",
            said.answer
        );
    }

    #[test]
    fn a_search_that_differs_from_the_ask_says_so() {
        let mut asked = input("BUSINESS", 2);
        asked.flexibility = Some(3);
        asked.children = Some(1);
        let mut award = result(vec![flight(json!({}))], vec![]);
        let mut cash = result(
            vec![flight(
                json!({"id": "c", "provider": "amadeus", "program": null, "miles": null}),
            )],
            vec![],
        );
        if let Some(stats) = cash.stats.as_mut() {
            stats.start_date = "2027-02-28".into();
            stats.end_date = "2027-03-02".into();
        }
        for (locale, window, child) in [
            (
                Locale::En,
                "Cash fares were searched from 2027-02-28 to 2027-03-02 only",
                "each child at the adult price",
            ),
            (
                Locale::De,
                "Tarife habe ich nur vom 2027-02-28 bis 2027-03-02 gesucht",
                "zum Erwachsenenpreis",
            ),
        ] {
            let (message, _) = format_message(
                &asked,
                Some(&mut award.clone()),
                Some(&mut cash.clone()),
                locale,
                now(),
            );
            for text in [&message.message, &message.answer] {
                assert!(text.contains(window), "{text}");
                assert!(text.contains(child), "{text}");
            }
        }
        // As asked: no note.
        let plain = input("BUSINESS", 2);
        let (message, _) =
            format_message(&plain, Some(&mut award), Some(&mut cash), Locale::En, now());
        assert!(!message.answer.contains("only"), "{}", message.answer);
        assert!(!message.answer.contains("child"), "{}", message.answer);
    }

    #[test]
    fn a_pick_says_the_row_the_partys_price_and_where_to_book_in_both_languages() {
        let mut links = std::collections::BTreeMap::new();
        links.insert(
            "Book with Miles & More".to_owned(),
            "https://www.miles-and-more.com/x".to_owned(),
        );
        let mut row = flight(json!({}));
        row.booking_links = Some(links);
        let chosen = OfferedFlight {
            option: 2,
            flight: row,
        };
        let en = picked(&input("BUSINESS", 2), &chosen, Locale::En, now());
        assert!(en.starts_with("You picked option 2: Miles & More (LH): 120,000 miles + $83.48 for 2 (60,000 miles + $41.74 per person)"), "{en}");
        assert!(
            en.contains("Book it:\n- [Book with Miles & More](https://www.miles-and-more.com/x)"),
            "{en}"
        );
        let de = picked(&input("BUSINESS", 2), &chosen, Locale::De, now());
        assert!(de.starts_with("Du hast Option 2 gewählt: "), "{de}");
        assert!(de.contains("für 2 ("), "{de}");
        assert!(
            de.contains("Buchen:\n- [Buchen bei Miles & More](https://www.miles-and-more.com/x)"),
            "{de}"
        );
        // Times and the day as people write them, not "2027-03-01T10:00".
        assert!(
            en.contains("FRA 10:00 → JFK 12:45, 1 Mar 2027 (8h 45m"),
            "{en}"
        );
        assert!(de.contains("FRA 10:00 → JFK 12:45, 1. März 2027 ("), "{de}");
        assert!(
            !en.contains("T10:00") && !de.contains("T10:00"),
            "{en}\n{de}"
        );
        let mut bare = chosen.clone();
        bare.flight.booking_links = None;
        assert!(
            picked(&input("BUSINESS", 1), &bare, Locale::En, now())
                .contains("book it on the airline's own site")
        );
    }
}
