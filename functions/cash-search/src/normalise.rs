//! Amadeus offers as the shared `FlightResult` (seed 000 §5.2), `provider: "amadeus"`.
//!
//! - `price`: the offer's `price.total` in the request's locale (see
//!   [`domain::money`]).
//! - `pricePerPerson`: the first traveller's fare (`travelerPricings[0].price.total`, an
//!   adult: Amadeus lists adults first); without it, the total shared by the seated
//!   travellers.
//! - `taxes`: `total - base` (taxes, fees and surcharges on top of the base fare).
//! - `airline`: the validating carrier (else the first segment's), by its name from
//!   `dictionaries.carriers` when listed.
//! - `cabin`: the first segment's cabin of the first traveller, else the requested one.
//! - `outbound` is `itineraries[0]`, `inbound` `itineraries[1]`; `totalStops` counts the
//!   outbound's connections.
//! - `tags`: `nonstop`, and the last ticketing date in the request's locale
//!   ([`crate::tags`]).

use std::collections::BTreeMap;
use std::str::FromStr;

use domain::carrier_sites;
use domain::flight::{
    Cabin, FlightEndpoint, FlightLeg, FlightResult, FlightSearchParams, Locale, Provider, Taxes,
};
use domain::flight_text::stops_text;
use domain::money::{Amount, price_text};

use crate::format::{duration_text, local_minute};
use crate::offers::{Endpoint, Itinerary, Offer, Offers};
use crate::tags::ticket_by;

/// Every offer that can be shown, in Amadeus' order (cheapest first), at most
/// `maxResults`. An offer without a route or a price is dropped with a log line.
pub fn flights(offers: Offers, params: &FlightSearchParams) -> Vec<FlightResult> {
    let locale = params.locale.unwrap_or_default();
    offers
        .offers
        .iter()
        .enumerate()
        .filter_map(
            |(index, offer)| match flight(offer, index, &offers.carriers, params, locale) {
                Ok(flight) => Some(flight),
                Err(reason) => {
                    tracing::warn!(index, id = %offer.id, reason, "dropping an Amadeus offer");
                    None
                }
            },
        )
        .take(usize::from(params.max_results))
        .collect()
}

fn flight(
    offer: &Offer,
    index: usize,
    carriers: &BTreeMap<String, String>,
    params: &FlightSearchParams,
    locale: Locale,
) -> Result<FlightResult, &'static str> {
    let outbound_itinerary = offer.itineraries.first().ok_or("no itineraries")?;
    let outbound = leg(outbound_itinerary, locale).ok_or("outbound has no segments")?;
    let inbound = match offer.itineraries.get(1) {
        Some(itinerary) => Some(leg(itinerary, locale).ok_or("inbound has no segments")?),
        None => None,
    };
    let total = Amount::parse(&offer.price.total)
        .or_else(|| Amount::parse(&offer.price.grand_total))
        .ok_or("no price")?;
    let currency = offer.price.currency.trim().to_ascii_uppercase();

    let first_traveller = offer.traveler_pricings.first();
    let per_person = first_traveller
        .and_then(|t| Amount::parse(&t.price.total))
        .or_else(|| total.divided_by(u32::from(params.adults) + u32::from(params.children)))
        .unwrap_or(total);

    let cabin = first_traveller
        .and_then(|t| t.fare_details_by_segment.first())
        .and_then(|f| Cabin::from_str(&f.cabin).ok())
        .unwrap_or(params.travel_class);

    let airline = airline(offer, outbound_itinerary, carriers);

    let total_stops =
        u32::try_from(outbound_itinerary.segments.len().saturating_sub(1)).unwrap_or(u32::MAX);
    let mut tags = Vec::new();
    if total_stops == 0 {
        tags.push("nonstop".to_owned());
    }
    if !offer.last_ticketing_date.trim().is_empty() {
        tags.push(ticket_by(offer.last_ticketing_date.trim(), locale));
    }

    let id = match offer.id.trim() {
        "" => format!("amadeus-{}", index + 1),
        id => format!("amadeus-{id}"),
    };
    Ok(FlightResult {
        id,
        provider: Provider::Amadeus,
        price: price_text(total, &currency, locale),
        price_per_person: price_text(per_person, &currency, locale),
        airline,
        cabin: cabin.display_name().to_owned(),
        tags,
        total_stops,
        miles: None,
        taxes: Taxes {
            amount: Amount::parse(&offer.price.base)
                .and_then(|base| total.minus(base))
                .map(Amount::to_f64),
            currency: (!currency.is_empty()).then_some(currency),
        },
        seats_left: offer.number_of_bookable_seats,
        // Amadeus finds fares and sells none: the selling airline's site books it.
        booking_links: carrier_sites::link(seller(offer, outbound_itinerary))
            .map(|link| BTreeMap::from([link])),
        outbound,
        inbound,
        program: None,
        seen_at: None,
        other_programs: Vec::new(),
        option: None,
    })
}

