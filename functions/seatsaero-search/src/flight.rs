//! One `FlightResult` (seed 000 §5.2) from an availability and its `/trips/{id}` reply.
//!
//! Of the availability's trips, those in the requested cabin (and non-stop ones when
//! `nonStop` was asked for) qualify; the cheapest wins, then the fewest stops, then the
//! shortest. Its miles, taxes and seats are more precise than the availability's summary,
//! which fills in what the trip leaves out. `miles`, `taxes` and `pricePerPerson` are per
//! passenger; `price` is the total for the seated travellers (adults + children; lap
//! infants are left out because their award fees differ by programme).

use std::borrow::Cow;
use std::collections::BTreeMap;

use domain::award_booking::{self, AwardTrip, Party};
use domain::flight::{Cabin, FlightEndpoint, FlightLeg, FlightResult, Locale, Provider, Taxes};
use domain::flight_text::stops_text;
use domain::loyalty;
use time::Date;
use time::format_description::well_known::Iso8601;

use crate::format;
use crate::payload::{Availability, CabinOffer, Entries, Segment, Trip, TripsReply};

/// Seats.aero left `TaxesCurrency` empty before it reported other currencies; its taxes
/// were US dollars then.
const DEFAULT_TAXES_CURRENCY: &str = "USD";

/// An availability that passed the filter, with its cabin's fields.
#[derive(Debug, Clone)]
pub(crate) struct Candidate<'a> {
    pub availability: Availability<'a>,
    pub offer: CabinOffer<'a>,
    /// The cabin's mileage cost: known and above zero.
    pub miles: u64,
}

/// What shapes every flight of one search.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shape {
    pub cabin: Cabin,
    pub locale: Locale,
    /// Who travels: the price is for the seated ones, the booking link takes them all.
    pub party: Party,
    pub non_stop: bool,
    /// Flights of the reverse search are tagged "return".
    pub return_leg: bool,
}

impl Shape {
    /// Adults and children: who has a seat, and so a price.
    fn seated(&self) -> u64 {
        u64::from(self.party.adults) + u64::from(self.party.children)
    }
}

/// The flight, or why the entry is dropped.
pub(crate) fn build(
    shape: &Shape,
    candidate: &Candidate<'_>,
    reply: TripsReply<'_>,
) -> Result<FlightResult, String> {
    let mut trip = best_trip(shape, reply.data)
        .ok_or_else(|| format!("no usable {} trip", shape.cabin.seatsaero_api_value()))?;
    let availability = &candidate.availability;
    let offer = &candidate.offer;

    // In flight order (a stable sort: segments without an order keep theirs, first).
    trip.segments.sort_by_key(|s| s.order);
    let segments = &trip.segments;
    let outbound = outbound_leg(shape, &trip, segments, availability)?;
    let price = Price::of(shape, candidate, &trip);
    let total_stops = trip.stop_count();
    let source = trip.source.as_deref().or(availability.source.as_deref());
    let seen_at = trip
        .updated_at
        .as_deref()
        .or(availability.updated_at.as_deref())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);

    Ok(FlightResult {
        id: availability.id.clone().into_owned(),
        provider: Provider::Seatsaero,
        price: price.total,
        price_per_person: price.per_person,
        airline: airline(&trip, segments, offer),
        cabin: shape.cabin.display_name().to_owned(),
        tags: tags(shape, total_stops),
        total_stops: u32::try_from(total_stops).unwrap_or(u32::MAX),
        miles: Some(price.miles),
        taxes: price.taxes,
        seats_left: seats_left(&trip, offer),
        booking_links: own_booking_link(source, &outbound, shape.party),
        outbound,
        inbound: None,
        program: source.map(loyalty::display_name),
        seen_at,
        other_programs: Vec::new(),
        option: None,
    })
}

/// The one leg a Seats.aero trip describes. `segments` are the trip's, in flight order.
fn outbound_leg(
    shape: &Shape,
    trip: &Trip<'_>,
    segments: &[Segment<'_>],
    availability: &Availability<'_>,
) -> Result<FlightLeg, &'static str> {
    let (departure, arrival) = endpoints(trip, segments, availability)?;
    // Every segment after the first starts at a stop.
    let via: Vec<String> = segments
        .iter()
        .skip(1)
        .filter_map(|s| owned(&s.origin))
        .collect();
    Ok(FlightLeg {
        departure,
        arrival,
        duration: trip
            .total_duration
            .filter(|m| *m > 0)
            .map(format::duration)
            .unwrap_or_default(),
        stops: stops_text(shape.locale, trip.stop_count(), &via),
        flight_numbers: flight_numbers(trip, segments),
    })
}

/// Departure and arrival: from the first and last segments, else the trip's own fields,
/// else (airports only) the availability's route. A flight needs both airports and a
/// departure time; an unknown arrival time is left empty.
fn endpoints(
    trip: &Trip<'_>,
    segments: &[Segment<'_>],
    availability: &Availability<'_>,
) -> Result<(FlightEndpoint, FlightEndpoint), &'static str> {
    let first = segments.first();
    let last = segments.last();
    let departure_airport = first
        .and_then(|s| s.origin.as_deref())
        .or(trip.origin.as_deref())
        .or(availability.route.origin.as_deref())
        .ok_or("no departure airport")?;
    let arrival_airport = last
        .and_then(|s| s.destination.as_deref())
        .or(trip.destination.as_deref())
        .or(availability.route.destination.as_deref())
        .ok_or("no arrival airport")?;
    let departure_time = first
        .and_then(|s| s.departs_at.as_deref())
        .or(trip.departs_at.as_deref())
        .ok_or("no departure time")?;
    let arrival_time = last
        .and_then(|s| s.arrives_at.as_deref())
        .or(trip.arrives_at.as_deref())
        .unwrap_or_default();
    Ok((
        FlightEndpoint {
            airport: departure_airport.to_owned(),
            time: format::local_time(departure_time),
        },
        FlightEndpoint {
            airport: arrival_airport.to_owned(),
            time: format::local_time(arrival_time),
        },
    ))
}

/// A flight's cost: per passenger, and in total for the seated travellers.
struct Price {
    /// Miles per passenger.
    miles: u64,
    /// Taxes per passenger.
    taxes: Taxes,
    per_person: String,
    total: String,
}

impl Price {
    /// The trip's miles and taxes, which are more precise than the availability's summary
    /// that stands in for them when the trip leaves them out.
    fn of(shape: &Shape, candidate: &Candidate<'_>, trip: &Trip<'_>) -> Self {
        let miles = trip
            .mileage_cost
            .filter(|m| *m > 0)
            .unwrap_or(candidate.miles);
        let taxes_minor = trip.total_taxes.or(candidate.offer.taxes_minor);
        let currency = taxes_minor.map(|_| taxes_currency(trip, &candidate.availability));
        let taxes_text = |per: u64| {
            taxes_minor
                .zip(currency.as_deref())
                // Saturating: the taxes are Seats.aero's figure, and may be any number.
                .map(|(t, c)| (t.saturating_mul(per), c))
        };
        let per_person = format::price(shape.locale, miles, taxes_text(1));
        let total = format::price(
            shape.locale,
            miles.saturating_mul(shape.seated()),
            taxes_text(shape.seated()),
        );
        Self {
            miles,
            taxes: Taxes {
                amount: taxes_minor.map(|t| t as f64 / 100.0),
                currency,
            },
            per_person,
            total,
        }
    }
}

/// The taxes' currency code: the trip's, else the availability's, else [`DEFAULT_TAXES_CURRENCY`].
fn taxes_currency(trip: &Trip<'_>, availability: &Availability<'_>) -> String {
    trip.taxes_currency
        .as_deref()
        .or(availability.taxes_currency.as_deref())
        .map(str::to_ascii_uppercase)
        .unwrap_or_else(|| DEFAULT_TAXES_CURRENCY.to_owned())
}

/// The trip's flight numbers, else those of its segments, comma-separated.
fn flight_numbers(trip: &Trip<'_>, segments: &[Segment<'_>]) -> String {
    owned(&trip.flight_numbers).unwrap_or_else(|| {
        let numbers: Vec<&str> = segments
            .iter()
            .filter_map(|s| s.flight_number.as_deref())
            .collect();
        numbers.join(", ")
    })
}

/// "return" for the reverse search, "direct" without stops (the programme has a field of
/// its own).
fn tags(shape: &Shape, total_stops: u64) -> Vec<String> {
    let mut tags = Vec::new();
    if shape.return_leg {
        tags.push("return".to_owned());
    }
    if total_stops == 0 {
        tags.push("direct".to_owned());
    }
    tags
}