/// The validating carrier (else the outbound's first), by its name when the reply lists it.
/// The airline that sells the offer: the validating one, else the first flight's.
fn seller<'a>(offer: &'a Offer, outbound: &'a Itinerary) -> &'a str {
    offer
        .validating_airline_codes
        .iter()
        .map(|c| c.trim())
        .find(|c| !c.is_empty())
        .or_else(|| outbound.segments.first().map(|s| s.carrier_code.trim()))
        .unwrap_or_default()
}

fn airline(offer: &Offer, outbound: &Itinerary, carriers: &BTreeMap<String, String>) -> String {
    let code = seller(offer, outbound);
    carriers
        .get(code)
        .cloned()
        .unwrap_or_else(|| code.to_owned())
}

fn leg(itinerary: &Itinerary, locale: Locale) -> Option<FlightLeg> {
    let first = itinerary.segments.first()?;
    let last = itinerary.segments.last()?;
    let connections: Vec<&str> = itinerary.segments[..itinerary.segments.len() - 1]
        .iter()
        .map(|s| s.arrival.iata_code.trim())
        .collect();
    let stops = stops_text(
        locale,
        u64::try_from(connections.len()).unwrap_or(u64::MAX),
        &connections,
    );
    let flight_numbers: Vec<String> = itinerary
        .segments
        .iter()
        .map(|s| format!("{}{}", s.carrier_code.trim(), s.number.trim()))
        .filter(|n| !n.is_empty())
        .collect();
    Some(FlightLeg {
        departure: endpoint(&first.departure),
        arrival: endpoint(&last.arrival),
        duration: duration_text(&itinerary.duration).unwrap_or_else(|| "unknown".to_owned()),
        stops,
        flight_numbers: flight_numbers.join(", "),
    })
}

fn endpoint(endpoint: &Endpoint) -> FlightEndpoint {
    FlightEndpoint {
        airport: endpoint.iata_code.trim().to_owned(),
        time: local_minute(&endpoint.at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offers::OffersReply;
    use serde_json::json;

    fn params(extra: serde_json::Value) -> FlightSearchParams {
        let mut body = json!({"origin": "GIG", "destination": "MAD",
            "departureDate": "2027-08-01", "travelClass": "BUSINESS"});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        serde_json::from_value(body).unwrap_or_else(|e| panic!("{e}"))
    }

    fn offers(value: serde_json::Value) -> Offers {
        serde_json::from_value::<OffersReply>(value)
            .unwrap_or_else(|e| panic!("{e}"))
            .into_offers()
    }

    fn segment(from: &str, to: &str, carrier: &str, number: &str) -> serde_json::Value {
        json!({"departure": {"iataCode": from, "at": "2027-08-01T10:00:00"},
               "arrival": {"iataCode": to, "at": "2027-08-01T12:30:00"},
               "carrierCode": carrier, "number": number})
    }

    #[test]
    fn fallbacks_without_traveller_pricing_or_dictionaries() {
        let reply = offers(json!({"data": [{
            "id": "9",
            "itineraries": [{"duration": "PT2H30M", "segments": [segment("FRA", "MUC", "LH", "100"),
                segment("MUC", "VIE", "OS", "112"), segment("VIE", "OTP", "OS", "781")]}],
            "price": {"currency": "eur", "total": "300.01"},
        }]}));
        let result = flights(
            reply,
            &params(json!({"adults": 2, "children": 1, "locale": "de"})),
        );
        let f = &result[0];
        assert_eq!(f.id, "amadeus-9");
        assert_eq!(f.price, "300,01 €");
        assert_eq!(f.price_per_person, "100,00 €");
        assert_eq!(f.airline, "LH");
        assert_eq!(f.cabin, "Business");
        assert_eq!(f.total_stops, 2);
        assert_eq!(f.outbound.stops, "2 Stopps (MUC, VIE)");
        assert_eq!(f.outbound.flight_numbers, "LH100, OS112, OS781");
        assert_eq!(f.outbound.departure.time, "2027-08-01T10:00");
        assert_eq!(f.taxes.amount, None);
        assert_eq!(f.seats_left, None);
        assert!(f.inbound.is_none() && f.tags.is_empty());
    }

    #[test]
    fn unshowable_offers_are_dropped_and_max_results_holds() {
        let good = json!({"itineraries": [{"segments": [segment("FRA", "JFK", "LH", "400")]}],
            "price": {"total": "1", "currency": "EUR"}});
        let reply = offers(json!({"data": [
            {"id": "no-route", "price": {"total": "1"}},
            {"id": "no-price", "itineraries": [{"segments": [segment("FRA", "JFK", "LH", "400")]}]},
            {"id": "empty-inbound", "itineraries": [{"segments": [segment("FRA", "JFK", "LH", "400")]}, {"segments": []}],
             "price": {"total": "1"}},
            good, good, good,
        ]}));
        let result = flights(reply, &params(json!({"maxResults": 2})));
        assert_eq!(result.len(), 2);
        assert_eq!(result[0].id, "amadeus-4");
        assert_eq!(result[0].tags, vec!["nonstop"]);
        assert_eq!(result[0].outbound.duration, "unknown");
    }
}