/// Seats left: the trip's count, else the availability's; zero counts as unknown.
fn seats_left(trip: &Trip<'_>, offer: &CabinOffer<'_>) -> Option<u32> {
    trip.remaining_seats
        .filter(|s| *s > 0)
        .or(offer.seats.filter(|s| *s > 0))
        .map(|s| u32::try_from(s).unwrap_or(u32::MAX))
}

fn best_trip<'a>(shape: &Shape, data: Entries<Trip<'a>>) -> Option<Trip<'a>> {
    let wanted = shape.cabin.seatsaero_api_value();
    data.into_iter()
        .filter_map(|trip| match trip {
            Ok(trip) => Some(trip),
            Err(e) => {
                tracing::warn!(error = %e, "malformed trip dropped");
                None
            }
        })
        .filter(|t| {
            t.cabin
                .as_deref()
                .is_none_or(|c| c.eq_ignore_ascii_case(wanted))
        })
        .filter(|t| !shape.non_stop || t.stop_count() == 0)
        .min_by_key(|t| {
            (
                t.mileage_cost.filter(|m| *m > 0).unwrap_or(u64::MAX),
                t.stop_count(),
                t.total_duration.unwrap_or(u64::MAX),
            )
        })
}

/// The trip's carriers, else the segments' airline codes, else the availability's.
fn airline(trip: &Trip<'_>, segments: &[Segment<'_>], offer: &CabinOffer<'_>) -> String {
    if let Some(carriers) = &trip.carriers {
        return carriers.clone().into_owned();
    }
    let mut codes: Vec<&str> = Vec::new();
    for number in segments.iter().filter_map(|s| s.flight_number.as_deref()) {
        if let Some(code) = number.get(..2)
            && !codes.contains(&code)
        {
            codes.push(code);
        }
    }
    if codes.is_empty() {
        owned(&offer.airlines).unwrap_or_default()
    } else {
        codes.join(", ")
    }
}

/// The booking page of the programme that priced the seat, filled with the leg and the
/// party: an award seat is booked with that programme's miles.
fn own_booking_link(
    source: Option<&str>,
    leg: &FlightLeg,
    party: Party,
) -> Option<BTreeMap<String, String>> {
    let day = leg.departure.time.get(..10)?;
    let date = Date::parse(day, &Iso8601::DATE).ok()?;
    let trip = AwardTrip {
        origin: &leg.departure.airport,
        destination: &leg.arrival.airport,
        date,
        party,
    };
    let (label, url) = award_booking::link(source?, &trip)?;
    Some(BTreeMap::from([(label, url)]))
}

/// An owned copy of a text read from a reply.
fn owned(text: &Option<Cow<'_, str>>) -> Option<String> {
    text.as_deref().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn shape() -> Shape {
        Shape {
            cabin: Cabin::Business,
            locale: Locale::En,
            party: Party {
                adults: 2,
                children: 0,
                infants: 0,
            },
            non_stop: false,
            return_leg: false,
        }
    }

    /// A JSON text that lives as long as the test.
    fn leak(v: &Value) -> &'static str {
        Box::leak(v.to_string().into_boxed_str())
    }

    fn candidate() -> Candidate<'static> {
        let availability: Availability<'static> = serde_json::from_str(leak(&json!({
            "ID": "av1", "Source": "aeroplan", "JAirlines": "AC, LH",
            "Route": {"OriginAirport": "FRA", "DestinationAirport": "YUL"}
        })))
        .unwrap_or_else(|e| panic!("{e}"));
        let offer = availability.cabin(Cabin::Business);
        Candidate {
            availability,
            offer,
            miles: 60_000,
        }
    }

    fn reply(trips: Value) -> TripsReply<'static> {
        TripsReply::parse(leak(&json!({"data": trips})).as_bytes())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn sparse_trip_falls_back_to_the_availability() {
        let flight = build(
            &shape(),
            &candidate(),
            reply(json!([{"DepartsAt": "2025-06-01T10:00:00Z", "Cabin": "business"}])),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(flight.miles, Some(60_000));
        assert_eq!(flight.price, "120,000 miles");
        assert_eq!(flight.airline, "AC, LH");
        assert_eq!(flight.outbound.departure.airport, "FRA");
        assert_eq!(flight.outbound.arrival.airport, "YUL");
        assert_eq!(flight.outbound.departure.time, "2025-06-01T10:00");
        assert_eq!(flight.taxes, Taxes::default());
        assert_eq!(flight.tags, vec!["direct"]);
        assert_eq!(flight.program.as_deref(), Some("Air Canada Aeroplan"));
        // Its own programme's page, for the trip and both adults; not the upstream's list.
        let links = flight.booking_links.unwrap_or_default();
        let keys: Vec<&String> = links.keys().collect();
        assert_eq!(keys, ["Book with Air Canada Aeroplan"]);
        let url = links.values().next().cloned().unwrap_or_default();
        for part in [
            "org0=FRA",
            "dest0=YUL",
            "departureDate0=2025-06-01",
            "ADT=2",
        ] {
            assert!(url.contains(part), "{part} in {url}");
        }
    }

    #[test]
    fn other_cabins_and_timeless_trips_do_not_qualify() {
        let err = build(
            &shape(),
            &candidate(),
            reply(json!([{"DepartsAt": "2025-06-01T10:00:00Z", "Cabin": "economy"}])),
        );
        assert!(err.is_err());
        let err = build(
            &shape(),
            &candidate(),
            reply(json!([{"Cabin": "business"}])),
        );
        assert_eq!(err.err().as_deref(), Some("no departure time"));
    }

    #[test]
    fn cheapest_then_fewest_stops_and_total_price() {
        let trips = json!([
            {"MileageCost": 70000, "Stops": 1, "DepartsAt": "a", "TotalTaxes": 100},
            {"MileageCost": 65000, "Stops": 2, "DepartsAt": "b", "TotalTaxes": 2550,
             "TaxesCurrency": "cad",
             "AvailabilitySegments": [
                {"FlightNumber": "LH2", "OriginAirport": "MUC", "Order": 1},
                {"FlightNumber": "AC1", "OriginAirport": "FRA", "Order": 0},
                {"FlightNumber": "LH3", "OriginAirport": "YYZ", "DestinationAirport": "YUL", "Order": 2}
             ]},
            {"MileageCost": 65000, "Stops": 3, "DepartsAt": "c"}
        ]);
        let flight =
            build(&shape(), &candidate(), reply(trips.clone())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(flight.miles, Some(65_000));
        assert_eq!(flight.price_per_person, "65,000 miles + CAD 25.50");
        assert_eq!(flight.price, "130,000 miles + CAD 51.00");
        assert_eq!(flight.outbound.flight_numbers, "AC1, LH2, LH3");
        assert_eq!(flight.airline, "AC, LH");
        assert_eq!(flight.outbound.stops, "2 stops (MUC, YYZ)");
        assert_eq!(flight.outbound.departure.airport, "FRA");

        let german = Shape {
            locale: Locale::De,
            ..shape()
        };
        let flight = build(&german, &candidate(), reply(trips)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(flight.price_per_person, "65.000 Meilen + 25,50 CAD");
        assert_eq!(flight.price, "130.000 Meilen + 51,00 CAD");
        assert_eq!(flight.outbound.stops, "2 Stopps (MUC, YYZ)");
    }

    #[test]
    fn odd_trips_and_links_are_dropped_one_by_one() {
        let body = r#"{"data": [
            {"AvailabilitySegments": "none", "MileageCost": 1000, "DepartsAt": "a"},
            {"AvailabilitySegments": [null], "MileageCost": 1000, "DepartsAt": "b"},
            "text", 7, null,
            {"MileageCost": 70000, "MileageCost": 50000, "DepartsAt": "2025-06-01T10:00:00Z",
             "Carriers": " AC "},
            {"MileageCost": 60000, "DepartsAt": "2025-06-02T10:00:00Z", "Unknown": 1e400}
        ], "booking_links": [
            [], null, {"label": "A"}, {"label": "A", "link": "https://a.example/", "link": null},
            {"label": "B", "link": "https://b.example/"}, {"label": "A", "link": "https://c.example/"}
        ]}"#;
        let reply = TripsReply::parse(body.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let flight = build(&shape(), &candidate(), reply).unwrap_or_else(|e| panic!("{e}"));
        // A key given twice: the last one counts, as in a `serde_json::Value`.
        assert_eq!(flight.miles, Some(50_000));
        assert_eq!(flight.airline, "AC");
        assert_eq!(flight.outbound.departure.time, "2025-06-01T10:00");
        // The upstream's own links, odd or not, are not passed on.
        let links = flight.booking_links.unwrap_or_default();
        assert!(
            links
                .values()
                .all(|url| url.starts_with("https://www.aircanada.com/"))
        );
    }
}
